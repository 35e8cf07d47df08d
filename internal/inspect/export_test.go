package inspect

// SetOwnVPPSocket lets a test stand a simulator in for the forwarder's own VPP.
func SetOwnVPPSocket(socket string) (restore func()) {
	previous := ownVPPSocket
	ownVPPSocket = socket
	return func() { ownVPPSocket = previous }
}
