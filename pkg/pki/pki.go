// Package pki makes the X.509 certificates that edge-mc makes itself: the CA and serving
// certificates of edge-controller-manager's admission webhook, and, in the tests, those of the
// edge clusters and centers the harness starts. Keys are ECDSA P-256; certificates are returned
// parsed and PEM-encoded. Go's crypto/x509 does the work; this is only its common use here.
package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"time"
)

// Certificate is a certificate with its private key, parsed and PEM-encoded.
type Certificate struct {
	Cert            *x509.Certificate
	Key             *ecdsa.PrivateKey
	CertPEM, KeyPEM []byte
}

// New completes template with a fresh key, a random serial number and a validity from an hour
// ago (clocks differ) to validity from now, and signs it with parent, or with its own key if
// parent is nil (a self-signed CA).
func New(template *x509.Certificate, parent *Certificate, validity time.Duration) (*Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	template.SerialNumber = serial
	template.NotBefore = time.Now().Add(-time.Hour)
	template.NotAfter = time.Now().Add(validity)
	signer, signerCert := key, template
	if parent != nil {
		signer, signerCert = parent.Key, parent.Cert
	}
	der, err := x509.CreateCertificate(rand.Reader, template, signerCert, &key.PublicKey, signer)
	if err != nil {
		return nil, fmt.Errorf("signing the certificate %q: %w", template.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &Certificate{
		Cert:    cert,
		Key:     key,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  KeyPEM(key),
	}, nil
}

// NewCA is New for a certificate authority named cn.
func NewCA(cn string, validity time.Duration) (*Certificate, error) {
	return New(&x509.Certificate{
		Subject:               pkixName(cn),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}, nil, validity)
}

// Parse reads a certificate and its ECDSA key from PEM.
func Parse(certPEM, keyPEM []byte) (*Certificate, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, err
	}
	key, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("the key is a %T, not an ECDSA key", pair.PrivateKey)
	}
	return &Certificate{Cert: cert, Key: key, CertPEM: certPEM, KeyPEM: keyPEM}, nil
}

// TLS is the certificate for a tls.Config.
func (c *Certificate) TLS() (*tls.Certificate, error) {
	pair, err := tls.X509KeyPair(c.CertPEM, c.KeyPEM)
	if err != nil {
		return nil, err
	}
	return &pair, nil
}

// KeyPEM encodes an ECDSA private key as PEM (SEC 1, "EC PRIVATE KEY").
func KeyPEM(key *ecdsa.PrivateKey) []byte {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		// Only fails for curves that x509 does not know; P-256 is one it knows.
		panic(errors.New("encoding an ECDSA P-256 key: " + err.Error()))
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
}

func pkixName(cn string) pkix.Name { return pkix.Name{CommonName: cn} }
