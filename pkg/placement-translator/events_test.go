package placementtranslator

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kcp-dev/edge-mc/pkg/controllerkit"
)

// TestPlacementStatusQueuesNoMailbox: a change of a placement's status alone queues its status,
// not its destinations' mailboxes; its first sight, its deletion, or a change of its spec,
// labels or annotations queues them too.
func TestPlacementStatusQueuesNoMailbox(t *testing.T) {
	w := newTestWorld(t)
	c := w.c
	w.placement(t, "ws1", "p1", nil) // its slice has the test mailbox as destination
	p := obj("edge.kcp.io/v1alpha1", "EdgePlacement", "ws1", "", "p1", nil)
	p.SetGeneration(3)
	changed := func(change func(u *unstructured.Unstructured)) *unstructured.Unstructured {
		u := p.DeepCopy()
		u.SetResourceVersion("8")
		change(u)
		return u
	}
	withStatus := changed(func(u *unstructured.Unstructured) {
		u.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}
	})
	for _, tc := range []struct {
		name          string
		old, obj      *unstructured.Unstructured
		wantMailboxes int
	}{
		{"first seen, or deleted (handed over without an old object)", nil, p, 1},
		{"status only", p, withStatus, 0},
		{"resync: the same object again", p, p, 0},
		{"spec: a new generation", p, changed(func(u *unstructured.Unstructured) { u.SetGeneration(4) }), 1},
		{"labels", p, changed(func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"team": "b"}) }), 1},
		{"annotations", p, changed(func(u *unstructured.Unstructured) {
			u.SetAnnotations(map[string]string{"kcp.io/cluster": "ws1", "note": "x"})
		}), 1},
		{"deletion starts", p, changed(func(u *unstructured.Unstructured) {
			now := metav1.NewTime(time.Now())
			u.SetDeletionTimestamp(&now)
			u.SetFinalizers([]string{"example.com/hold"})
		}), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.queue = controllerkit.NewQueue[queueKey](controllerkit.Options{Name: "test"})
			defer c.queue.ShutDown()
			c.placementChanged(tc.old, tc.obj)
			mailboxes, placements := 0, 0
			for c.queue.Len() > 0 {
				key, _ := c.queue.Get()
				if key.mailbox != "" {
					mailboxes++
				} else if key.placement == (placementKey{"ws1", "p1"}) {
					placements++
				}
			}
			if mailboxes != tc.wantMailboxes || placements != 1 {
				t.Errorf("queued %d mailbox(es) and the placement's status %d time(s), want %d and 1", mailboxes, placements, tc.wantMailboxes)
			}
		})
	}
}
