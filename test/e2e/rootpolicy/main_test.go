// Package rootpolicy tests what kcp's default policy lets any authenticated identity do in the
// root workspace (read its workspace listing, its LogicalCluster and its discovery), and that
// an operator can close that with root's RBAC, across a kcp restart, without disturbing
// edge-mc. It has a package of its own because it changes root's policy and restarts kcp.
package rootpolicy

import (
	"os"
	"testing"

	"github.com/kcp-dev/edge-mc/test/framework"
)

func TestMain(m *testing.M) {
	os.Exit(framework.RunWithKCP(m, framework.WithUsers(framework.User{Name: "alice", Groups: []string{"team-a"}})))
}
