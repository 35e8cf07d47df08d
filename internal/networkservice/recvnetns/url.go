package recvnetns

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/pkg/errors"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/common"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"
)

// inode identifies a file by device and inode number, as grpcfd names a passed descriptor.
type inode struct{ dev, ino uint64 }

// namedMechanism is a mechanism of a Request with the field that holds it, for error messages.
type namedMechanism struct {
	field     string
	mechanism *networkservice.Mechanism
}

// requestMechanisms are every mechanism recvfd looks at: the preferences, then the selected one.
func requestMechanisms(request *networkservice.NetworkServiceRequest) []namedMechanism {
	var named []namedMechanism
	for i, mechanism := range request.GetMechanismPreferences() {
		named = append(named, namedMechanism{fmt.Sprintf("mechanismPreferences[%d]", i), mechanism})
	}
	if mechanism := request.GetConnection().GetMechanism(); mechanism != nil {
		named = append(named, namedMechanism{"mechanism", mechanism})
	}
	return named
}

func (n namedMechanism) parameterField() string {
	return n.field + ".parameters." + common.InodeURL
}

// CheckWire checks the namespace URLs of a Request as it arrives, before recvfd: each one must be
// inode://<dev>/<ino>, and a kernel mechanism must carry one. The error names the field.
func CheckWire(request *networkservice.NetworkServiceRequest) error {
	return wireInodes{}.record(requestMechanisms(request))
}

// wireInode returns the inode a mechanism's inodeURL names on the wire; present is false when the
// mechanism has none and needs none. The error names the field.
func (n namedMechanism) wireInode() (id inode, present bool, err error) {
	raw, present := n.mechanism.GetParameters()[common.InodeURL]
	if !present {
		if kernel.ToMechanism(n.mechanism) != nil {
			return inode{}, false, errors.Errorf("%s is missing: a kernel mechanism names its namespace as inode://<dev>/<ino>", n.parameterField())
		}
		return inode{}, false, nil
	}
	id, err = parseInodeURL(raw)
	if err != nil {
		return inode{}, true, errors.Errorf("%s %q is not inode://<dev>/<ino>: only a namespace passed as a file descriptor is accepted", n.parameterField(), raw)
	}
	return id, true, nil
}

// parseInodeURL accepts exactly what grpcfd writes for a passed descriptor: inode://<dev>/<ino>
// in decimal, nothing more, so that one inode has one spelling.
func parseInodeURL(raw string) (inode, error) {
	rest, found := strings.CutPrefix(raw, "inode://")
	devText, inoText, separated := strings.Cut(rest, "/")
	dev, devErr := parseDecimal(devText)
	ino, inoErr := parseDecimal(inoText)
	if !found || !separated || devErr != nil || inoErr != nil {
		return inode{}, errors.New("not inode://<dev>/<ino>")
	}
	return inode{dev: dev, ino: ino}, nil
}

// parseDecimal refuses signs, spaces and leading zeros.
func parseDecimal(s string) (uint64, error) {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || strconv.FormatUint(n, 10) != s {
		return 0, errors.Errorf("%q is not a decimal number", s)
	}
	return n, nil
}

// ownDescriptorURLPrefix is how recvfd names a received descriptor: grpcfd opens it as
// /proc/<pid>/fd/<n> of this process, and recvfd makes that a file:// URL.
var ownDescriptorURLPrefix = fmt.Sprintf("file:///proc/%d/fd/", os.Getpid())

// parseOwnDescriptorURL accepts exactly file:///proc/<own pid>/fd/<n> and returns n.
func parseOwnDescriptorURL(raw string) (int, error) {
	rest, found := strings.CutPrefix(raw, ownDescriptorURLPrefix)
	fd, err := parseDecimal(rest)
	if !found || err != nil || fd > math.MaxInt32 {
		return 0, errors.New("not a descriptor of this process")
	}
	return int(fd), nil
}
