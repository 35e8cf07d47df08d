// Package state is the simulated VPP's configuration: interfaces and everything attached
// to them, FIB tables, routes, neighbours, ACLs and the recorded-only objects (memif,
// wireguard, ipsec, ikev2, cnat). It is plain data that serialises to JSON for
// introspection; package vpp owns the rules for changing it.
package state
