package vppdump_test

import (
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/internal/vpp/vppdump"
)

// stream answers records, then end (io.EOF, or the error a broken stream gives).
func stream(end error, records ...int) func() (int, error) {
	return func() (int, error) {
		if len(records) == 0 {
			return 0, end
		}
		r := records[0]
		records = records[1:]
		return r, nil
	}
}

func TestDrainHandsEveryRecordInOrder(t *testing.T) {
	var got []int
	require.NoError(t, vppdump.Drain(stream(io.EOF, 3, 1, 2), "numbers", func(r int) { got = append(got, r) }))
	require.Equal(t, []int{3, 1, 2}, got)
}

func TestDrainOfAnEmptyDump(t *testing.T) {
	require.NoError(t, vppdump.Drain(stream(io.EOF), "numbers", func(int) { t.Fatal("no record expected") }))
}

func TestDrainNamesTheDumpOfABrokenStream(t *testing.T) {
	broken := errors.New("VPP API socket closed")
	var got []int
	err := vppdump.Drain(stream(broken, 7), "ACLs of interface 3", func(r int) { got = append(got, r) })
	require.ErrorIs(t, err, broken)
	require.EqualError(t, err, "dumping ACLs of interface 3: VPP API socket closed")
	require.Equal(t, []int{7}, got, "the records before the break are handed on")
}
