// Package linkroutes keeps the main-table routes through a connection's kernel interface exactly
// as the connection's IP context says, on both ends of the cross-connect: NewServer in the client's
// namespace, NewClient in the endpoint's.
//
// sdk-kernel's routes elements only ever add (RouteReplace): a route dropped from the IP context on
// heal stays in the namespace and keeps attracting traffic (field report 2), and a replace
// overwrites whatever route has the same destination and metric. These elements reconcile instead:
// every route they install carries the forwarder's rtnetlink protocol mark, and on each Request the
// marked routes on the interface are compared with the desired ones; missing or different routes
// are written, marked routes no longer desired are deleted, matching ones are left alone. Routes
// without the mark (the kernel's own prefix routes, the pod's default route, anyone else's) are
// never touched: a desired route whose slot holds one fails the Request with FailedPrecondition
// before anything is written, unless it is the kernel's own route through the same interface to
// the same next hop, which already does what was asked. Close deletes only marked routes.
//
// Both read the namespace through a routeview.View, so a Request costs what its connection has.
package linkroutes
