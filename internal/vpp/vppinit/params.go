package vppinit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"gopkg.in/yaml.v3"

	"github.com/networkservicemesh/govpp/binapi/af_packet"
	"github.com/networkservicemesh/govpp/binapi/af_xdp"
)

// Params are the arguments of the VPP calls that create the uplink interface. The file format is
// the stock forwarder's: a YAML document with optional AF_PACKET and AF_XDP sections.
type Params struct {
	AfPacket AfPacketParams `yaml:"AF_PACKET"`
	AfXdp    AfXdpParams    `yaml:"AF_XDP"`
}

// AfPacketParams are the arguments of af_packet_create_v3.
type AfPacketParams struct {
	Mode             af_packet.AfPacketMode  `yaml:"mode"`
	RxFrameSize      uint32                  `yaml:"rxFrameSize"`
	TxFrameSize      uint32                  `yaml:"txFrameSize"`
	RxFramesPerBlock uint32                  `yaml:"rxFramesPerBlock"`
	TxFramesPerBlock uint32                  `yaml:"txFramesPerBlock"`
	NumRxQueues      uint16                  `yaml:"numRxQueues"`
	NumTxQueues      uint16                  `yaml:"numTxQueues"`
	Flags            af_packet.AfPacketFlags `yaml:"flags"`
}

// AfXdpParams are the arguments of af_xdp_create_v3.
type AfXdpParams struct {
	Mode    af_xdp.AfXdpMode `yaml:"mode"`
	RxqSize uint16           `yaml:"rxqSize"`
	TxqSize uint16           `yaml:"txqSize"`
	Flags   af_xdp.AfXdpFlag `yaml:"flags"`
	// Prog is the XDP program VPP attaches to the uplink (default DefaultXDPProgram, the image's
	// own, which hands VPP only NSM's tunnel traffic). It cannot be empty: VPP's built-in program
	// would redirect every frame, and the node would lose its own traffic.
	Prog string `yaml:"prog"`
}

// DefaultParams are the stock forwarder's defaults: ethernet-mode af_packet v2 with large frames
// (so jumbo tunnel packets fit) and one queue; AF_XDP in automatic (copy or zero-copy) mode with
// the image's XDP program.
func DefaultParams() Params {
	return Params{
		AfPacket: AfPacketParams{
			Mode:             af_packet.AF_PACKET_API_MODE_ETHERNET,
			RxFrameSize:      10240,
			TxFrameSize:      10240,
			RxFramesPerBlock: 1024,
			TxFramesPerBlock: 1024,
			NumRxQueues:      1,
			NumTxQueues:      0,
			Flags:            af_packet.AF_PACKET_API_FLAG_VERSION_2,
		},
		AfXdp: AfXdpParams{
			Mode:    af_xdp.AF_XDP_API_MODE_AUTO,
			RxqSize: 8192,
			TxqSize: 8192,
			Prog:    DefaultXDPProgram,
		},
	}
}

// ReadParams loads a parameter file over the defaults. Unknown keys and out-of-range modes are
// errors: a typo would otherwise silently fall back to a default.
func ReadParams(path string) (Params, error) {
	params := DefaultParams()
	content, err := os.ReadFile(path) //nolint:gosec // the path is the operator's own configuration
	if err != nil {
		return params, err
	}
	decoder := yaml.NewDecoder(bytes.NewReader(content))
	decoder.KnownFields(true)
	if err := decoder.Decode(&params); err != nil && !errors.Is(err, io.EOF) {
		return params, fmt.Errorf("not a valid parameter file: %s", oneLine(err.Error()))
	}
	return params, params.validate()
}

func (p Params) validate() error {
	if p.AfPacket.Mode != af_packet.AF_PACKET_API_MODE_ETHERNET && p.AfPacket.Mode != af_packet.AF_PACKET_API_MODE_IP {
		return fmt.Errorf("AF_PACKET.mode %d: must be 1 (ethernet) or 2 (ip)", p.AfPacket.Mode)
	}
	if p.AfXdp.Mode > af_xdp.AF_XDP_API_MODE_ZERO_COPY {
		return fmt.Errorf("AF_XDP.mode %d: must be 0 (auto), 1 (copy) or 2 (zero-copy)", p.AfXdp.Mode)
	}
	if p.AfXdp.Prog == "" {
		return fmt.Errorf("AF_XDP.prog is empty: VPP's built-in XDP program would take every frame of the uplink from the node (default %s)", DefaultXDPProgram)
	}
	return nil
}

func oneLine(s string) string {
	return string(bytes.Join(bytes.Fields([]byte(s)), []byte(" ")))
}
