package controllerkit

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// record notes when each key was processed.
type record struct {
	mu    sync.Mutex
	times map[string][]time.Time
}

func (r *record) note(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.times == nil {
		r.times = map[string][]time.Time{}
	}
	r.times[key] = append(r.times[key], time.Now())
	return len(r.times[key])
}

func (r *record) count(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.times[key])
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestStuckKeyDoesNotHoldOthers: one key whose processing hangs, and one that keeps failing, do
// not delay the other keys.
func TestStuckKeyDoesNotHoldOthers(t *testing.T) {
	q := NewQueue[string](Options{Name: "test_stuck", Workers: 4, BaseDelay: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	release := make(chan struct{})
	var r record
	done := make(chan struct{})
	go func() {
		q.Run(ctx, func(ctx context.Context, key string) (time.Duration, error) {
			r.note(key)
			switch key {
			case "stuck":
				<-release
			case "failing":
				return 0, errors.New("always fails")
			}
			return 0, nil
		})
		close(done)
	}()
	q.Add("stuck")
	q.Add("failing")
	waitFor(t, "the failing key failed three times", func() bool { return r.count("failing") >= 3 })
	start := time.Now()
	for i := range 200 {
		q.Add(string(rune('a'+i%26)) + string(rune('a'+i/26)))
	}
	waitFor(t, "200 other keys were processed", func() bool {
		for i := range 200 {
			if r.count(string(rune('a'+i%26))+string(rune('a'+i/26))) == 0 {
				return false
			}
		}
		return true
	})
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("200 keys took %s beside a stuck key and a failing one", d)
	}
	if n := q.Failures("failing"); n < 3 {
		t.Errorf("the failing key counts %d failures, want at least 3", n)
	}
	// Its backoff doubles: the gaps between its attempts grow.
	r.mu.Lock()
	ts := r.times["failing"]
	r.mu.Unlock()
	if len(ts) >= 4 && ts[3].Sub(ts[2]) < ts[1].Sub(ts[0]) {
		t.Errorf("the failing key's retries came at %v, %v, %v apart: not backing off", ts[1].Sub(ts[0]), ts[2].Sub(ts[1]), ts[3].Sub(ts[2]))
	}
	close(release)
	cancel()
	<-done
}

func TestRetryHonoursRetryAfter(t *testing.T) {
	q := NewQueue[string](Options{Name: "test_retry_after", Workers: 1, BaseDelay: time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var r record
	go q.Run(ctx, func(ctx context.Context, key string) (time.Duration, error) {
		if r.note(key) == 1 {
			return 0, apierrors.NewTooManyRequests("busy", 1)
		}
		return 0, nil
	})
	q.Add("k")
	waitFor(t, "the key was retried", func() bool { return r.count("k") >= 2 })
	r.mu.Lock()
	gap := r.times["k"][1].Sub(r.times["k"][0])
	r.mu.Unlock()
	if gap < 900*time.Millisecond {
		t.Errorf("a 429 asking for 1 s was retried after %s", gap)
	}
	if q.Failures("k") != 0 {
		t.Errorf("a key that succeeded still counts %d failures", q.Failures("k"))
	}
}

func TestRequeueAfterAndPanic(t *testing.T) {
	q := NewQueue[string](Options{Name: "test_requeue", Workers: 2, BaseDelay: time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var r record
	go q.Run(ctx, func(ctx context.Context, key string) (time.Duration, error) {
		n := r.note(key)
		switch {
		case key == "later" && n == 1:
			return 100 * time.Millisecond, nil
		case key == "panics" && n == 1:
			panic("bad input")
		}
		return 0, nil
	})
	q.Add("later")
	q.Add("panics")
	waitFor(t, "the key asking to be seen later was seen again", func() bool { return r.count("later") == 2 })
	waitFor(t, "the key that panicked was retried", func() bool { return r.count("panics") == 2 })
}

func TestCoalescing(t *testing.T) {
	q := NewQueue[string](Options{Name: "test_coalescing", Workers: 1, Period: 300 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var r record
	go q.Run(ctx, func(ctx context.Context, key string) (time.Duration, error) {
		r.note(key)
		return 0, nil
	})
	q.Add("k")
	waitFor(t, "the first addition was processed at once", func() bool { return r.count("k") == 1 })
	for range 10 {
		q.Add("k")
	}
	time.Sleep(100 * time.Millisecond)
	if n := r.count("k"); n != 1 {
		t.Errorf("additions within the period were processed at once (%d times)", n)
	}
	waitFor(t, "the additions within the period were processed as one at its end", func() bool { return r.count("k") == 2 })
	time.Sleep(400 * time.Millisecond)
	if n := r.count("k"); n != 2 {
		t.Errorf("ten additions within one period were processed %d times, want once", n-1)
	}
}

// TestBackoff: jittered, doubling, bounded.
func TestBackoff(t *testing.T) {
	b := &backoff[string]{base: 100 * time.Millisecond, max: time.Second, failures: map[string]int{}}
	wants := []time.Duration{100, 200, 400, 800, 1000, 1000}
	for i, w := range wants {
		w *= time.Millisecond
		d := b.When("k")
		if d < w/2 || d > w {
			t.Errorf("failure %d waits %s, want between %s and %s", i+1, d, w/2, w)
		}
	}
	if d := b.When("other"); d > 100*time.Millisecond {
		t.Errorf("another key's first failure waits %s: keys share a backoff", d)
	}
	b.Forget("k")
	if b.NumRequeues("k") != 0 {
		t.Error("Forget kept the failures")
	}
}
