package placementtranslator

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

// testSlice is a SinglePlacementSlice with n destinations in workspace ws, at resourceVersion rv.
func testSlice(uid, rv string, ws string, n int) *unstructured.Unstructured {
	var dests []any
	for i := 0; i < n; i++ {
		dests = append(dests, map[string]any{"cluster": ws, "locationName": fmt.Sprintf("loc-%d", i),
			"syncTargetName": fmt.Sprintf("st-%d", i), "syncTargetUID": fmt.Sprintf("uid-%d", i)})
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "edge.kcp.io/v1alpha1", "kind": "SinglePlacementSlice", "destinations": dests}}
	u.SetName("p")
	u.SetUID(types.UID(uid))
	u.SetResourceVersion(rv)
	return u
}

func TestSliceDecoderFollowsVersions(t *testing.T) {
	live := map[types.UID]bool{"a": true}
	d := newSliceDecoder(func() map[types.UID]bool { return live })
	v1 := testSlice("a", "1", "ws", 3)
	mb := mailboxName(edgev1alpha1.SinglePlacement{Cluster: "ws", SyncTargetUID: "uid-2"})
	dest, ok := d.forMailbox(v1, mb)
	if !ok || dest.SyncTargetName != "st-2" {
		t.Fatalf("forMailbox(%s) = %+v, %v; want st-2", mb, dest, ok)
	}
	if _, ok := d.forMailbox(v1, "no-such-mailbox"); ok {
		t.Fatal("forMailbox found a mailbox the slice does not hold")
	}
	// A new version with fewer destinations: st-2 is gone.
	v2 := testSlice("a", "2", "ws", 2)
	if _, ok := d.forMailbox(v2, mb); ok {
		t.Fatal("forMailbox answered from the old version of the slice")
	}
	if got := len(d.destinations(v2)); got != 2 {
		t.Fatalf("destinations of version 2: %d, want 2", got)
	}
}

func TestSliceDecoderPrunesDeletedSlices(t *testing.T) {
	live := map[types.UID]bool{}
	d := newSliceDecoder(func() map[types.UID]bool { return live })
	for i := 0; i < pruneEvery-1; i++ {
		d.of(testSlice(fmt.Sprintf("gone-%d", i), "1", "ws", 1))
	}
	live["kept"] = true
	d.of(testSlice("kept", "1", "ws", 1))
	if len(d.decoded) != 1 {
		t.Fatalf("after a prune the decoder holds %d slices, want only the live one", len(d.decoded))
	}
}

// BenchmarkSliceLookups: what a change to every destination of a placement with 1,000 of them
// costs the mailboxes' reconciles to find their own destination in its slice: each decoding the
// whole slice (as before the decoder), or the decoder's once per version. One op is the 1,000
// lookups of one change.
func BenchmarkSliceLookups(b *testing.B) {
	const n = 1000
	slice := testSlice("a", "1", "ws", n)
	mailboxes := make([]string, n)
	for i := range mailboxes {
		mailboxes[i] = mailboxName(edgev1alpha1.SinglePlacement{Cluster: "ws", SyncTargetUID: types.UID(fmt.Sprintf("uid-%d", i))})
	}
	b.Run("decode-per-lookup", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			for _, mb := range mailboxes {
				for _, d := range edgev1alpha1.SliceDestinations(slice) {
					if mailboxName(d) == mb {
						break
					}
				}
			}
		}
	})
	b.Run("decoder", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			d := newSliceDecoder(nil) // a new version each change: one decode
			for _, mb := range mailboxes {
				if _, ok := d.forMailbox(slice, mb); !ok {
					b.Fatal("lookup failed")
				}
			}
		}
	})
}
