// Package outage tests that edge clusters ride out an outage of the center: with the kcp process
// killed, or with a syncer's connection to it cut, edge-syncer leaves its edge cluster exactly as
// last applied, and once the center is back it converges without deleting or recreating
// anything that did not change. It has a package of its own because it kills the package's kcp.
package outage

import (
	"os"
	"testing"

	"github.com/kcp-dev/edge-mc/test/framework"
)

func TestMain(m *testing.M) { os.Exit(framework.RunWithKCP(m)) }
