package vpp

import (
	"io"
	"log/slog"
	"testing"
	"time"

	interfaces "github.com/networkservicemesh/govpp/binapi/interface"
	"github.com/networkservicemesh/govpp/binapi/vpe"
	"github.com/stretchr/testify/require"
	"go.fd.io/govpp/api"

	"github.com/nsmfwd/forwarder-vpp/test/vppsim/server"
)

func TestPanickingHandlerReleasesTheState(t *testing.T) {
	v := New("", slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer v.Close()
	on(v, func(*server.Session, *vpe.ShowVersion) []api.Message { panic("simulated bug") })

	func() {
		defer func() { require.NotNil(t, recover()) }()
		v.Handle(nil, &vpe.ShowVersion{})
	}()

	done := make(chan []api.Message, 1)
	go func() {
		replies, _ := v.Handle(nil, &interfaces.CreateLoopback{})
		done <- replies
	}()
	select {
	case replies := <-done:
		require.Len(t, replies, 1)
	case <-time.After(5 * time.Second):
		t.Fatal("the state lock was left held by the panicking handler")
	}
}

func TestInterfacesChangedRunsBeforeTheReply(t *testing.T) {
	v := New("", slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer v.Close()
	var seen []string
	v.OnInterfacesChanged(func() {
		names, _ := v.InterfaceCounters()
		seen = append(seen, names[len(names)-1])
	})
	v.Handle(nil, &interfaces.CreateLoopback{})
	require.Equal(t, []string{"loop0"}, seen)
	v.Handle(nil, &interfaces.SwInterfaceSetFlags{SwIfIndex: 1})
	require.Len(t, seen, 1, "no interface was added or removed")
}
