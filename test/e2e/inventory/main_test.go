// Package inventory tests the mailbox controller and the inventory verbs of kubectl edge end to
// end, against a real kcp and a real edge-controller-manager process: mailboxes appear and go with
// their SyncTargets, survive controller crashes without duplicates or orphans, and the syncer
// credential from prep-for-syncer reaches its own mailbox and nothing else.
package inventory

import (
	"os"
	"testing"

	"github.com/kcp-dev/edge-mc/test/framework"
)

func TestMain(m *testing.M) { os.Exit(framework.RunWithKCP(m)) }
