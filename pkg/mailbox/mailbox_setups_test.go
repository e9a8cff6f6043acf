package mailbox

import (
	"testing"
	"time"
)

func TestSetupSlots(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	c := &Controller{cfg: Config{MaxSetups: 2}, setups: map[string]time.Time{}, now: func() time.Time { return now }}

	for _, step := range []struct {
		what     string
		do       func()
		name     string
		admitted bool
	}{
		{"first slot", nil, "a", true},
		{"second slot", nil, "b", true},
		{"the same mailbox again keeps its slot", nil, "a", true},
		{"full", nil, "c", false},
		{"a finished frees a slot", func() { c.endSetup("a") }, "c", true},
		{"full again", nil, "d", false},
		{"a slot held past the timeout is freed", func() { now = now.Add(setupSlotTimeout + time.Second) }, "d", true},
	} {
		if step.do != nil {
			step.do()
		}
		if got := c.admitSetup(step.name); got != step.admitted {
			t.Fatalf("%s: admitSetup(%q) = %v, want %v (slots %v)", step.what, step.name, got, step.admitted, c.setups)
		}
	}
}
