package server

import (
	"fmt"
	"net"
	"reflect"
	"sync"
	"time"

	"go.fd.io/govpp/api"
)

const writeTimeout = 5 * time.Second

// Session is one connected API client.
type Session struct {
	Index uint32
	Name  string

	conn    *net.UnixConn
	table   *MessageTable
	writeMu sync.Mutex
}

// Send writes msg to the client with the given context (0 for events).
func (s *Session) Send(msg api.Message, context uint32) error {
	id, ok := s.table.ID(msg)
	if !ok {
		return fmt.Errorf("message %s_%s is not in the message table", msg.GetMessageName(), msg.GetCrcString())
	}
	data, err := encodeReply(msg, id, s.Index, context)
	if err != nil {
		return err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	// A client that stopped reading must not stall the simulator (events are sent while
	// the state is locked), so give up on it instead.
	if err := s.conn.SetWriteDeadline(time.Now().Add(writeTimeout)); err != nil {
		return err
	}
	_, err = s.conn.Write(frame(data))
	return err
}

// SetRetval sets the Retval field most replies carry; replies without one are left as is.
func SetRetval(msg api.Message, code int32) {
	v := reflect.ValueOf(msg).Elem()
	if f := v.FieldByName("Retval"); f.IsValid() && f.CanSet() && f.Kind() == reflect.Int32 {
		f.SetInt(int64(code))
	}
}
