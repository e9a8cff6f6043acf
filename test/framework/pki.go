package framework

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// certAuthority is a throwaway certificate authority for a test center: the certificates it
// issues live as long as the test run and are written as PEM files.
type certAuthority struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	CertPEM string // path of the CA's certificate
}

// newCertAuthority makes a CA named cn and writes its certificate to dir/<file>.crt.
func newCertAuthority(dir, file, cn string) (*certAuthority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          randomSerial(),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("making the CA %s: %w", cn, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, file+".crt")
	if err := writePEM(path, "CERTIFICATE", der); err != nil {
		return nil, err
	}
	return &certAuthority{cert: cert, key: key, CertPEM: path}, nil
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
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	tmpl := &x509.Certificate{
		SerialNumber: randomSerial(),
		Subject:      subject,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(7 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
	if edit != nil {
		edit(tmpl)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return "", "", fmt.Errorf("issuing the certificate %s: %w", file, err)
	}
	certPath, keyPath := filepath.Join(dir, file+".crt"), filepath.Join(dir, file+".key")
	if err := writePEM(certPath, "CERTIFICATE", der); err != nil {
		return "", "", err
	}
	if err := writeKey(keyPath, key); err != nil {
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
	return writeKey(path, key)
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(path, "EC PRIVATE KEY", der)
}

func writePEM(path, kind string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600)
}

func randomSerial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		panic(err)
	}
	return n
}
