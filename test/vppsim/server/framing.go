package server

import (
	"encoding/binary"
	"fmt"
	"io"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/codec"
)

// VPP's socket transport prefixes every message with a 16-byte header whose bytes 8..12
// carry the big-endian payload length; the rest is unused by clients.
const (
	frameHeaderLen = 16
	maxFrameLen    = 16 << 20
)

func readFrame(r io.Reader) ([]byte, error) {
	var header [frameHeaderLen]byte
	if _, err := io.ReadFull(r, header[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(header[8:12])
	if n > maxFrameLen {
		return nil, fmt.Errorf("frame of %d bytes exceeds the %d byte limit", n, maxFrameLen)
	}
	data := make([]byte, n)
	if _, err := io.ReadFull(r, data); err != nil {
		return nil, err
	}
	return data, nil
}

func frame(data []byte) []byte {
	buf := make([]byte, frameHeaderLen+len(data))
	binary.BigEndian.PutUint32(buf[8:12], uint32(len(data)))
	copy(buf[frameHeaderLen:], data)
	return buf
}

// requestContext reads the context a client put into a message of the given kind: requests
// carry msg_id, client_index, context; the few client messages typed as replies (such as
// sockclnt_create) carry msg_id, context.
func requestContext(data []byte, kind api.MessageType) uint32 {
	switch {
	case kind == api.RequestMessage && len(data) >= 10:
		return binary.BigEndian.Uint32(data[6:10])
	case kind != api.RequestMessage && len(data) >= 6:
		return binary.BigEndian.Uint32(data[2:6])
	}
	return 0
}

// encodeReply encodes msg under id and stamps the header fields govpp reads back: the
// context for replies, client index and context for messages typed as requests, and the
// client index for events (govpp treats context 0 as "not a reply").
func encodeReply(msg api.Message, id uint16, clientIndex, context uint32) ([]byte, error) {
	data, err := codec.DefaultCodec.EncodeMsg(msg, id)
	if err != nil {
		return nil, err
	}
	switch msg.GetMessageType() {
	case api.ReplyMessage:
		binary.BigEndian.PutUint32(data[2:6], context)
	case api.RequestMessage:
		binary.BigEndian.PutUint32(data[2:6], clientIndex)
		binary.BigEndian.PutUint32(data[6:10], context)
	case api.EventMessage:
		binary.BigEndian.PutUint32(data[2:6], clientIndex)
	}
	return data, nil
}
