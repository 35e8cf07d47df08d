// Package svidtest issues in-memory SPIFFE identities (a trust domain CA and X.509 SVIDs) so
// that tests can run mTLS exactly as production does, without a spire agent.
package svidtest
