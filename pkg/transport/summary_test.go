package transport

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

const (
	webKey = "deployments.apps/app/web"
	cmKey  = "configmaps/app/c"
	nsKey  = "namespaces/app"
)

// assemblage is an assemblage of placement app at version v2 carrying objects, as the placement
// translator writes it, with no status yet.
func assemblage(objects ...string) *edgev1alpha1.Assemblage {
	a := &edgev1alpha1.Assemblage{}
	a.Name = AssemblageName("wmw1", "app")
	a.Generation = 4
	a.Spec = edgev1alpha1.AssemblageSpec{
		Placement: edgev1alpha1.PlacementReference{Cluster: "wmw1", Name: "app"},
		Version:   "v2", Format: FormatV1, Parts: 1, Objects: objects, ObjectCount: int32(len(objects)),
	}
	return a
}

// observed sets the status a syncer writes once it has taken in version v2 (applied when every
// object is Applied or Ready), with the given state per object, each as "key=State" or
// "key=State=reason".
func observed(a *edgev1alpha1.Assemblage, states ...string) *edgev1alpha1.Assemblage {
	a.Status.ObservedVersion = a.Spec.Version
	a.Status.AppliedVersion = a.Spec.Version
	for _, s := range states {
		parts := strings.SplitN(s, "=", 3)
		o := edgev1alpha1.ObjectState{Object: parts[0], State: parts[1]}
		if len(parts) == 3 {
			o.Reason = parts[2]
		}
		if o.State == edgev1alpha1.ObjectPending || o.State == edgev1alpha1.ObjectFailed {
			a.Status.AppliedVersion = "v1"
		}
		a.Status.Objects = append(a.Status.Objects, o)
	}
	return a
}

func refusedWith(a *edgev1alpha1.Assemblage, reason string, generation int64) *edgev1alpha1.Assemblage {
	a.Status.Conditions = append(a.Status.Conditions, metav1.Condition{Type: edgev1alpha1.AssemblageRefused, Status: metav1.ConditionTrue,
		Reason: reason, Message: "bad data", ObservedGeneration: generation})
	return a
}

func TestObjectsOf(t *testing.T) {
	a := assemblage(nsKey, webKey)
	a.Spec.Shared = []edgev1alpha1.SharedObject{{Object: cmKey, Assemblage: "wmw1.other"}, {Object: webKey, Assemblage: "wmw1.other"}}
	got := ObjectsOf(a)
	if want := []string{nsKey, webKey, cmKey}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ObjectsOf = %v, want %v (carried in order, then shared, each once)", got, want)
	}
	if ObjectsOf(nil) != nil {
		t.Error("ObjectsOf(nil) must be nil")
	}
}

func TestObjectStates(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    *edgev1alpha1.Assemblage
		want map[string]State
		// reason, if set, is a part of every object's reason.
		reason string
	}{
		{name: "no assemblage in the mailbox", a: nil, want: map[string]State{}},
		{name: "not read by the syncer yet", a: assemblage(nsKey, webKey),
			want: map[string]State{nsKey: StatePending, webKey: StatePending}, reason: "has not read version v2"},
		{name: "an older version observed: everything pending, whatever it reported then",
			a: func() *edgev1alpha1.Assemblage {
				a := observed(assemblage(webKey), webKey+"=Ready")
				a.Status.ObservedVersion = "v1"
				return a
			}(),
			want: map[string]State{webKey: StatePending}, reason: "not taken in version v2"},
		{name: "refused: everything failed with the refusal", a: refusedWith(assemblage(nsKey, webKey), edgev1alpha1.ReasonCorrupt, 4),
			want: map[string]State{nsKey: StateFailed, webKey: StateFailed}, reason: "bad data"},
		{name: "refused, with the current version observed", a: refusedWith(observed(assemblage(webKey), webKey+"=Ready"), edgev1alpha1.ReasonUnknownFormat, 0),
			want: map[string]State{webKey: StateFailed}, reason: "UnknownFormat"},
		{name: "a refusal of an older generation says nothing of this one",
			a:    refusedWith(observed(assemblage(webKey), webKey+"=Ready"), edgev1alpha1.ReasonCorrupt, 3),
			want: map[string]State{webKey: StateReady}},
		{name: "a part missing: pending, the parts are on their way", a: refusedWith(assemblage(webKey), edgev1alpha1.ReasonPartsMissing, 4),
			want: map[string]State{webKey: StatePending}, reason: "waiting for parts"},
		{name: "per object, from status.objects", a: observed(assemblage(nsKey, webKey, cmKey), nsKey+"=Ready", webKey+"=Failed=deadline exceeded", cmKey+"=Applied"),
			want: map[string]State{nsKey: StateReady, webKey: StateFailed, cmKey: StateApplied}},
		{name: "an object not reported yet is pending", a: observed(assemblage(nsKey, webKey), nsKey+"=Ready"),
			want: map[string]State{nsKey: StateReady, webKey: StatePending}},
		{name: "an unknown state is pending", a: observed(assemblage(webKey), webKey+"=Exploded"),
			want: map[string]State{webKey: StatePending}, reason: "Exploded"},
		{name: "shared objects take their state too", a: func() *edgev1alpha1.Assemblage {
			a := observed(assemblage(webKey), webKey+"=Ready", cmKey+"=Applied")
			a.Spec.Shared = []edgev1alpha1.SharedObject{{Object: cmKey, Assemblage: "wmw1.other"}}
			return a
		}(), want: map[string]State{webKey: StateReady, cmKey: StateApplied}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ObjectStates(tc.a)
			if len(got) != len(tc.want) {
				t.Errorf("ObjectStates = %v, want %v", got, tc.want)
			}
			for o, want := range tc.want {
				st := got[o]
				if st.State != want {
					t.Errorf("%s: %s (%s), want %s", o, st.State, st.Reason, want)
				}
				if tc.reason != "" && !strings.Contains(st.Reason, tc.reason) {
					t.Errorf("%s: reason %q lacks %q", o, st.Reason, tc.reason)
				}
				if (st.State == StateFailed || st.State == StatePending) && st.Reason == "" {
					t.Errorf("%s: a %s object must say why", o, st.State)
				}
			}
		})
	}
}

func TestIsExecuting(t *testing.T) {
	a := observed(assemblage(nsKey, webKey, cmKey), nsKey+"=Ready", webKey+"=Applied", cmKey+"=Pending")
	for key, want := range map[string]bool{nsKey: true, webKey: true, cmKey: false, "secrets/app/s": false} {
		if got := IsExecuting(a, key); got != want {
			t.Errorf("IsExecuting(%s) = %v, want %v", key, got, want)
		}
	}
	// A version of it runs while the syncer takes in the next one.
	a.Spec.Version = "v3"
	if !IsExecuting(a, webKey) {
		t.Error("an object applied at the version before still executes")
	}
	// Gone from the assemblage: the syncer is removing it.
	a.Spec.Objects = []string{nsKey}
	if IsExecuting(a, webKey) {
		t.Error("an object the assemblage no longer names does not count")
	}
	if IsExecuting(nil, webKey) {
		t.Error("no assemblage, nothing executes")
	}
}

func TestSummarize(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	earlier := metav1.NewTime(now.Add(-time.Hour))
	ready := func() *edgev1alpha1.Assemblage {
		return observed(assemblage(cmKey, webKey), cmKey+"=Ready", webKey+"=Ready")
	}
	dests := []DestinationView{
		{Name: "imw:a", Assemblage: ready()},
		{Name: "imw:b", Assemblage: observed(assemblage(cmKey, webKey), cmKey+"=Ready", webKey+"=Failed=stuck")},
		{Name: "imw:c", Assemblage: observed(assemblage(cmKey), cmKey+"=Ready")}, // the Deployment not in it yet
		{Name: "imw:d", Assemblage: observed(assemblage(cmKey, webKey), cmKey+"=Ready", webKey+"=Applied")},
		{Name: "imw:e", Stale: true, StaleSince: earlier.Add(-time.Minute), Assemblage: ready()},
		{Name: "imw:f"}, // no assemblage yet
		{Name: "imw:g", Assemblage: refusedWith(assemblage(cmKey, webKey), edgev1alpha1.ReasonCorrupt, 0)},
	}
	s := Summarize(dests, map[string]metav1.Time{BrokenKey("imw:b", webKey): earlier}, now)
	want := edgev1alpha1.DestinationCounts{Ready: 1, Failed: 2, Pending: 2, Applied: 1, Stale: 1}
	if s.Counts != want {
		t.Errorf("counts %+v, want %+v", s.Counts, want)
	}
	if s.ObjectCount != 2 || len(s.Objects) != 2 {
		t.Fatalf("objects %+v", s.Objects)
	}
	// Not ready everywhere comes first; both are not, so by name.
	wantCM := edgev1alpha1.DestinationCounts{Ready: 4, Pending: 1, Failed: 1, Stale: 1}
	wantWeb := edgev1alpha1.DestinationCounts{Ready: 1, Failed: 2, Pending: 2, Applied: 1, Stale: 1}
	if s.Objects[0].Object != cmKey || s.Objects[0].DestinationCounts != wantCM || s.Objects[1].DestinationCounts != wantWeb {
		t.Errorf("per-object counts %+v, want %v then %v", s.Objects, wantCM, wantWeb)
	}
	if s.BrokenCount != 3 || len(s.Broken) != 3 {
		t.Fatalf("broken %+v, want the stale destination, the failed Deployment and the refused assemblage", s.Broken)
	}
	if s.Broken[0].Destination != "imw:e" || s.Broken[0].Object != "" || !strings.Contains(s.Broken[0].Reason, "silent") {
		t.Errorf("oldest first, the stale destination: %+v", s.Broken[0])
	}
	if b := s.Broken[1]; b.Destination != "imw:b" || b.Object != webKey || b.Reason != "stuck" || !b.Since.Equal(&earlier) {
		t.Errorf("the failed entry keeps its first-seen time: %+v", b)
	}
	if b := s.Broken[2]; b.Destination != "imw:g" || b.Object != "" || !strings.Contains(b.Reason, "bad data") || !b.Since.Equal(&now) {
		t.Errorf("the refusal is one entry for the destination, first seen now: %+v", b)
	}
}

func TestSummarizeDestinationsWithNothingToReport(t *testing.T) {
	empty := assemblage()
	applied := observed(assemblage())
	notApplied := observed(assemblage())
	notApplied.Status.AppliedVersion = "v1"
	s := Summarize([]DestinationView{{Name: "imw:a"}, {Name: "imw:b", Assemblage: empty}, {Name: "imw:c", Assemblage: applied}, {Name: "imw:d", Assemblage: notApplied}}, nil, metav1.Now())
	if want := (edgev1alpha1.DestinationCounts{Pending: 3, Ready: 1}); s.Counts != want {
		t.Errorf("counts %+v, want %+v: a destination is ready only once its syncer applied the current version, empty or not", s.Counts, want)
	}
	if s.ObjectCount != 0 || s.Objects != nil || s.BrokenCount != 0 {
		t.Errorf("summary %+v, want no objects and nothing broken", s)
	}
}

// TestDestinationStateAgreesWithSummarize: what kubectl edge status --target says of one
// destination is what the placement's summary counts it as.
func TestDestinationStateAgreesWithSummarize(t *testing.T) {
	notApplied := observed(assemblage())
	notApplied.Status.AppliedVersion = "v1"
	for _, a := range []*edgev1alpha1.Assemblage{
		nil,
		assemblage(webKey),
		observed(assemblage()),
		notApplied,
		observed(assemblage(nsKey, webKey), nsKey+"=Ready", webKey+"=Ready"),
		observed(assemblage(nsKey, webKey), nsKey+"=Ready", webKey+"=Applied"),
		observed(assemblage(nsKey, webKey), nsKey+"=Applied", webKey+"=Pending"),
		observed(assemblage(nsKey, webKey), nsKey+"=Failed=no", webKey+"=Pending"),
		observed(assemblage(nsKey, webKey), nsKey+"=Ready"),
		refusedWith(assemblage(webKey), edgev1alpha1.ReasonCorrupt, 4),
		refusedWith(assemblage(webKey), edgev1alpha1.ReasonPartsMissing, 4),
	} {
		got := DestinationState(a)
		s := Summarize([]DestinationView{{Name: "imw:a", Assemblage: a}}, nil, metav1.Now())
		counted := map[State]int32{StatePending: s.Counts.Pending, StateApplied: s.Counts.Applied, StateReady: s.Counts.Ready, StateFailed: s.Counts.Failed}
		if counted[got.State] != 1 {
			t.Errorf("DestinationState(%v) = %s, Summarize counts %+v", ObjectStates(a), got.State, s.Counts)
		}
		if got.State != StateReady && got.Reason == "" {
			t.Errorf("DestinationState(%v) = %s with no reason", ObjectStates(a), got.State)
		}
	}
	failing := DestinationState(observed(assemblage(nsKey, webKey), nsKey+"=Applied", webKey+"=Failed=deadline"))
	if failing.State != StateFailed || !strings.Contains(failing.Reason, webKey) || !strings.Contains(failing.Reason, "deadline") {
		t.Errorf("the reason names the object and why: %+v", failing)
	}
}

func TestSummarizeIsBounded(t *testing.T) {
	now := metav1.Now()
	var objects, ready, oneFailed []string
	for i := 0; i < 150; i++ {
		o := fmt.Sprintf("configmaps/app/c%03d", i)
		objects = append(objects, o)
		ready = append(ready, o+"=Ready")
		oneFailed = append(oneFailed, o+"=Ready")
	}
	oneFailed[149] = objects[149] + "=Failed=no"
	var dests []DestinationView
	for i := 0; i < 1000; i++ {
		states := ready
		if i%10 == 0 {
			states = oneFailed
		}
		dests = append(dests, DestinationView{Name: fmt.Sprintf("imw:d%04d", i), Assemblage: observed(assemblage(objects...), states...)})
	}
	s := Summarize(dests, nil, now)
	if len(s.Broken) != edgev1alpha1.MaxBrokenEntries || s.BrokenCount != 100 {
		t.Errorf("broken: %d listed of %d, want %d of 100", len(s.Broken), s.BrokenCount, edgev1alpha1.MaxBrokenEntries)
	}
	if len(s.Objects) != edgev1alpha1.MaxObjectSummaries || s.ObjectCount != 150 {
		t.Errorf("objects: %d listed of %d, want %d of 150", len(s.Objects), s.ObjectCount, edgev1alpha1.MaxObjectSummaries)
	}
	if s.Objects[0].Object != objects[149] {
		t.Errorf("the object not ready everywhere must come first, got %s", s.Objects[0].Object)
	}
	if s.Counts.Ready != 900 || s.Counts.Failed != 100 {
		t.Errorf("counts %+v", s.Counts)
	}
}

func TestReadyCondition(t *testing.T) {
	for _, tc := range []struct {
		counts edgev1alpha1.DestinationCounts
		n      int
		status metav1.ConditionStatus
		reason string
	}{
		{edgev1alpha1.DestinationCounts{}, 0, metav1.ConditionFalse, edgev1alpha1.ReasonNoDestinations},
		{edgev1alpha1.DestinationCounts{Ready: 3}, 3, metav1.ConditionTrue, edgev1alpha1.ReasonAllReady},
		{edgev1alpha1.DestinationCounts{Ready: 2, Failed: 1}, 3, metav1.ConditionFalse, edgev1alpha1.ReasonFailing},
		{edgev1alpha1.DestinationCounts{Ready: 2, Stale: 1}, 3, metav1.ConditionFalse, edgev1alpha1.ReasonNotReady},
	} {
		c := ReadyCondition(tc.counts, tc.n, 7)
		if c.Status != tc.status || c.Reason != tc.reason || c.ObservedGeneration != 7 || c.Message == "" {
			t.Errorf("ReadyCondition(%+v, %d) = %+v, want %s/%s", tc.counts, tc.n, c, tc.status, tc.reason)
		}
	}
}

func TestSingletonCondition(t *testing.T) {
	if c := SingletonCondition(1, 2); c.Status != metav1.ConditionTrue || c.Reason != edgev1alpha1.ReasonSingletonReported || c.ObservedGeneration != 2 {
		t.Errorf("one destination: %+v", c)
	}
	for _, n := range []int{0, 2} {
		if c := SingletonCondition(n, 2); c.Status != metav1.ConditionFalse || c.Reason != edgev1alpha1.ReasonNotSingleton || !strings.Contains(c.Message, fmt.Sprint(n)) {
			t.Errorf("%d destinations: %+v", n, c)
		}
	}
}

// BenchmarkPlacementPass measures the pure part of one pass over a placement with 300
// destinations of 11 objects: the states in every assemblage, then the summary.
func BenchmarkPlacementPass(b *testing.B) {
	objects := make([]string, 11)
	states := make([]string, 11)
	for i := range objects {
		objects[i] = fmt.Sprintf("deployments.apps/app/web-%02d", i)
		states[i] = objects[i] + "=Ready"
	}
	dests := make([]DestinationView, 300)
	for d := range dests {
		dests[d] = DestinationView{Name: fmt.Sprintf("imw:edge-%03d", d), Assemblage: observed(assemblage(objects...), states...)}
	}
	now := metav1.Now()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		Summarize(dests, nil, now)
	}
}

// TestSummarizeStaleReason: a stale destination whose view gives a reason (its mailbox's shard
// is unreachable) is listed with that reason, counted stale as any other.
func TestSummarizeStaleReason(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 26, 5, 0, 0, 0, time.UTC))
	since := now.Add(-time.Minute)
	why := "mailbox root:espw:x-mb-1 is on shard shard-1, unreachable since 2026-11-26T04:58:40Z: the syncer's heartbeats cannot be read"
	s := Summarize([]DestinationView{
		{Name: "imw:a", Stale: true, StaleSince: since, StaleReason: why, Assemblage: observed(assemblage(cmKey), cmKey+"=Ready")},
		{Name: "imw:b", Stale: true, StaleSince: since},
	}, nil, now)
	if s.Counts.Stale != 2 {
		t.Errorf("counts %+v, want 2 stale", s.Counts)
	}
	if len(s.Broken) != 2 || s.Broken[0].Reason != why || !strings.Contains(s.Broken[1].Reason, "silent since") {
		t.Errorf("broken %+v, want the shard's reason for imw:a and silence for imw:b", s.Broken)
	}
}

func TestQuoteProblems(t *testing.T) {
	tests := []struct {
		name string
		msgs []string
		want string
	}{
		{"none", nil, ""},
		{"one", []string{"a"}, "a"},
		{"duplicates collapse", []string{"a", "a", "b", "a"}, "a; b"},
		{"exactly the limit", []string{"a", "b", "c"}, "a; b; c"},
		{"over the limit", []string{"a", "b", "c", "d", "e"}, "a; b; c; and 2 more"},
		{"duplicates do not count as more", []string{"a", "b", "a", "c", "b", "d", "d"}, "a; b; c; and 1 more"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := QuoteProblems(tt.msgs); got != tt.want {
				t.Errorf("QuoteProblems(%q) = %q, want %q", tt.msgs, got, tt.want)
			}
		})
	}
}

// TestSummarizeDrifted: a destination is drifted when its syncer reports drift at the
// assemblage's current version, whatever its state, stale ones included; drift at an older
// version does not count.
func TestSummarizeDrifted(t *testing.T) {
	withDrift := func(a *edgev1alpha1.Assemblage, entries ...edgev1alpha1.DriftEntry) *edgev1alpha1.Assemblage {
		a.Status.Drift = &edgev1alpha1.DriftReport{Count: int64(len(entries)), Recent: entries}
		return a
	}
	drift := func(object, version string, repaired bool) edgev1alpha1.DriftEntry {
		return edgev1alpha1.DriftEntry{Object: object, Change: edgev1alpha1.DriftEdited, Repaired: repaired, Version: version, Count: 1, Paths: []string{"data.mode"}, PathCount: 1}
	}
	ready := func() *edgev1alpha1.Assemblage {
		return observed(assemblage(cmKey, webKey), cmKey+"=Ready", webKey+"=Ready")
	}
	dests := []DestinationView{
		{Name: "imw:a", Assemblage: withDrift(ready(), drift(cmKey, "v2", true))},
		{Name: "imw:b", Assemblage: withDrift(ready(), drift(cmKey, "v2", false), drift(webKey, "v2", true))},
		{Name: "imw:c", Assemblage: withDrift(ready(), drift(cmKey, "v1", true))}, // before the current version
		{Name: "imw:d", Stale: true, Assemblage: withDrift(ready(), drift(webKey, "v2", true))},
		{Name: "imw:e", Assemblage: ready()},
		{Name: "imw:f"},
	}
	s := Summarize(dests, nil, metav1.Now())
	if s.Counts.Drifted != 3 || s.Counts.Ready != 4 || s.Counts.Stale != 1 {
		t.Errorf("counts %+v, want 3 drifted besides 4 ready and 1 stale", s.Counts)
	}
	for _, o := range s.Objects {
		if want := map[string]int32{cmKey: 2, webKey: 2}[o.Object]; o.Drifted != want {
			t.Errorf("object %s drifted at %d destinations, want %d", o.Object, o.Drifted, want)
		}
	}
	if got := DriftedObjects(dests[2].Assemblage); got != nil {
		t.Errorf("DriftedObjects of drift at an older version = %v, want none", got)
	}
}
