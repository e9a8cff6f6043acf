package transport

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

// State is the state of one object at one destination, or of a destination as a whole, as
// summaries show it.
type State string

// The states, from the least to the most advanced; Failed and Stale stand apart. The first four
// are those a syncer reports per object in an assemblage's status.objects.
const (
	// StatePending: the object is not at the edge in its current version yet (its assemblage is
	// not in the mailbox, or the syncer has not taken in or applied its current version).
	StatePending State = edgev1alpha1.ObjectPending
	// StateApplied: the current version is applied at the edge and not ready yet (kstatus
	// InProgress).
	StateApplied State = edgev1alpha1.ObjectApplied
	// StateReady: applied and ready (kstatus Current).
	StateReady State = edgev1alpha1.ObjectReady
	// StateFailed: the edge refused the object, or it failed there (kstatus Failed), or the
	// syncer refused the whole assemblage.
	StateFailed State = edgev1alpha1.ObjectFailed
	// StateStale: the destination's syncer has been silent past the grace period, so nothing it
	// reported can be trusted to be current.
	StateStale State = "Stale"
)

// ObjectState is the state of one object at one destination, and why.
type ObjectState struct {
	State  State
	Reason string
}

// ObjectsOf lists the objects an assemblage names: those it carries (spec.objects), in apply
// order, then those the placement shares with another assemblage of the mailbox (spec.shared).
// nil for nil.
func ObjectsOf(a *edgev1alpha1.Assemblage) []string {
	if a == nil {
		return nil
	}
	out := make([]string, 0, len(a.Spec.Objects)+len(a.Spec.Shared))
	seen := make(map[string]bool, cap(out))
	for _, o := range a.Spec.Objects {
		if !seen[o] {
			seen[o] = true
			out = append(out, o)
		}
	}
	for _, s := range a.Spec.Shared {
		if !seen[s.Object] {
			seen[s.Object] = true
			out = append(out, s.Object)
		}
	}
	return out
}

// AssemblageState tells the state that an assemblage as a whole imposes on every object it names
// at its destination, if it does (decided is true): a destination whose mailbox holds no
// assemblage of the placement yet (a is nil), or whose syncer has not taken in spec.version yet,
// is Pending; one whose syncer refused the current version is Failed, except for a part that has
// not arrived yet (Pending: the placement translator writes the parts first, so they are on their
// way). When the syncer has taken in spec.version, decided is false and each object's state is
// the one status.objects reports (ObjectStates).
func AssemblageState(a *edgev1alpha1.Assemblage) (state ObjectState, decided bool) {
	if a == nil {
		return ObjectState{State: StatePending, Reason: "not delivered to the mailbox yet"}, true
	}
	if c := currentRefusal(a); c != nil {
		if c.Reason == edgev1alpha1.ReasonPartsMissing {
			return ObjectState{State: StatePending, Reason: "waiting for parts of the assemblage: " + c.Message}, true
		}
		return ObjectState{State: StateFailed, Reason: fmt.Sprintf("the syncer refused assemblage %s (%s): %s", a.Name, c.Reason, c.Message)}, true
	}
	if a.Status.ObservedVersion != a.Spec.Version {
		if a.Status.ObservedVersion == "" {
			return ObjectState{State: StatePending, Reason: fmt.Sprintf("the syncer has not read version %s yet", a.Spec.Version)}, true
		}
		return ObjectState{State: StatePending, Reason: fmt.Sprintf("the syncer has not taken in version %s yet (it reports on %s)", a.Spec.Version, a.Status.ObservedVersion)}, true
	}
	return ObjectState{}, false
}

// currentRefusal returns the assemblage's Refused condition if it is true of the current spec: a
// condition written for an older generation says nothing of this one.
func currentRefusal(a *edgev1alpha1.Assemblage) *metav1.Condition {
	c := meta.FindStatusCondition(a.Status.Conditions, edgev1alpha1.AssemblageRefused)
	if c == nil || c.Status != metav1.ConditionTrue {
		return nil
	}
	if c.ObservedGeneration != 0 && a.Generation != 0 && c.ObservedGeneration != a.Generation {
		return nil
	}
	return c
}

// ObjectStates tells the state of each object an assemblage names (ObjectsOf) at its
// destination: the state the assemblage as a whole imposes (AssemblageState), or else the one
// status.objects reports for it; an object it does not report on yet is Pending.
func ObjectStates(a *edgev1alpha1.Assemblage) map[string]ObjectState {
	objects := ObjectsOf(a)
	out := make(map[string]ObjectState, len(objects))
	if whole, decided := AssemblageState(a); decided {
		for _, o := range objects {
			out[o] = whole
		}
		return out
	}
	reported := make(map[string]*edgev1alpha1.ObjectState, len(a.Status.Objects))
	for i := range a.Status.Objects {
		reported[a.Status.Objects[i].Object] = &a.Status.Objects[i]
	}
	for _, o := range objects {
		out[o] = reportedState(reported[o])
	}
	return out
}

// reportedState reads one entry of an assemblage's status.objects (nil: none).
func reportedState(r *edgev1alpha1.ObjectState) ObjectState {
	if r == nil {
		return ObjectState{State: StatePending, Reason: "not reported by the syncer yet"}
	}
	switch s := State(r.State); s {
	case StatePending:
		if r.Reason == "" {
			return ObjectState{State: s, Reason: "not applied at the edge yet"}
		}
	case StateApplied, StateReady:
	case StateFailed:
		if r.Reason == "" {
			return ObjectState{State: s, Reason: "failed at the edge (the syncer gave no reason)"}
		}
	default:
		return ObjectState{State: StatePending, Reason: fmt.Sprintf("the syncer reports a state %q that this version does not know", r.State)}
	}
	return ObjectState{State: State(r.State), Reason: r.Reason}
}

// DestinationState is the state of an assemblage's destination for its placement, as Summarize
// counts it there (staleness aside): the state the assemblage as a whole imposes, or else the
// least advanced of its objects' (Failed before Pending before Applied before Ready), with the
// reason of the first such object in apply order; with no objects, Ready once the syncer applied
// the current version.
func DestinationState(a *edgev1alpha1.Assemblage) ObjectState {
	if whole, decided := AssemblageState(a); decided {
		return whole
	}
	objects := ObjectsOf(a)
	if len(objects) == 0 && a.Status.AppliedVersion != a.Spec.Version {
		return ObjectState{State: StatePending, Reason: "not applied at the edge yet"}
	}
	states := ObjectStates(a)
	out := ObjectState{State: StateReady}
	for _, o := range objects {
		if st := states[o]; stateRank[st.State] > stateRank[out.State] {
			out = ObjectState{State: st.State, Reason: o + ": " + st.Reason}
		}
	}
	return out
}

// DriftedObjects returns the objects of which the assemblage's syncer reports drift at the
// assemblage's current version (spec.version): edited or deleted at the edge, by someone else,
// while the edge keeps that version, whether the syncer repaired it or, create-only, left it.
// This is what makes a destination drifted in a summary; a new version clears it. The syncer
// keeps the latest drifts only (edgev1alpha1.MaxDriftEntries), so that an object may drift
// unnamed here while others drift more. nil for none.
func DriftedObjects(a *edgev1alpha1.Assemblage) map[string]bool {
	if a == nil || a.Status.Drift == nil {
		return nil
	}
	var out map[string]bool
	for _, e := range a.Status.Drift.Recent {
		if e.Version != "" && e.Version == a.Spec.Version {
			if out == nil {
				out = map[string]bool{}
			}
			out[e.Object] = true
		}
	}
	return out
}

// IsExecuting reports whether a version of the object is applied at the assemblage's
// destination: the assemblage names it and its syncer reports it Applied or Ready, whichever
// version the report is of (the edge keeps the last version it applied until it applies the
// next).
func IsExecuting(a *edgev1alpha1.Assemblage, object string) bool {
	if a == nil {
		return false
	}
	named := false
	for _, o := range ObjectsOf(a) {
		if o == object {
			named = true
			break
		}
	}
	if !named {
		return false
	}
	for i := range a.Status.Objects {
		if r := &a.Status.Objects[i]; r.Object == object {
			return r.State == edgev1alpha1.ObjectApplied || r.State == edgev1alpha1.ObjectReady
		}
	}
	return false
}

// DestinationView is what a summary knows of one destination of a placement.
type DestinationView struct {
	// Name is <inventory cluster>:<SyncTarget name>.
	Name string
	// Stale says the syncer has been silent past the grace period, since StaleSince.
	// StaleReason, if set, says why, in place of "the syncer has been silent since ...".
	Stale       bool
	StaleSince  time.Time
	StaleReason string
	// Assemblage is the placement's assemblage in the destination's mailbox; nil while there is
	// none (or no mailbox).
	Assemblage *edgev1alpha1.Assemblage
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
// destinations by the object's state there, and lists what is broken, oldest first, at most
// MaxBrokenEntries of them: every failed (destination, object) pair, and, as one entry with no
// object, every stale destination and every destination whose syncer refused the assemblage.
// The objects are those that any destination's assemblage names; one that a destination's
// assemblage does not name (yet) is pending there. brokenSince holds when each broken entry was
// first seen, by BrokenKey, and now stamps the new ones. The result's size is bounded whatever
// the number of destinations.
func Summarize(dests []DestinationView, brokenSince map[string]metav1.Time, now metav1.Time) Summary {
	var s Summary
	objects := unionOfObjects(dests)
	perObject := make(map[string]*edgev1alpha1.DestinationCounts, len(objects))
	for _, o := range objects {
		perObject[o] = &edgev1alpha1.DestinationCounts{}
	}
	var broken []edgev1alpha1.BrokenEntry
	firstSeen := func(destination, object string) *metav1.Time {
		since, ok := brokenSince[BrokenKey(destination, object)]
		if !ok {
			since = now
		}
		return &since
	}
	for _, d := range dests {
		if drifted := DriftedObjects(d.Assemblage); len(drifted) > 0 {
			s.Counts.Drifted++
			for o := range drifted {
				if c := perObject[o]; c != nil {
					c.Drifted++
				}
			}
		}
		if d.Stale {
			s.Counts.Stale++
			for _, o := range objects {
				perObject[o].Stale++
			}
			since := metav1.NewTime(d.StaleSince)
			reason := d.StaleReason
			if reason == "" {
				reason = fmt.Sprintf("the syncer has been silent since %s", d.StaleSince.UTC().Format(time.RFC3339))
			}
			broken = append(broken, edgev1alpha1.BrokenEntry{Destination: d.Name, Reason: reason, Since: &since})
			continue
		}
		if whole, decided := AssemblageState(d.Assemblage); decided {
			for _, o := range objects {
				add(perObject[o], whole.State)
			}
			add(&s.Counts, whole.State)
			if whole.State == StateFailed {
				broken = append(broken, edgev1alpha1.BrokenEntry{Destination: d.Name, Reason: whole.Reason, Since: firstSeen(d.Name, "")})
			}
			continue
		}
		states := ObjectStates(d.Assemblage)
		worst := StateReady
		if len(states) == 0 && d.Assemblage.Status.AppliedVersion != d.Assemblage.Spec.Version {
			worst = StatePending // nothing to report on, but not applied yet either
		}
		for _, o := range objects {
			st, ok := states[o]
			if !ok {
				st = ObjectState{State: StatePending, Reason: "not in this destination's assemblage yet"}
			}
			add(perObject[o], st.State)
			worst = worse(worst, st.State)
			if st.State == StateFailed {
				broken = append(broken, edgev1alpha1.BrokenEntry{Destination: d.Name, Object: o, Reason: st.Reason, Since: firstSeen(d.Name, o)})
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
	s.Objects = make([]edgev1alpha1.ObjectSummary, 0, len(objects))
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
	if len(s.Objects) == 0 {
		s.Objects = nil
	}
	return s
}

// unionOfObjects is the sorted union of the objects that the destinations' assemblages name.
func unionOfObjects(dests []DestinationView) []string {
	seen := map[string]bool{}
	var out []string
	for _, d := range dests {
		for _, o := range ObjectsOf(d.Assemblage) {
			if !seen[o] {
				seen[o] = true
				out = append(out, o)
			}
		}
	}
	sort.Strings(out)
	return out
}

// BrokenKey identifies a broken entry (object "" for a whole destination) across passes.
func BrokenKey(destination, object string) string { return destination + "|" + object }

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

// stateRank orders the states by how much they hold a destination back.
var stateRank = map[State]int{StateReady: 0, StateApplied: 1, StatePending: 2, StateFailed: 3}

// worse returns the state that decides a destination's state: Failed over Pending over Applied
// over Ready.
func worse(a, b State) State {
	if stateRank[b] > stateRank[a] {
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

// MaxProblemsInMessage bounds how many problems a condition's message quotes.
const MaxProblemsInMessage = 3

// QuoteProblems joins the first MaxProblemsInMessage distinct messages, saying how many more there
// are: how a condition's message names the problems behind it, in bounded size.
func QuoteProblems(msgs []string) string {
	var uniq []string
	seen := map[string]bool{}
	for _, m := range msgs {
		if !seen[m] {
			seen[m] = true
			uniq = append(uniq, m)
		}
	}
	out := uniq
	if len(out) > MaxProblemsInMessage {
		out = out[:MaxProblemsInMessage]
	}
	s := strings.Join(out, "; ")
	if more := len(uniq) - len(out); more > 0 {
		s += fmt.Sprintf("; and %d more", more)
	}
	return s
}
