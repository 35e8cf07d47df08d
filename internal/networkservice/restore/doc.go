// Package restore hands a restarted forwarder what its previous run left, and releases only what
// that run provably made.
//
// A forwarder that restarts loses its memory, but VPP (an external instance) and the kernel keep
// everything it built. The journal (package journal) says what that was: per connection, both of
// its sides, the VPP interface and kernel interfaces of each, and the identity of every namespace
// involved. Nothing else is proof: sdk-vpp tags VPP interfaces with the bare connection ID, which
// the wire chooses, a VPP shared with another agent (Calico-VPP tags its pod interfaces) holds
// tagged interfaces that are not this forwarder's, and every hop of a local chain gives its veth
// ends the same alias. So a VPP interface is released only when the journal names its sw_if_index
// and VPP still shows it with the recorded tag, kind and host interface, a veth end only by its
// recorded ifindex, name and MAC, and kernel state only in the namespace whose recorded identity
// (package netnsid) still matches. A recorded bridge domain goes only once VPP shows it without
// members, after the connection's interfaces: connections of one VLAN share it. A connection's
// record is found by this forwarder's own hop of its path (journal.Hop), never by an ID another hop
// of the same path shares.
//
// Scan turns the journal's records into Leftovers at start-up. When a connection is requested
// again, NewServer and NewClient adopt each side that is exactly what the Request and the next
// hop's answer describe: the VPP interfaces (and with them the cross-connect), the pods' kernel
// interfaces and everything on them stay, sdk-vpp's per-connection metadata is filled as if this
// run had built them, and the chain rewrites nothing. A side that differs is released first and
// rebuilt. Policy rules and routes are never released for a returning connection: the chain's
// reconciling elements adopt what is right and fix what is not. A connection not requested again
// within the grace period (the token lifetime), or closed (NewCloseServer), is released with
// everything its record names, under the connection's lock, and a release that fails is retried
// with backoff, keeping the record.
//
// A previous run's connection also has a side at its next hop, which sdk's begin never closes for
// a connection this run did not establish: neither on its Close nor when the client comes back
// toward another endpoint (a reselect). The leftover's Close, and a returning connection whose next
// hop's answer no longer holds the recorded next hop, send that hop a Close of its own
// (Leftovers.CloseNextHopsWith), with the caller's path up to this forwarder and the recorded
// segments after it.
package restore
