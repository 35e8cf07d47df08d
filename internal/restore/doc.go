// Package restore hands a restarted forwarder what its previous run left, and releases only what
// that run provably made.
//
// A forwarder that restarts loses its memory, but VPP (an external instance) and the kernel keep
// everything it built. The journal (package journal) says what that was: per connection, both of
// its sides, the VPP interface and kernel interfaces of each, and the identity of every namespace
// involved. Nothing else is proof: sdk-vpp tags VPP interfaces with the bare connection ID, and a
// VPP shared with another agent (Calico-VPP tags its pod interfaces) holds tagged interfaces that
// are not this forwarder's, so an interface is released only when its tag is the ID of a
// connection the journal holds, a veth end only when its alias names one, and kernel state only in
// the namespace whose recorded identity (package netnsid) still matches.
//
// Scan turns the journal's records into Leftovers at start-up. When a connection is requested
// again, NewServer and NewClient adopt each side that is exactly what the Request and the next
// hop's answer describe: the VPP interfaces (and with them the cross-connect), the pods' kernel
// interfaces and everything on them stay, sdk-vpp's per-connection metadata is filled as if this
// run had built them, and the chain rewrites nothing. A side that differs is released first and
// rebuilt. Policy rules and routes are never released for a returning connection: the chain's
// reconciling elements adopt what is right and fix what is not. A connection not requested again
// within the grace period (the token lifetime) is released with everything its record names, and
// a release that fails is retried with backoff, keeping the record.
package restore
