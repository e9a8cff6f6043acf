// Package api tests the foundation end to end against a real kcp: kubectl edge init and ensure,
// every edge.kcp.io kind and the workload kinds served in the workspaces, and admission refusing
// malformed objects with messages that say what is wrong.
package api

import (
	"os"
	"testing"

	"github.com/kcp-dev/edge-mc/test/framework"
)

func TestMain(m *testing.M) { os.Exit(framework.RunWithKCP(m)) }
