package quickstart

import (
	"os"
	"testing"

	"github.com/kcp-dev/edge-mc/test/framework"
)

// TestMain runs the tests without the harness's kcp: the page starts its own.
func TestMain(m *testing.M) {
	code := m.Run()
	framework.RemoveCommands()
	os.Exit(code)
}
