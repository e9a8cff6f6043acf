package framework

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"os"
	"path/filepath"
	"time"

	edgepki "github.com/kcp-dev/edge-mc/pkg/pki"
)

// certValidity is how long the certificates of a test center are valid: longer than any run.
const certValidity = 7 * 24 * time.Hour

// certAuthority is a throwaway certificate authority for a test center: the certificates it
// issues live as long as the test run and are written as PEM files.
type certAuthority struct {
	ca      *edgepki.Certificate
	CertPEM string // path of the CA's certificate
}

// newCertAuthority makes a CA named cn and writes its certificate to dir/<file>.crt.
func newCertAuthority(dir, file, cn string) (*certAuthority, error) {
	ca, err := edgepki.NewCA(cn, certValidity)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, file+".crt")
	if err := os.WriteFile(path, ca.CertPEM, 0o600); err != nil {
		return nil, err
	}
	return &certAuthority{ca: ca, CertPEM: path}, nil
}

// issueClient writes dir/<file>.crt and .key: a client certificate for user cn in groups.
func (ca *certAuthority) issueClient(dir, file, cn string, groups ...string) (certPath, keyPath string, err error) {
	return ca.issue(dir, file, pkix.Name{CommonName: cn, Organization: groups}, x509.ExtKeyUsageClientAuth, nil)
}

// issueServing writes dir/<file>.crt and .key: a serving certificate for 127.0.0.1 and localhost.
func (ca *certAuthority) issueServing(dir, file string) (certPath, keyPath string, err error) {
	return ca.issue(dir, file, pkix.Name{CommonName: "edge-mc-test-center"}, x509.ExtKeyUsageServerAuth,
		func(c *x509.Certificate) {
			c.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
			c.DNSNames = []string{"localhost"}
		})
}

func (ca *certAuthority) issue(dir, file string, subject pkix.Name, usage x509.ExtKeyUsage, edit func(*x509.Certificate)) (string, string, error) {
	tmpl := &x509.Certificate{
		Subject:     subject,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{usage},
	}
	if edit != nil {
		edit(tmpl)
	}
	c, err := edgepki.New(tmpl, ca.ca, certValidity)
	if err != nil {
		return "", "", err
	}
	certPath, keyPath := filepath.Join(dir, file+".crt"), filepath.Join(dir, file+".key")
	if err := os.WriteFile(certPath, c.CertPEM, 0o600); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(keyPath, c.KeyPEM, 0o600); err != nil {
		return "", "", err
	}
	return certPath, keyPath, nil
}

// writeSigningKey writes a fresh private key to path, for kcp's ServiceAccount token signing: all
// shards share it, so that a token minted on one shard is valid on every other.
func writeSigningKey(path string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	return os.WriteFile(path, edgepki.KeyPEM(key), 0o600)
}
