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
//     it is ever changed or deleted, and a marked rule or route is only deleted when the kernel ties it to the
//     connection being changed: our routes through its link, our rules with its selectors on its probe
//     sequence, and our rules looking up tables without a marked route that lie on its probe sequence for
//     the rule's own selector. The last finds what an earlier IP context left (a refresh that changed the
//     client's addresses, after the kernel flushed the link's routes), also after a restart.
//   - A route whose slot (destination, metric) in one of our tables holds someone else's route fails the
//     Request with FailedPrecondition; it is never replaced. New routes are added exclusively.
//   - Each Request reads the namespace's view (package routeview), which costs what the connection has, not
//     what the namespace has, and writes only the difference, in batches: routes first, then rules, then
//     deletions. A restarted forwarder rebuilds the view from the kernel and writes nothing when it is intact.
//
// New rules take the priority just below the lowest one in the configured range (default 20000-29999), so
// the kernel inserts each at the head of its rule list: overlapping selectors are matched newest first.
// IPv4 and IPv6 route metrics are the table ID, so the kernel inserts routes in constant time too. Rule
// ownership needs the rule protocol attribute (Linux 4.17 and later), the view strict dump checking (4.20).
package policyroute
