package recvnetns

import (
	"context"
	"fmt"

	"github.com/pkg/errors"
	"golang.org/x/sys/unix"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/common"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"
)

// unopenableURL stands in, for the rest of a Close, for a namespace URL that cannot be verified:
// no file descriptor is ever negative, so nothing can open it, while an empty or non-file URL
// would make sdk-kernel act in the forwarder's own namespace.
const unopenableURL = "file:///proc/self/fd/-1"

// wireInodes are the inodes the peer named, per mechanism, before recvfd rewrote them.
type wireInodes map[*networkservice.Mechanism]inode

type wireInodesKey struct{}

// withWireInodes returns ctx carrying an empty record for the element that reads the wire.
func withWireInodes(ctx context.Context) (context.Context, wireInodes) {
	record := wireInodes{}
	return context.WithValue(ctx, wireInodesKey{}, record), record
}

func wireInodesFrom(ctx context.Context) wireInodes {
	record, _ := ctx.Value(wireInodesKey{}).(wireInodes)
	return record
}

// record notes the wire inode of each mechanism that has one, or fails naming the field.
func (w wireInodes) record(named []namedMechanism) error {
	for _, n := range named {
		id, present, err := n.wireInode()
		if err != nil {
			return err
		}
		if present {
			w[n.mechanism] = id
		}
	}
	return nil
}

// verify fails unless every mechanism's inodeURL is a descriptor recvfd received for the inode the
// wire named; a kernel mechanism must have one, on a network namespace.
func (w wireInodes) verify(named []namedMechanism) error {
	for _, n := range named {
		if reason := w.verifyOne(n.mechanism); reason != "" {
			raw := n.mechanism.GetParameters()[common.InodeURL]
			return errors.Errorf("%s %q %s", n.parameterField(), raw, reason)
		}
	}
	return nil
}

// verifyOne returns why the mechanism's inodeURL cannot be opened, or "" when it can.
func (w wireInodes) verifyOne(mechanism *networkservice.Mechanism) (reason string) {
	raw, present := mechanism.GetParameters()[common.InodeURL]
	isKernel := kernel.ToMechanism(mechanism) != nil
	if !present && !isKernel {
		return ""
	}
	want, received := w[mechanism]
	if !received {
		return "did not arrive as inode://<dev>/<ino>"
	}
	fd, err := parseOwnDescriptorURL(raw)
	if err != nil {
		return fmt.Sprintf("is not a namespace received as a file descriptor for inode://%d/%d (is the peer on a unix socket?)", want.dev, want.ino)
	}
	var stat unix.Stat_t
	if err := unix.Fstat(fd, &stat); err != nil || stat.Dev != want.dev || stat.Ino != want.ino {
		return fmt.Sprintf("is not the descriptor received for inode://%d/%d", want.dev, want.ino)
	}
	if isKernel && !isNetworkNamespace(fd) {
		return fmt.Sprintf("is not a network namespace (inode://%d/%d)", want.dev, want.ino)
	}
	return ""
}

// isNetworkNamespace asks the kernel what fd is. grpcfd sends descriptors opened with O_PATH, on
// which ioctl fails, so the question goes to a reopened descriptor, as the kernel elements open it;
// only a namespace file is reopened, never a device or a fifo.
func isNetworkNamespace(fd int) bool {
	var fs unix.Statfs_t
	if err := unix.Fstatfs(fd, &fs); err != nil || fs.Type != unix.NSFS_MAGIC {
		return false
	}
	reopened, err := unix.Open(fmt.Sprintf("/proc/self/fd/%d", fd), unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer func() { _ = unix.Close(reopened) }()
	nsType, err := unix.IoctlRetInt(reopened, unix.NS_GET_NSTYPE)
	return err == nil && nsType == unix.CLONE_NEWNET
}

// neutralize replaces each inodeURL that cannot be verified with unopenableURL and returns a
// function that puts the original values back.
func (w wireInodes) neutralize(named []namedMechanism) (restore func()) {
	var undo []func()
	for _, n := range named {
		if w.verifyOne(n.mechanism) == "" {
			continue
		}
		parameters := n.mechanism.GetParameters()
		original, present := parameters[common.InodeURL]
		if parameters == nil {
			parameters = map[string]string{}
			n.mechanism.Parameters = parameters
		}
		parameters[common.InodeURL] = unopenableURL
		undo = append(undo, func() {
			if present {
				parameters[common.InodeURL] = original
				return
			}
			delete(parameters, common.InodeURL)
		})
	}
	return func() {
		for _, u := range undo {
			u()
		}
	}
}
