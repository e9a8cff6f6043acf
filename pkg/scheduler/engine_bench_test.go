package scheduler

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

// The benchmark fleet: 10 inventory clusters of 100 SyncTargets and 100 Locations each, and 100
// placements over 5 workload workspaces. Location i stands for SyncTarget i unless the target is
// in maintenance; every tenth Location also stands for a rack of ten SyncTargets, so that some
// SyncTargets are reached through two Locations. Placement j selects the Locations of one region
// (a tenth of them) or those of one tier in the next region.
const (
	benchClusters    = 10
	benchPerCluster  = 100
	benchPlacements  = 100
	benchWorkspaces  = 5
	benchMaintenance = "maintenance"
)

func benchCluster(c int) string { return fmt.Sprintf("inv-%02d", c) }

func benchTargetLabels(i int, maintenance bool) map[string]string {
	l := map[string]string{
		edgev1alpha1.LabelSyncTarget: fmt.Sprintf("st-%03d", i),
		"rack":                       fmt.Sprint(i / 10),
	}
	if maintenance {
		l[benchMaintenance] = "true"
	}
	return l
}

func benchLocationLabels(i int, region int) map[string]string {
	return map[string]string{"region": fmt.Sprintf("r%d", region), "tier": fmt.Sprintf("t%d", i%4)}
}

func benchInstanceSelector(i int) *edgev1alpha1.LabelSelector {
	notInMaintenance := req(benchMaintenance, metav1.LabelSelectorOpDoesNotExist)
	if i%10 == 0 {
		return ptr(matchExprs(req("rack", metav1.LabelSelectorOpIn, fmt.Sprint(i/10)), notInMaintenance))
	}
	return ptr(edgev1alpha1.LabelSelector{
		MatchLabels:      map[string]string{edgev1alpha1.LabelSyncTarget: fmt.Sprintf("st-%03d", i)},
		MatchExpressions: []edgev1alpha1.LabelSelectorRequirement{notInMaintenance},
	})
}

func benchPlacementSelectors(j int) []edgev1alpha1.LabelSelector {
	return []edgev1alpha1.LabelSelector{
		matchLabels("region", fmt.Sprintf("r%d", j%10)),
		matchExprs(req("tier", metav1.LabelSelectorOpIn, fmt.Sprintf("t%d", j%4)), req("region", metav1.LabelSelectorOpIn, fmt.Sprintf("r%d", (j+1)%10))),
	}
}

func benchPlacementKey(j int) PlacementKey {
	return PlacementKey{fmt.Sprintf("wmw-%d", j%benchWorkspaces), fmt.Sprintf("placement-%03d", j)}
}

// buildBenchFleet feeds the whole fleet to a new engine.
func buildBenchFleet() *Engine {
	e := NewEngine()
	for c := 0; c < benchClusters; c++ {
		cluster := benchCluster(c)
		for i := 0; i < benchPerCluster; i++ {
			e.SetSyncTarget(ObjectKey{cluster, fmt.Sprintf("st-%03d", i)}, types.UID(fmt.Sprintf("%s-%d", cluster, i)), benchTargetLabels(i, false), false)
			e.SetLocation(ObjectKey{cluster, fmt.Sprintf("loc-%03d", i)}, benchLocationLabels(i, (c+i)%10), benchInstanceSelector(i))
		}
	}
	for j := 0; j < benchPlacements; j++ {
		e.SetPlacement(benchPlacementKey(j), benchPlacementSelectors(j))
	}
	return e
}

// BenchmarkResolveAll builds the whole fleet from nothing, then resolves every placement.
func BenchmarkResolveAll(b *testing.B) {
	b.ReportAllocs()
	destinations := 0
	for n := 0; n < b.N; n++ {
		e := buildBenchFleet()
		destinations = 0
		for j := 0; j < benchPlacements; j++ {
			r, _ := e.Result(benchPlacementKey(j))
			destinations += r.MatchingSyncTargets
		}
	}
	b.ReportMetric(float64(destinations)/benchPlacements, "destinations/placement")
}

// BenchmarkResultAll resolves every placement of a built fleet.
func BenchmarkResultAll(b *testing.B) {
	e := buildBenchFleet()
	b.ReportAllocs()
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		for j := 0; j < benchPlacements; j++ {
			e.Result(benchPlacementKey(j))
		}
	}
}

// BenchmarkOneLabelChange puts one SyncTarget in or out of maintenance, which takes it out of or
// back into its Locations, then resolves only the dirtied placements.
func BenchmarkOneLabelChange(b *testing.B) {
	e := buildBenchFleet()
	total := benchClusters * benchPerCluster
	dirtied := 0
	b.ReportAllocs()
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		k := n % total
		c, i := k/benchPerCluster, k%benchPerCluster
		cluster := benchCluster(c)
		maintenance := (n/total)%2 == 0
		dirty := e.SetSyncTarget(ObjectKey{cluster, fmt.Sprintf("st-%03d", i)}, types.UID(fmt.Sprintf("%s-%d", cluster, i)), benchTargetLabels(i, maintenance), false)
		dirtied += len(dirty)
		for _, key := range dirty {
			e.Result(key)
		}
	}
	b.ReportMetric(float64(dirtied)/float64(b.N), "dirtied/op")
}

// BenchmarkOneLocationRelabel moves one Location to another region, then resolves the dirtied
// placements.
func BenchmarkOneLocationRelabel(b *testing.B) {
	e := buildBenchFleet()
	total := benchClusters * benchPerCluster
	dirtied := 0
	b.ReportAllocs()
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		k := n % total
		c, i := k/benchPerCluster, k%benchPerCluster
		region := (c + i + 1 + n/total) % 10
		dirty := e.SetLocation(ObjectKey{benchCluster(c), fmt.Sprintf("loc-%03d", i)}, benchLocationLabels(i, region), benchInstanceSelector(i))
		dirtied += len(dirty)
		for _, key := range dirty {
			e.Result(key)
		}
	}
	b.ReportMetric(float64(dirtied)/float64(b.N), "dirtied/op")
}

// BenchmarkOnePlacementChange points one placement at another region, then resolves it.
func BenchmarkOnePlacementChange(b *testing.B) {
	e := buildBenchFleet()
	dirtied := 0
	b.ReportAllocs()
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		j := n % benchPlacements
		dirty := e.SetPlacement(benchPlacementKey(j), benchPlacementSelectors(j+1+n/benchPlacements))
		dirtied += len(dirty)
		for _, key := range dirty {
			e.Result(key)
		}
	}
	b.ReportMetric(float64(dirtied)/float64(b.N), "dirtied/op")
}

// BenchmarkNoOpSet sets a SyncTarget to what it already is.
func BenchmarkNoOpSet(b *testing.B) {
	e := buildBenchFleet()
	labels := benchTargetLabels(7, false)
	key := ObjectKey{benchCluster(3), "st-007"}
	uid := types.UID(benchCluster(3) + "-7")
	b.ReportAllocs()
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		if dirty := e.SetSyncTarget(key, uid, labels, false); dirty != nil {
			b.Fatalf("no-op set dirtied %v", dirty)
		}
	}
}
