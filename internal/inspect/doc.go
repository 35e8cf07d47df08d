// Package inspect is the `forwarder-vpp inspect` subcommand: what the forwarder owns, read from the
// journal, VPP, the forwarder's namespace and the client namespaces the journal names, per
// connection, then what is marked as the forwarder's that no connection accounts for (orphans) and
// foreign state in the forwarder's table range.
//
// It only reads, with the readers the forwarder itself uses: journal.Read and journal.Locked (the
// journal lock is looked at in /proc/locks, never taken, so a forwarder starting meanwhile is not
// held up), restore's VPP scan (dumps only), netnsid (namespaces opened by recorded identity) and
// routeview (rule and route dumps). A VPP is only ever dialled, never started: the external one at
// NSM_VPP_API_SOCKET when that socket exists, else the one the forwarder starts
// (vppconn.OwnSocket), as the forwarder chooses. What it cannot read (the journal, VPP) is in the
// report and named on stderr, and the exit code is then 1.
package inspect
