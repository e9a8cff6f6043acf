// Package translator tests the placement translator end to end, against a real kcp and a real
// edge-controller-manager process running the mailbox controller, the scheduler and the
// translator: two workload workspaces, two inventory workspaces and four SyncTargets. The
// selected objects arrive, customised, in every destination's mailbox, and stay in step as
// objects, Customizers, Locations and placements change, across a restart of the controller.
package translator

import (
	"os"
	"testing"

	"github.com/kcp-dev/edge-mc/test/framework"
)

func TestMain(m *testing.M) { os.Exit(framework.RunWithKCP(m)) }
