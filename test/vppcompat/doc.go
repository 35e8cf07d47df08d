// Package vppcompat holds the test that checks the VPP binary API the forwarder and sdk-vpp are
// built against (github.com/networkservicemesh/govpp/binapi, message by message with its CRC)
// against a real VPP, and the list of expected differences that docs/vpp.md explains. Its test
// binary links the forwarder's packages and nothing that registers more binapi messages (the
// simulator would: it links every binapi package).
package vppcompat
