package syncer

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestNextHeartbeatSpreadsAFleet: 300 syncers started in the same second renew, after their first
// renewal, spread over the interval; none waits longer than the interval plus 10%.
func TestNextHeartbeatSpreadsAFleet(t *testing.T) {
	const n, interval, bucket = 300, 30 * time.Second, 3 * time.Second
	rng := rand.New(rand.NewPCG(1, 2))
	renewals := map[int]int{} // second renewals of the fleet, per 3 s bucket
	for range n {
		start := time.Duration(rng.Float64() * float64(time.Second))
		wait := nextHeartbeat(interval, true, rng.Float64)
		if wait <= 0 || wait > interval {
			t.Fatalf("first wait %s, want within (0, %s]", wait, interval)
		}
		renewals[int((start+wait)/bucket)]++
		for range 20 {
			if next := nextHeartbeat(interval, false, rng.Float64); next < interval || next > interval+interval/10 {
				t.Fatalf("wait %s, want within [%s, %s]", next, interval, interval+interval/10)
			}
		}
	}
	// Evenly spread: n / (interval / bucket) = 30 a bucket; all in one wave would be 300.
	for b, count := range renewals {
		if count > 60 {
			t.Errorf("%d of %d syncers renew in the same %s (from %s): the fleet renews in a wave", count, n, bucket, time.Duration(b)*bucket)
		}
	}
	if len(renewals) < 9 {
		t.Errorf("the second renewals fall into %d buckets of %s, want the 10 of the interval: %v", len(renewals), bucket, renewals)
	}
}
