// Package routeview keeps, per network namespace, what the forwarder's kernel-state elements decide
// on: every ip rule, and every route outside the local table, with the indexes those elements ask
// for (routes by slot and by table, marked routes by link, rules by table, rule priorities, tables
// whose marked rules look up nothing). It also writes rules and routes in batches.
//
// The kernel stays the only source of truth. A view is built from one rule dump and one route dump
// per family, and kept true by an rtnetlink subscription opened before those dumps: every
// notification is applied in order, idempotently, before the view is read or after it is written.
// Where the kernel removes routes without a notification (a link going down or away, an address
// deleted, a nexthop object deleted), the view re-reads the routes of the links concerned; when the
// subscription overruns, it rebuilds itself from dumps. A new instance after a restart therefore
// rebuilds the same view from the same kernel and, given the same requests, decides the same.
//
// A Registry hands out one view per namespace, locked for one reconciliation at a time. Views are
// held on behalf of connections (Hold, Release) and closed a little while after the last one lets
// go: the subscription keeps a reference to the namespace.
package routeview
