package statussummarizer

import (
	"fmt"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

// State is the state of one object at one destination, or of a destination as a whole.
type State string

// The states, from the least to the most advanced; Failed and Stale stand apart.
const (
	// StatePending: the object is not at the edge in its current version yet (not in the
	// mailbox, or not applied by the syncer).
	StatePending State = "Pending"
	// StateApplied: the current version is applied at the edge and not ready yet (kstatus
	// InProgress).
	StateApplied State = "Applied"
	// StateReady: applied and ready (kstatus Current).
	StateReady State = "Ready"
	// StateFailed: the edge refused the object, or it failed there (kstatus Failed).
	StateFailed State = "Failed"
	// StateStale: the destination's syncer has been silent past the grace period, so nothing it
	// reported can be trusted to be current.
	StateStale State = "Stale"
)

// CopyState tells the state of an object at a destination from its mailbox copy and the
// projection hash of the version of it that the syncer reports applied at the edge (its
// mailbox's SyncerConfig status.applied; "" if none): the syncer's annotation says whether the
// edge refused it, the hashes whether the copy's current version is applied, and kstatus, on the
// status the syncer copied back from the edge, whether it is ready.
func CopyState(copyObj *unstructured.Unstructured, appliedHash string) (State, string) {
	annotations := copyObj.GetAnnotations()
	if msg := annotations[edgev1alpha1.AnnotationSyncError]; msg != "" {
		return StateFailed, msg
	}
	if appliedHash == "" || appliedHash != annotations[edgev1alpha1.AnnotationProjectionHash] {
		return StatePending, "not applied at the edge yet"
	}
	result, err := kstatus.Compute(copyObj)
	if err != nil {
		return StateApplied, "status unreadable: " + err.Error()
	}
	switch result.Status {
	case kstatus.CurrentStatus:
		return StateReady, ""
	case kstatus.FailedStatus:
		return StateFailed, result.Message
	default:
		return StateApplied, result.Message
	}
}

// ObjectName names an object in summaries: <resource>.<group>/<namespace>/<name>, without the
// group for the core group and without the namespace for a cluster-scoped object (the same as
// the keys of SyncerConfig status.applied).
func ObjectName(gr schema.GroupResource, namespace, name string) string {
	return edgev1alpha1.CopyKey(gr, namespace, name)
}

// DestinationView is what the summarizer knows of one destination of a placement.
type DestinationView struct {
	// Name is <inventory cluster>:<SyncTarget name>.
	Name string
	// Stale says the syncer has been silent past the grace period, since StaleSince.
	Stale      bool
	StaleSince time.Time
	// Objects are the states of the placement's objects whose copies are in the destination's
	// mailbox, by ObjectName.
	Objects map[string]ObjectState
}

// ObjectState is the state of one object at one destination, and why.
type ObjectState struct {
	State  State
	Reason string
}

// Summary is what the status summarizer writes into an EdgePlacement's status.
type Summary struct {
	Counts      edgev1alpha1.DestinationCounts
	Objects     []edgev1alpha1.ObjectSummary
	ObjectCount int
	Broken      []edgev1alpha1.BrokenEntry
	BrokenCount int
}

// Summarize counts the destinations of a placement by state, and for each object its
// destinations by the object's state there, and lists what is broken: every failed (destination,
// object) pair and every stale destination, oldest first, at most MaxBrokenEntries of them.
// objects are every object the placement selects (those missing at a destination count as
// pending there); brokenSince holds when each broken entry was first seen, by brokenKey, and now
// stamps the new ones. The result's size is bounded whatever the number of destinations.
func Summarize(objects []string, dests []DestinationView, brokenSince map[string]metav1.Time, now metav1.Time) Summary {
	var s Summary
	perObject := make(map[string]*edgev1alpha1.DestinationCounts, len(objects))
	for _, o := range objects {
		perObject[o] = &edgev1alpha1.DestinationCounts{}
	}
	var broken []edgev1alpha1.BrokenEntry
	for _, d := range dests {
		if d.Stale {
			s.Counts.Stale++
			for _, o := range objects {
				perObject[o].Stale++
			}
			since := metav1.NewTime(d.StaleSince)
			broken = append(broken, edgev1alpha1.BrokenEntry{Destination: d.Name,
				Reason: fmt.Sprintf("the syncer has been silent since %s", d.StaleSince.UTC().Format(time.RFC3339)),
				Since:  &since})
			continue
		}
		worst := StateReady
		for _, o := range objects {
			st, ok := d.Objects[o]
			if !ok {
				st = ObjectState{State: StatePending}
			}
			add(perObject[o], st.State)
			worst = worse(worst, st.State)
			if st.State == StateFailed {
				since, ok := brokenSince[brokenKey(d.Name, o)]
				if !ok {
					since = now
				}
				broken = append(broken, edgev1alpha1.BrokenEntry{Destination: d.Name, Object: o, Reason: st.Reason, Since: &since})
			}
		}
		add(&s.Counts, worst)
	}
	sort.SliceStable(broken, func(i, j int) bool {
		if !broken[i].Since.Equal(broken[j].Since) {
			return broken[i].Since.Before(broken[j].Since)
		}
		if broken[i].Destination != broken[j].Destination {
			return broken[i].Destination < broken[j].Destination
		}
		return broken[i].Object < broken[j].Object
	})
	s.BrokenCount = len(broken)
	if len(broken) > edgev1alpha1.MaxBrokenEntries {
		broken = broken[:edgev1alpha1.MaxBrokenEntries]
	}
	s.Broken = broken

	total := int32(len(dests))
	for _, o := range objects {
		s.Objects = append(s.Objects, edgev1alpha1.ObjectSummary{Object: o, DestinationCounts: *perObject[o]})
	}
	sort.SliceStable(s.Objects, func(i, j int) bool {
		ri, rj := s.Objects[i].Ready == total, s.Objects[j].Ready == total
		if ri != rj {
			return !ri
		}
		return s.Objects[i].Object < s.Objects[j].Object
	})
	s.ObjectCount = len(s.Objects)
	if len(s.Objects) > edgev1alpha1.MaxObjectSummaries {
		s.Objects = s.Objects[:edgev1alpha1.MaxObjectSummaries]
	}
	return s
}

// brokenKey identifies a broken entry across passes.
func brokenKey(destination, object string) string { return destination + "|" + object }

func add(c *edgev1alpha1.DestinationCounts, s State) {
	switch s {
	case StatePending:
		c.Pending++
	case StateApplied:
		c.Applied++
	case StateReady:
		c.Ready++
	case StateFailed:
		c.Failed++
	case StateStale:
		c.Stale++
	}
}

// worse returns the state that decides a destination's state: Failed over Pending over Applied
// over Ready.
func worse(a, b State) State {
	rank := map[State]int{StateReady: 0, StateApplied: 1, StatePending: 2, StateFailed: 3}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// ReadyCondition is the EdgePlacement's Ready condition for a summary of n destinations.
func ReadyCondition(c edgev1alpha1.DestinationCounts, n int, generation int64) metav1.Condition {
	cond := metav1.Condition{Type: edgev1alpha1.PlacementReady, ObservedGeneration: generation}
	switch {
	case n == 0:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, edgev1alpha1.ReasonNoDestinations, "the placement has no destinations"
	case int(c.Ready) == n:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, edgev1alpha1.ReasonAllReady, fmt.Sprintf("ready at all %d destinations", n)
	case c.Failed > 0:
		cond.Status, cond.Reason = metav1.ConditionFalse, edgev1alpha1.ReasonFailing
		cond.Message = fmt.Sprintf("failing at %d of %d destinations (see status.broken); %s", c.Failed, n, countsText(c))
	default:
		cond.Status, cond.Reason = metav1.ConditionFalse, edgev1alpha1.ReasonNotReady
		cond.Message = fmt.Sprintf("ready at %d of %d destinations; %s", c.Ready, n, countsText(c))
	}
	return cond
}

func countsText(c edgev1alpha1.DestinationCounts) string {
	return fmt.Sprintf("%d pending, %d applied and not ready yet, %d ready, %d failed, %d stale", c.Pending, c.Applied, c.Ready, c.Failed, c.Stale)
}

// SingletonCondition is the EdgePlacement's SingletonStatus condition for a placement that asks
// for its objects' status to be reported back, with n destinations.
func SingletonCondition(n int, generation int64) metav1.Condition {
	if n == 1 {
		return metav1.Condition{Type: edgev1alpha1.PlacementSingletonStatus, Status: metav1.ConditionTrue, ObservedGeneration: generation,
			Reason: edgev1alpha1.ReasonSingletonReported, Message: "the objects' status is copied back from their one destination"}
	}
	return metav1.Condition{Type: edgev1alpha1.PlacementSingletonStatus, Status: metav1.ConditionFalse, ObservedGeneration: generation,
		Reason:  edgev1alpha1.ReasonNotSingleton,
		Message: fmt.Sprintf("the placement has %d destinations; the objects' status is copied back only while it has exactly one", n)}
}

// setCondition sets or, when remove is true, removes a condition; it reports whether the list
// changed.
func setCondition(conditions *[]metav1.Condition, cond metav1.Condition, remove bool) bool {
	if remove {
		return meta.RemoveStatusCondition(conditions, cond.Type)
	}
	return meta.SetStatusCondition(conditions, cond)
}
