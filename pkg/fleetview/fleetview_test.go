package fleetview

import "testing"

// A collector's value reads as the terminal and the web page both show it.
func TestCollectedCell(t *testing.T) {
	for raw, want := range map[string]string{"": "<none>", "null": "<none>", `"nginx:1"`: "nginx:1", "6": "6", "2.5": "2.5", "true": "true", `["a",1]`: `["a",1]`, `""`: ""} {
		if got := CollectedCell([]byte(raw)); got != want {
			t.Errorf("CollectedCell(%s) = %q, want %q", raw, got, want)
		}
	}
}
