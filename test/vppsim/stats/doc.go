// Package stats publishes interface counters the way VPP's stats segment does (version 2):
// a shared memory file handed to each client over a SOCK_SEQPACKET unix socket, holding a
// directory of named counter vectors. govpp's statsclient, and through it sdk-vpp's
// metrics elements, read it unchanged.
package stats
