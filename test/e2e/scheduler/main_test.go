// Package scheduler tests the edge scheduler end to end, against a real kcp and a real
// edge-controller-manager process running the scheduler: EdgePlacements resolve to the right
// destinations in their SinglePlacementSlices and status, and stay right as placements,
// Locations, SyncTargets and inventory workspaces come, change and go.
package scheduler

import (
	"os"
	"testing"

	"github.com/kcp-dev/edge-mc/test/framework"
)

func TestMain(m *testing.M) { os.Exit(framework.RunWithKCP(m)) }
