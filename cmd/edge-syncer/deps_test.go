package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoCenterControllers checks that the edge agent's binary carries no center controller: the
// contract it shares with the center is package transport.
func TestNoCenterControllers(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, controller := range []string{"pkg/mailbox", "pkg/placement-translator", "pkg/upsync", "pkg/status-summarizer", "pkg/scheduler", "pkg/manager"} {
			if pkg == "github.com/kcp-dev/edge-mc/"+controller || strings.HasPrefix(pkg, "github.com/kcp-dev/edge-mc/"+controller+"/") {
				t.Errorf("edge-syncer depends on the center controller package %s", pkg)
			}
		}
	}
}
