// Package spire brings up a real SPIRE server and one SPIRE agent per node in a
// temporary directory, attests each agent with a join token and registers
// workload entries keyed on the workload's binary path, so that every harness
// process (registry, nsmgr, forwarder, endpoint, client) gets its own SVID from
// the workload API. Nothing here fakes a certificate.
package spire
