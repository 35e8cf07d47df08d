// Package restore releases what a previous run of the forwarder left in VPP and in the kernel.
//
// A forwarder that restarts loses its memory, but VPP (an external instance) and the kernel keep
// every interface it created. Ownership is recovered from the system itself: sdk-vpp tags each VPP
// interface with the connection ID, and the forwarder-side veth of a veth pair carries an alias
// naming the connection. Scan collects these leftovers at start-up; the server element releases a
// connection's leftovers when that connection is requested again (so the chain can rebuild it
// cleanly), and whatever nobody claims within the grace period (the maximum token lifetime: a live
// connection is refreshed well before its token expires) is released as dead.
//
// Policy rules and routes in client namespaces carry no connection ID the kernel could give back,
// so they are recovered from the forwarder's journal (WithJournal). Their leftovers differ: a
// connection requested again keeps them, because the chain's reconciling elements adopt intact
// state without writing; only an unclaimed or closed connection has them removed, by closing the
// recorded connection on the kernel cleanup chain.
package restore
