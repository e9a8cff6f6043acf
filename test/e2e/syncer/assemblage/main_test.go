// Package assemblage tests edge-syncer on the assemblage transport by itself: a real kcp whose
// edge-controller-manager runs the mailbox controller only, so that each test writes the
// assemblages into its mailbox as the placement translator would (framework.WriteAssemblage), and
// edge-syncer processes applying them to real edge clusters: logical clusters of the run's edge
// kcp, and a real Kubernetes control plane with a kwok node. Package syncer runs the syncer in the
// whole pipeline; the two are separate packages so that `make test-e2e` runs them side by side.
package assemblage

import (
	"os"
	"testing"

	"github.com/kcp-dev/edge-mc/test/framework"
)

func TestMain(m *testing.M) { os.Exit(framework.RunWithKCP(m)) }
