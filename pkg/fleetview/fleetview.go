// Package fleetview reads what edge-mc reports about a fleet into views that people read: a
// placement's state in a word, the conditions that need the user, and the assemblages of a
// mailbox with the state of each of their objects at the edge. kubectl edge status and kubectl
// edge dashboard both show them, so that the terminal and the web page never disagree.
package fleetview

import (
	"encoding/json"
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// PlacementState says in a word or two where a placement stands.
func PlacementState(p *edgev1alpha1.EdgePlacement) string {
	s := p.Status.Summary
	n := p.Status.MatchingSyncTargetCount
	switch {
	case p.Spec.Rollout != nil && p.Spec.Rollout.Paused:
		return "Paused"
	case s == nil:
		return "Unknown (no summary: is the status-summarizer running?)"
	case n == 0:
		return "NoDestinations"
	case s.Failed > 0:
		return "Failing"
	case s.Ready == n:
		return "Ready"
	case s.Stale > 0 && s.Pending == 0 && s.Applied == 0:
		return "Stale"
	case s.Pending == 0 && s.Applied > 0:
		// Delivered everywhere it can be; what is left is for the edges' objects to turn ready.
		return "NotReady"
	default:
		return "RollingOut"
	}
}

// ProblemConditions are the conditions of a placement that say something is wrong with its
// spec or its objects, which the user must fix: what the table's counts do not show.
func ProblemConditions(p *edgev1alpha1.EdgePlacement) []metav1.Condition {
	var out []metav1.Condition
	for _, c := range p.Status.Conditions {
		bad := false
		switch c.Type {
		case edgev1alpha1.PlacementScheduled, edgev1alpha1.PlacementDestinationsPicked:
			bad = c.Status == metav1.ConditionFalse
		case edgev1alpha1.PlacementProjected:
			// Pending and MailboxNotReady pass by themselves; NoDestinations is Scheduled's.
			bad = c.Status == metav1.ConditionFalse && c.Reason == "ProjectionFailed"
		case edgev1alpha1.PlacementConflict, edgev1alpha1.PlacementUpsyncConflict, edgev1alpha1.PlacementRolloutStalled:
			bad = c.Status == metav1.ConditionTrue
		case edgev1alpha1.PlacementDependenciesReady:
			bad = c.Reason == edgev1alpha1.ReasonDependencyMissing || c.Reason == edgev1alpha1.ReasonDependencyCycle
		case edgev1alpha1.PlacementUpsynced:
			bad = c.Status == metav1.ConditionFalse && c.Reason == "UpsyncFailed"
		}
		if bad {
			out = append(out, c)
		}
	}
	return out
}

// Assemblage is one placement's assemblage in the mailbox, and the state of each of its
// objects at the edge.
type Assemblage struct {
	// Workspace is the logical cluster of the placement's workload workspace.
	Workspace       string   `json:"workspace"`
	Placement       string   `json:"placement"`
	Assemblage      string   `json:"assemblage"`
	Version         string   `json:"version"`
	ObservedVersion string   `json:"observedVersion,omitempty"`
	AppliedVersion  string   `json:"appliedVersion,omitempty"`
	State           string   `json:"state"`
	Reason          string   `json:"reason,omitempty"`
	Objects         []Object `json:"objects,omitempty"`
	// Drift is the syncer's report of drift at the edge (nil: none so far).
	Drift *edgev1alpha1.DriftReport `json:"drift,omitempty"`
	// Collected are the syncer's results of the placement's status collectors at this edge.
	Collected []edgev1alpha1.CollectorReport `json:"collected,omitempty"`
}

// Object is one object of an assemblage at the edge.
type Object struct {
	Object string `json:"object"`
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
	// SharedFrom names the assemblage that carries the object, when this one only shares it.
	SharedFrom string `json:"sharedFrom,omitempty"`
}

// Assemblages reads the assemblages of a mailbox, each with its objects' states, sorted by
// workspace and placement.
func Assemblages(items []unstructured.Unstructured) ([]Assemblage, error) {
	views := make([]Assemblage, 0, len(items))
	for i := range items {
		a := &edgev1alpha1.Assemblage{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(items[i].Object, a); err != nil {
			return nil, fmt.Errorf("reading assemblage %s: %w", items[i].GetName(), err)
		}
		state := transport.DestinationState(a)
		v := Assemblage{
			Workspace: a.Spec.Placement.Cluster, Placement: a.Spec.Placement.Name, Assemblage: a.Name,
			Version: a.Spec.Version, ObservedVersion: a.Status.ObservedVersion, AppliedVersion: a.Status.AppliedVersion,
			State: string(state.State), Reason: state.Reason, Drift: a.Status.Drift, Collected: a.Status.Collected,
		}
		sharedFrom := map[string]string{}
		for _, sh := range a.Spec.Shared {
			sharedFrom[sh.Object] = sh.Assemblage
		}
		states := transport.ObjectStates(a)
		for _, o := range transport.ObjectsOf(a) {
			v.Objects = append(v.Objects, Object{Object: o, State: string(states[o].State), Reason: states[o].Reason, SharedFrom: sharedFrom[o]})
		}
		views = append(views, v)
	}
	sort.Slice(views, func(i, j int) bool {
		if views[i].Workspace != views[j].Workspace {
			return views[i].Workspace < views[j].Workspace
		}
		return views[i].Placement < views[j].Placement
	})
	return views, nil
}

// DestinationsOf returns each placement's destinations, by the placement's name, from the
// SinglePlacementSlices of its workload workspace (slices owned by no EdgePlacement are left
// out), in the order of the slices' names and of the destinations within each.
func DestinationsOf(slices []unstructured.Unstructured) (map[string][]edgev1alpha1.SinglePlacement, error) {
	items := append([]unstructured.Unstructured(nil), slices...)
	sort.Slice(items, func(i, j int) bool { return items[i].GetName() < items[j].GetName() })
	out := map[string][]edgev1alpha1.SinglePlacement{}
	for i := range items {
		u := &items[i]
		owner := ""
		for _, ref := range u.GetOwnerReferences() {
			if ref.Kind == "EdgePlacement" && ref.Controller != nil && *ref.Controller {
				owner = ref.Name
			}
		}
		if owner == "" {
			continue
		}
		s := &edgev1alpha1.SinglePlacementSlice{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, s); err != nil {
			return nil, fmt.Errorf("decoding SinglePlacementSlice %s: %w", u.GetName(), err)
		}
		out[owner] = append(out[owner], s.Destinations...)
	}
	return out, nil
}

// CollectedCell shows one value of a collector's results (JSON) in a table: a string without its
// quotes, null or nothing as <none>, any other value as its JSON.
func CollectedCell(raw []byte) string {
	v := string(raw)
	if v == "" || v == "null" {
		return "<none>"
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return v
}
