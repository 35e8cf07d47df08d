// Package vppsimtest has the test helpers the simulator's tests use and the forwarder's
// tests can share: throwaway network namespaces that clean up after themselves, running
// code inside one, and an ICMP echo that needs no ping binary.
package vppsimtest
