// Package linkroutes keeps the main-table routes through a connection's kernel interface exactly
// as the connection's IP context says.
//
// sdk-kernel's routes element only ever adds (RouteReplace): a route dropped from the IP context on
// heal stays in the client's namespace and keeps attracting traffic (field report 2). This element
// reconciles instead: every route it installs carries the forwarder's rtnetlink protocol mark, and
// on each Request the marked routes on the interface are compared with the desired ones; missing or
// different routes are written, marked routes no longer desired are deleted, matching ones are left
// alone. Routes without the mark (the kernel's own prefix routes, anyone else's) are never touched.
package linkroutes
