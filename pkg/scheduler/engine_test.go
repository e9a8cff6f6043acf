package scheduler

import (
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

// Test vocabulary.

func lbls(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func req(key string, op metav1.LabelSelectorOperator, values ...string) edgev1alpha1.LabelSelectorRequirement {
	return edgev1alpha1.LabelSelectorRequirement{Key: key, Operator: op, Values: values}
}

func matchLabels(kv ...string) edgev1alpha1.LabelSelector {
	return edgev1alpha1.LabelSelector{MatchLabels: lbls(kv...)}
}

func matchExprs(r ...edgev1alpha1.LabelSelectorRequirement) edgev1alpha1.LabelSelector {
	return edgev1alpha1.LabelSelector{MatchExpressions: r}
}

func ptr(s edgev1alpha1.LabelSelector) *edgev1alpha1.LabelSelector { return &s }

// bySite is the instanceSelector of a Location that stands for the SyncTargets labelled site=v.
func bySite(v string) *edgev1alpha1.LabelSelector { return ptr(matchLabels("site", v)) }

// event is one informer event, applied to an engine.
type event struct {
	name  string
	apply func(e *Engine) []PlacementKey
}

func setPlacement(cluster, name string, selectors ...edgev1alpha1.LabelSelector) event {
	return event{"placement " + cluster + "|" + name, func(e *Engine) []PlacementKey {
		return e.SetPlacement(PlacementKey{cluster, name}, selectors)
	}}
}

func setLocation(cluster, name string, labels map[string]string, instanceSelector *edgev1alpha1.LabelSelector) event {
	return event{"location " + cluster + "|" + name, func(e *Engine) []PlacementKey {
		return e.SetLocation(ObjectKey{cluster, name}, labels, instanceSelector)
	}}
}

func setTarget(cluster, name string, labels map[string]string, unschedulable bool) event {
	return event{"synctarget " + cluster + "|" + name, func(e *Engine) []PlacementKey {
		return e.SetSyncTarget(ObjectKey{cluster, name}, uidOf(cluster, name), labels, unschedulable)
	}}
}

func uidOf(cluster, name string) types.UID { return types.UID("uid-" + cluster + "-" + name) }

func apply(e *Engine, events []event) {
	for _, ev := range events {
		ev.apply(e)
	}
}

// destinationStrings renders destinations as cluster/syncTarget@location, checking the UIDs.
func destinationStrings(t *testing.T, d []edgev1alpha1.SinglePlacement) []string {
	t.Helper()
	var out []string
	for _, sp := range d {
		if sp.SyncTargetUID != uidOf(sp.Cluster, sp.SyncTargetName) {
			t.Errorf("destination %+v carries the wrong UID", sp)
		}
		out = append(out, sp.Cluster+"/"+sp.SyncTargetName+"@"+sp.LocationName)
	}
	return out
}

var testPlacement = PlacementKey{"wmw", "p"}

func TestMatching(t *testing.T) {
	// c1 has four Locations, each standing for the SyncTarget with the same site label.
	inventory := []event{
		setLocation("c1", "prod-eu", lbls("env", "prod", "region", "eu"), bySite("1")),
		setLocation("c1", "dev-eu", lbls("env", "dev", "region", "eu"), bySite("2")),
		setLocation("c1", "staging-us", lbls("env", "staging", "region", "us"), bySite("3")),
		setLocation("c1", "gpu", lbls("gpu", "a100"), bySite("4")),
		setTarget("c1", "st1", lbls("site", "1"), false),
		setTarget("c1", "st2", lbls("site", "2"), false),
		setTarget("c1", "st3", lbls("site", "3"), false),
		setTarget("c1", "st4", lbls("site", "4"), false),
	}
	// Two clusters whose Locations select all their own SyncTargets.
	crossCluster := []event{
		setLocation("c1", "edge", lbls("tier", "edge"), ptr(edgev1alpha1.LabelSelector{})),
		setLocation("c2", "edge", lbls("tier", "edge"), nil),
		setLocation("c3", "core", lbls("tier", "core"), nil),
		setTarget("c1", "a", nil, false),
		setTarget("c1", "b", nil, false),
		setTarget("c2", "a", nil, false),
		setTarget("c3", "z", nil, false),
	}
	tests := []struct {
		name          string
		events        []event
		selectors     []edgev1alpha1.LabelSelector
		want          []string
		wantLocations int
		wantReason    string
		wantMessage   string // a substring of the message
	}{{
		name:          "matchLabels",
		events:        inventory,
		selectors:     []edgev1alpha1.LabelSelector{matchLabels("env", "prod")},
		want:          []string{"c1/st1@prod-eu"},
		wantLocations: 1,
		wantReason:    edgev1alpha1.ReasonScheduled,
		wantMessage:   "1 Location, 1 SyncTarget",
	}, {
		name:          "matchLabels with several keys",
		events:        inventory,
		selectors:     []edgev1alpha1.LabelSelector{matchLabels("env", "dev", "region", "eu")},
		want:          []string{"c1/st2@dev-eu"},
		wantLocations: 1,
		wantReason:    edgev1alpha1.ReasonScheduled,
	}, {
		name:          "In",
		events:        inventory,
		selectors:     []edgev1alpha1.LabelSelector{matchExprs(req("env", metav1.LabelSelectorOpIn, "prod", "staging"))},
		want:          []string{"c1/st1@prod-eu", "c1/st3@staging-us"},
		wantLocations: 2,
		wantReason:    edgev1alpha1.ReasonScheduled,
		wantMessage:   "2 Locations, 2 SyncTargets",
	}, {
		name:          "NotIn also matches Locations without the label",
		events:        inventory,
		selectors:     []edgev1alpha1.LabelSelector{matchExprs(req("env", metav1.LabelSelectorOpNotIn, "dev"))},
		want:          []string{"c1/st1@prod-eu", "c1/st3@staging-us", "c1/st4@gpu"},
		wantLocations: 3,
		wantReason:    edgev1alpha1.ReasonScheduled,
	}, {
		name:          "Exists",
		events:        inventory,
		selectors:     []edgev1alpha1.LabelSelector{matchExprs(req("gpu", metav1.LabelSelectorOpExists))},
		want:          []string{"c1/st4@gpu"},
		wantLocations: 1,
		wantReason:    edgev1alpha1.ReasonScheduled,
	}, {
		name:          "DoesNotExist",
		events:        inventory,
		selectors:     []edgev1alpha1.LabelSelector{matchExprs(req("gpu", metav1.LabelSelectorOpDoesNotExist))},
		want:          []string{"c1/st1@prod-eu", "c1/st2@dev-eu", "c1/st3@staging-us"},
		wantLocations: 3,
		wantReason:    edgev1alpha1.ReasonScheduled,
	}, {
		name:   "matchLabels and matchExpressions are ANDed",
		events: inventory,
		selectors: []edgev1alpha1.LabelSelector{{
			MatchLabels:      lbls("region", "eu"),
			MatchExpressions: []edgev1alpha1.LabelSelectorRequirement{req("env", metav1.LabelSelectorOpNotIn, "prod")},
		}},
		want:          []string{"c1/st2@dev-eu"},
		wantLocations: 1,
		wantReason:    edgev1alpha1.ReasonScheduled,
	}, {
		name:   "selectors are ORed",
		events: inventory,
		selectors: []edgev1alpha1.LabelSelector{
			matchLabels("env", "prod"),
			matchExprs(req("gpu", metav1.LabelSelectorOpExists)),
			matchLabels("region", "eu"), // overlaps the first
		},
		want:          []string{"c1/st1@prod-eu", "c1/st2@dev-eu", "c1/st4@gpu"},
		wantLocations: 3,
		wantReason:    edgev1alpha1.ReasonScheduled,
	}, {
		name:          "an empty selector matches every Location",
		events:        inventory,
		selectors:     []edgev1alpha1.LabelSelector{{}},
		want:          []string{"c1/st1@prod-eu", "c1/st2@dev-eu", "c1/st3@staging-us", "c1/st4@gpu"},
		wantLocations: 4,
		wantReason:    edgev1alpha1.ReasonScheduled,
	}, {
		name:          "Locations of several clusters, each selecting only its own SyncTargets",
		events:        crossCluster,
		selectors:     []edgev1alpha1.LabelSelector{matchLabels("tier", "edge")},
		want:          []string{"c1/a@edge", "c1/b@edge", "c2/a@edge"},
		wantLocations: 2,
		wantReason:    edgev1alpha1.ReasonScheduled,
		wantMessage:   "2 Locations, 3 SyncTargets",
	}, {
		name:          "destinations sorted by cluster then SyncTarget",
		events:        crossCluster,
		selectors:     []edgev1alpha1.LabelSelector{matchLabels("tier", "core"), matchLabels("tier", "edge")},
		want:          []string{"c1/a@edge", "c1/b@edge", "c2/a@edge", "c3/z@core"},
		wantLocations: 3,
		wantReason:    edgev1alpha1.ReasonScheduled,
	}, {
		name: "unschedulable SyncTargets are left out",
		events: []event{
			setLocation("c1", "l", lbls("x", "y"), nil),
			setTarget("c1", "up", nil, false),
			setTarget("c1", "down", nil, true),
		},
		selectors:     []edgev1alpha1.LabelSelector{matchLabels("x", "y")},
		want:          []string{"c1/up@l"},
		wantLocations: 1,
		wantReason:    edgev1alpha1.ReasonScheduled,
		wantMessage:   "1 Location, 1 SyncTarget (1 SyncTarget left out as unschedulable)",
	}, {
		name: "a SyncTarget reached through two Locations is one destination, with the smaller name",
		events: []event{
			setLocation("c1", "zeta", lbls("x", "y"), bySite("1")),
			setLocation("c1", "alpha", lbls("x", "y"), bySite("1")),
			setLocation("c1", "mid", lbls("x", "y"), bySite("2")),
			setLocation("c2", "aaa", lbls("x", "y"), bySite("1")),
			setTarget("c1", "st1", lbls("site", "1"), false),
			setTarget("c1", "st2", lbls("site", "2"), false),
		},
		selectors:     []edgev1alpha1.LabelSelector{matchLabels("x", "y")},
		want:          []string{"c1/st1@alpha", "c1/st2@mid"},
		wantLocations: 4,
		wantReason:    edgev1alpha1.ReasonScheduled,
		wantMessage:   "4 Locations, 2 SyncTargets",
	}, {
		name:        "invalid key in matchLabels",
		events:      inventory,
		selectors:   []edgev1alpha1.LabelSelector{matchLabels("env", "prod"), matchLabels("bad key!", "x")},
		wantReason:  edgev1alpha1.ReasonInvalidSelector,
		wantMessage: `spec.locationSelectors[1].matchLabels["bad key!"]`,
	}, {
		name:        "invalid value in matchLabels",
		events:      inventory,
		selectors:   []edgev1alpha1.LabelSelector{matchLabels("env", "not a value")},
		wantReason:  edgev1alpha1.ReasonInvalidSelector,
		wantMessage: `spec.locationSelectors[0].matchLabels["env"]`,
	}, {
		name:        "In without values",
		events:      inventory,
		selectors:   []edgev1alpha1.LabelSelector{matchExprs(req("env", metav1.LabelSelectorOpExists), req("env", metav1.LabelSelectorOpIn))},
		wantReason:  edgev1alpha1.ReasonInvalidSelector,
		wantMessage: "spec.locationSelectors[0].matchExpressions[1]",
	}, {
		name:        "Exists with values",
		events:      inventory,
		selectors:   []edgev1alpha1.LabelSelector{matchExprs(req("env", metav1.LabelSelectorOpExists, "prod"))},
		wantReason:  edgev1alpha1.ReasonInvalidSelector,
		wantMessage: "spec.locationSelectors[0].matchExpressions[0]",
	}, {
		name:        "unknown operator",
		events:      inventory,
		selectors:   []edgev1alpha1.LabelSelector{matchExprs(req("env", "Near", "prod"))},
		wantReason:  edgev1alpha1.ReasonInvalidSelector,
		wantMessage: `"Near" is not a valid label selector operator`,
	}, {
		name:   "several invalid selectors, the count of those not named",
		events: inventory,
		selectors: []edgev1alpha1.LabelSelector{
			matchLabels("a b", "1"), matchLabels("c d", "1"), matchLabels("e f", "1"),
			matchLabels("g h", "1"), matchLabels("i j", "1"),
		},
		wantReason:  edgev1alpha1.ReasonInvalidSelector,
		wantMessage: "and 2 more invalid locationSelectors",
	}, {
		name:        "no selectors",
		events:      inventory,
		wantReason:  edgev1alpha1.ReasonNoLocationMatches,
		wantMessage: "spec.locationSelectors is empty",
	}, {
		name:        "no Location matches one selector",
		events:      inventory,
		selectors:   []edgev1alpha1.LabelSelector{matchLabels("env", "moon")},
		wantReason:  edgev1alpha1.ReasonNoLocationMatches,
		wantMessage: `no Location matches the locationSelector "env=moon"; compare with the Locations' labels`,
	}, {
		name:        "no Location matches two selectors",
		events:      inventory,
		selectors:   []edgev1alpha1.LabelSelector{matchLabels("env", "moon"), matchLabels("env", "mars")},
		wantReason:  edgev1alpha1.ReasonNoLocationMatches,
		wantMessage: `no Location matches any of the 2 locationSelectors ("env=moon", "env=mars")`,
	}, {
		name:          "a Location that selects no SyncTarget",
		events:        []event{setLocation("c1", "l", lbls("x", "y"), bySite("nowhere")), setTarget("c1", "st", nil, false)},
		selectors:     []edgev1alpha1.LabelSelector{matchLabels("x", "y")},
		wantLocations: 1,
		wantReason:    edgev1alpha1.ReasonNoSyncTargetMatches,
		wantMessage:   "1 Location matches, but it selects no schedulable SyncTarget",
	}, {
		name: "Locations whose SyncTargets are all unschedulable",
		events: []event{
			setLocation("c1", "l1", lbls("x", "y"), nil),
			setLocation("c1", "l2", lbls("x", "y"), nil),
			setTarget("c1", "st1", nil, true),
			setTarget("c1", "st2", nil, true),
		},
		selectors:     []edgev1alpha1.LabelSelector{matchLabels("x", "y")},
		wantLocations: 2,
		wantReason:    edgev1alpha1.ReasonNoSyncTargetMatches,
		wantMessage:   "2 Locations match, but they select no schedulable SyncTarget (2 SyncTargets left out as unschedulable)",
	}, {
		name: "a Location with an invalid instanceSelector selects nothing",
		events: []event{
			setLocation("c1", "l", lbls("x", "y"), ptr(matchExprs(req("site", metav1.LabelSelectorOpIn)))),
			setTarget("c1", "st", lbls("site", "1"), false),
		},
		selectors:     []edgev1alpha1.LabelSelector{matchLabels("x", "y")},
		wantLocations: 1,
		wantReason:    edgev1alpha1.ReasonNoSyncTargetMatches,
		wantMessage:   "(1 Location has an invalid instanceSelector)",
	}, {
		name: "the instanceSelector selects within its own cluster only",
		events: []event{
			setLocation("c1", "l", lbls("x", "y"), bySite("1")),
			setTarget("c2", "st", lbls("site", "1"), false),
		},
		selectors:     []edgev1alpha1.LabelSelector{matchLabels("x", "y")},
		wantLocations: 1,
		wantReason:    edgev1alpha1.ReasonNoSyncTargetMatches,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			events := append(slices.Clone(tt.events), setPlacement(testPlacement.Cluster, testPlacement.Name, tt.selectors...))
			var first Result
			// Inventory before the placement, and the placement before the inventory.
			for round, order := range [][]event{events, reversed(events)} {
				e := NewEngine()
				apply(e, order)
				r, ok := e.Result(testPlacement)
				if !ok {
					t.Fatal("placement unknown")
				}
				if round == 1 {
					if !reflect.DeepEqual(first, r) {
						t.Fatalf("the reversed order gives\n%+v\nthe forward order\n%+v", r, first)
					}
					continue
				}
				first = r
				if got := destinationStrings(t, r.Destinations); !slices.Equal(got, tt.want) {
					t.Errorf("destinations %v, want %v", got, tt.want)
				}
				if r.MatchingLocations != tt.wantLocations || r.MatchingSyncTargets != len(tt.want) {
					t.Errorf("counts %d locations, %d sync targets; want %d, %d",
						r.MatchingLocations, r.MatchingSyncTargets, tt.wantLocations, len(tt.want))
				}
				wantStatus := metav1.ConditionFalse
				if tt.wantReason == edgev1alpha1.ReasonScheduled {
					wantStatus = metav1.ConditionTrue
				}
				if r.Status != wantStatus || r.Reason != tt.wantReason {
					t.Errorf("condition %s/%s, want %s/%s (message %q)", r.Status, r.Reason, wantStatus, tt.wantReason, r.Message)
				}
				if !strings.Contains(r.Message, tt.wantMessage) {
					t.Errorf("message %q does not contain %q", r.Message, tt.wantMessage)
				}
			}
		})
	}
}

func reversed(events []event) []event {
	out := slices.Clone(events)
	slices.Reverse(out)
	return out
}

func TestLocationErrorAndInstances(t *testing.T) {
	e := NewEngine()
	loc := ObjectKey{"c1", "l"}
	if err := e.LocationError(loc); err != nil {
		t.Fatalf("unknown Location has error %v", err)
	}
	if i, a := e.LocationInstances(loc); i != 0 || a != 0 {
		t.Fatalf("unknown Location has %d/%d instances", i, a)
	}
	apply(e, []event{
		setTarget("c1", "a", lbls("site", "1"), false),
		setTarget("c1", "b", lbls("site", "1"), true),
		setTarget("c1", "c", lbls("site", "2"), false),
		setTarget("c2", "d", lbls("site", "1"), false),
	})
	e.SetLocation(loc, nil, bySite("1"))
	if err := e.LocationError(loc); err != nil {
		t.Fatalf("valid Location has error %v", err)
	}
	if i, a := e.LocationInstances(loc); i != 2 || a != 1 {
		t.Errorf("instances %d, available %d; want 2, 1", i, a)
	}

	e.SetLocation(loc, nil, ptr(matchLabels("site", "1", "bad/key/x", "v")))
	err := e.LocationError(loc)
	if err == nil || !strings.Contains(err.Error(), `spec.instanceSelector.matchLabels["bad/key/x"]`) {
		t.Errorf("error %v, want one naming spec.instanceSelector.matchLabels[\"bad/key/x\"]", err)
	}
	if i, a := e.LocationInstances(loc); i != 0 || a != 0 {
		t.Errorf("invalid Location has %d/%d instances", i, a)
	}
	if got := e.TakeChangedLocations(); !slices.Equal(got, []ObjectKey{loc}) {
		t.Errorf("changed Locations %v, want %v", got, []ObjectKey{loc})
	}

	e.SetLocation(loc, nil, nil) // nil selects all of c1
	if err := e.LocationError(loc); err != nil {
		t.Errorf("fixed Location still has error %v", err)
	}
	if i, a := e.LocationInstances(loc); i != 3 || a != 2 {
		t.Errorf("instances %d, available %d; want 3, 2", i, a)
	}
	e.SetSyncTarget(ObjectKey{"c1", "b"}, uidOf("c1", "b"), lbls("site", "1"), false)
	if i, a := e.LocationInstances(loc); i != 3 || a != 3 {
		t.Errorf("instances %d, available %d; want 3, 3", i, a)
	}
	e.DeleteSyncTarget(ObjectKey{"c1", "a"})
	if i, a := e.LocationInstances(loc); i != 2 || a != 2 {
		t.Errorf("instances %d, available %d; want 2, 2", i, a)
	}
	if got := e.TakeChangedLocations(); !slices.Equal(got, []ObjectKey{loc}) {
		t.Errorf("changed Locations %v, want %v", got, []ObjectKey{loc})
	}
	if got := e.TakeChangedLocations(); got != nil {
		t.Errorf("changed Locations %v right after taking them", got)
	}
	e.DeleteLocation(loc)
	if i, a := e.LocationInstances(loc); i != 0 || a != 0 {
		t.Errorf("deleted Location has %d/%d instances", i, a)
	}
}

// TestDirtied walks through changes and checks that each returns exactly the placements whose
// result can change, and that those whose result did change are among them.
func TestDirtied(t *testing.T) {
	const w = "wmw"
	eu, us, all, mars, fresh := PlacementKey{w, "eu"}, PlacementKey{w, "us"}, PlacementKey{w, "all"}, PlacementKey{w, "mars"}, PlacementKey{w, "fresh"}
	e := NewEngine()
	apply(e, []event{
		setLocation("c1", "a", lbls("region", "eu"), bySite("x")),
		setLocation("c1", "b", lbls("region", "us"), bySite("y")),
		setLocation("c2", "a", lbls("region", "eu"), nil),
		setTarget("c1", "t1", lbls("site", "x"), false),
		setTarget("c1", "t2", lbls("site", "y"), false),
		setTarget("c2", "t1", nil, false),
		setPlacement(w, "eu", matchLabels("region", "eu")),
		setPlacement(w, "us", matchLabels("region", "us")),
		setPlacement(w, "all", edgev1alpha1.LabelSelector{}),
		setPlacement(w, "mars", matchLabels("region", "mars")),
	})
	steps := []struct {
		name  string
		event event
		want  []PlacementKey
	}{
		{"same SyncTarget again", setTarget("c1", "t1", lbls("site", "x"), false), nil},
		{"SyncTarget moves from Location a to b", setTarget("c1", "t1", lbls("site", "y"), false), []PlacementKey{all, eu, us}},
		{"SyncTarget gets a label nobody selects on", setTarget("c1", "t1", lbls("site", "y", "color", "red"), false), nil},
		{"SyncTarget becomes unschedulable", setTarget("c1", "t1", lbls("site", "y", "color", "red"), true), []PlacementKey{all, us}},
		{"unschedulable SyncTarget moves back to a", setTarget("c1", "t1", lbls("site", "x"), true), []PlacementKey{all, eu, us}},
		{"SyncTarget becomes schedulable", setTarget("c1", "t1", lbls("site", "x"), false), []PlacementKey{all, eu}},
		{"new SyncTarget nobody selects", setTarget("c1", "t3", lbls("site", "z"), false), nil},
		{"new SyncTarget in a cluster without Locations", setTarget("c9", "t1", nil, false), nil},
		{"new SyncTarget selected by c2's Location", setTarget("c2", "t2", nil, false), []PlacementKey{all, eu}},
		{"SyncTarget UID changes", event{"uid", func(e *Engine) []PlacementKey {
			return e.SetSyncTarget(ObjectKey{"c2", "t2"}, "other-uid", nil, false)
		}}, []PlacementKey{all, eu}},
		{"SyncTarget UID changes back", setTarget("c2", "t2", nil, false), []PlacementKey{all, eu}},
		{"same Location again", setLocation("c1", "b", lbls("region", "us"), bySite("y")), nil},
		{"same Location, nil maps for empty ones", setLocation("c2", "a", lbls("region", "eu"), &edgev1alpha1.LabelSelector{MatchLabels: map[string]string{}}), nil},
		{"Location relabelled from us to mars", setLocation("c1", "b", lbls("region", "mars"), bySite("y")), []PlacementKey{mars, us}},
		{"instanceSelector rewritten, same SyncTargets", setLocation("c1", "b", lbls("region", "mars"), ptr(matchExprs(req("site", metav1.LabelSelectorOpIn, "y")))), nil},
		{"instanceSelector now selects other SyncTargets", setLocation("c1", "b", lbls("region", "mars"), bySite("z")), []PlacementKey{all, mars}},
		{"instanceSelector becomes invalid", setLocation("c1", "b", lbls("region", "mars"), ptr(matchLabels("site", "-z-"))), []PlacementKey{all, mars}},
		{"instanceSelector invalid in another way", setLocation("c1", "b", lbls("region", "mars"), ptr(matchLabels("site", "?"))), nil},
		{"instanceSelector valid again, selecting nothing", setLocation("c1", "b", lbls("region", "mars"), bySite("none")), []PlacementKey{all, mars}},
		{"instanceSelector invalid again, still selecting nothing", setLocation("c1", "b", lbls("region", "mars"), ptr(matchLabels("site", "?"))), []PlacementKey{all, mars}},
		{"new Location only the empty selector selects", setLocation("c3", "x", lbls("region", "pluto"), nil), []PlacementKey{all}},
		{"new Location selected by two placements", setLocation("c3", "y", lbls("region", "eu"), nil), []PlacementKey{all, eu}},
		{"same placement again", setPlacement(w, "eu", matchLabels("region", "eu")), nil},
		{"placement rewritten, same Locations", setPlacement(w, "eu", matchExprs(req("region", metav1.LabelSelectorOpIn, "eu"))), nil},
		{"placement now selects other Locations", setPlacement(w, "eu", matchExprs(req("region", metav1.LabelSelectorOpIn, "eu", "pluto"))), []PlacementKey{eu}},
		{"placement gains a selector that adds nothing", setPlacement(w, "mars", matchLabels("region", "mars"), matchLabels("region", "venus")), []PlacementKey{mars}},
		{"new placement", setPlacement(w, "fresh", matchLabels("region", "venus")), []PlacementKey{fresh}},
		{"placement becomes invalid", setPlacement(w, "fresh", matchLabels("region", "venus?")), []PlacementKey{fresh}},
		{"placement invalid in the same way, rewritten", setPlacement(w, "fresh", edgev1alpha1.LabelSelector{MatchLabels: lbls("region", "venus?"), MatchExpressions: []edgev1alpha1.LabelSelectorRequirement{}}), nil},
		{"SyncTarget deleted", event{"delete st", func(e *Engine) []PlacementKey { return e.DeleteSyncTarget(ObjectKey{"c2", "t1"}) }}, []PlacementKey{all, eu}},
		{"unknown SyncTarget deleted", event{"delete st", func(e *Engine) []PlacementKey { return e.DeleteSyncTarget(ObjectKey{"c2", "t1"}) }}, nil},
		{"Location deleted", event{"delete loc", func(e *Engine) []PlacementKey { return e.DeleteLocation(ObjectKey{"c1", "a"}) }}, []PlacementKey{all, eu}},
		{"unknown Location deleted", event{"delete loc", func(e *Engine) []PlacementKey { return e.DeleteLocation(ObjectKey{"c7", "a"}) }}, nil},
		{"SyncTarget of the deleted Location changes", setTarget("c1", "t1", lbls("site", "x"), true), nil},
		{"placement deleted", event{"delete p", func(e *Engine) []PlacementKey { return e.DeletePlacement(eu) }}, []PlacementKey{eu}},
		{"unknown placement deleted", event{"delete p", func(e *Engine) []PlacementKey { return e.DeletePlacement(eu) }}, nil},
		{"Location the deleted placement matched changes", setLocation("c3", "y", lbls("region", "eu", "more", "x"), nil), nil},
	}
	for _, step := range steps {
		before := allResults(e)
		got := step.event.apply(e)
		if !slices.Equal(got, step.want) {
			t.Errorf("%s: dirtied %v, want %v", step.name, got, step.want)
		}
		checkDirtyCoversChanges(t, step.name, before, allResults(e), got)
	}
	if _, ok := e.Result(eu); ok {
		t.Error("deleted placement still has a result")
	}
}

// allResults returns the Result of every placement the engine knows.
func allResults(e *Engine) map[PlacementKey]Result {
	out := map[PlacementKey]Result{}
	for key := range e.placements {
		out[key], _ = e.Result(key)
	}
	return out
}

func checkDirtyCoversChanges(t *testing.T, what string, before, after map[PlacementKey]Result, dirty []PlacementKey) {
	t.Helper()
	for key, r := range after {
		if b, known := before[key]; (!known || !reflect.DeepEqual(b, r)) && !slices.Contains(dirty, key) {
			t.Errorf("%s: result of %v changed but it was not dirtied:\nbefore %+v\nafter  %+v", what, key, b, r)
		}
	}
	for key := range before {
		if _, known := after[key]; !known && !slices.Contains(dirty, key) {
			t.Errorf("%s: %v disappeared but was not dirtied", what, key)
		}
	}
}

// checkChangedLocations checks that the Locations reported changed are known and include every
// Location whose instances or error changed.
func checkChangedLocations(t *testing.T, what string, before, after engineSnapshot, changed []ObjectKey) {
	t.Helper()
	for _, key := range changed {
		if _, known := after.instances[key]; !known {
			t.Errorf("%s: unknown Location %v reported changed", what, key)
		}
	}
	for key, instances := range after.instances {
		if (before.instances[key] != instances || before.errors[key] != after.errors[key]) && !slices.Contains(changed, key) {
			t.Errorf("%s: Location %v changed (%v %q -> %v %q) but was not reported", what, key,
				before.instances[key], before.errors[key], instances, after.errors[key])
		}
	}
}

func TestOrderIndependence(t *testing.T) {
	var events []event
	for c := 0; c < 3; c++ {
		cluster := fmt.Sprintf("c%d", c)
		for i := 0; i < 6; i++ {
			events = append(events,
				setLocation(cluster, fmt.Sprintf("loc%d", i), lbls("region", fmt.Sprint(i%3), "tier", fmt.Sprint(i%2)), bySite(fmt.Sprint(i%4))),
				setTarget(cluster, fmt.Sprintf("st%d", i), lbls("site", fmt.Sprint(i%5)), i == 3))
		}
		events = append(events, setLocation(cluster, "everything", lbls("all", "yes"), nil))
	}
	events = append(events,
		setPlacement("w1", "region0", matchLabels("region", "0")),
		setPlacement("w1", "tier1-or-region2", matchLabels("tier", "1"), matchLabels("region", "2")),
		setPlacement("w2", "notall", matchExprs(req("all", metav1.LabelSelectorOpDoesNotExist))),
		setPlacement("w2", "all", matchLabels("all", "yes")),
		setPlacement("w2", "none", matchLabels("region", "9")),
		setPlacement("w3", "invalid", matchLabels("region", "9"), matchExprs(req("a", metav1.LabelSelectorOpNotIn))),
	)
	reference := NewEngine()
	apply(reference, events)
	want := snapshot(reference)
	if len(want.results) != 6 {
		t.Fatalf("%d results, want 6", len(want.results))
	}
	rng := rand.New(rand.NewSource(1))
	for round := 0; round < 50; round++ {
		shuffled := slices.Clone(events)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		e := NewEngine()
		apply(e, shuffled)
		if got := snapshot(e); !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d: shuffled order gives\n%+v\nwant\n%+v", round, got, want)
		}
	}
}

// engineSnapshot is everything an engine reports.
type engineSnapshot struct {
	results   map[PlacementKey]Result
	instances map[ObjectKey][2]int
	errors    map[ObjectKey]string
}

func snapshot(e *Engine) engineSnapshot {
	s := engineSnapshot{results: allResults(e), instances: map[ObjectKey][2]int{}, errors: map[ObjectKey]string{}}
	for cluster, c := range e.clusters {
		for name := range c.locations {
			key := ObjectKey{cluster, name}
			i, a := e.LocationInstances(key)
			s.instances[key] = [2]int{i, a}
			s.errors[key] = errorText(e.LocationError(key))
		}
	}
	return s
}

// TestRandomAgainstOracle applies random changes and checks, after each one, the engine against a
// brute-force evaluation of the same state, that the dirtied placements cover every changed
// result, and now and then that a fresh engine fed the current state in a random order agrees.
func TestRandomAgainstOracle(t *testing.T) {
	rng := rand.New(rand.NewSource(42))
	m := newModel()
	e := NewEngine()
	clusters := []string{"c1", "c2", "c3"}
	seen := map[string]int{} // reasons, and whether steps dirtied something, so that the test covers them all
	for step := 0; step < 4000; step++ {
		var ev event
		cluster := clusters[rng.Intn(len(clusters))]
		switch op := rng.Intn(10); {
		case op < 2:
			key := PlacementKey{"w" + fmt.Sprint(rng.Intn(2)), "p" + fmt.Sprint(rng.Intn(4))}
			var sels []edgev1alpha1.LabelSelector
			for n := rng.Intn(3); n > 0; n-- {
				sels = append(sels, randomSelector(rng, []string{"region", "tier"}))
			}
			m.placements[key] = sels
			ev = setPlacement(key.Cluster, key.Name, sels...)
		case op < 5:
			key := ObjectKey{cluster, "l" + fmt.Sprint(rng.Intn(5))}
			l := modelLocation{labels: randomLabels(rng, []string{"region", "tier"})}
			if rng.Intn(5) > 0 {
				l.selector = ptr(randomSelector(rng, []string{"site", "gpu"}))
			}
			m.locations[key] = l
			ev = setLocation(key.Cluster, key.Name, l.labels, l.selector)
		case op < 8:
			key := ObjectKey{cluster, "t" + fmt.Sprint(rng.Intn(6))}
			st := modelTarget{labels: randomLabels(rng, []string{"site", "gpu"}), unschedulable: rng.Intn(4) == 0}
			m.targets[key] = st
			ev = setTarget(key.Cluster, key.Name, st.labels, st.unschedulable)
		case op < 9:
			if rng.Intn(2) == 0 {
				key := ObjectKey{cluster, "l" + fmt.Sprint(rng.Intn(5))}
				delete(m.locations, key)
				ev = event{"delete location", func(e *Engine) []PlacementKey { return e.DeleteLocation(key) }}
			} else {
				key := ObjectKey{cluster, "t" + fmt.Sprint(rng.Intn(6))}
				delete(m.targets, key)
				ev = event{"delete synctarget", func(e *Engine) []PlacementKey { return e.DeleteSyncTarget(key) }}
			}
		default:
			key := PlacementKey{"w" + fmt.Sprint(rng.Intn(2)), "p" + fmt.Sprint(rng.Intn(4))}
			delete(m.placements, key)
			ev = event{"delete placement", func(e *Engine) []PlacementKey { return e.DeletePlacement(key) }}
		}
		before, beforeLocations := allResults(e), snapshot(e)
		dirty := ev.apply(e)
		after, afterLocations := allResults(e), snapshot(e)
		checkDirtyCoversChanges(t, fmt.Sprintf("step %d (%s)", step, ev.name), before, after, dirty)
		checkChangedLocations(t, fmt.Sprintf("step %d (%s)", step, ev.name), beforeLocations, afterLocations, e.TakeChangedLocations())
		seen[fmt.Sprintf("dirtied %v", len(dirty) > 0)]++
		for _, r := range after {
			seen[r.Reason]++
		}
		m.check(t, e, step)
		if step%200 == 199 {
			fresh := NewEngine()
			apply(fresh, m.events(rng))
			if got, want := snapshot(fresh), snapshot(e); !reflect.DeepEqual(got, want) {
				t.Fatalf("step %d: a fresh engine gives\n%+v\nthe incremental one\n%+v", step, got, want)
			}
		}
		if t.Failed() {
			t.FailNow()
		}
	}
	for _, what := range []string{"dirtied true", "dirtied false", edgev1alpha1.ReasonScheduled, edgev1alpha1.ReasonNoLocationMatches,
		edgev1alpha1.ReasonNoSyncTargetMatches, edgev1alpha1.ReasonInvalidSelector} {
		if seen[what] < 100 {
			t.Errorf("only %d times %q: the random changes do not cover enough", seen[what], what)
		}
	}
	t.Logf("covered %v", seen)
}

func randomLabels(rng *rand.Rand, keys []string) map[string]string {
	out := map[string]string{}
	for _, k := range keys {
		if rng.Intn(3) > 0 {
			out[k] = fmt.Sprint(rng.Intn(3))
		}
	}
	return out
}

func randomSelector(rng *rand.Rand, keys []string) edgev1alpha1.LabelSelector {
	var s edgev1alpha1.LabelSelector
	if rng.Intn(25) == 0 {
		return matchLabels("bad key", "1")
	}
	if rng.Intn(25) == 0 {
		return matchExprs(req(keys[0], metav1.LabelSelectorOpIn))
	}
	for _, k := range keys {
		switch rng.Intn(6) {
		case 0:
			if s.MatchLabels == nil {
				s.MatchLabels = map[string]string{}
			}
			s.MatchLabels[k] = fmt.Sprint(rng.Intn(3))
		case 1:
			s.MatchExpressions = append(s.MatchExpressions, req(k, metav1.LabelSelectorOpIn, fmt.Sprint(rng.Intn(3)), fmt.Sprint(rng.Intn(3))))
		case 2:
			s.MatchExpressions = append(s.MatchExpressions, req(k, metav1.LabelSelectorOpNotIn, fmt.Sprint(rng.Intn(3))))
		case 3:
			s.MatchExpressions = append(s.MatchExpressions, req(k, metav1.LabelSelectorOpExists))
		case 4:
			s.MatchExpressions = append(s.MatchExpressions, req(k, metav1.LabelSelectorOpDoesNotExist))
		}
	}
	return s
}

// model is the current state, evaluated by brute force.
type model struct {
	placements map[PlacementKey][]edgev1alpha1.LabelSelector
	locations  map[ObjectKey]modelLocation
	targets    map[ObjectKey]modelTarget
}

type modelLocation struct {
	labels   map[string]string
	selector *edgev1alpha1.LabelSelector
}

type modelTarget struct {
	labels        map[string]string
	unschedulable bool
}

func newModel() *model {
	return &model{
		placements: map[PlacementKey][]edgev1alpha1.LabelSelector{},
		locations:  map[ObjectKey]modelLocation{},
		targets:    map[ObjectKey]modelTarget{},
	}
}

// events recreates the state, in a random order.
func (m *model) events(rng *rand.Rand) []event {
	var out []event
	for k, s := range m.placements {
		out = append(out, setPlacement(k.Cluster, k.Name, s...))
	}
	for k, l := range m.locations {
		out = append(out, setLocation(k.Cluster, k.Name, l.labels, l.selector))
	}
	for k, st := range m.targets {
		out = append(out, setTarget(k.Cluster, k.Name, st.labels, st.unschedulable))
	}
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// check compares the engine's results with a brute-force evaluation built on
// metav1.LabelSelectorAsSelector alone.
func (m *model) check(t *testing.T, e *Engine, step int) {
	t.Helper()
	if n := len(allResults(e)); n != len(m.placements) {
		t.Errorf("step %d: engine knows %d placements, want %d", step, n, len(m.placements))
	}
	for lk, l := range m.locations {
		wantInstances, wantAvailable, valid := m.instances(lk, l)
		i, a := e.LocationInstances(lk)
		if i != wantInstances || a != wantAvailable || (e.LocationError(lk) == nil) != valid {
			t.Errorf("step %d: Location %v has %d/%d instances, error %v; want %d/%d, valid %v",
				step, lk, i, a, e.LocationError(lk), wantInstances, wantAvailable, valid)
		}
	}
	for pk, sels := range m.placements {
		got, ok := e.Result(pk)
		if !ok {
			t.Errorf("step %d: placement %v unknown", step, pk)
			continue
		}
		wantDest, wantLocations, wantReason := m.resolve(sels)
		if gotDest := destinationStrings(t, got.Destinations); !slices.Equal(gotDest, wantDest) ||
			got.MatchingLocations != wantLocations || got.MatchingSyncTargets != len(wantDest) || got.Reason != wantReason {
			t.Errorf("step %d: placement %v:\ngot  %v %d %d %s (%s)\nwant %v %d %d %s",
				step, pk, gotDest, got.MatchingLocations, got.MatchingSyncTargets, got.Reason, got.Message,
				wantDest, wantLocations, len(wantDest), wantReason)
		}
		if (got.Status == metav1.ConditionTrue) != (wantReason == edgev1alpha1.ReasonScheduled) {
			t.Errorf("step %d: placement %v status %s with reason %s", step, pk, got.Status, got.Reason)
		}
	}
}

func (m *model) instances(lk ObjectKey, l modelLocation) (instances, available int, valid bool) {
	sel := l.selector
	if sel == nil {
		sel = &edgev1alpha1.LabelSelector{}
	}
	s, err := metav1.LabelSelectorAsSelector(sel.AsMetav1())
	if err != nil {
		return 0, 0, false
	}
	for tk, st := range m.targets {
		if tk.Cluster == lk.Cluster && s.Matches(labels.Set(st.labels)) {
			instances++
			if !st.unschedulable {
				available++
			}
		}
	}
	return instances, available, true
}

func (m *model) resolve(sels []edgev1alpha1.LabelSelector) (destinations []string, locations int, reason string) {
	if len(sels) == 0 {
		return nil, 0, edgev1alpha1.ReasonNoLocationMatches
	}
	var matchers []func(map[string]string) bool
	for i := range sels {
		s, err := metav1.LabelSelectorAsSelector(sels[i].AsMetav1())
		if err != nil {
			return nil, 0, edgev1alpha1.ReasonInvalidSelector
		}
		matchers = append(matchers, func(l map[string]string) bool { return s.Matches(labels.Set(l)) })
	}
	best := map[ObjectKey]string{}
	for lk, l := range m.locations {
		if !slices.ContainsFunc(matchers, func(match func(map[string]string) bool) bool { return match(l.labels) }) {
			continue
		}
		locations++
		sel := l.selector
		if sel == nil {
			sel = &edgev1alpha1.LabelSelector{}
		}
		s, err := metav1.LabelSelectorAsSelector(sel.AsMetav1())
		if err != nil {
			continue
		}
		for tk, st := range m.targets {
			if tk.Cluster != lk.Cluster || st.unschedulable || !s.Matches(labels.Set(st.labels)) {
				continue
			}
			if name, ok := best[tk]; !ok || lk.Name < name {
				best[tk] = lk.Name
			}
		}
	}
	for tk, name := range best {
		destinations = append(destinations, tk.Cluster+"/"+tk.Name+"@"+name)
	}
	slices.Sort(destinations) // cluster and SyncTarget names here contain neither '/' nor '@'
	switch {
	case locations == 0:
		reason = edgev1alpha1.ReasonNoLocationMatches
	case len(destinations) == 0:
		reason = edgev1alpha1.ReasonNoSyncTargetMatches
	default:
		reason = edgev1alpha1.ReasonScheduled
	}
	return destinations, locations, reason
}

func TestNeverPanics(t *testing.T) {
	e := NewEngine()
	weird := []edgev1alpha1.LabelSelector{
		{MatchExpressions: []edgev1alpha1.LabelSelectorRequirement{{}}},
		{MatchExpressions: []edgev1alpha1.LabelSelectorRequirement{{Key: "", Operator: metav1.LabelSelectorOpExists}}},
		{MatchLabels: map[string]string{"": ""}},
		{MatchLabels: map[string]string{strings.Repeat("a", 400): "x"}},
		{MatchExpressions: []edgev1alpha1.LabelSelectorRequirement{{Key: "k", Operator: metav1.LabelSelectorOpIn, Values: []string{strings.Repeat("v", 100)}}}},
	}
	for i := range weird {
		e.SetPlacement(PlacementKey{"", ""}, weird[i:i+1])
		e.SetLocation(ObjectKey{"", ""}, nil, &weird[i])
		e.SetSyncTarget(ObjectKey{"", ""}, "", nil, true)
		if r, ok := e.Result(PlacementKey{"", ""}); !ok || r.Reason != edgev1alpha1.ReasonInvalidSelector {
			t.Errorf("selector %d: result %+v, want InvalidSelector", i, r)
		}
		if e.LocationError(ObjectKey{"", ""}) == nil {
			t.Errorf("selector %d: no Location error", i)
		}
	}
	e.SetPlacement(PlacementKey{"", ""}, nil)
	e.SetLocation(ObjectKey{"", ""}, nil, nil)
	if r, _ := e.Result(PlacementKey{"", ""}); r.Reason != edgev1alpha1.ReasonNoLocationMatches {
		t.Errorf("result %+v, want NoLocationMatches", r)
	}
	e.DeleteSyncTarget(ObjectKey{"", ""})
	e.DeleteLocation(ObjectKey{"", ""})
	e.DeletePlacement(PlacementKey{"", ""})
	if len(e.clusters) != 0 || len(e.placements) != 0 {
		t.Errorf("engine not empty after deleting everything: %d clusters, %d placements", len(e.clusters), len(e.placements))
	}
}

func TestCallerMutationDoesNotLeak(t *testing.T) {
	e := NewEngine()
	locLabels := lbls("region", "eu")
	inst := matchLabels("site", "1")
	targetLabels := lbls("site", "1")
	sels := []edgev1alpha1.LabelSelector{matchLabels("region", "eu")}
	e.SetLocation(ObjectKey{"c", "l"}, locLabels, &inst)
	e.SetSyncTarget(ObjectKey{"c", "t"}, "u", targetLabels, false)
	e.SetPlacement(testPlacement, sels)
	locLabels["region"] = "us"
	inst.MatchLabels["site"] = "2"
	targetLabels["site"] = "2"
	sels[0].MatchLabels["region"] = "us"
	if r, _ := e.Result(testPlacement); r.MatchingSyncTargets != 1 {
		t.Errorf("result %+v changed with the caller's maps", r)
	}
}

// A placement's numberOfDestinations and spreadBy: a change of them dirties it, its Result
// carries the candidates with their values (the Location's label, else the SyncTarget's), and a
// change of that label on either dirties the placements spread by it, and only those.
func TestPickInputs(t *testing.T) {
	e := NewEngine()
	pk := PlacementKey{"wmw", "web"}
	other := PlacementKey{"wmw", "plain"}
	e.SetPlacement(pk, []edgev1alpha1.LabelSelector{matchLabels("region", "east")})
	e.SetPlacement(other, []edgev1alpha1.LabelSelector{matchLabels("region", "east")})
	e.SetLocation(ObjectKey{"imw", "l1"}, lbls("region", "east", "zone", "a"), bySite("1"))
	e.SetLocation(ObjectKey{"imw", "l2"}, lbls("region", "east"), bySite("2"))
	e.SetSyncTarget(ObjectKey{"imw", "t1"}, uidOf("imw", "t1"), lbls("site", "1", "zone", "x"), false)
	e.SetSyncTarget(ObjectKey{"imw", "t2"}, uidOf("imw", "t2"), lbls("site", "2", "zone", "y"), false)

	if r, _ := e.Result(pk); r.NumberOfDestinations != 0 || r.Candidates != nil {
		t.Fatalf("without numberOfDestinations: %+v", r)
	}
	if got := e.SetPick(pk, 1, "zone"); !slices.Equal(got, []PlacementKey{pk}) {
		t.Fatalf("SetPick dirtied %v", got)
	}
	if got := e.SetPick(pk, 1, "zone"); got != nil {
		t.Fatalf("SetPick unchanged dirtied %v", got)
	}
	values := func() []string {
		r, _ := e.Result(pk)
		var out []string
		for _, c := range r.Candidates {
			out = append(out, fmt.Sprintf("%s=%s/%t", c.Destination.SyncTargetName, c.SpreadValue, c.Labelled))
		}
		return out
	}
	if got, want := values(), []string{"t1=a/true", "t2=y/true"}; !slices.Equal(got, want) {
		t.Fatalf("candidates %v, want %v (the Location's label first)", got, want)
	}

	if got := e.SetLocation(ObjectKey{"imw", "l1"}, lbls("region", "east", "zone", "b"), bySite("1")); !slices.Equal(got, []PlacementKey{pk}) {
		t.Errorf("relabelling the Location's zone dirtied %v, want only the spread placement", got)
	}
	if got := e.SetSyncTarget(ObjectKey{"imw", "t2"}, uidOf("imw", "t2"), lbls("site", "2"), false); !slices.Equal(got, []PlacementKey{pk}) {
		t.Errorf("dropping the SyncTarget's zone dirtied %v, want only the spread placement", got)
	}
	if got, want := values(), []string{"t1=b/true", "t2=/false"}; !slices.Equal(got, want) {
		t.Fatalf("candidates %v, want %v", got, want)
	}
	if got := e.SetSyncTarget(ObjectKey{"imw", "t2"}, uidOf("imw", "t2"), lbls("site", "2", "owner", "me"), false); got != nil {
		t.Errorf("an unrelated label dirtied %v", got)
	}
	// With no Location matched, the Result still carries the pick, so that the controller says
	// that nothing was picked.
	e.SetPlacement(pk, []edgev1alpha1.LabelSelector{matchLabels("region", "north")})
	if r, _ := e.Result(pk); r.Reason != edgev1alpha1.ReasonNoLocationMatches || r.NumberOfDestinations != 1 || r.SpreadBy != "zone" {
		t.Fatalf("matching no Location: %+v", r)
	}
	e.SetPlacement(pk, []edgev1alpha1.LabelSelector{matchLabels("region", "east")})
	if got := e.SetPick(pk, 0, ""); !slices.Equal(got, []PlacementKey{pk}) {
		t.Fatalf("SetPick removed dirtied %v", got)
	}
	if r, _ := e.Result(pk); r.Candidates != nil || len(r.Destinations) != 2 {
		t.Fatalf("after removing numberOfDestinations: %+v", r)
	}
}
