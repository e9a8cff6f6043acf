package placementtranslator

import (
	"reflect"
	"testing"

	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/kcp-dev/edge-mc/internal/informertest"
	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/centerview"
	"github.com/kcp-dev/edge-mc/pkg/transport"
	"github.com/kcp-dev/edge-mc/pkg/upsync"
)

// TestUpsyncCachesPlacementsAt: the return path finds, from a mailbox's logical cluster, the
// placements that have it as a destination, once its SyncTarget records the mailbox.
func TestUpsyncCachesPlacementsAt(t *testing.T) {
	w := newTestWorld(t)
	c := w.c
	c.syncTargets = newTestInformer(cache.Indexers{syncTargetsByMailbox: syncTargetMailbox, syncTargetsByMailboxCluster: syncTargetMailboxCluster})
	w.placement(t, "ws1", "p1", nil)
	w.placement(t, "ws2", "other", nil)
	caches := c.UpsyncCaches()
	if got := caches.PlacementsAt("mbc1"); got != nil {
		t.Errorf("PlacementsAt(mbc1) before the SyncTarget records its mailbox = %v, want nil", got)
	}
	st := obj("edge.kcp.io/v1alpha1", "SyncTarget", testInventory, "", "st1", nil)
	st.SetUID("u1")
	st.Object["status"] = map[string]any{"mailboxCluster": "mbc1"}
	w.add(t, c.syncTargets, st)
	dest := edgev1alpha1.SinglePlacement{Cluster: testInventory, LocationName: "loc", SyncTargetName: "st1", SyncTargetUID: "u1"}
	want := map[upsync.PlacementKey]edgev1alpha1.SinglePlacement{{Cluster: "ws1", Name: "p1"}: dest, {Cluster: "ws2", Name: "other"}: dest}
	if got := caches.PlacementsAt("mbc1"); !reflect.DeepEqual(got, want) {
		t.Errorf("PlacementsAt(mbc1) = %v, want %v", got, want)
	}
	if got := caches.PlacementsAt("mbc-unknown"); got != nil {
		t.Errorf("PlacementsAt(a mailbox of no known SyncTarget) = %v, want nil", got)
	}
	if got := caches.MailboxClusterAt(dest); got != "mbc1" {
		t.Errorf("MailboxClusterAt(st1) = %q, want mbc1", got)
	}
	if got := caches.DestinationsOf(upsync.PlacementKey{Cluster: "ws1", Name: "p1"}); !reflect.DeepEqual(got, []edgev1alpha1.SinglePlacement{dest}) {
		t.Errorf("DestinationsOf(p1) = %v, want st1", got)
	}
}

// TestDeliveredByOthersOnly: a namespace is another tenant's in a mailbox when an assemblage of
// another workspace carries it there and none of the workspace's own does.
func TestDeliveredByOthersOnly(t *testing.T) {
	w := newTestWorld(t)
	c := w.c
	c.view.assemblages = newTestInformer(cache.Indexers{})
	if _, known := c.deliveredByOthersOnly("mbc1", "ws1", "theirs"); known {
		t.Errorf("deliveredByOthersOnly known before the view of the assemblages synced")
	}
	c.view.assemblages = informertest.Synced(t, cache.Indexers{})
	assemblage := func(ws, name string, objects ...string) {
		a := obj("edge.kcp.io/v1alpha1", "Assemblage", "mbc1", "", name, map[string]string{transport.LabelPlacementCluster: ws})
		a.Object["spec"] = map[string]any{"objects": toAny(objects)}
		w.add(t, c.view.assemblages, a)
	}
	assemblage("ws1", "a1", "namespaces/mine", "configmaps/mine/settings")
	assemblage("ws2", "a2", "namespaces/theirs", "configmaps/theirs/settings", "namespaces/shared")
	assemblage("ws1", "a3", "namespaces/shared")
	for ns, want := range map[string]bool{"mine": false, "shared": false, "edge-only": false, "theirs": true} {
		if got, known := c.deliveredByOthersOnly("mbc1", "ws1", ns); got != want || !known {
			t.Errorf("deliveredByOthersOnly(ws1, %s) = %v, %v, want %v, known", ns, got, known, want)
		}
	}
	if others, _ := c.deliveredByOthersOnly("mbc2", "ws1", "theirs"); others {
		t.Errorf("deliveredByOthersOnly looked beyond its mailbox")
	}
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// TestDeliveredNamespacesChange: the up-sync return path hears of a mailbox whose assemblages
// change which namespaces they carry for which workspace, and of nothing else (a status write).
func TestDeliveredNamespacesChange(t *testing.T) {
	c := newTestWorld(t).c
	var heard []logicalcluster.Name
	c.UpsyncCaches().OnDeliveredNamespacesChange(func(mb logicalcluster.Name) { heard = append(heard, mb) })
	assemblage := func(ws string, objects ...string) *unstructured.Unstructured {
		a := obj("edge.kcp.io/v1alpha1", "Assemblage", "mbc1", "", "a1", map[string]string{transport.LabelPlacementCluster: ws})
		a.Object["spec"] = map[string]any{"objects": toAny(objects)}
		return a
	}
	withStatus := func(a *unstructured.Unstructured) *unstructured.Unstructured {
		a = a.DeepCopy()
		a.Object["status"] = map[string]any{"appliedVersion": "v2"}
		return a
	}
	mine := assemblage("ws1", "namespaces/app", "configmaps/app/settings")
	for _, tc := range []struct {
		name     string
		old, obj *unstructured.Unstructured
		want     bool
	}{
		{"an assemblage carrying a namespace comes", nil, mine, true},
		{"one carrying none comes", nil, assemblage("ws1", "clusterroles/reader"), false},
		{"its status is written", mine, withStatus(mine), false},
		{"another object of the namespace joins it", mine, assemblage("ws1", "namespaces/app", "configmaps/app/settings", "secrets/app/key"), false},
		{"it carries another namespace too", mine, assemblage("ws1", "namespaces/app", "namespaces/web", "configmaps/app/settings"), true},
		{"the namespace leaves it", mine, assemblage("ws1", "configmaps/app/settings"), true},
		{"it delivers for another workspace", mine, assemblage("ws2", "namespaces/app", "configmaps/app/settings"), true},
		{"it goes", mine, nil, true},
	} {
		heard = nil
		c.assemblageNamespacesChanged(asAssemblage(tc.old), asAssemblage(tc.obj))
		if got := len(heard) == 1 && heard[0] == "mbc1"; got != tc.want || len(heard) > 1 {
			t.Errorf("%s: the return path heard %v, want mbc1 %v", tc.name, heard, tc.want)
		}
	}
}

// asAssemblage is what the shared cache makes of an assemblage (nil for none).
func asAssemblage(u *unstructured.Unstructured) *edgev1alpha1.Assemblage {
	if u == nil {
		return nil
	}
	return centerview.AsAssemblage(u)
}
