package fdtransport_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/edwarnicke/grpcfd"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/nsmfwd/forwarder-vpp/internal/transport/fdtransport"
)

// endpoint is one end of a connection that passes descriptors.
type endpoint interface {
	net.Conn
	grpcfd.FDTransceiver
}

// stockToOurs connects a grpcfd end (what nsmgr runs) to an end of ours over a unix socket pair,
// without gRPC, so that a test decides when bytes and descriptors travel.
func stockToOurs(t *testing.T, opts ...fdtransport.Option) (stock, ours endpoint) {
	t.Helper()
	stockRaw, oursRaw := socketPair(t)
	stockConn, _, err := grpcfd.TransportCredentials(nil).ClientHandshake(context.Background(), "", stockRaw)
	require.NoError(t, err)
	oursConn, _, err := fdtransport.TransportCredentials(nil, opts...).ServerHandshake(oursRaw)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = stockConn.Close()
		_ = oursConn.Close()
	})
	return stockConn.(endpoint), oursConn.(endpoint)
}

func socketPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	conns := make([]net.Conn, 2)
	for i, fd := range fds {
		file := os.NewFile(uintptr(fd), "socketpair")
		conns[i], err = net.FileConn(file)
		require.NoError(t, err)
		require.NoError(t, file.Close())
	}
	return conns[0], conns[1]
}

// send passes filename from one end to the other with a byte, as a message carries it. (grpcfd's
// SendFilename reports closing its file twice, hence SendFile.)
func send(t *testing.T, from, to endpoint, filename string) {
	t.Helper()
	file, err := os.Open(filename)
	require.NoError(t, err)
	sent := from.SendFile(file)
	require.NoError(t, file.Close())
	_, err = from.Write([]byte{0})
	require.NoError(t, err)
	for err := range sent {
		require.NoError(t, err)
	}
	_, err = to.Read(make([]byte, 1))
	require.NoError(t, err)
}

// claim asks to for the descriptor of filename's inode and waits up to wait for it; nil if none
// came.
func claim(t *testing.T, to endpoint, filename string, wait time.Duration) *os.File {
	t.Helper()
	dev, ino := inodeOf(t, filename)
	select {
	case file := <-to.RecvFile(dev, ino):
		return file
	case <-time.After(wait):
		return nil
	}
}

func inodeOf(t *testing.T, filename string) (dev, ino uint64) {
	t.Helper()
	var stat syscall.Stat_t
	require.NoError(t, syscall.Stat(filename, &stat))
	return stat.Dev, stat.Ino
}

func requireSameFile(t *testing.T, filename string, file *os.File) {
	t.Helper()
	require.NotNil(t, file, "no descriptor for %s", filename)
	defer func() { _ = file.Close() }()
	wantDev, wantIno := inodeOf(t, filename)
	gotDev, gotIno := inodeOf(t, file.Name())
	require.Equal(t, [2]uint64{wantDev, wantIno}, [2]uint64{gotDev, gotIno}, "the descriptor received is not %s", filename)
}

func newFile(t *testing.T, name string) string {
	t.Helper()
	filename := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(filename, nil, 0o600))
	return filename
}

// openDescriptors counts this process's open descriptors, and those of them open on filename.
func openDescriptors(t *testing.T, filename string) (all, ofFile int) {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	wantDev, wantIno := inodeOf(t, filename)
	for _, entry := range entries {
		var stat syscall.Stat_t
		if syscall.Stat(filepath.Join("/proc/self/fd", entry.Name()), &stat) == nil && stat.Dev == wantDev && stat.Ino == wantIno {
			ofFile++
		}
	}
	return len(entries), ofFile
}

// eventuallyNoneOpen waits up to within for no descriptor to be open on filename, and for the
// count of open descriptors to be back at baseline.
func eventuallyNoneOpen(t *testing.T, filename string, baseline int, within time.Duration) {
	t.Helper()
	all, ofFile := openDescriptors(t, filename)
	for deadline := time.Now().Add(within); (ofFile > 0 || all > baseline) && time.Now().Before(deadline); all, ofFile = openDescriptors(t, filename) {
		time.Sleep(10 * time.Millisecond)
	}
	require.Zero(t, ofFile, "descriptors still open on %s", filename)
	require.LessOrEqual(t, all, baseline, "open descriptors")
}
