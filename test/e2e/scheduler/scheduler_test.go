package scheduler

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/test/framework"
)

const (
	scheduled     = edgev1alpha1.ReasonScheduled
	noLocation    = edgev1alpha1.ReasonNoLocationMatches
	noSyncTarget  = edgev1alpha1.ReasonNoSyncTargetMatches
	invalidSelect = edgev1alpha1.ReasonInvalidSelector
)

// An EdgePlacement created, edited and deleted: its slices and status follow, across inventory
// workspaces.
func TestPlacementCreatedEditedDeleted(t *testing.T) {
	t.Parallel()
	f := setUp(t, "imw-a", "imw-b")
	for _, l := range []struct{ imw, name, region string }{
		{"imw-a", "east-1", "east"}, {"imw-a", "west-1", "west"}, {"imw-b", "east-2", "east"},
	} {
		framework.KubectlEdge(t, "ensure", "location", l.name, "region="+l.region, "--imw", f.imws[l.imw].String()).MustSucceed(t)
	}

	f.placement(t, "web", "region: east")
	f.expect(t, "web", 2, scheduled, "imw-a/east-1/east-1", "imw-b/east-2/east-2")
	if c := f.condition(t, "web"); !strings.Contains(c.Message, "2 Locations") {
		t.Errorf("Scheduled message %q does not count the Locations", c.Message)
	}
	if s := f.slicesOf(t, "web"); len(s) != 1 || s[0].Name != "web-0" || len(s[0].OwnerReferences) != 1 || s[0].OwnerReferences[0].Name != "web" {
		t.Errorf("want one slice web-0 owned by the placement, got %+v", s)
	}

	f.placement(t, "web", "region: west")
	f.expect(t, "web", 1, scheduled, "imw-a/west-1/west-1")

	f.placement(t, "web", "region: north")
	f.expect(t, "web", 0, noLocation)
	if c := f.condition(t, "web"); !strings.Contains(c.Message, "no Location matches") {
		t.Errorf("NoLocationMatches message %q does not say why", c.Message)
	}

	f.kubectl(t, f.wmw, "delete", "edgeplacement", "web")
	framework.Eventually(t, converge, func() (bool, string) {
		if s := f.slicesOf(t, "web"); len(s) > 0 {
			return false, "slices of a deleted placement remain"
		}
		return true, ""
	})
}

// Locations and SyncTargets created, relabelled, made unschedulable, deleted; an instanceSelector
// edited; a new inventory workspace: each is reflected in the placement's destinations.
func TestInventoryChanges(t *testing.T) {
	t.Parallel()
	f := setUp(t, "imw-a")
	f.placement(t, "web", "region: east")
	f.expect(t, "web", 0, noLocation)

	// A Location alone: it matches but selects no SyncTarget yet.
	f.location(t, "imw-a", "east-dc", "region: east", "tier: edge")
	f.expect(t, "web", 1, noSyncTarget)
	// SyncTargets created; one outside the instanceSelector.
	f.syncTarget(t, "imw-a", "st-1", "tier: edge", false)
	f.syncTarget(t, "imw-a", "st-2", "tier: edge", false)
	f.syncTarget(t, "imw-a", "st-3", "tier: core", false)
	f.expect(t, "web", 1, scheduled, "imw-a/east-dc/st-1", "imw-a/east-dc/st-2")
	framework.Eventually(t, converge, func() (bool, string) {
		s := f.locationStatus(t, "imw-a", "east-dc")
		return s.Instances == 2 && s.AvailableInstances == 2, "location status " + strings.TrimSpace(fmtStatus(s))
	})

	// A SyncTarget relabelled into and out of the instanceSelector.
	f.syncTarget(t, "imw-a", "st-3", "tier: edge", false)
	f.syncTarget(t, "imw-a", "st-1", "tier: core", false)
	f.expect(t, "web", 1, scheduled, "imw-a/east-dc/st-2", "imw-a/east-dc/st-3")

	// Unschedulable: out; the Location counts it as an instance but not an available one.
	f.syncTarget(t, "imw-a", "st-2", "tier: edge", true)
	f.expect(t, "web", 1, scheduled, "imw-a/east-dc/st-3")
	framework.Eventually(t, converge, func() (bool, string) {
		s := f.locationStatus(t, "imw-a", "east-dc")
		return s.Instances == 2 && s.AvailableInstances == 1, "location status " + fmtStatus(s)
	})

	// The instanceSelector edited.
	f.location(t, "imw-a", "east-dc", "region: east", "tier: core")
	f.expect(t, "web", 1, scheduled, "imw-a/east-dc/st-1")

	// A Location relabelled into the placement's selector.
	f.location(t, "imw-a", "west-dc", "region: west", "tier: edge")
	f.location(t, "imw-a", "west-dc", "region: east", "tier: edge")
	f.expect(t, "web", 2, scheduled, "imw-a/east-dc/st-1", "imw-a/west-dc/st-3")

	// A new inventory workspace, after the placement, with a matching Location.
	f.addIMW(t, "imw-new")
	framework.KubectlEdge(t, "ensure", "location", "east-new", "region=east", "--imw", f.imws["imw-new"].String()).MustSucceed(t)
	f.expect(t, "web", 3, scheduled, "imw-a/east-dc/st-1", "imw-a/west-dc/st-3", "imw-new/east-new/east-new")

	// Deletions.
	f.kubectl(t, f.imws["imw-a"], "delete", "synctarget", "st-1")
	f.expect(t, "web", 3, scheduled, "imw-a/west-dc/st-3", "imw-new/east-new/east-new")
	framework.KubectlEdge(t, "remove", "location", "east-new", "--imw", f.imws["imw-new"].String()).MustSucceed(t)
	f.kubectl(t, f.imws["imw-a"], "delete", "location", "west-dc")
	f.expect(t, "web", 1, noSyncTarget)
	f.kubectl(t, f.imws["imw-a"], "delete", "location", "east-dc")
	f.expect(t, "web", 0, noLocation)
}

// A selector that admission cannot check (a matchLabels key that is not a label key) makes the
// placement's Scheduled condition False with the parse error, keeps its last good slices, and
// leaves the other placements alone; fixed, it schedules again.
func TestInvalidSelector(t *testing.T) {
	t.Parallel()
	f := setUp(t, "imw-a")
	framework.KubectlEdge(t, "ensure", "location", "east-1", "region=east", "--imw", f.imws["imw-a"].String()).MustSucceed(t)
	f.placement(t, "good", "region: east")
	f.placement(t, "typo", "region: east")
	f.expect(t, "typo", 1, scheduled, "imw-a/east-1/east-1")

	f.placement(t, "typo", `"region east!": "yes"`)
	framework.Eventually(t, converge, func() (bool, string) {
		c := f.condition(t, "typo")
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != invalidSelect {
			return false, "Scheduled condition " + fmtCondition(c)
		}
		if !strings.Contains(c.Message, "spec.locationSelectors[0]") || !strings.Contains(c.Message, "region east!") {
			return false, "message does not point at the selector: " + c.Message
		}
		return true, ""
	})
	// The last good destinations stay, so that a typo does not take the workload off the edge.
	if got := f.destinations(t, "typo"); len(got) != 1 {
		t.Errorf("the invalid placement's slices changed: %v", got)
	}
	f.expect(t, "good", 1, scheduled, "imw-a/east-1/east-1")

	f.placement(t, "typo", "region: west")
	f.expect(t, "typo", 0, noLocation)
}
