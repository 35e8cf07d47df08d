package fdtransport

import "encoding/binary"

const tlsRecordHeaderLen = 5

// recordFraming keeps reads within one TLS record while the handshake runs. A read may return
// more than the handshake needs, and descriptors arrive with whatever read first touches the
// bytes they were sent with: without it, the read of the client's Finished message could take in
// the descriptors of a Request sent right behind it, before the peer is authenticated, and they
// would be refused.
type recordFraming struct {
	header     [tlsRecordHeaderLen]byte
	headerHave int
	bodyLeft   int
}

// room is how much of a read of n bytes stays within the current record.
func (f *recordFraming) room(n int) int {
	if f.bodyLeft > 0 {
		return min(n, f.bodyLeft)
	}
	return min(n, tlsRecordHeaderLen-f.headerHave)
}

// consumed follows the records through the bytes read.
func (f *recordFraming) consumed(p []byte) {
	for len(p) > 0 {
		if f.bodyLeft > 0 {
			k := min(len(p), f.bodyLeft)
			f.bodyLeft -= k
			p = p[k:]
			continue
		}
		k := copy(f.header[f.headerHave:], p)
		f.headerHave += k
		p = p[k:]
		if f.headerHave == tlsRecordHeaderLen {
			f.bodyLeft = int(binary.BigEndian.Uint16(f.header[3:]))
			f.headerHave = 0
		}
	}
}
