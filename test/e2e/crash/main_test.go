// Package crash tests that a fan-out to a fleet of 50 edge clusters survives kill -9 of each of
// the processes that carry it (the center kcp, edge-controller-manager, a syncer) at seeded
// random points: every edge converges to the desired state, no edge object is deleted,
// recreated or duplicated, and no syncer needs a new credential. It has a package of its own
// because it kills the package's kcp.
package crash

import (
	"os"
	"testing"

	"github.com/kcp-dev/edge-mc/test/framework"
)

func TestMain(m *testing.M) { os.Exit(framework.RunWithKCP(m)) }
