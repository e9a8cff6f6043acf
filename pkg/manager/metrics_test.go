package manager

import "testing"

func TestReadinessGauges(t *testing.T) {
	waiting, standing := "waiting for the ESPW", standingBy
	ready, leader := gaugeOf(map[string]bool{LeaderCheck: true}), gaugeOf(nil)
	for _, tc := range []struct {
		name              string
		why               *string
		running           bool
		wantReady, wantLd float64
	}{
		{"not running", nil, false, 0, 0},
		{"leads", nil, true, 1, 1},
		{"stands by", &standing, true, 1, 0},
		{"waiting", &waiting, true, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			readyz := func(excluded map[string]bool) (bool, string) { return readyGiven(tc.why, excluded) }
			if tc.running {
				serving.Store(&readyz)
				defer serving.Store(nil)
			}
			if got := ready(); got != tc.wantReady {
				t.Errorf("edge_controller_ready = %v, want %v", got, tc.wantReady)
			}
			if got := leader(); got != tc.wantLd {
				t.Errorf("edge_controller_leader = %v, want %v", got, tc.wantLd)
			}
		})
	}
}
