// Package vppsim starts a simulated VPP that the unmodified forwarder (or any govpp
// socketclient user) talks to over VPP's real API socket protocol, with a real kernel
// side (taps, af_packet, VXLAN over UDP) and a packet path that only follows what was
// configured. Tests use Start; the vppsim command wraps the same thing.
package vppsim
