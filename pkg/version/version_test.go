package version

import (
	"runtime"
	"testing"
)

func TestString(t *testing.T) {
	defer func(v string) { Version = v }(Version)
	Version = "v1.2.3-4-gabcdef0-dirty"
	want := "edge-syncer v1.2.3-4-gabcdef0-dirty (" + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + ")"
	if got := String("edge-syncer"); got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
}

// TestImage: only a release's tag has a published image to default to; what git describe gives
// between releases, a dirty tree and a plain go build do not.
func TestImage(t *testing.T) {
	for v, want := range map[string]string{
		"v0.3.0":                  "ghcr.io/kcp-dev/edge-mc/edge-syncer:v0.3.0",
		"v1.12.0-rc.1":            "ghcr.io/kcp-dev/edge-mc/edge-syncer:v1.12.0-rc.1",
		"v0.3.0-beta2":            "ghcr.io/kcp-dev/edge-mc/edge-syncer:v0.3.0-beta2",
		"v0.3.0-4-gabcdef0":       "",
		"v0.3.0-dirty":            "",
		"v0.3.0-4-gabcdef0-dirty": "",
		"abcdef0":                 "",
		"dev":                     "",
		"0.3.0":                   "",
		"v0.3":                    "",
	} {
		got, ok := Image("edge-syncer", v)
		if got != want || ok != (want != "") {
			t.Errorf("Image(edge-syncer, %q) = %q, %v; want %q", v, got, ok, want)
		}
	}
}
