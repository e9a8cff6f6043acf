package logging

import (
	"flag"
	"strings"
	"testing"

	"k8s.io/klog/v2"
)

// klogFlags is a flag set with klog's flags, as edge-mc's commands make it.
func klogFlags(t *testing.T, args ...string) *flag.FlagSet {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	klog.InitFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = fs.Set("v", "0")
		_ = fs.Set("vmodule", "")
	})
	return fs
}

func TestCapVerbosityLowersV(t *testing.T) {
	fs := klogFlags(t, "-v=10")
	msg, err := CapVerbosity(fs)
	if err != nil {
		t.Fatal(err)
	}
	if got := fs.Lookup("v").Value.String(); got != "7" {
		t.Errorf("-v is %s, want 7", got)
	}
	if klog.V(8).Enabled() || !klog.V(7).Enabled() {
		t.Errorf("klog logs at V(8): %v, at V(7): %v; want false, true", klog.V(8).Enabled(), klog.V(7).Enabled())
	}
	if !strings.Contains(msg, "-v=10 lowered to 7") || !strings.Contains(msg, "Secrets") {
		t.Errorf("message %q", msg)
	}
}

func TestCapVerbosityLeavesLowLevelsAlone(t *testing.T) {
	for _, v := range []string{"0", "2", "7"} {
		fs := klogFlags(t, "-v="+v, "-vmodule=foo=3")
		msg, err := CapVerbosity(fs)
		if err != nil || msg != "" {
			t.Errorf("-v=%s: %q, %v; want nothing lowered", v, msg, err)
		}
		if got := fs.Lookup("v").Value.String(); got != v {
			t.Errorf("-v=%s became %s", v, got)
		}
	}
}

func TestCapVerbosityLowersVmodule(t *testing.T) {
	fs := klogFlags(t, "-vmodule=request=10,foo=3,round_trippers=9")
	msg, err := CapVerbosity(fs)
	if err != nil {
		t.Fatal(err)
	}
	if got := fs.Lookup("vmodule").Value.String(); got != "request=7,foo=3,round_trippers=7" {
		t.Errorf("-vmodule is %q", got)
	}
	if !strings.Contains(msg, "-vmodule request=10") || !strings.Contains(msg, "-vmodule round_trippers=9") {
		t.Errorf("message %q", msg)
	}
}
