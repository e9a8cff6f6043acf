package scheduler

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/test/framework"
)

var configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

const pickWorkload = `apiVersion: v1
kind: Namespace
metadata: {name: app}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: app}
data: {mode: "1"}
`

const pickPlacement = `apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: two}
spec:
  locationSelectors: [{matchExpressions: [{key: region, operator: Exists}]}]
  numberOfDestinations: 2
  spreadBy: region
  downsync:
  - namespaces: [app]
`

// TestPickDestinations runs a placement with numberOfDestinations: 2 and spreadBy: region over
// four edge clusters, two per region, with their syncers: it picks one per region and the
// workload arrives at exactly those two; relabelling an edge that was not picked moves nothing;
// a picked SyncTarget deleted is replaced by the other of its region, and the workload arrives
// there. Admission refuses numberOfDestinations: 0 and spreadBy without numberOfDestinations.
func TestPickDestinations(t *testing.T) {
	t.Parallel()
	regions := map[string]string{"east-1": "east", "east-2": "east", "west-1": "west", "west-2": "west"}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range regions {
			if !yield(n) {
				return
			}
		}
	})
	made := framework.StartLogicalPClusters(t, names...)
	f := framework.NewFleet(t, regions)
	wmwURL := framework.KCP(t).ServerURL(f.WMW)

	// Admission, while the edge clusters are being made.
	for _, bad := range []struct{ spec, want string }{
		{"numberOfDestinations: 0", "spec.numberOfDestinations"},
		{"spreadBy: region", "spec.spreadBy needs spec.numberOfDestinations"},
	} {
		r := framework.KubectlApply(t, wmwURL, fmt.Sprintf(`apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: bad}
spec:
  locationSelectors: [{matchLabels: {region: east}}]
  %s
`, bad.spec)).MustFail(t)
		if !strings.Contains(r.Stderr, bad.want) {
			t.Errorf("applying a placement with %q failed, but the error does not say %q: %s", bad.spec, bad.want, r.Stderr)
		}
	}

	pclusters := made()
	edges := make([]*framework.PCluster, len(names))
	for i, n := range names {
		edges[i] = pclusters[n]
	}
	framework.StartSyncers(t, f.ESPW, f.IMW, names, edges, 4)
	f.Apply(t, f.WMW, pickWorkload)
	f.Apply(t, f.WMW, pickPlacement)

	start := time.Now()
	picks := waitForPicks(t, f, "picked 2 of 4 matching SyncTargets", func(picks []string) string {
		if len(picks) != 2 || regions[picks[0]] == regions[picks[1]] {
			return "want one per region"
		}
		return ""
	})
	for _, n := range picks {
		framework.EventuallyObject(t, "the workload at the picked "+n, pclusters[n].DynamicClient(t), configMapsGVR, "app", "settings", framework.Present)
	}
	for _, n := range names {
		if !slices.Contains(picks, n) && framework.GetObject(t, pclusters[n].DynamicClient(t), configMapsGVR, "app", "settings") != nil {
			t.Errorf("the workload reached %s, which was not picked (picks %v)", n, picks)
		}
	}
	t.Logf("picked %v; the workload there %.1fs after the placement", picks, time.Since(start).Seconds())

	// The edge of the first pick's region that was not picked, relabelled out of the placement's
	// selector and back in with a label more: the scheduler counts it out and in (so it has seen
	// each change), and the picks stay.
	lost := picks[0]
	var replacement string
	for _, n := range names {
		if n != lost && regions[n] == regions[lost] {
			replacement = n
		}
	}
	unchanged := func(got []string) string {
		if !slices.Equal(got, picks) {
			return fmt.Sprintf("relabelling %s, which was not picked, moved the picks from %v", replacement, picks)
		}
		return ""
	}
	framework.KubectlEdge(t, "ensure", "location", replacement, "region-", "--imw", f.IMW.String(), "--espw", f.ESPW.String()).MustSucceed(t)
	waitForPicks(t, f, "picked 2 of 3 matching SyncTargets", unchanged)
	framework.KubectlEdge(t, "ensure", "location", replacement, "region="+regions[lost], "tier=gold", "--imw", f.IMW.String(), "--espw", f.ESPW.String()).MustSucceed(t)
	waitForPicks(t, f, "picked 2 of 4 matching SyncTargets", unchanged)

	// A picked SyncTarget deleted: the other of its region replaces it, the other pick stays.
	framework.Kubectl(t, "--server", framework.KCP(t).ServerURL(f.IMW), "delete", "synctarget", lost).MustSucceed(t)
	start = time.Now()
	want := slices.Sorted(slices.Values([]string{replacement, picks[1]}))
	waitForPicks(t, f, "picked 2 of 3 matching SyncTargets", func(got []string) string {
		if !slices.Equal(got, want) {
			return fmt.Sprintf("want %v", want)
		}
		return ""
	})
	framework.EventuallyObject(t, "the workload at the replacement "+replacement, pclusters[replacement].DynamicClient(t), configMapsGVR, "app", "settings", framework.Present)
	t.Logf("%s deleted: %s picked and the workload there %.1fs later", lost, replacement, time.Since(start).Seconds())
}

// waitForPicks waits until the scheduler has written the placement "two" of the current
// generation with DestinationsPicked True, a message that contains message and counts one per
// region, and its slices hold picks that check accepts, and returns them, sorted by name.
func waitForPicks(t *testing.T, f *framework.Fleet, message string, check func(picks []string) string) []string {
	t.Helper()
	var picks []string
	framework.Eventually(t, framework.Converge, func() (bool, string) {
		p := getPlacement(t, f, "two")
		if p == nil {
			return false, "no placement"
		}
		c := meta.FindStatusCondition(p.Status.Conditions, edgev1alpha1.PlacementDestinationsPicked)
		switch {
		case p.Status.ObservedGeneration != p.Generation:
			return false, fmt.Sprintf("observedGeneration %d, generation %d", p.Status.ObservedGeneration, p.Generation)
		case c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != p.Generation:
			return false, "DestinationsPicked " + fmtCondition(c)
		case !strings.Contains(c.Message, message) || !strings.Contains(c.Message, "spread by region: 1 east, 1 west"):
			return false, fmt.Sprintf("DestinationsPicked says %q, want %q and one per region", c.Message, message)
		case p.Status.MatchingSyncTargetCount != 2:
			return false, fmt.Sprintf("matchingSyncTargetCount %d, want 2", p.Status.MatchingSyncTargetCount)
		}
		picks = nil
		for _, d := range slicesOfPlacement(t, f, "two") {
			picks = append(picks, d.SyncTargetName)
		}
		slices.Sort(picks)
		if why := check(picks); why != "" {
			return false, fmt.Sprintf("picks %v: %s", picks, why)
		}
		return true, ""
	})
	return picks
}

// getPlacement and slicesOfPlacement read a placement and its slices in a framework.Fleet's
// workload workspace, with this package's helpers.
func getPlacement(t *testing.T, f *framework.Fleet, name string) *edgev1alpha1.EdgePlacement {
	t.Helper()
	return (&fleet{wmw: f.WMW}).getPlacement(t, name)
}

func slicesOfPlacement(t *testing.T, f *framework.Fleet, name string) []edgev1alpha1.SinglePlacement {
	t.Helper()
	var out []edgev1alpha1.SinglePlacement
	for _, s := range (&fleet{wmw: f.WMW}).slicesOf(t, name) {
		out = append(out, s.Destinations...)
	}
	return out
}
