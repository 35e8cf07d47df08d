// Package e2e holds the end-to-end scenarios: a whole NSM domain in network
// namespaces with real SPIRE, the sdk's control plane and the unmodified
// forwarder-vpp binary on the VPP simulator and, where it can run them, on
// upstream VPP (test/realvpp). See docs/e2e.md.
package e2e
