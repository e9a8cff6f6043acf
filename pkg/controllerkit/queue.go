// Package controllerkit is what the center's controllers share: a work queue with workers, one
// retry policy, logging and metrics (Queue), and a limit on the writes in flight to kcp that
// follows what kcp accepts (WriteLimiter).
//
// The queue is client-go's workqueue (deduplication, a key processed by one worker at a time,
// its depth, latency and work-duration metrics under the controller's name) with a per-key
// backoff and no queue-wide rate limit: one key that keeps failing waits longer and longer, and
// never delays another. A failed key is retried after its backoff, or after the delay kcp asked
// for (Retry-After), whichever is longer; a key is never dropped. A retry is logged at V(2), a
// key that has failed FailuresBeforeError times in a row as an error, and a refusal for a missing
// right always as an error naming the fix.
package controllerkit

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
)

// Defaults of Options.
const (
	DefaultBaseDelay = 100 * time.Millisecond
	DefaultMaxDelay  = 2 * time.Minute
	// FailuresBeforeError is how many failures in a row of one key are logged at V(2) before
	// they are logged as errors.
	FailuresBeforeError = 5
)

// Options shape a Queue.
type Options struct {
	// Name names the controller (or the controller's queue) in logs and metrics.
	Name string
	// Workers is the number of keys processed at once (default 1).
	Workers int
	// Period, when positive, coalesces: a key is processed at most once per Period; one added
	// again sooner waits for the period's end, and all additions in between make one.
	Period time.Duration
	// BaseDelay and MaxDelay bound a failed key's backoff, which doubles with each failure in a
	// row, with jitter (defaults DefaultBaseDelay, DefaultMaxDelay). A key is named in logs by
	// fmt.Sprint: give its type a String method.
	BaseDelay, MaxDelay time.Duration
}

// SyncFunc processes one key. A positive duration with a nil error asks for the key again after
// it (something to check later); an error asks for a retry after the key's backoff.
type SyncFunc[K comparable] func(ctx context.Context, key K) (time.Duration, error)

// Queue is a controller's work queue and workers.
type Queue[K comparable] struct {
	opts    Options
	queue   workqueue.TypedRateLimitingInterface[K]
	backoff *backoff[K]

	mu   sync.Mutex
	last map[K]time.Time // coalescing: when each key was last taken
}

// NewQueue makes a queue; Run starts its workers.
func NewQueue[K comparable](opts Options) *Queue[K] {
	if opts.Workers < 1 {
		opts.Workers = 1
	}
	if opts.BaseDelay <= 0 {
		opts.BaseDelay = DefaultBaseDelay
	}
	if opts.MaxDelay < opts.BaseDelay {
		opts.MaxDelay = max(DefaultMaxDelay, opts.BaseDelay)
	}
	b := &backoff[K]{base: opts.BaseDelay, max: opts.MaxDelay, failures: map[K]int{}}
	for _, reason := range retryReasons {
		metricRetries.WithLabelValues(opts.Name, reason) // served at 0 from the start, so that rate() sees the first retry
	}
	return &Queue[K]{
		opts:    opts,
		backoff: b,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig[K](b,
			workqueue.TypedRateLimitingQueueConfig[K]{Name: opts.Name}),
		last: map[K]time.Time{},
	}
}

// Add queues key: at once, or, with a Period, at the end of the key's period.
func (q *Queue[K]) Add(key K) {
	if q.opts.Period > 0 {
		q.mu.Lock()
		last, ok := q.last[key]
		q.mu.Unlock()
		if wait := q.opts.Period - time.Since(last); ok && wait > 0 {
			q.queue.AddAfter(key, wait)
			return
		}
	}
	q.queue.Add(key)
}

// AddAfter queues key after d.
func (q *Queue[K]) AddAfter(key K, d time.Duration) { q.queue.AddAfter(key, d) }

// Len is the number of keys waiting (not those delayed).
func (q *Queue[K]) Len() int { return q.queue.Len() }

// Failures is the number of failures in a row of key.
func (q *Queue[K]) Failures(key K) int { return q.queue.NumRequeues(key) }

// Get takes the next key, for a caller that drives the queue itself (a test); Run's workers do
// this. It blocks until a key is there or the queue shuts down (quit).
func (q *Queue[K]) Get() (key K, quit bool) {
	key, quit = q.queue.Get()
	if !quit {
		q.queue.Done(key)
	}
	return key, quit
}

// ShutDown stops the queue: Run's workers finish their keys and return.
func (q *Queue[K]) ShutDown() { q.queue.ShutDown() }

// Run processes keys with sync on Workers workers until ctx ends, then shuts the queue down and
// waits for the workers to finish their keys.
func (q *Queue[K]) Run(ctx context.Context, process SyncFunc[K]) {
	var wg sync.WaitGroup
	for range q.opts.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for q.processNext(ctx, process) {
			}
		}()
	}
	<-ctx.Done()
	q.queue.ShutDown()
	wg.Wait()
}

func (q *Queue[K]) processNext(ctx context.Context, process SyncFunc[K]) bool {
	key, quit := q.queue.Get()
	if quit {
		return false
	}
	defer q.queue.Done(key)
	if q.opts.Period > 0 {
		q.mu.Lock()
		q.last[key] = time.Now()
		if len(q.last) > 10000 {
			for k, t := range q.last {
				if time.Since(t) > q.opts.Period {
					delete(q.last, k)
				}
			}
		}
		q.mu.Unlock()
	}
	requeue, err := q.call(ctx, process, key)
	if err != nil {
		q.retry(ctx, key, err)
		return true
	}
	q.queue.Forget(key)
	if requeue > 0 {
		q.queue.AddAfter(key, requeue)
	}
	return true
}

// call runs sync, turning a panic into an error so that one bad key cannot stop the process.
func (q *Queue[K]) call(ctx context.Context, process SyncFunc[K], key K) (requeue time.Duration, err error) {
	defer func() {
		if r := recover(); r != nil {
			utilruntime.HandleErrorWithContext(ctx, nil, "panic while processing a key", "controller", q.opts.Name, "key", fmt.Sprint(key), "panic", r)
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return process(ctx, key)
}

// retry queues key again after its backoff or the delay the server asked for, whichever is
// longer, and says so.
func (q *Queue[K]) retry(ctx context.Context, key K, err error) {
	delay := q.backoff.When(key)
	reason := "error"
	switch {
	case apierrors.IsConflict(err):
		reason = "conflict"
	case apierrors.IsForbidden(err):
		reason = "forbidden"
	case apierrors.IsTooManyRequests(err):
		reason = "throttled"
	}
	if seconds, ok := apierrors.SuggestsClientDelay(err); ok && time.Duration(seconds)*time.Second > delay {
		delay = time.Duration(seconds) * time.Second
	}
	metricRetries.WithLabelValues(q.opts.Name, reason).Inc()
	failures := q.backoff.NumRequeues(key)
	logger := klog.FromContext(ctx).WithValues("key", fmt.Sprint(key), "failures", failures, "retryIn", delay.Round(time.Millisecond).String())
	switch {
	case reason == "forbidden":
		logger.Error(err, "edge-controller-manager's identity lacks a right; run this version's kubectl edge init (and kubectl edge ensure wmw) again to grant it; will retry")
	case failures >= FailuresBeforeError:
		logger.Error(err, "still failing; will retry")
	case reason == "conflict":
		logger.V(4).Info("another writer wrote first; will look again", "err", err.Error())
	default:
		logger.V(2).Info("will retry", "err", err.Error())
	}
	q.queue.AddAfter(key, delay)
}

// backoff is a per-key exponential backoff with jitter: the n-th failure in a row waits between
// half and all of base·2^(n-1), at most max. It is the queue's rate limiter, so that its
// failure count is the workqueue's NumRequeues.
type backoff[K comparable] struct {
	base, max time.Duration
	mu        sync.Mutex
	failures  map[K]int
}

func (b *backoff[K]) When(key K) time.Duration {
	b.mu.Lock()
	n := b.failures[key]
	b.failures[key] = n + 1
	b.mu.Unlock()
	d := b.max
	if n < 30 {
		if e := b.base << n; e > 0 && e < b.max {
			d = e
		}
	}
	return d/2 + rand.N(d/2+1)
}

func (b *backoff[K]) Forget(key K) {
	b.mu.Lock()
	delete(b.failures, key)
	b.mu.Unlock()
}

func (b *backoff[K]) NumRequeues(key K) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.failures[key]
}

// retryReasons are the values of edge_controller_retries_total's reason label.
var retryReasons = []string{"conflict", "throttled", "forbidden", "error"}

var metricRetries = metrics.NewCounterVec(&metrics.CounterOpts{
	Namespace: "edge", Subsystem: "controller", Name: "retries_total",
	Help:           "Keys a center controller queued again after a failure, by controller and reason (conflict, throttled: kcp answered 429 past client-go's own retries, forbidden, error).",
	StabilityLevel: metrics.ALPHA,
}, []string{"controller", "reason"})

var registerOnce sync.Once

func init() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(metricRetries, metricWritesInFlight, metricWriteLimit, metricWriteRefusals, metricWriteLatency)
	})
}
