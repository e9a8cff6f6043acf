package placementtranslator

import (
	"context"
	"testing"

	"github.com/kcp-dev/logicalcluster/v3"
	apisv1alpha2 "github.com/kcp-dev/sdk/apis/apis/v1alpha2"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// oneClusterClient answers for every workspace with the same client.
type oneClusterClient struct{ client dynamic.Interface }

func (o oneClusterClient) Cluster(logicalcluster.Path) dynamic.Interface { return o.client }

// TestUnseenWithdrawals: a ConfigMap that left the translator's sight because its workspace's
// owner rejected edge.kcp.io's claim on ConfigMaps, before the cache of bindings shows the
// rejection, is not taken for deleted: the live binding says why it is out of sight. With the
// claim still accepted there, its removal (a real deletion) goes ahead.
func TestUnseenWithdrawals(t *testing.T) {
	for _, tc := range []struct {
		live apisv1alpha2.AcceptablePermissionClaimState
		want bool
	}{{apisv1alpha2.ClaimRejected, true}, {apisv1alpha2.ClaimAccepted, false}} {
		w := newTestWorld(t)
		w.placement(t, "ws1", "p1", []any{map[string]any{"namespaces": []any{"app"}}})
		w.workload(t, namespacesGVR, obj("v1", "Namespace", "ws1", "", "app", nil))
		w.add(t, w.c.bindings, edgeBinding("ws1", apisv1alpha2.ClaimAccepted)) // the cache: not yet
		live := edgeBinding("ws1", tc.live)
		w.c.edgeVW = oneClusterClient{dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
			map[schema.GroupVersionResource]string{apiBindingsGVR: "APIBindingList"}, live)}
		assemblage := transport.AssemblageName("ws1", "p1")
		current := map[copyKey]copyRecord{
			ck(configMapsGVR, "app", "cfg"): {source: "ws1", assemblage: assemblage},
			ck(namespacesGVR, "", "app"):    {source: "ws1", assemblage: assemblage},
		}
		d, ok := w.c.computeDesired(testMailbox, current)
		if !ok {
			t.Fatal("computeDesired() not ok")
		}
		if d.copies[ck(configMapsGVR, "app", "cfg")] != nil || d.keep[ck(configMapsGVR, "app", "cfg")] {
			t.Fatalf("the ConfigMap out of sight is projected or kept by the cache's consent: the test sets up nothing")
		}
		got, err := w.c.unseenWithdrawals(context.Background(), current, d)
		if err != nil {
			t.Fatal(err)
		}
		withdrawn := len(got["ws1"]) == 1 && got["ws1"][0] == configMapsGVR.GroupResource()
		if withdrawn != tc.want {
			t.Errorf("live claim %q: unseenWithdrawals = %v, want configmaps withdrawn %v", tc.live, got, tc.want)
		}
	}
}
