// Package summarizer tests the status summarizer end to end: a real kcp with
// edge-controller-manager (all controllers), edge-syncer processes and edge clusters (logical
// clusters of a second kcp, where the test sets the edge status, and a real Kubernetes control
// plane with a kwok node, where the real controllers do), checked through what a user reads: the
// EdgePlacement's status, the workload objects' annotations and status, and kubectl edge status.
package summarizer

import (
	"os"
	"testing"

	"github.com/kcp-dev/edge-mc/test/framework"
)

func TestMain(m *testing.M) { os.Exit(framework.RunWithKCP(m)) }
