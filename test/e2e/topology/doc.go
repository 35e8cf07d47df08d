// Package topology builds the harness's network: a fabric namespace holding a
// bridge, node namespaces plugged into it by veth (each node with its own
// address, which is also its tunnel IP), and pod namespaces that belong to a
// node only by convention (the forwarder of that node wires them). Every
// namespace carries the run's prefix, so a run can delete exactly its own and
// sweep what a killed earlier run left behind.
package topology
