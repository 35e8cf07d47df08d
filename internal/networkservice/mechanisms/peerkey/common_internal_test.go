package peerkey

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"math/big"
	"testing"

	"github.com/stretchr/testify/require"
)

// sdk-vpp's IPsec server signs a new certificate, with a random serial, on every Request: two of
// them for one key are the same other end; a certificate for another key is another end.
func TestCertificateKeyIsTheKeyNotTheCertificate(t *testing.T) {
	key, other := rsaKey(t), rsaKey(t)
	first, second := certificate(t, key), certificate(t, key)
	require.NotEqual(t, first, second, "the certificates should differ by their serials")
	require.Equal(t, certificateKey(first), certificateKey(second))
	require.NotEqual(t, certificateKey(first), certificateKey(certificate(t, other)))
	require.Equal(t, "not base64!", certificateKey("not base64!"), "what does not parse stands for itself")
}

func rsaKey(t *testing.T) *rsa.PrivateKey {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 1024)
	require.NoError(t, err)
	return key
}

func certificate(t *testing.T, key *rsa.PrivateKey) string {
	t.Helper()
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	require.NoError(t, err)
	template := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: "server"}}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	require.NoError(t, err)
	return base64.StdEncoding.EncodeToString(der)
}
