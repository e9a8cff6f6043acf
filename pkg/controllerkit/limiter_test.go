package controllerkit

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// clock is a settable time for serverLimit.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }
func newServer(opts LimiterOptions) (*serverLimit, *clock) {
	l := NewWriteLimiter(opts)
	s := l.server("test")
	c := &clock{t: time.Unix(0, 0)}
	s.now = c.now
	return s, c
}

// fill takes every slot the limit allows, and says how many.
func fill(t *testing.T, s *serverLimit) int {
	t.Helper()
	n := 0
	for {
		s.mu.Lock()
		free := s.inFlight < int(s.limit)
		s.mu.Unlock()
		if !free {
			return n
		}
		if err := s.acquire(context.Background()); err != nil {
			t.Fatal(err)
		}
		n++
	}
}

func TestLimitGrowsWhileWritesSucceed(t *testing.T) {
	s, _ := newServer(LimiterOptions{Initial: 4, Max: 32})
	for round := 0; round < 10; round++ {
		n := fill(t, s)
		for range n {
			s.release(accepted, 10*time.Millisecond)
		}
	}
	if got := s.limitNow(); got < 8 || got > 14 {
		t.Errorf("after 10 full rounds of accepted writes from a limit of 4, the limit is %.1f, want 8 to 14 (one more per round while at least half the limit is in use)", got)
	}
	for range 1000 {
		fill(t, s)
		for s.inFlight > 0 {
			s.release(accepted, 10*time.Millisecond)
		}
	}
	if got := s.limitNow(); got != 32 {
		t.Errorf("the limit grew to %.1f, want it held at Max 32", got)
	}
}

func TestLimitDoesNotGrowWhenUnused(t *testing.T) {
	s, _ := newServer(LimiterOptions{Initial: 8, Max: 64})
	for range 1000 {
		if err := s.acquire(context.Background()); err != nil {
			t.Fatal(err)
		}
		s.release(accepted, 10*time.Millisecond)
	}
	if got := s.limitNow(); got != 8 {
		t.Errorf("one write at a time moved the limit to %.1f, want 8: a limit nobody uses is no evidence", got)
	}
}

func TestLimitHalvesOnRefusalOncePerCooldown(t *testing.T) {
	s, c := newServer(LimiterOptions{Initial: 32, Max: 64, Cooldown: time.Second})
	n := fill(t, s)
	if n != 32 {
		t.Fatalf("took %d slots at a limit of 32", n)
	}
	// A burst of refusals is one signal.
	for range 10 {
		s.release(refused, 0)
	}
	if got := s.limitNow(); got != 16 {
		t.Errorf("after a burst of 429s the limit is %.1f, want 16", got)
	}
	if got := fill(t, s); got != 0 {
		t.Errorf("with 22 writes in flight and a limit of 16, %d more were let through", got)
	}
	c.advance(2 * time.Second)
	s.release(failed, 0)
	if got := s.limitNow(); got != 8 {
		t.Errorf("a failure after the cooldown left the limit at %.1f, want 8", got)
	}
	for range 20 {
		c.advance(2 * time.Second)
		s.release(refused, 0)
		if s.inFlight == 0 {
			break
		}
	}
	if got := s.limitNow(); got != 1 {
		t.Errorf("refusals after refusals left the limit at %.1f, want Min 1", got)
	}
}

func TestLimitShrinksWhenLatencyRises(t *testing.T) {
	s, c := newServer(LimiterOptions{Initial: 20, Max: 64})
	fill(t, s)
	s.release(accepted, 20*time.Millisecond)
	c.advance(time.Second)
	s.release(accepted, 2*time.Second) // 100 times the usual
	if got := s.limitNow(); got >= 20 {
		t.Errorf("a write 100 times slower than usual left the limit at %.1f, want less than 20", got)
	}
	before := s.limitNow()
	c.advance(time.Second)
	s.release(accepted, 100*time.Millisecond) // slower than usual, but under the floor
	if got := s.limitNow(); got < before {
		t.Errorf("a write of 100 ms, under LatencyFloor, shrank the limit from %.1f to %.1f", before, got)
	}
}

func TestWaiterLeavesWhenItsContextEnds(t *testing.T) {
	s, _ := newServer(LimiterOptions{Initial: 1, Max: 1})
	if err := s.acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.acquire(ctx) }()
	cancel()
	if err := <-done; err == nil {
		t.Fatal("acquire returned without error after its context ended, with no slot free")
	}
	s.release(accepted, time.Millisecond)
	if s.inFlight != 0 || len(s.waiters) != 0 {
		t.Errorf("after the only write ended, %d in flight and %d waiting, want none", s.inFlight, len(s.waiters))
	}
}

// TestTransportLimitsWritesNotReads runs writes through Wrap against an HTTP server that
// refuses with 429 while a switch is on, and checks what the server saw.
func TestTransportLimitsWritesNotReads(t *testing.T) {
	var refuse atomic.Bool
	var inFlight, most, reads atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			reads.Add(1)
			time.Sleep(20 * time.Millisecond)
			return
		}
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(5 * time.Millisecond)
		if refuse.Load() {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
		}
	}))
	defer srv.Close()
	l := NewWriteLimiter(LimiterOptions{Initial: 4, Max: 16, Cooldown: time.Millisecond})
	client := &http.Client{Transport: l.Wrap(http.DefaultTransport)}
	host := strings.TrimPrefix(srv.URL, "http://")
	send := func(method string, n int) {
		var wg sync.WaitGroup
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, _ := http.NewRequest(method, srv.URL, nil)
				resp, err := client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
			}()
		}
		wg.Wait()
	}
	send(http.MethodGet, 40)
	if got := l.Limit(host); got != 4 {
		t.Errorf("40 reads moved the write limit to %d", got)
	}
	for range 20 {
		send(http.MethodPatch, 40)
	}
	grown := l.Limit(host)
	if grown <= 4 {
		t.Errorf("800 accepted writes, 40 at a time, left the limit at %d, want it above the initial 4", grown)
	}
	if m := most.Load(); int(m) > grown {
		t.Errorf("the server saw %d writes at once, more than the limit ever was (%d)", m, grown)
	}
	refuse.Store(true)
	send(http.MethodPost, 40)
	if got := l.Limit(host); got > grown/2 {
		t.Errorf("after 429s the limit is %d, want at most half of %d", got, grown)
	}
	if got := l.InFlight(host); got != 0 {
		t.Errorf("%d writes still counted in flight after all ended", got)
	}
}
