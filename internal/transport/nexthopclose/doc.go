// Package nexthopclose sends a Close to a connection's next hop from outside the forwarder's
// onward chain: the previous run's next hop of a connection that came back after a restart and
// now goes elsewhere (package restore finds it). The onward chain cannot carry that Close: sdk's
// begin drops the Close of a connection it never established, and the chain's dial would tear
// down the connection to the new next hop, which has the same ID.
//
// The next hop is found as the forwarder's discovery finds it for a Request, by the endpoint's
// name in the registry, whose answer the forwarder can dial (a local endpoint's socket arrives as
// a descriptor, a remote one is its node's nsmgr), and reached with the forwarder's own dial
// options, so that the Close carries this forwarder's identity and token.
package nexthopclose
