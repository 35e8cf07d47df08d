package server

import (
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/networkservicemesh/govpp/binapi/memclnt"
	"github.com/networkservicemesh/govpp/binapi/tapv2"
	"github.com/networkservicemesh/govpp/binapi/vpe"
	"github.com/stretchr/testify/require"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/codec"
)

// panickyHandler implements nothing but show_version, and that badly.
type panickyHandler struct{}

func (panickyHandler) Handle(_ *Session, req api.Message) ([]api.Message, bool) {
	if _, ok := req.(*vpe.ShowVersion); ok {
		panic("simulated bug")
	}
	return nil, false
}

func (panickyHandler) SessionClosed(*Session) {}

// rawClient speaks the wire protocol directly, to check what govpp would not let us send.
type rawClient struct {
	t     *testing.T
	conn  net.Conn
	table *MessageTable
}

func newRawClient(t *testing.T) *rawClient {
	path := filepath.Join(t.TempDir(), "api.sock")
	table := NewMessageTable()
	srv, err := Listen(path, table, panickyHandler{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	conn, err := net.Dial("unix", path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	return &rawClient{t: t, conn: conn, table: table}
}

func (c *rawClient) send(data []byte) {
	_, err := c.conn.Write(frame(data))
	require.NoError(c.t, err)
}

func (c *rawClient) request(msg api.Message, context uint32) {
	id, ok := c.table.ID(msg)
	require.True(c.t, ok)
	data, err := codec.DefaultCodec.EncodeMsg(msg, id)
	require.NoError(c.t, err)
	binary.BigEndian.PutUint32(data[6:10], context)
	c.send(data)
}

func (c *rawClient) receive(into api.Message) uint32 {
	data, err := readFrame(c.conn)
	require.NoError(c.t, err)
	id, ok := c.table.ID(into)
	require.True(c.t, ok)
	require.Equal(c.t, id, binary.BigEndian.Uint16(data[0:2]), "unexpected reply type")
	require.NoError(c.t, codec.DefaultCodec.DecodeMsg(data, into))
	return binary.BigEndian.Uint32(data[2:6])
}

func TestHandshakeTable(t *testing.T) {
	c := newRawClient(t)
	data, err := codec.DefaultCodec.EncodeMsg(&memclnt.SockclntCreate{Name: "raw"}, sockclntCreateID)
	require.NoError(t, err)
	c.send(data)
	reply, err := readFrame(c.conn)
	require.NoError(t, err)
	created := &memclnt.SockclntCreateReply{}
	require.NoError(t, codec.DefaultCodec.DecodeMsg(reply, created))
	require.Equal(t, int32(0), created.Response)
	require.Equal(t, int(created.Count), len(created.MessageTable))
	ids := map[string]uint16{}
	for _, e := range created.MessageTable {
		ids[e.Name] = e.Index
	}
	require.Equal(t, uint16(sockclntCreateID), ids["sockclnt_create_455fb9c4"])
	require.Contains(t, ids, "tap_create_v3_"+(&tapv2.TapCreateV3{}).GetCrcString())
}

func TestUnknownIDGetsUnimplementedPingReply(t *testing.T) {
	c := newRawClient(t)
	data := make([]byte, 10)
	binary.BigEndian.PutUint16(data[0:2], 0xfffe)
	binary.BigEndian.PutUint32(data[6:10], 77)
	c.send(data)
	reply := &memclnt.ControlPingReply{}
	require.Equal(t, uint32(77), c.receive(reply))
	require.Equal(t, int32(api.UNIMPLEMENTED), reply.Retval)
}

func TestPanicFailsOnlyThatMessage(t *testing.T) {
	c := newRawClient(t)
	c.request(&vpe.ShowVersion{}, 5)
	failed := &vpe.ShowVersionReply{}
	require.Equal(t, uint32(5), c.receive(failed))
	require.Equal(t, int32(api.UNSPECIFIED), failed.Retval)

	c.request(&memclnt.ControlPing{}, 6)
	pong := &memclnt.ControlPingReply{}
	require.Equal(t, uint32(6), c.receive(pong), "the session survives a handler panic")
	require.Equal(t, int32(0), pong.Retval)
}

func TestRuntMessageIsIgnored(t *testing.T) {
	c := newRawClient(t)
	c.send([]byte{1})
	c.request(&memclnt.ControlPing{}, 9)
	require.Equal(t, uint32(9), c.receive(&memclnt.ControlPingReply{}))
}

// TestSlowReaderKeepsItsSession follows VPP, which queues what a client does not read yet
// (output_vector in socksvr_vlib.c) and drops a client only when a write fails: a govpp client
// whose reader stalls for seconds (a full reply channel costs it 100 ms a message) must find every
// reply there once it reads again, not a closed socket.
func TestSlowReaderKeepsItsSession(t *testing.T) {
	c := newRawClient(t)
	require.NoError(t, c.conn.SetDeadline(time.Time{}))
	// Far more replies than the socket buffers hold.
	const pings = 30000
	id, ok := c.table.ID(&memclnt.ControlPing{})
	require.True(t, ok)
	sent := make(chan error, 1)
	go func() {
		for i := range pings {
			data, err := codec.DefaultCodec.EncodeMsg(&memclnt.ControlPing{}, id)
			if err == nil {
				binary.BigEndian.PutUint32(data[6:10], uint32(i+1))
				_, err = c.conn.Write(frame(data))
			}
			if err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	// Longer than the 5 s the simulator once gave a client to read before cutting it off.
	time.Sleep(6 * time.Second)
	require.NoError(t, c.conn.SetReadDeadline(time.Now().Add(30*time.Second)))
	for i := range pings {
		require.Equal(t, uint32(i+1), c.receive(&memclnt.ControlPingReply{}))
	}
	require.NoError(t, <-sent)
}
