// Package authz builds the OPA authorization of the forwarder's NSM API as the stock forwarder
// does: Request/Close run the sdk's default policies, and a MonitorConnections caller sees only
// the connections its own SPIFFE ID requested.
package authz
