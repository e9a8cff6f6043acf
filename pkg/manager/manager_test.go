package manager

import (
	"slices"
	"strings"
	"testing"
)

// TestControllers: every center controller can be named, the up-sync return path too, and a
// typo is refused with the list.
func TestControllers(t *testing.T) {
	all := AvailableControllers()
	if want := []string{"mailbox", "placement-translator", "push-host", "scheduler", "status-summarizer", "upsync"}; !slices.Equal(all, want) {
		t.Errorf("AvailableControllers() = %v, want %v", all, want)
	}
	if err := ValidateControllers([]string{"upsync"}); err != nil {
		t.Errorf("--controllers upsync: %v", err)
	}
	err := ValidateControllers([]string{"placement-translater"})
	if err == nil || !strings.Contains(err.Error(), "upsync") {
		t.Errorf("a typo: %v, want an error listing the known controllers", err)
	}
}
