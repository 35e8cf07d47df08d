// Package policyroute installs a connection's policy routes (IPContext.Policies) in the client's network
// namespace: one ip rule per policy and address family, looking up a routing table that holds the policy's
// routes. NewServer is a drop-in for sdk-kernel's iprule.NewServer() with the same inputs: a kernel mechanism
// (VLAN 0) with a file:// netns URL and an interface name.
//
// Unlike iprule it keeps no memory that the kernel cannot give back:
//   - A policy's table ID is the first usable entry of a probe sequence over hash(connection ID, selector)
//     inside the configured range (default 0x10000000 + 2^24 tables, never 0 or 253-255). A table is usable
//     when it is empty or the kernel shows it is this policy's: our rule with its selector, or only our routes
//     through the connection's link.
//   - Every rule and route carries this forwarder's rtnetlink protocol value (default 250). Nothing without
//     it is ever changed, and a marked rule or route is only deleted when the kernel ties it to the connection
//     being changed.
//   - Each Request reads the rules once and the relevant routes (per table, or in one dump when many tables
//     are involved), and writes only the difference, in batches: routes first, then rules, then deletions.
//     A restarted forwarder recovers by the same path and writes nothing when the kernel is intact.
//
// Rule priorities (default 20000-29999) and IPv4/IPv6 route metrics are derived from the table ID so the
// kernel inserts them in constant time; as with iprule, overlapping selectors have no defined precedence.
// Rule ownership needs the rule protocol attribute (Linux 4.17 and later).
package policyroute
