// Package registrylookup is the registry client the forwarder discovers next hops with: network
// service and endpoint Finds to the nsmgr over one long-lived connection.
//
// sdk's registry client dials the nsmgr afresh for every Find and closes the connection when the
// answer ends, so every Request paid one or two mTLS handshakes on each side before the forwarder
// had done any work of its own; under load those handshakes were the largest share of the
// forwarder's CPU that was not the Request's own. The Finds, the descriptor passing of endpoint
// URLs (sdk's recvfd and sendfd registry clients) and the per-call tokens are as in sdk's client;
// only the connection is kept. A connection that breaks (an nsmgr restart) is dialled again on
// the next Find, which waits for it no longer than the dial timeout, as sdk's dial does.
package registrylookup
