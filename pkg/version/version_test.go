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
