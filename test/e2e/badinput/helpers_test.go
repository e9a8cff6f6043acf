package badinput

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/test/framework"
)

var (
	configMaps    = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	namespaces    = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	deployments   = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	placements    = edgev1alpha1.SchemeGroupVersion.WithResource("edgeplacements")
	syncerConfigs = edgev1alpha1.SchemeGroupVersion.WithResource("syncerconfigs")
	assemblages   = edgev1alpha1.SchemeGroupVersion.WithResource("assemblages")
)

// world is a fleet of edge clusters, each with its syncer: edge1 (region east) and edge2 (region
// west), logical clusters of the edge kcp, and, if asked for, kube1 (region north), a real
// Kubernetes control plane; and a good placement in the workload workspace that puts the
// namespace good, with the ConfigMap good/config, on all of them.
type world struct {
	*framework.Fleet
	edges map[string]*framework.PCluster
	// syncers are the edges' syncers, by edge name.
	syncers map[string]*framework.Syncer
	// edgeNames are the keys of edges, sorted.
	edgeNames []string
	// goodVersion is the data.version of good/config that every edge should have.
	goodVersion int
}

func setUp(t *testing.T) *world { return newWorld(t, false) }

func newWorld(t *testing.T, withKube bool) *world {
	t.Helper()
	regions := map[string]string{"edge1": "east", "edge2": "west"}
	if withKube {
		regions["kube1"] = "north"
	}
	edges := framework.StartLogicalPClusters(t, "edge1", "edge2")
	var startingKube func() *framework.KubeCluster
	if withKube {
		startingKube = framework.StartKubeClusterInBackground(t, "kube1")
	}
	w := &world{Fleet: framework.NewFleet(t, regions), edges: edges(), syncers: map[string]*framework.Syncer{}}
	if withKube {
		w.edges["kube1"] = startingKube().PCluster()
	}
	for name := range regions {
		w.edgeNames = append(w.edgeNames, name)
	}
	sort.Strings(w.edgeNames)
	for _, name := range w.edgeNames {
		w.syncers[name] = framework.StartSyncer(t, w.ESPW, w.IMW, name, w.edges[name])
	}
	w.Apply(t, w.WMW, `apiVersion: v1
kind: Namespace
metadata: {name: good}
---
apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: good}
spec:
  locationSelectors: [{matchExpressions: [{key: region, operator: In, values: [east, west, north]}]}]
  downsync: [{namespaces: [good]}]
`)
	w.goodKeepsConverging(t)
	return w
}

// goodKeepsConverging changes good/config and waits until both edge clusters have the change,
// and checks that the good placement is scheduled and projected without a problem: bad input
// elsewhere in the workspace disturbs nothing else.
func (w *world) goodKeepsConverging(t *testing.T) {
	t.Helper()
	w.goodVersion++
	version := fmt.Sprint(w.goodVersion)
	start := time.Now()
	w.Apply(t, w.WMW, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: config, namespace: good}\ndata: {version: %q}\n", version))
	for _, name := range w.edgeNames {
		framework.EventuallyObject(t, "the good placement's change at "+name, w.edges[name].DynamicClient(t), configMaps, "good", "config",
			framework.FieldIs(version, "data", "version"))
	}
	t.Logf("good/config version %s reached all %d edge clusters %.1fs after apply", version, len(w.edgeNames), time.Since(start).Seconds())
	w.condition(t, "good", edgev1alpha1.PlacementScheduled, metav1.ConditionTrue, fmt.Sprintf("%d SyncTargets", len(w.edgeNames)))
	w.condition(t, "good", edgev1alpha1.PlacementProjected, metav1.ConditionTrue)
}

// condition waits until the placement's condition has the given status and its message contains
// every fragment, and returns the message.
func (w *world) condition(t *testing.T, placement, condType string, status metav1.ConditionStatus, fragments ...string) string {
	t.Helper()
	return framework.EventuallyPlacementCondition(t, framework.KCP(t).DynamicClient(t, w.WMW), placement, condType, status, fragments...)
}

// reason returns the reason of the placement's condition.
func (w *world) reason(t *testing.T, placement, condType string) string {
	t.Helper()
	u := framework.GetObject(t, framework.KCP(t).DynamicClient(t, w.WMW), placements, "", placement)
	if u == nil {
		t.Fatalf("no EdgePlacement %s", placement)
	}
	_, reason, _ := framework.ConditionStatus(u, condType)
	return reason
}

// status runs `kubectl edge status <placement>` in the workload workspace and returns its output.
func (w *world) status(t *testing.T, placement string) string {
	t.Helper()
	return framework.KubectlEdge(t, "status", placement, "--server", framework.KCP(t).ServerURL(w.WMW)).MustSucceed(t).Stdout
}

// statusShows waits until `kubectl edge status <placement>` shows every fragment (or, with
// want false, none of them), and returns its output.
func (w *world) statusShows(t *testing.T, placement string, want bool, fragments ...string) string {
	t.Helper()
	var out string
	framework.Eventually(t, framework.Converge, func() (bool, string) {
		out = w.status(t, placement)
		for _, frag := range fragments {
			if strings.Contains(out, frag) != want {
				return false, fmt.Sprintf("kubectl edge status %s: shows %q is %v, want %v; output:\n%s", placement, frag, !want, want, out)
			}
		}
		return true, ""
	})
	return out
}

// at waits until the object is at the edge cluster and check says nothing is wrong with it.
func (w *world) at(t *testing.T, edge, what string, gvr schema.GroupVersionResource, namespace, name string, check func(u *unstructured.Unstructured) string) *unstructured.Unstructured {
	t.Helper()
	return framework.EventuallyObject(t, what+" at "+edge, w.edges[edge].DynamicClient(t), gvr, namespace, name, check)
}

// neverAt checks that the object is not at the edge cluster.
func (w *world) neverAt(t *testing.T, edge string, gvr schema.GroupVersionResource, namespace, name string) {
	t.Helper()
	if u := framework.GetObject(t, w.edges[edge].DynamicClient(t), gvr, namespace, name); u != nil {
		t.Errorf("%s %s/%s is at %s, which no placement selects for it", gvr.Resource, namespace, name, edge)
	}
}

// containerImageIs is a check for EventuallyObject: the first container of the list at path has
// the image want.
func containerImageIs(want string, path ...string) func(u *unstructured.Unstructured) string {
	return func(u *unstructured.Unstructured) string {
		if u == nil {
			return "absent"
		}
		containers, _, _ := unstructured.NestedSlice(u.Object, path...)
		if len(containers) == 0 {
			return "no containers"
		}
		c, _ := containers[0].(map[string]any)
		if got := fmt.Sprint(c["image"]); got != want {
			return fmt.Sprintf("image is %s, want %s", got, want)
		}
		return ""
	}
}

// broken returns the placement's broken entries.
func (w *world) broken(t *testing.T, placement string) []edgev1alpha1.BrokenEntry {
	t.Helper()
	u := framework.GetObject(t, framework.KCP(t).DynamicClient(t, w.WMW), placements, "", placement)
	if u == nil {
		t.Fatalf("no EdgePlacement %s", placement)
	}
	p := &edgev1alpha1.EdgePlacement{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
		t.Fatal(err)
	}
	return p.Status.Broken
}

// brokenEntry waits until the placement has a broken entry for the destination (its SyncTarget's
// name) and the object whose reason contains every fragment, and returns it.
func (w *world) brokenEntry(t *testing.T, placement, syncTarget, object string, fragments ...string) edgev1alpha1.BrokenEntry {
	t.Helper()
	var found edgev1alpha1.BrokenEntry
	framework.Eventually(t, framework.Converge, func() (bool, string) {
		entries := w.broken(t, placement)
		for _, b := range entries {
			if !strings.HasSuffix(b.Destination, ":"+syncTarget) || b.Object != object {
				continue
			}
			found = b
			for _, frag := range fragments {
				if !strings.Contains(b.Reason, frag) {
					return false, fmt.Sprintf("the broken entry of %s at %s says %q, which lacks %q", object, syncTarget, b.Reason, frag)
				}
			}
			return true, ""
		}
		return false, fmt.Sprintf("EdgePlacement %s has no broken entry for %s at %s: %+v", placement, object, syncTarget, entries)
	})
	return found
}

// mended waits until the placement has no broken entry for the object at the SyncTarget.
func (w *world) mended(t *testing.T, placement, syncTarget, object string) {
	t.Helper()
	framework.Eventually(t, framework.Converge, func() (bool, string) {
		for _, b := range w.broken(t, placement) {
			if b.Object == object && strings.HasSuffix(b.Destination, ":"+syncTarget) {
				return false, fmt.Sprintf("still broken: %+v", b)
			}
		}
		return true, ""
	})
}

// logicalCluster is the logical cluster name of the workload workspace.
func (w *world) logicalCluster(t *testing.T) string {
	t.Helper()
	parent, name := w.WMW.Split()
	return strings.TrimSpace(framework.Kubectl(t, "--server", framework.KCP(t).ServerURL(parent), "get", "workspace", name,
		"-o", "jsonpath={.spec.cluster}").MustSucceed(t).Stdout)
}
