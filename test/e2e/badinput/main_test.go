// Package badinput tests what a user sees when they give edge-mc bad input through placements,
// against a real kcp, edge-controller-manager and edge-syncers writing into edge clusters: an
// EdgePlacement selecting nothing, a downsync naming a resource the workspace does not have, a
// Customizer that cannot be applied. Each case must end in a condition (and `kubectl edge
// status` output) that names the object and says how to fix it, must leave a second, good
// placement of the same workspace converging meanwhile, and must clear when the input is fixed.
package badinput

import (
	"os"
	"testing"

	"github.com/kcp-dev/edge-mc/test/framework"
)

func TestMain(m *testing.M) { os.Exit(framework.RunWithKCP(m)) }
