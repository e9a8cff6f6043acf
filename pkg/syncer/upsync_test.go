package syncer

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

func TestUpsyncWatchCovers(t *testing.T) {
	rule := func(namespaces, names []string) edgev1alpha1.UpsyncSet {
		return edgev1alpha1.UpsyncSet{Resources: []string{"configmaps"}, Namespaces: namespaces, Names: names}
	}
	type object struct {
		namespace, name string
		covered         bool
	}
	cases := []struct {
		name    string
		rules   []edgev1alpha1.UpsyncSet
		objects []object
	}{
		{
			name:  "no rules",
			rules: nil,
			objects: []object{
				{"web", "a", false},
				{"", "a", false},
			},
		},
		{
			name:  "namespaces and names omitted",
			rules: []edgev1alpha1.UpsyncSet{rule(nil, nil)},
			objects: []object{
				{"web", "a", true},
				{"other", "b", true},
				{"", "cluster-scoped", true},
			},
		},
		{
			name:  "namespaces and names *",
			rules: []edgev1alpha1.UpsyncSet{rule([]string{"*"}, []string{"*"})},
			objects: []object{
				{"web", "a", true},
				{"", "cluster-scoped", true},
			},
		},
		{
			name:  "named namespaces",
			rules: []edgev1alpha1.UpsyncSet{rule([]string{"web", "api"}, nil)},
			objects: []object{
				{"web", "a", true},
				{"api", "b", true},
				{"other", "a", false},
				{"", "a", false},
				{"", "web", false},
			},
		},
		{
			name:  "named objects in all namespaces",
			rules: []edgev1alpha1.UpsyncSet{rule(nil, []string{"report", "metrics"})},
			objects: []object{
				{"web", "report", true},
				{"other", "metrics", true},
				{"", "report", true},
				{"web", "other", false},
				{"", "other", false},
			},
		},
		{
			name:  "named objects in named namespaces",
			rules: []edgev1alpha1.UpsyncSet{rule([]string{"web"}, []string{"report"})},
			objects: []object{
				{"web", "report", true},
				{"web", "other", false},
				{"api", "report", false},
				{"", "report", false},
			},
		},
		{
			name:  "* among named namespaces",
			rules: []edgev1alpha1.UpsyncSet{rule([]string{"web", "*"}, []string{"report"})},
			objects: []object{
				{"anything", "report", true},
				{"", "report", true},
				{"web", "other", false},
			},
		},
		{
			name:  "* among named objects",
			rules: []edgev1alpha1.UpsyncSet{rule([]string{"web"}, []string{"report", "*"})},
			objects: []object{
				{"web", "anything", true},
				{"api", "anything", false},
			},
		},
		{
			name: "several rules: any one covers",
			rules: []edgev1alpha1.UpsyncSet{
				rule([]string{"web"}, []string{"report"}),
				rule([]string{"api"}, nil),
			},
			objects: []object{
				{"web", "report", true},
				{"api", "anything", true},
				{"web", "anything", false},
				{"other", "report", false},
				{"", "report", false},
			},
		},
		{
			name: "several rules, one for cluster-scoped objects",
			rules: []edgev1alpha1.UpsyncSet{
				rule([]string{"web"}, nil),
				rule(nil, []string{"cluster-report"}),
			},
			objects: []object{
				{"web", "x", true},
				{"", "cluster-report", true},
				{"", "x", false},
				{"api", "x", false},
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := &upsyncWatch{rules: c.rules}
			for _, o := range c.objects {
				if got := w.covers(o.namespace, o.name); got != o.covered {
					t.Errorf("covers(%q, %q) = %v, want %v", o.namespace, o.name, got, o.covered)
				}
			}
		})
	}
}

// fixedLimiter delays every item by the same duration and records what it is told.
type fixedLimiter struct {
	delay     time.Duration
	forgotten []string
}

func (f *fixedLimiter) When(string) time.Duration { return f.delay }
func (f *fixedLimiter) Forget(item string)        { f.forgotten = append(f.forgotten, item) }
func (f *fixedLimiter) NumRequeues(string) int    { return 7 }

func TestJitteredLimiter(t *testing.T) {
	for _, delay := range []time.Duration{250 * time.Millisecond, time.Second, time.Minute} {
		t.Run(delay.String(), func(t *testing.T) {
			inner := &fixedLimiter{delay: delay}
			j := &jitteredLimiter[string]{TypedRateLimiter: inner}
			lo, hi := delay*8/10, delay*12/10
			const samples = 10000
			minSeen, maxSeen := time.Duration(1<<62), time.Duration(0)
			var sum float64
			for i := 0; i < samples; i++ {
				d := j.When("item")
				if d < lo || d > hi {
					t.Fatalf("When = %v, want within [%v, %v]", d, lo, hi)
				}
				minSeen = min(minSeen, d)
				maxSeen = max(maxSeen, d)
				sum += float64(d)
			}
			// The delays are spread over the whole range, not fixed.
			if minSeen > delay*85/100 || maxSeen < delay*115/100 {
				t.Errorf("delays spread over [%v, %v] only, want nearly [%v, %v]", minSeen, maxSeen, lo, hi)
			}
			if mean := sum / samples / float64(delay); mean < 0.98 || mean > 1.02 {
				t.Errorf("mean delay is %.3f of the wrapped delay, want about 1", mean)
			}
			// The rest is the wrapped limiter's.
			j.Forget("done")
			if !reflect.DeepEqual(inner.forgotten, []string{"done"}) {
				t.Errorf("the wrapped limiter was told to forget %v, want [done]", inner.forgotten)
			}
			if n := j.NumRequeues("item"); n != 7 {
				t.Errorf("NumRequeues = %d, want the wrapped limiter's 7", n)
			}
		})
	}
}

func TestJitter(t *testing.T) {
	const d = 5 * time.Second
	seen := map[time.Duration]bool{}
	for i := 0; i < 1000; i++ {
		got := jitter(d)
		if got < 4*time.Second || got > 6*time.Second {
			t.Fatalf("jitter(%v) = %v, want within [4s, 6s]", d, got)
		}
		seen[got] = true
	}
	if len(seen) < 100 {
		t.Errorf("jitter(%v) gave only %d distinct delays in 1000 calls", d, len(seen))
	}
}

func TestJitteredExponentialBackoff(t *testing.T) {
	// As newQueue builds it: delays grow exponentially from 250 ms per failure of one item, each
	// jittered; another item starts again from the bottom.
	base := 250 * time.Millisecond
	l := &jitteredLimiter[string]{TypedRateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[string](base, time.Minute)}
	for i := 0; i < 5; i++ {
		d := l.When("a")
		want := base << i
		if d < want*8/10 || d > want*12/10 {
			t.Errorf("failure %d: delay %v, want within 80%%..120%% of %v", i+1, d, want)
		}
	}
	if n := l.NumRequeues("a"); n != 5 {
		t.Errorf("NumRequeues = %d, want 5", n)
	}
	if d := l.When("b"); d < base*8/10 || d > base*12/10 {
		t.Errorf("another item's first delay is %v, want about %v", d, base)
	}
	l.Forget("a")
	if d := l.When("a"); d < base*8/10 || d > base*12/10 {
		t.Errorf("the first delay after Forget is %v, want about %v", d, base)
	}
}

func TestNewQueueCountsRequeues(t *testing.T) {
	q := newQueue[string]("test")
	defer q.ShutDown()
	q.AddRateLimited("x")
	q.AddRateLimited("x")
	if n := q.NumRequeues("x"); n != 2 {
		t.Errorf("NumRequeues after two AddRateLimited = %d, want 2", n)
	}
	q.Forget("x")
	if n := q.NumRequeues("x"); n != 0 {
		t.Errorf("NumRequeues after Forget = %d, want 0", n)
	}
}

func TestSortedErrors(t *testing.T) {
	many := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("error %02d", n-1-i) // in reverse order
		}
		return out
	}
	sortedMany := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("error %02d", i)
		}
		return out
	}
	cases := []struct {
		name string
		errs []string
		max  int
		want []string
	}{
		{"none", nil, 20, nil},
		{"fewer than max, sorted", []string{"b", "c", "a"}, 20, []string{"a", "b", "c"}},
		{"exactly max", many(20), 20, sortedMany(20)},
		{"one more than max", many(21), 20, append(sortedMany(19), "... and 2 more")},
		{"many more than max", many(25), 20, append(sortedMany(19), "... and 6 more")},
		{"small max", []string{"e", "d", "c", "b", "a"}, 3, []string{"a", "b", "... and 3 more"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := sortedErrors(c.errs, c.max)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("sortedErrors = %q, want %q", got, c.want)
			}
			if len(got) > c.max {
				t.Errorf("%d errors reported, want at most %d", len(got), c.max)
			}
		})
	}
}

// TestRunQueueBacksOffOnlyWithoutProgress: an attempt that fails but brought objects to the
// edge (a busy edge refusing some requests) is retried after the shortest delay; attempts that
// bring nothing back off further each time.
func TestRunQueueBacksOffOnlyWithoutProgress(t *testing.T) {
	for _, tc := range []struct {
		name         string
		err          error
		wantRequeues []int
	}{
		{"progressed", progressed{errors.New("429")}, []int{0, 1, 1, 1}},
		{"no progress", errors.New("429"), []int{0, 1, 2, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := newQueue[string]("test")
			var seen []int
			done := make(chan struct{})
			sync := func(_ context.Context, key string) (time.Duration, error) {
				seen = append(seen, q.NumRequeues(key))
				if len(seen) == len(tc.wantRequeues) {
					close(done)
					return 0, nil
				}
				return 0, tc.err
			}
			q.Add("a")
			go runQueue(context.Background(), q, sync)
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("%d attempts in 10 s: %v", len(seen), seen)
			}
			q.ShutDown()
			if !slices.Equal(seen, tc.wantRequeues) {
				t.Errorf("requeues seen by the attempts: %v, want %v", seen, tc.wantRequeues)
			}
		})
	}
}
