// Package realvpp runs upstream VPP for tests, next to the simulator of test/vppsim: it finds a
// vpp binary (FORWARDER_TEST_VPP, else vpp on PATH, else the build scripts/install-tools.sh
// unpacks into .cache/vpp), starts it with a runtime directory, API, CLI and stats sockets and
// shared-memory prefix of its own (4k pages, no DPDK), in a network namespace, and stops it
// leaving nothing behind: no process, no /dev/shm segment, no socket, no namespace.
//
// Tests that need it call Require, which skips with a one-line reason when no VPP is found.
package realvpp
