package controllerkit

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"k8s.io/component-base/metrics"
)

// WriteLimiter bounds the writes (POST, PUT, PATCH, DELETE) in flight to each kcp server, with
// a limit that follows what the server accepts: additive increase, multiplicative decrease.
//
//   - Each write that succeeds while at least half the limit is in use adds 1/limit to it:
//     about one more write in flight per round of writes, up to Max.
//   - A write refused with 429 (Too Many Requests) or 503, or one that fails without an
//     answer, halves the limit, at most once per Cooldown, down to Min.
//   - A write whose latency is more than LatencyFactor times the server's usual latency (a
//     moving average of the last twenty or so) takes a tenth off the limit, at most once per
//     Cooldown: the server queues what it cannot do, and more writes in flight would only queue
//     longer.
//
// Reads and watches pass unlimited: they are cheap for kcp and an informer's watch must never
// wait for a write. client-go itself waits out a 429's Retry-After and sends the write again,
// through the limiter. Each server (a shard, the front-proxy, a virtual workspace's host) has
// its own limit.
type WriteLimiter struct {
	opts LimiterOptions

	mu      sync.Mutex
	servers map[string]*serverLimit
}

// LimiterOptions shape a WriteLimiter.
type LimiterOptions struct {
	// Initial, Min and Max bound the writes in flight to one server (defaults 8, 1, 64).
	Initial, Min, Max int
	// Cooldown is the least time between two decreases (default 500 ms): one burst of 429s is
	// one signal, not many.
	Cooldown time.Duration
	// LatencyFactor: a write slower than this many times the usual latency is a sign of a
	// queueing server (0: the default, 4; negative: latency is no signal).
	LatencyFactor float64
	// LatencyFloor: latencies under it never count as slow (default 250 ms), so that a fast
	// server's jitter is no signal.
	LatencyFloor time.Duration
}

// NewWriteLimiter makes a limiter; Wrap puts it into a client's transport.
func NewWriteLimiter(opts LimiterOptions) *WriteLimiter {
	if opts.Max < 1 {
		opts.Max = 64
	}
	if opts.Min < 1 {
		opts.Min = 1
	}
	if opts.Min > opts.Max {
		opts.Min = opts.Max
	}
	if opts.Initial < opts.Min {
		opts.Initial = min(8, opts.Max)
		opts.Initial = max(opts.Initial, opts.Min)
	}
	if opts.Initial > opts.Max {
		opts.Initial = opts.Max
	}
	if opts.Cooldown <= 0 {
		opts.Cooldown = 500 * time.Millisecond
	}
	if opts.LatencyFactor == 0 {
		opts.LatencyFactor = 4
	}
	if opts.LatencyFloor <= 0 {
		opts.LatencyFloor = 250 * time.Millisecond
	}
	return &WriteLimiter{opts: opts, servers: map[string]*serverLimit{}}
}

// Wrap is a rest.Config's WrapTransport: it limits the writes of every client made from the
// config.
func (l *WriteLimiter) Wrap(rt http.RoundTripper) http.RoundTripper {
	return &limitedTransport{limiter: l, next: rt}
}

// Limit is the present limit of writes in flight to server (a URL's host).
func (l *WriteLimiter) Limit(server string) int { return int(l.server(server).limitNow()) }

// InFlight is the number of writes in flight to server.
func (l *WriteLimiter) InFlight(server string) int {
	s := l.server(server)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inFlight
}

func (l *WriteLimiter) server(host string) *serverLimit {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.servers[host]
	if s == nil {
		s = &serverLimit{opts: l.opts, host: host, limit: float64(l.opts.Initial), now: time.Now}
		l.servers[host] = s
		metricWriteLimit.WithLabelValues(host).Set(s.limit)
		for _, code := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
			metricWriteRefusals.WithLabelValues(host, strconv.Itoa(code)) // served at 0 from the start
		}
	}
	return s
}

// outcome is what became of one write.
type outcome int

const (
	accepted outcome = iota // the server answered, and did not refuse for load
	refused                 // 429 or 503
	failed                  // no answer (connection refused, reset, timed out)
	canceled                // the caller gave up: no signal
)

// serverLimit is the limit of one server.
type serverLimit struct {
	opts LimiterOptions
	host string
	now  func() time.Time

	mu           sync.Mutex
	limit        float64
	inFlight     int
	waiters      []chan struct{}
	lastDecrease time.Time
	// usual is the moving average of the accepted writes' latency (the last 20 or so weigh
	// most): a mix of cheap and dear writes (a status against a workspace) makes it, so that only
	// a write far slower than the mix is a signal.
	usual time.Duration
}

func (s *serverLimit) limitNow() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.limit
}

// acquire waits for a slot under the limit, or for ctx to end.
func (s *serverLimit) acquire(ctx context.Context) error {
	s.mu.Lock()
	if s.inFlight < int(s.limit) && len(s.waiters) == 0 {
		s.inFlight++
		metricWritesInFlight.WithLabelValues(s.host).Set(float64(s.inFlight))
		s.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	s.waiters = append(s.waiters, ch)
	s.mu.Unlock()
	select {
	case <-ch:
		return nil // release handed its slot over
	case <-ctx.Done():
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, w := range s.waiters {
			if w == ch {
				s.waiters = append(s.waiters[:i], s.waiters[i+1:]...)
				return ctx.Err()
			}
		}
		// The slot was handed over just as ctx ended: give it back.
		s.inFlight--
		s.wakeLocked()
		return ctx.Err()
	}
}

// release ends one write and learns from it.
func (s *serverLimit) release(o outcome, latency time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// The limit is in use when at least half of it is taken: a limit nobody reaches says nothing
	// about what the server could take.
	inUse := float64(s.inFlight+len(s.waiters)) >= s.limit/2
	s.inFlight--
	now := s.now()
	switch o {
	case refused, failed:
		s.decreaseLocked(now, 0.5)
	case accepted:
		slow := s.opts.LatencyFactor > 0 && s.usual > 0 && latency > s.opts.LatencyFloor &&
			float64(latency) > s.opts.LatencyFactor*float64(s.usual)
		if s.usual == 0 {
			s.usual = latency
		} else {
			s.usual += (latency - s.usual) / 20
		}
		switch {
		case slow:
			s.decreaseLocked(now, 0.9)
		case inUse && s.limit < float64(s.opts.Max):
			s.limit = min(float64(s.opts.Max), s.limit+1/s.limit)
		}
	}
	metricWriteLimit.WithLabelValues(s.host).Set(s.limit)
	s.wakeLocked()
}

func (s *serverLimit) decreaseLocked(now time.Time, factor float64) {
	if now.Sub(s.lastDecrease) < s.opts.Cooldown {
		return
	}
	s.lastDecrease = now
	s.limit = max(float64(s.opts.Min), s.limit*factor)
}

// wakeLocked hands free slots to waiters, first come first served.
func (s *serverLimit) wakeLocked() {
	for len(s.waiters) > 0 && s.inFlight < int(s.limit) {
		ch := s.waiters[0]
		s.waiters = s.waiters[1:]
		s.inFlight++
		close(ch)
	}
	metricWritesInFlight.WithLabelValues(s.host).Set(float64(s.inFlight))
}

type limitedTransport struct {
	limiter *WriteLimiter
	next    http.RoundTripper
}

func (t *limitedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
	default:
		return t.next.RoundTrip(req)
	}
	s := t.limiter.server(req.URL.Host)
	if err := s.acquire(req.Context()); err != nil {
		return nil, err
	}
	start := time.Now()
	resp, err := t.next.RoundTrip(req)
	latency := time.Since(start)
	o := accepted
	switch {
	case err != nil && req.Context().Err() != nil:
		o = canceled
	case err != nil:
		o = failed
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable:
		o = refused
		metricWriteRefusals.WithLabelValues(s.host, strconv.Itoa(resp.StatusCode)).Inc()
	}
	if o == accepted {
		metricWriteLatency.WithLabelValues(s.host).Observe(latency.Seconds())
	}
	s.release(o, latency)
	return resp, err
}

func (t *limitedTransport) WrappedRoundTripper() http.RoundTripper { return t.next }

var (
	metricWritesInFlight = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace: "edge", Subsystem: "controller", Name: "kcp_writes_in_flight",
		Help:           "Writes from the center's controllers in flight to a kcp server, by server.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"server"})
	metricWriteLimit = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace: "edge", Subsystem: "controller", Name: "kcp_writes_in_flight_limit",
		Help:           "The limit of writes in flight to a kcp server, which grows while the server accepts writes and shrinks on 429s, 503s and rising latency.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"server"})
	metricWriteRefusals = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "edge", Subsystem: "controller", Name: "kcp_write_refusals_total",
		Help:           "Writes a kcp server refused for load, by server and code (429, 503). client-go sends each again after the server's Retry-After.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"server", "code"})
	metricWriteLatency = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace: "edge", Subsystem: "controller", Name: "kcp_write_duration_seconds",
		Help:           "Latency of the writes a kcp server accepted, by server.",
		Buckets:        []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
		StabilityLevel: metrics.ALPHA,
	}, []string{"server"})
)
