package main

import (
	"reflect"
	"testing"
	"time"
)

func TestWaves(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	// Two destinations at a time, each done 5 s after its arrival; the next pair arrives 1 s
	// after the first pair is done; a fifth alone.
	spans := []span{
		{at(12), at(17)}, {at(0), at(5)}, {at(0.2), at(5.2)}, {at(6), at(11)}, {at(6.1), at(11.3)},
	}
	waves := wavesOf(spans, 2)
	want := []wave{{at(0), at(5.2), 2}, {at(6), at(11.3), 2}, {at(12), at(17), 1}}
	if !reflect.DeepEqual(waves, want) {
		t.Fatalf("wavesOf = %+v, want %+v", waves, want)
	}
	secs := waveSeconds(waves)
	wantSecs := []float64{6, 6, 5}
	for i := range wantSecs {
		if d := secs[i] - wantSecs[i]; d > 1e-9 || d < -1e-9 {
			t.Errorf("waveSeconds = %v, want %v", secs, wantSecs)
			break
		}
	}
	if got := maxOverlap(spans); got != 2 {
		t.Errorf("maxOverlap = %d, want 2", got)
	}
	// A span ending as another starts does not overlap it; three that do, do.
	if got := maxOverlap([]span{{at(0), at(1)}, {at(1), at(2)}}); got != 1 {
		t.Errorf("maxOverlap of touching spans = %d, want 1", got)
	}
	if got := maxOverlap([]span{{at(0), at(3)}, {at(1), at(4)}, {at(2), at(5)}}); got != 3 {
		t.Errorf("maxOverlap of three overlapping spans = %d, want 3", got)
	}
	if wavesOf(nil, 2) != nil || wavesOf(spans, 0) != nil {
		t.Error("wavesOf of nothing, or of size 0, must be nil")
	}
}

func TestCeilDiv(t *testing.T) {
	for _, c := range []struct{ n, d, want int }{{1000, 100, 10}, {30, 3, 10}, {31, 4, 8}, {1, 5, 1}, {0, 3, 0}} {
		if got := ceilDiv(c.n, c.d); got != c.want {
			t.Errorf("ceilDiv(%d, %d) = %d, want %d", c.n, c.d, got, c.want)
		}
	}
}
