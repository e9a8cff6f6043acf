package syncer

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// TestPushSyncerHeartbeatsOnlyForAnEdgeThatAnswers: a syncer at the center (HeartbeatNeedsEdge)
// asks the edge's /readyz before each heartbeat, reports the outcome, and skips the heartbeat
// when the edge is down or refuses its credential; a pull syncer never asks.
func TestPushSyncerHeartbeatsOnlyForAnEdgeThatAnswers(t *testing.T) {
	var code atomic.Int32
	code.Store(http.StatusOK)
	var asked atomic.Int32
	edge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		asked.Add(1)
		w.WriteHeader(int(code.Load()))
	}))
	defer edge.Close()
	mailbox := &rest.Config{Host: "https://kcp.example:6443/clusters/root:espw:1abc-mb-uid1"}
	var probed []error
	s, err := New(Config{Mailbox: mailbox, Edge: &rest.Config{Host: edge.URL}, SyncTargetName: "edge1", SyncTargetUID: "uid1",
		HeartbeatNeedsEdge: true, EdgeProbed: func(err error) { probed = append(probed, err) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.probeEdge(ctx, time.Second); err != nil {
		t.Errorf("an edge that answers: %v", err)
	}
	code.Store(http.StatusUnauthorized)
	err = s.probeEdge(ctx, time.Second)
	var unreachable *EdgeUnreachableError
	if !errors.As(err, &unreachable) {
		t.Errorf("an edge that refuses the credential: %v, want an EdgeUnreachableError", err)
	}
	edge.Close()
	if err := s.probeEdge(ctx, time.Second); !errors.As(err, &unreachable) {
		t.Errorf("an edge that is down: %v, want an EdgeUnreachableError", err)
	}
	if len(probed) != 3 || probed[0] != nil || probed[1] == nil || probed[2] == nil {
		t.Errorf("EdgeProbed saw %v, want nil and two errors", probed)
	}

	pull, err := New(Config{Mailbox: mailbox, Edge: &rest.Config{Host: edge.URL}, SyncTargetName: "edge1", SyncTargetUID: "uid1"})
	if err != nil {
		t.Fatal(err)
	}
	before := asked.Load()
	if err := pull.probeEdge(ctx, time.Second); err != nil || asked.Load() != before {
		t.Errorf("a pull syncer probed its edge (err %v)", err)
	}
}
