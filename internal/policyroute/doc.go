// Package policyroute installs a connection's policy routes (IPContext.Policies) in the client's network
// namespace: one ip rule per policy and address family, looking up a routing table that holds the policy's routes.
//
// Unlike sdk-kernel's iprule it keeps no memory that the kernel cannot give back. Table IDs are a deterministic
// probe sequence over hash(connection ID, policy selector) inside a configured range, every rule and route
// carries this forwarder's rtnetlink protocol value, and each Request reconciles desired against actual state,
// writing only the difference. A restarted forwarder therefore recovers by the same code path, with no writes
// when the kernel is intact, and it never touches rules or routes that are not marked as its own.
package policyroute
