// Package monitorretry tells an idle cut of an upstream MonitorConnections stream from the death
// of the next hop. sdk's monitor server relays the next hop's events through one stream per
// connection and reports the connection DOWN on the first receive error; a stream cut by an idle
// load balancer or NAT then makes the client heal with reselect although nothing failed (field
// report 4), while a real death must be reported at once so that healing starts as early as with
// the stock forwarder.
//
// On a break, this gRPC stream interceptor makes one attempt to re-open the stream with the same
// selector, without waiting for the peer to become ready and bounded by the dial timeout. The
// break is hidden only when the peer answers and its initial state still holds the watched
// connection, not DOWN. It is passed on, and so reported DOWN, as soon as the peer refuses or is
// gone, answers without the connection, or the connection's endpoint is no longer registered.
package monitorretry
