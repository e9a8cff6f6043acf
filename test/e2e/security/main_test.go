// Package security tests who can reach what: a syncer's credential, from kubectl edge
// prep-for-syncer, reaches its own mailbox and nothing else, and cannot widen its own reach; a
// workload author with access to one workload workspace reaches nothing outside it, and cannot
// make inventory or mailboxes; and no component writes a Secret's value into its log. The kcp
// of the package authenticates two people by static bearer tokens (alice, in group team-a, and
// bob), as an organisation's identity provider would. It keeps Secrets encrypted at rest, as
// docs/operations.md asks of a center: what the center's storage holds of a Secret's value is
// then only what edge-mc itself writes (sealed boxes).
package security

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/kcp-dev/edge-mc/pkg/espw"
	"github.com/kcp-dev/edge-mc/test/framework"
)

func TestMain(m *testing.M) {
	encryption, err := encryptionConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := framework.RunWithKCP(m, framework.WithUsers(
		framework.User{Name: "alice", Groups: []string{"team-a"}},
		framework.User{Name: "bob"},
		framework.User{Name: "carol", Groups: []string{espw.InventoryAdminsGroup}},
		framework.User{Name: "dave"},
	), framework.WithArgs("--encryption-provider-config", encryption))
	os.RemoveAll(filepath.Dir(encryption))
	os.Exit(code)
}

// encryptionConfig writes an EncryptionConfiguration that makes kcp keep Secrets encrypted
// (secretbox, a random key) and returns its path.
func encryptionConfig() (string, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "edge-mc-encryption-")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "encryption.yaml")
	config := fmt.Sprintf(`apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
  - secretbox:
      keys: [{name: key1, secret: %s}]
  - identity: {}
`, base64.StdEncoding.EncodeToString(key))
	return path, os.WriteFile(path, []byte(config), 0o600)
}
