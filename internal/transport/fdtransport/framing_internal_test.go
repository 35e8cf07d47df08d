package fdtransport

import (
	"math/rand/v2"
	"testing"
)

// Reads sized by room never cross the end of a TLS record, whatever size the caller asks for:
// headers split across reads, empty records and full-size ones included.
func TestHandshakeReadsStayWithinOneRecord(t *testing.T) {
	var stream []byte
	var ends []int // offsets where a record ends
	for _, length := range []int{0, 1, 300, 0, 16384 + 256, 7} {
		stream = append(stream, 0x16, 0x03, 0x03, byte(length>>8), byte(length))
		stream = append(stream, make([]byte, length)...)
		ends = append(ends, len(stream))
	}
	random := rand.New(rand.NewPCG(1, 2))
	for round := range 100 {
		var f recordFraming
		for offset := 0; offset < len(stream); {
			n := f.room(1 + random.IntN(20000))
			if n == 0 {
				t.Fatalf("round %d: no room at offset %d", round, offset)
			}
			for _, end := range ends {
				if offset < end && offset+n > end {
					t.Fatalf("round %d: a read of %d bytes at %d crosses the record end at %d", round, n, offset, end)
				}
			}
			taken := 1 + random.IntN(n) // a short read
			f.consumed(stream[offset : offset+taken])
			offset += taken
		}
	}
}
