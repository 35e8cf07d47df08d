// Package svid obtains the forwarder's X.509 SVID source from the SPIFFE workload API (the spire
// agent socket named by SPIFFE_ENDPOINT_SOCKET). It waits a bounded time and says what to check
// when no SVID comes.
package svid
