// Package startup runs the forwarder's start-up phases in order (telemetry, VPP, VPP's clock,
// uplink, journal, leftovers, identity, endpoint, serve, register), each registering with the
// lifecycle how it is undone, so that a failed start-up and a shutdown release the same things.
package startup
