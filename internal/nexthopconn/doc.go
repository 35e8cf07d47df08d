// Package nexthopconn keeps the onward chain's connection to a connection's next hop across its
// Requests. It takes the place of sdk's dial element, which dials the next hop afresh on every
// Request, a refresh included, and closes the connection it had: one mTLS handshake per refresh on
// each side, under load the largest single cost a refresh had outside the chain's own work.
//
// The connection is dialled on the first Request and used again while it is ready and the next
// hop's URL is the same. It is dialled again when it is not ready (the next hop went away, or the
// connection broke), and when the URL changes; then, as sdk's dial does, the path through the old
// next hop is closed first. Close uses the connection (dialling it again if need be), then closes
// it. Dials take the dial options and timeout sdk's dial would.
package nexthopconn
