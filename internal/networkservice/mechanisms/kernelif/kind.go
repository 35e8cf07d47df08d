package kernelif

import (
	"fmt"
	"os"
	"strings"
)

// Kind selects the kernel interface implementation.
type Kind int

const (
	// Auto picks Tap when the vhost-net device exists, Veth otherwise (what the stock forwarder does).
	Auto Kind = iota
	// Tap forces a VPP tap interface whose kernel end is moved into the client namespace.
	Tap
	// Veth forces a veth pair whose forwarder end VPP opens with af-packet.
	Veth
)

// VhostNetPath is the device whose presence makes Auto resolve to Tap.
const VhostNetPath = "/dev/vhost-net"

var names = map[Kind]string{Auto: "auto", Tap: "tap", Veth: "veth"}

func (k Kind) String() string {
	if name, ok := names[k]; ok {
		return name
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Parse reads a kind from its name, case-insensitively.
func Parse(s string) (Kind, error) {
	for kind, name := range names {
		if strings.EqualFold(strings.TrimSpace(s), name) {
			return kind, nil
		}
	}
	return Auto, fmt.Errorf("unknown kernel interface type %q: must be auto, tap or veth", s)
}

// Decode implements envconfig.Decoder.
func (k *Kind) Decode(value string) error {
	parsed, err := Parse(value)
	if err != nil {
		return err
	}
	*k = parsed
	return nil
}

// Resolve turns Auto into the concrete kind for this host; Tap and Veth are returned as they are.
func (k Kind) Resolve() Kind {
	return k.resolve(func() bool {
		_, err := os.Stat(VhostNetPath)
		return err == nil
	})
}

func (k Kind) resolve(vhostNetExists func() bool) Kind {
	if k != Auto {
		return k
	}
	if vhostNetExists() {
		return Tap
	}
	return Veth
}
