// Package monitorretry keeps the forwarder's upstream MonitorConnections streams alive across
// transient breaks. sdk's monitor server relays the next hop's events through one stream per
// connection and reports the connection DOWN on the first receive error; a stream cut by an idle
// load balancer or NAT then makes the client heal with reselect although nothing failed. This
// gRPC stream interceptor re-opens a broken MonitorConnections stream with the same selector and
// only surfaces the error (and so the DOWN) when the next hop stays unreachable for the whole retry
// window, or answers that the connection no longer exists.
package monitorretry
