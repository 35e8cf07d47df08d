package svidtest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net/url"
	"testing"
	"time"

	"github.com/spiffe/go-spiffe/v2/bundle/x509bundle"
	"github.com/spiffe/go-spiffe/v2/spiffeid"
	"github.com/spiffe/go-spiffe/v2/svid/x509svid"
)

// TrustDomain is a CA for one SPIFFE trust domain.
type TrustDomain struct {
	id     spiffeid.TrustDomain
	ca     *x509.Certificate
	caKey  crypto.Signer
	bundle *x509bundle.Bundle
	t      testing.TB
}

// Identity is an SVID with its trust bundle; it satisfies x509svid.Source and x509bundle.Source.
type Identity struct {
	svid   *x509svid.SVID
	bundle *x509bundle.Bundle
}

// NewTrustDomain creates a CA for trustDomain (e.g. "test.nsm").
func NewTrustDomain(t testing.TB, trustDomain string) *TrustDomain {
	id := spiffeid.RequireTrustDomainFromString(trustDomain)
	key := newKey(t)
	template := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: trustDomain},
		URIs:                  []*url.URL{id.ID().URL()},
		NotBefore:             time.Now().Add(-time.Minute),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	ca := createCertificate(t, template, template, key.Public(), key)
	return &TrustDomain{id: id, ca: ca, caKey: key, bundle: x509bundle.FromX509Authorities(id, []*x509.Certificate{ca}), t: t}
}

// Issue returns an identity for path in the trust domain (e.g. "/forwarder").
func (d *TrustDomain) Issue(path string) *Identity {
	id, err := spiffeid.FromPath(d.id, path)
	if err != nil {
		d.t.Fatal(err)
	}
	key := newKey(d.t)
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		d.t.Fatal(err)
	}
	template := &x509.Certificate{
		SerialNumber: serial,
		URIs:         []*url.URL{id.URL()},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	leaf := createCertificate(d.t, template, d.ca, key.Public(), d.caKey)
	return &Identity{svid: &x509svid.SVID{ID: id, Certificates: []*x509.Certificate{leaf}, PrivateKey: key}, bundle: d.bundle}
}

// GetX509SVID implements x509svid.Source.
func (i *Identity) GetX509SVID() (*x509svid.SVID, error) { return i.svid, nil }

// GetX509BundleForTrustDomain implements x509bundle.Source.
func (i *Identity) GetX509BundleForTrustDomain(td spiffeid.TrustDomain) (*x509bundle.Bundle, error) {
	return i.bundle.GetX509BundleForTrustDomain(td)
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func createCertificate(t testing.TB, template, parent *x509.Certificate, public crypto.PublicKey, signer crypto.Signer) *x509.Certificate {
	der, err := x509.CreateCertificate(rand.Reader, template, parent, public, signer)
	if err != nil {
		t.Fatal(err)
	}
	certificate, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return certificate
}
