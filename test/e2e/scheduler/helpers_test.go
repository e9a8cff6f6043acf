package scheduler

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/test/framework"
)

var (
	placementsGVR = edgev1alpha1.SchemeGroupVersion.WithResource("edgeplacements")
	slicesGVR     = edgev1alpha1.SchemeGroupVersion.WithResource("singleplacementslices")
	locationsGVR  = edgev1alpha1.SchemeGroupVersion.WithResource("locations")
)

// converge is how long the scheduler may take to reflect a change.
const converge = 30 * time.Second

// fleet is one test's ESPW, workload workspace and inventory workspaces, with a scheduler
// running for them.
type fleet struct {
	base, espw, wmw logicalcluster.Path
	// imws maps a short name to an inventory workspace, and logical clusters back to names.
	imws     map[string]logicalcluster.Path
	clusters map[string]string
}

func setUp(t *testing.T, imws ...string) *fleet {
	t.Helper()
	base := framework.NewWorkspace(t)
	f := &fleet{base: base, espw: base.Join("espw"), wmw: base.Join("wmw"), imws: map[string]logicalcluster.Path{}, clusters: map[string]string{}}
	framework.KubectlEdge(t, "init", "--espw", f.espw.String()).MustSucceed(t)
	framework.KubectlEdge(t, "ensure", "wmw", f.wmw.String(), "--espw", f.espw.String()).MustSucceed(t)
	for _, name := range imws {
		f.addIMW(t, name)
	}
	framework.StartControllerManager(t, f.espw, "--controllers", "scheduler")
	return f
}

// addIMW makes an inventory workspace base:<name>.
func (f *fleet) addIMW(t *testing.T, name string) logicalcluster.Path {
	t.Helper()
	imw := f.base.Join(name)
	framework.KubectlEdge(t, "ensure", "imw", imw.String(), "--espw", f.espw.String()).MustSucceed(t)
	ctx := framework.Context(t, 30*time.Second)
	lc, err := framework.KCP(t).KCP.Cluster(imw).CoreV1alpha1().LogicalClusters().Get(ctx, "cluster", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f.imws[name] = imw
	f.clusters[logicalcluster.From(lc).String()] = name
	return imw
}

func (f *fleet) apply(t *testing.T, ws logicalcluster.Path, manifest string) {
	t.Helper()
	framework.KubectlApply(t, framework.KCP(t).ServerURL(ws), manifest).MustSucceed(t)
}

func (f *fleet) kubectl(t *testing.T, ws logicalcluster.Path, args ...string) {
	t.Helper()
	framework.Kubectl(t, append([]string{"--server", framework.KCP(t).ServerURL(ws)}, args...)...).MustSucceed(t)
}

// placement applies an EdgePlacement whose one locationSelector has the given matchLabels.
func (f *fleet) placement(t *testing.T, name string, matchLabels string) {
	t.Helper()
	f.apply(t, f.wmw, fmt.Sprintf(`apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: %s}
spec:
  locationSelectors:
  - matchLabels: {%s}
`, name, matchLabels))
}

// location applies a Location with the given labels whose instanceSelector has the given
// matchLabels.
func (f *fleet) location(t *testing.T, imw, name, labels, instanceLabels string) {
	t.Helper()
	f.apply(t, f.imws[imw], fmt.Sprintf(`apiVersion: edge.kcp.io/v1alpha1
kind: Location
metadata: {name: %s, labels: {%s}}
spec:
  instanceSelector:
    matchLabels: {%s}
`, name, labels, instanceLabels))
}

func (f *fleet) syncTarget(t *testing.T, imw, name, labels string, unschedulable bool) {
	t.Helper()
	f.apply(t, f.imws[imw], fmt.Sprintf(`apiVersion: edge.kcp.io/v1alpha1
kind: SyncTarget
metadata: {name: %s, labels: {%s}}
spec: {unschedulable: %t}
`, name, labels, unschedulable))
}

// getPlacement returns the EdgePlacement, or nil if there is none.
func (f *fleet) getPlacement(t *testing.T, name string) *edgev1alpha1.EdgePlacement {
	t.Helper()
	ctx := framework.Context(t, 30*time.Second)
	u, err := framework.KCP(t).DynamicClient(t, f.wmw).Resource(placementsGVR).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	p := &edgev1alpha1.EdgePlacement{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// slicesOf returns the SinglePlacementSlices of the placement, by the placement label.
func (f *fleet) slicesOf(t *testing.T, placement string) []edgev1alpha1.SinglePlacementSlice {
	t.Helper()
	ctx := framework.Context(t, 30*time.Second)
	list, err := framework.KCP(t).DynamicClient(t, f.wmw).Resource(slicesGVR).List(ctx, metav1.ListOptions{LabelSelector: edgev1alpha1.LabelPlacement + "=" + placement})
	if err != nil {
		t.Fatal(err)
	}
	var out []edgev1alpha1.SinglePlacementSlice
	for _, u := range list.Items {
		s := edgev1alpha1.SinglePlacementSlice{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// destinations lists the placement's destinations as <imw>/<location>/<synctarget>, in the
// slices' order.
func (f *fleet) destinations(t *testing.T, placement string) []string {
	t.Helper()
	var out []string
	for _, s := range f.slicesOf(t, placement) {
		for _, d := range s.Destinations {
			imw := f.clusters[d.Cluster]
			if imw == "" {
				imw = "?" + d.Cluster
			}
			out = append(out, imw+"/"+d.LocationName+"/"+d.SyncTargetName)
		}
	}
	return out
}

// expect waits until the placement's slices hold exactly want (sorted as the scheduler sorts
// them: by inventory cluster, then SyncTarget name, so the test compares sets) and its status
// says so: the counts, and the Scheduled condition with the given reason.
func (f *fleet) expect(t *testing.T, placement string, locations int, reason string, want ...string) {
	t.Helper()
	framework.Eventually(t, converge, func() (bool, string) {
		got := f.destinations(t, placement)
		sortedGot := slices.Sorted(slices.Values(got))
		sortedWant := slices.Sorted(slices.Values(want))
		if !slices.Equal(sortedGot, sortedWant) {
			return false, fmt.Sprintf("destinations of %s: %v, want %v", placement, got, want)
		}
		p := f.getPlacement(t, placement)
		if p == nil {
			return false, "placement " + placement + " is missing"
		}
		c := meta.FindStatusCondition(p.Status.Conditions, edgev1alpha1.PlacementScheduled)
		wantStatus := metav1.ConditionTrue
		if reason != edgev1alpha1.ReasonScheduled {
			wantStatus = metav1.ConditionFalse
		}
		switch {
		case p.Status.ObservedGeneration != p.Generation:
			return false, fmt.Sprintf("observedGeneration %d, generation %d", p.Status.ObservedGeneration, p.Generation)
		case c == nil || c.Status != wantStatus || c.Reason != reason:
			return false, fmt.Sprintf("Scheduled condition %+v, want %s/%s", c, wantStatus, reason)
		case int(p.Status.MatchingLocationCount) != locations || int(p.Status.MatchingSyncTargetCount) != len(want):
			return false, fmt.Sprintf("status counts %d locations, %d sync targets; want %d, %d",
				p.Status.MatchingLocationCount, p.Status.MatchingSyncTargetCount, locations, len(want))
		}
		// The slices hold the destinations in a stable order: by cluster, then SyncTarget name.
		for _, s := range f.slicesOf(t, placement) {
			if !slices.IsSortedFunc(s.Destinations, func(a, b edgev1alpha1.SinglePlacement) int {
				return cmp.Or(strings.Compare(a.Cluster, b.Cluster), strings.Compare(a.SyncTargetName, b.SyncTargetName))
			}) {
				return false, fmt.Sprintf("destinations of slice %s not in order: %v", s.Name, s.Destinations)
			}
		}
		return true, ""
	})
}

// condition returns the placement's Scheduled condition, or nil.
func (f *fleet) condition(t *testing.T, placement string) *metav1.Condition {
	t.Helper()
	p := f.getPlacement(t, placement)
	if p == nil {
		return nil
	}
	return meta.FindStatusCondition(p.Status.Conditions, edgev1alpha1.PlacementScheduled)
}

// locationStatus returns a Location's status.
func (f *fleet) locationStatus(t *testing.T, imw, name string) edgev1alpha1.LocationStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	u, err := framework.KCP(t).DynamicClient(t, f.imws[imw]).Resource(locationsGVR).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l := &edgev1alpha1.Location{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, l); err != nil {
		t.Fatal(err)
	}
	return l.Status
}

func fmtStatus(s edgev1alpha1.LocationStatus) string {
	return fmt.Sprintf("instances=%d availableInstances=%d", s.Instances, s.AvailableInstances)
}

func fmtCondition(c *metav1.Condition) string {
	if c == nil {
		return "(none)"
	}
	return fmt.Sprintf("%s/%s: %s", c.Status, c.Reason, c.Message)
}
