package pushhost

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"

	"github.com/kcp-dev/edge-mc/pkg/syncer"
)

// fakeSyncer runs until its context ends, and counts how many run at once.
type fakeSyncer struct {
	cfg     syncer.Config
	running *atomic.Int32
	ran     chan struct{}
}

func (f *fakeSyncer) Run(ctx context.Context) error {
	if n := f.running.Add(1); n > 1 {
		panic("two syncers of one SyncTarget at once")
	}
	close(f.ran)
	<-ctx.Done()
	f.running.Add(-1)
	return ctx.Err()
}

// TestOneSyncerPerTarget: a changed input replaces the running syncer only once the old one has
// stopped, so two never serve one edge; a probe whose outcome changes queues the SyncTarget
// (for its condition), the same outcome again does not; stopAll ends them all.
func TestOneSyncerPerTarget(t *testing.T) {
	var running atomic.Int32
	var built []*fakeSyncer
	var queued []string
	c := &Controller{
		running: map[string]*runningSyncer{},
		enqueue: func(key string) { queued = append(queued, key) },
	}
	c.newSyncer = func(cfg syncer.Config) (runner, error) {
		f := &fakeSyncer{cfg: cfg, running: &running, ran: make(chan struct{})}
		built = append(built, f)
		return f, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i, inputs := range []string{"a", "b", "c"} {
		if err := c.startSyncer(ctx, "imw|edge-1", inputs, syncer.Config{SyncTargetName: "edge-1", Edge: &rest.Config{Host: "https://edge-1:6443"}}); err != nil {
			t.Fatal(err)
		}
		<-built[i].ran
		if r := c.runningFor("imw|edge-1"); r == nil || r.inputs != inputs {
			t.Fatalf("after starting with %q the host runs %+v", inputs, r)
		}
	}
	if got := running.Load(); got != 1 {
		t.Errorf("%d syncers run for one SyncTarget", got)
	}

	probed := built[2].cfg.EdgeProbed
	probed(nil)
	probed(nil)
	unauthorized := &syncer.EdgeUnreachableError{Err: apierrors.NewUnauthorized("no")}
	probed(unauthorized)
	probed(unauthorized)
	probed(&syncer.EdgeUnreachableError{Err: errors.New("connection refused")})
	// The first probe, and each change of reason: reachable, unauthorized, unreachable.
	if len(queued) != 3 {
		t.Errorf("the probes queued the SyncTarget %d times (%v), want 3: once per change of outcome", len(queued), queued)
	}

	done := make(chan struct{})
	go func() { c.stopAll(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("stopAll did not return")
	}
	if got := running.Load(); got != 0 || len(c.Running()) != 0 {
		t.Errorf("after stopAll %d syncers run, %v listed", got, c.Running())
	}
}
