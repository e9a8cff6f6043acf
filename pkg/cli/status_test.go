package cli

import (
	"bytes"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

func TestBar(t *testing.T) {
	for _, tc := range []struct {
		ready, total int32
		want         string
	}{
		{0, 0, "[     ]"}, {0, 4, "[.....]"}, {2, 4, "[##...]"}, {4, 4, "[#####]"}, {999, 1000, "[####.]"},
	} {
		if got := bar(tc.ready, tc.total, 5); got != tc.want {
			t.Errorf("bar(%d, %d) = %q, want %q", tc.ready, tc.total, got, tc.want)
		}
	}
}

func placementWith(destinations int32, summary *edgev1alpha1.DestinationCounts, paused bool) edgev1alpha1.EdgePlacement {
	p := edgev1alpha1.EdgePlacement{ObjectMeta: metav1.ObjectMeta{Name: "app"}}
	p.Status.MatchingSyncTargetCount = destinations
	p.Status.Summary = summary
	if paused {
		p.Spec.Rollout = &edgev1alpha1.RolloutStrategy{Paused: true}
	}
	return p
}

func TestPlacementState(t *testing.T) {
	for _, tc := range []struct {
		p    edgev1alpha1.EdgePlacement
		want string
	}{
		{placementWith(3, nil, false), "Unknown"},
		{placementWith(0, &edgev1alpha1.DestinationCounts{}, false), "NoDestinations"},
		{placementWith(3, &edgev1alpha1.DestinationCounts{Ready: 3}, false), "Ready"},
		{placementWith(3, &edgev1alpha1.DestinationCounts{Ready: 2, Failed: 1}, false), "Failing"},
		{placementWith(3, &edgev1alpha1.DestinationCounts{Ready: 2, Stale: 1}, false), "Stale"},
		{placementWith(3, &edgev1alpha1.DestinationCounts{Ready: 1, Pending: 1, Stale: 1}, false), "RollingOut"},
		{placementWith(3, &edgev1alpha1.DestinationCounts{Ready: 3}, true), "Paused"},
	} {
		if got := placementState(&tc.p); !strings.HasPrefix(got, tc.want) {
			t.Errorf("placementState(%+v) = %q, want %q", tc.p.Status.Summary, got, tc.want)
		}
	}
}

func TestPrintPlacementsShowsBrokenEntries(t *testing.T) {
	p := placementWith(3, &edgev1alpha1.DestinationCounts{Ready: 2, Failed: 1}, false)
	p.Status.BrokenCount = 25
	p.Status.Broken = []edgev1alpha1.BrokenEntry{{Destination: "imw:edge-2", Object: "deployments.apps/app/web", Reason: "Progress deadline\nexceeded"}}
	var out bytes.Buffer
	so := &statusOptions{Options: &Options{}}
	if err := so.printPlacements(&out, "root:wmw", []edgev1alpha1.EdgePlacement{p}, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"2/3", "Failing", "Broken in app (25, the oldest 1 shown)", "imw:edge-2", "deployments.apps/app/web", "Progress deadline exceeded"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
