package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestBinariesSet(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	var b binaries
	for _, v := range []string{"pinned=bin/kcp", "old=/opt/kcp-v0.28.1"} {
		if err := b.Set(v); err != nil {
			t.Fatalf("Set(%q): %v", v, err)
		}
	}
	want := []binary{{"pinned", filepath.Join(wd, "bin", "kcp")}, {"old", "/opt/kcp-v0.28.1"}}
	if len(b) != len(want) || b[0] != want[0] || b[1] != want[1] {
		t.Errorf("got %+v, want %+v: a relative path is taken from the working directory, since kcp runs in a directory of its own", b, want)
	}
	for _, v := range []string{"bin/kcp", "=bin/kcp", "pinned="} {
		if err := b.Set(v); err == nil {
			t.Errorf("Set(%q) accepted it; want an error asking for label=path", v)
		}
	}
}
