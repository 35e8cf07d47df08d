// Package peerkey rebuilds this forwarder's end of an encrypted tunnel when the other end comes
// back with another key, as it does after its forwarder restarted.
//
// sdk-vpp's wireguard and IPsec elements build their end once per connection and keep it on
// every later Request, whatever the other end now says. A restarted forwarder knows nothing of
// its previous run's keys: it answers a heal with a wireguard key or an IPsec (IKEv2) RSA key
// of its new run. Across a heal in which only one of the two forwarders restarted:
//   - wireguard: sdk-vpp adds a peer for the new key and keeps the old one on the interface
//     until Close, each peer with 0.0.0.0/0 and ::/0 allowed; the old one keeps sending
//     handshakes to a key nobody holds.
//   - IPsec: sdk-vpp keeps the IKEv2 profile that authenticates the other end by its previous
//     certificate, so the other end's new initiation, or answer, fails authentication, and the
//     initiator never initiates again: the tunnel stays down.
//
// NewServer and NewClient compare the other end's key with the one this end was built for (for
// IPsec, the public key in the certificate: sdk-vpp signs a new certificate on every Request) and,
// when it changed, remove what sdk-vpp keeps for the old key before sdk-vpp's element builds for
// the new one: the wireguard peer of the old key; the IPsec interface and IKEv2 profile, which
// sdk-vpp then creates again and, on the client's side, initiates.
package peerkey
