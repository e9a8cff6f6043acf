package manager

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// TestVersionLabelValue: every version a build can carry makes a valid label value for the
// leader's Lease (an invalid one would fail every renewal, and leadership with it).
func TestVersionLabelValue(t *testing.T) {
	for v, want := range map[string]string{
		"v0.3.0":                  "v0.3.0",
		"v0.3.0-4-gabcdef0-dirty": "v0.3.0-4-gabcdef0-dirty",
		"dev":                     "dev",
		"v1.0.0+build.5":          "v1.0.0_build.5",
		"":                        "unknown",
		"-+-":                     "unknown",
		strings.Repeat("a", 70):   strings.Repeat("a", 63),
	} {
		got := VersionLabelValue(v)
		if got != want {
			t.Errorf("VersionLabelValue(%q) = %q, want %q", v, got, want)
		}
		if errs := validation.IsValidLabelValue(got); len(errs) > 0 {
			t.Errorf("VersionLabelValue(%q) = %q, not a label value: %v", v, got, errs)
		}
	}
}
