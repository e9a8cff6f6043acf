// Package security tests who can reach what: a syncer's credential, from kubectl edge
// prep-for-syncer, reaches its own mailbox and nothing else, and cannot widen its own reach; a
// workload author with access to one workload workspace reaches nothing outside it, and cannot
// make inventory or mailboxes; and no component writes a Secret's value into its log. The kcp
// of the package authenticates two people by static bearer tokens (alice, in group team-a, and
// bob), as an organisation's identity provider would.
package security

import (
	"os"
	"testing"

	"github.com/kcp-dev/edge-mc/pkg/espw"
	"github.com/kcp-dev/edge-mc/test/framework"
)

func TestMain(m *testing.M) {
	os.Exit(framework.RunWithKCP(m, framework.WithUsers(
		framework.User{Name: "alice", Groups: []string{"team-a"}},
		framework.User{Name: "bob"},
		framework.User{Name: "carol", Groups: []string{espw.InventoryAdminsGroup}},
		framework.User{Name: "dave"},
	)))
}
