package netnsid

import (
	"os"
	"runtime"

	"github.com/pkg/errors"
	"golang.org/x/sys/unix"
)

// soNetnsCookie is SO_NETNS_COOKIE (include/uapi/asm-generic/socket.h), Linux 5.14 and later.
const soNetnsCookie = 71

// cookieOf reads the cookie of the namespace ns refers to from a socket made inside it. The socket
// is made on a thread of its own that enters the namespace and comes back; a thread that cannot
// come back is never unlocked, so the Go runtime ends it instead of reusing it elsewhere.
func cookieOf(ns *os.File) (uint64, error) {
	type result struct {
		cookie uint64
		err    error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		origin, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			done <- result{err: errors.Wrap(err, "netnsid: opening the thread's namespace")}
			return
		}
		defer func() { _ = origin.Close() }()
		if err = unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			done <- result{err: errors.Wrapf(err, "netnsid: entering %s", ns.Name())}
			return
		}
		socket, socketErr := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if unix.Setns(int(origin.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		if socketErr != nil {
			done <- result{err: errors.Wrapf(socketErr, "netnsid: socket in %s", ns.Name())}
			return
		}
		defer func() { _ = unix.Close(socket) }()
		cookie, err := unix.GetsockoptUint64(socket, unix.SOL_SOCKET, soNetnsCookie)
		if errors.Is(err, unix.ENOPROTOOPT) {
			// Before Linux 5.14: the identity has no cookie, and Proven says so.
			cookie, err = 0, nil
		}
		done <- result{cookie: cookie, err: errors.Wrap(err, "netnsid: SO_NETNS_COOKIE")}
	}()
	r := <-done
	return r.cookie, r.err
}
