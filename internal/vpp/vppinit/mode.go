package vppinit

import (
	"fmt"
	"strings"
)

// Mode selects how the uplink is handed to VPP.
type Mode string

const (
	// AfPacket opens the uplink with an af_packet socket: the kernel keeps the link and VPP sees its frames.
	AfPacket Mode = "AF_PACKET"
	// AfXdp opens the uplink with an AF_XDP socket for higher throughput on capable drivers.
	AfXdp Mode = "AF_XDP"
	// None leaves VPP's interfaces alone: the operator's VPP already owns the uplink.
	None Mode = "NONE"
)

var knownModes = []Mode{AfPacket, AfXdp, None}

// Decode implements envconfig.Decoder; names are matched case-insensitively.
func (m *Mode) Decode(value string) error {
	for _, known := range knownModes {
		if strings.EqualFold(strings.TrimSpace(value), string(known)) {
			*m = known
			return nil
		}
	}
	return fmt.Errorf("unknown VPP init type: must be AF_PACKET, AF_XDP or NONE")
}
