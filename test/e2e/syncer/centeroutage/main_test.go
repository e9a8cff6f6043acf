// Package centeroutage tests that an edge cluster rides out an outage of the center on the
// assemblage transport: with the kcp process killed, edge-syncer leaves its edge cluster as last
// applied (and repairs drift from what it last read), and once kcp is back it converges without
// deleting or recreating anything. Assemblages are written by the test, with only the mailbox
// controller running. It has a package of its own because it kills the package's kcp.
package centeroutage

import (
	"os"
	"testing"

	"github.com/kcp-dev/edge-mc/test/framework"
)

func TestMain(m *testing.M) { os.Exit(framework.RunWithKCP(m)) }
