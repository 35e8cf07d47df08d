// Package domain brings up a whole NSM domain on one machine: the topology's
// namespaces, SPIRE, a registry, and per node a VPP (the simulator, or upstream VPP when
// Config.RealVPP names its binary), the unmodified
// forwarder-vpp binary and an nsmgr; then endpoints and clients in pod
// namespaces. The e2e scenarios and `make demo` are both built on it.
package domain
