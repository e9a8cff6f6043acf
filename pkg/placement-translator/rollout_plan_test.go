package placementtranslator

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

var at0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// fleetOf makes n destinations d00..d(n-1), every one waiting for version "v2" with "v1" applied
// and ready, labelled tier=canary for the first `canary` of them.
func fleetOf(n, canary int) []rolloutDestination {
	var out []rolloutDestination
	for i := range n {
		tier := "main"
		if i < canary {
			tier = "canary"
		}
		name := fmt.Sprintf("d%02d", i)
		out = append(out, rolloutDestination{mailbox: "mb-" + name, name: name, labels: map[string]string{"tier": tier},
			desired: "v2", current: "v1", deliveredAt: at0.Add(-time.Hour), applied: true, readySince: at0.Add(-time.Hour)})
	}
	return out
}

func permitted(p rolloutPlan) []string {
	var out []string
	for m := range p.permit {
		out = append(out, strings.TrimPrefix(m, "mb-"))
	}
	sort.Strings(out)
	return out
}

func ptr[T any](v T) *T { return &v }

func count(n int) *intstr.IntOrString { v := intstr.FromInt32(int32(n)); return &v }

func percent(s string) *intstr.IntOrString { v := intstr.FromString(s); return &v }

// deliver marks the named destinations as having their desired version, delivered at `at`.
func deliver(dests []rolloutDestination, at time.Time, names ...string) {
	for i := range dests {
		for _, n := range names {
			if dests[i].name == n {
				dests[i].current, dests[i].deliveredAt, dests[i].applied, dests[i].readySince = dests[i].desired, at, false, time.Time{}
			}
		}
	}
}

// ready marks the named destinations as applied and ready since `at`.
func ready(dests []rolloutDestination, at time.Time, names ...string) {
	for i := range dests {
		for _, n := range names {
			if dests[i].name == n {
				dests[i].applied, dests[i].readySince = true, at
			}
		}
	}
}

func TestPlanAllAtOnceWithoutStrategy(t *testing.T) {
	p := planRollout(nil, "r2", at0, fleetOf(5, 0), at0)
	if got := permitted(p); len(got) != 5 {
		t.Errorf("permitted %v, want all 5", got)
	}
	if !p.progressing || p.complete {
		t.Errorf("progressing %v complete %v", p.progressing, p.complete)
	}
}

func TestPlanMaxInFlightWaves(t *testing.T) {
	s := &edgev1alpha1.RolloutStrategy{MaxInFlight: count(2)}
	dests := fleetOf(5, 0)
	p := planRollout(s, "r2", at0, dests, at0)
	if got := permitted(p); !reflect.DeepEqual(got, []string{"d00", "d01"}) {
		t.Fatalf("first wave %v, want d00 d01", got)
	}
	deliver(dests, at0, "d00", "d01")
	if got := permitted(planRollout(s, "r2", at0, dests, at0)); len(got) != 0 {
		t.Errorf("with 2 in flight, permitted %v", got)
	}
	ready(dests, at0.Add(time.Second), "d00")
	p = planRollout(s, "r2", at0, dests, at0.Add(2*time.Second))
	if got := permitted(p); !reflect.DeepEqual(got, []string{"d02"}) {
		t.Errorf("after one is done, permitted %v, want d02", got)
	}
	if p.stages[0].Updated != 1 || p.stages[0].InFlight != 1 || p.stages[0].Waiting != 3 {
		t.Errorf("counts %+v", p.stages[0])
	}
}

func TestPlanPercentAndMinReady(t *testing.T) {
	s := &edgev1alpha1.RolloutStrategy{MaxInFlight: percent("10%"), MinReadySeconds: 30}
	dests := fleetOf(25, 0) // 10% of 25 rounds up to 3
	if got := permitted(planRollout(s, "r2", at0, dests, at0)); len(got) != 3 {
		t.Fatalf("permitted %d, want 3", len(got))
	}
	deliver(dests, at0, "d00", "d01", "d02")
	ready(dests, at0.Add(time.Second), "d00", "d01", "d02")
	p := planRollout(s, "r2", at0, dests, at0.Add(10*time.Second))
	if len(p.permit) != 0 || p.recheck < 20*time.Second || p.recheck > 22*time.Second {
		t.Errorf("while soaking: permitted %v, recheck %s, want none and about 21 s", permitted(p), p.recheck)
	}
	p = planRollout(s, "r2", at0, dests, at0.Add(32*time.Second))
	if len(p.permit) != 3 || p.stages[0].Updated != 3 {
		t.Errorf("after the soak: permitted %v, counts %+v", permitted(p), p.stages[0])
	}
}

func TestPlanStagesAndPauseGate(t *testing.T) {
	s := &edgev1alpha1.RolloutStrategy{Stages: []edgev1alpha1.RolloutStage{
		{Name: "canary", Selector: edgev1alpha1.LabelSelector{MatchLabels: map[string]string{"tier": "canary"}}, Pause: true},
		{Name: "rest", Selector: edgev1alpha1.LabelSelector{}, MaxInFlight: count(2)},
	}}
	dests := fleetOf(6, 2)
	if got := permitted(planRollout(s, "r2", at0, dests, at0)); !reflect.DeepEqual(got, []string{"d00", "d01"}) {
		t.Fatalf("canary wave %v", got)
	}
	deliver(dests, at0, "d00", "d01")
	ready(dests, at0.Add(time.Second), "d00", "d01")
	p := planRollout(s, "r2", at0, dests, at0.Add(5*time.Second))
	if len(p.permit) != 0 || p.pausedAt != "canary" {
		t.Fatalf("after the canary: permitted %v pausedAt %q, want none at canary", permitted(p), p.pausedAt)
	}
	// Resumed for another revision: still paused.
	s.Resume = &edgev1alpha1.RolloutResume{Stage: "canary", Revision: "r1"}
	if p := planRollout(s, "r2", at0, dests, at0.Add(5*time.Second)); p.pausedAt != "canary" {
		t.Errorf("a resume for an older revision opened the gate")
	}
	s.Resume.Revision = "r2"
	p = planRollout(s, "r2", at0, dests, at0.Add(5*time.Second))
	if got := permitted(p); !reflect.DeepEqual(got, []string{"d02", "d03"}) {
		t.Errorf("after resume: %v, want the rest stage, 2 at a time", got)
	}
	if p.stages[0].Name != "canary" || p.stages[0].Updated != 2 || p.stages[1].Waiting != 4 {
		t.Errorf("stage counts %+v", p.stages)
	}
}

func TestPlanDestinationInNoStageGoesLast(t *testing.T) {
	s := &edgev1alpha1.RolloutStrategy{Stages: []edgev1alpha1.RolloutStage{
		{Name: "canary", Selector: edgev1alpha1.LabelSelector{MatchLabels: map[string]string{"tier": "canary"}}},
		{Name: "nothing", Selector: edgev1alpha1.LabelSelector{MatchLabels: map[string]string{"tier": "none"}}},
	}}
	dests := fleetOf(3, 1)
	p := planRollout(s, "r2", at0, dests, at0)
	if got := permitted(p); !reflect.DeepEqual(got, []string{"d00"}) {
		t.Errorf("permitted %v, want the canary only", got)
	}
	if !reflect.DeepEqual(p.emptyStages, []string{"nothing"}) || len(p.stages) != 3 || p.stages[2].Name != "" || p.stages[2].Waiting != 2 {
		t.Errorf("empty %v stages %+v", p.emptyStages, p.stages)
	}
}

func TestPlanProgressDeadlineAndMaxFailures(t *testing.T) {
	s := &edgev1alpha1.RolloutStrategy{MaxInFlight: count(2), ProgressDeadlineSeconds: ptr(int32(60)), MaxFailures: count(0)}
	dests := fleetOf(4, 0)
	deliver(dests, at0, "d00", "d01")
	ready(dests, at0.Add(time.Second), "d01")
	p := planRollout(s, "r2", at0, dests, at0.Add(61*time.Second))
	if len(p.permit) != 0 || len(p.stalled) != 1 || !strings.Contains(p.stalled[0], "d00") || !strings.Contains(p.stalled[0], "progress deadline") {
		t.Fatalf("past the deadline: permitted %v stalled %v", permitted(p), p.stalled)
	}
	if msg := stalledMessage(p, s.MaxFailures); !strings.Contains(msg, "d00") {
		t.Errorf("message %q does not name the destination", msg)
	}
	// It recovers: the rollout goes on.
	ready(dests, at0.Add(62*time.Second), "d00")
	p = planRollout(s, "r2", at0, dests, at0.Add(63*time.Second))
	if p.stalled != nil || !reflect.DeepEqual(permitted(p), []string{"d02", "d03"}) {
		t.Errorf("after recovery: stalled %v permitted %v", p.stalled, permitted(p))
	}
	// A newer version supersedes: its failure no longer counts, and it waits for the new one.
	dests = fleetOf(4, 0)
	deliver(dests, at0, "d00")
	dests[0].failure = "deployments.apps/app/web: refused"
	if p := planRollout(s, "r2", at0, dests, at0); p.stalled == nil {
		t.Fatalf("a refused destination did not stall a rollout with maxFailures 0")
	}
	for i := range dests {
		dests[i].desired = "v3"
	}
	if p := planRollout(s, "r3", at0, dests, at0); p.stalled != nil || len(p.permit) != 2 {
		t.Errorf("a newer version: stalled %v permitted %v", p.stalled, permitted(p))
	}
}

func TestPlanStaleCountsAsFailed(t *testing.T) {
	s := &edgev1alpha1.RolloutStrategy{MaxFailures: percent("25%")}
	dests := fleetOf(4, 0)
	dests[3].stale = true
	if p := planRollout(s, "r2", at0, dests, at0); p.stalled != nil || len(p.permit) != 3 {
		t.Errorf("one stale of 4 within 25%%: stalled %v permitted %v", p.stalled, permitted(p))
	}
	dests[2].stale = true
	if p := planRollout(s, "r2", at0, dests, at0); p.stalled == nil {
		t.Errorf("two stale of 4 past 25%%: not stalled")
	}
}

func TestPlanPaused(t *testing.T) {
	s := &edgev1alpha1.RolloutStrategy{Paused: true}
	dests := fleetOf(3, 0)
	deliver(dests, at0, "d00")
	p := planRollout(s, "r2", at0, dests, at0)
	if len(p.permit) != 0 || !p.paused || p.stages != nil && len(p.stages) > 0 && p.stages[0].InFlight != 1 {
		t.Errorf("paused: permitted %v paused %v", permitted(p), p.paused)
	}
}

func TestPlanUnknownDestinationsWait(t *testing.T) {
	s := &edgev1alpha1.RolloutStrategy{Stages: []edgev1alpha1.RolloutStage{
		{Name: "first", Selector: edgev1alpha1.LabelSelector{MatchLabels: map[string]string{"tier": "canary"}}}}}
	dests := fleetOf(3, 1)
	dests[0].desired = "" // its mailbox not reconciled yet
	if p := planRollout(s, "r2", at0, dests, at0); len(p.permit) != 0 || p.complete {
		t.Errorf("with the first stage unknown, permitted %v", permitted(p))
	}
}

// TestPlanUnknownDestinationKeepsItsPlace: destinations go in name order even when a later one's
// mailbox is reconciled first: one whose state is not known yet holds its place for unknownHold
// after the revision was published, and is passed after that.
func TestPlanUnknownDestinationKeepsItsPlace(t *testing.T) {
	s := &edgev1alpha1.RolloutStrategy{MaxInFlight: count(1)}
	dests := fleetOf(3, 0)
	dests[0].desired = "" // d00's mailbox not reconciled since the revision
	p := planRollout(s, "r2", at0, dests, at0.Add(time.Second))
	if got := permitted(p); len(got) != 0 {
		t.Errorf("1 s after publishing, with d00 unknown, permitted %v, want none (d00 keeps its place)", got)
	}
	if p.recheck != unknownHold-time.Second {
		t.Errorf("recheck in %v, want %v", p.recheck, unknownHold-time.Second)
	}
	dests[0].desired = "v2"
	if got := permitted(planRollout(s, "r2", at0, dests, at0.Add(2*time.Second))); !reflect.DeepEqual(got, []string{"d00"}) {
		t.Errorf("once d00 is known, permitted %v, want d00", got)
	}
	dests[0].desired = ""
	if got := permitted(planRollout(s, "r2", at0, dests, at0.Add(unknownHold))); !reflect.DeepEqual(got, []string{"d01"}) {
		t.Errorf("%v after publishing, with d00 still unknown, permitted %v, want d01 (d00 passed)", unknownHold, got)
	}
	// Without maxInFlight, nothing waits for d00, and no recheck is asked for it.
	p = planRollout(nil, "r2", at0, dests, at0.Add(time.Second))
	if got := permitted(p); !reflect.DeepEqual(got, []string{"d01", "d02"}) || p.recheck != 0 {
		t.Errorf("without maxInFlight, permitted %v (recheck %v), want d01 d02 and no recheck", got, p.recheck)
	}
}

func TestPlanJitter(t *testing.T) {
	s := &edgev1alpha1.RolloutStrategy{Jitter: &metav1.Duration{Duration: time.Minute}}
	dests := fleetOf(20, 0)
	first := planRollout(s, "r2", at0, dests, at0)
	if len(first.permit) == 20 || first.recheck <= 0 || first.recheck > time.Minute {
		t.Errorf("at the start of the window: permitted %d, recheck %s", len(first.permit), first.recheck)
	}
	if p := planRollout(s, "r2", at0, dests, at0.Add(time.Minute)); len(p.permit) != 20 {
		t.Errorf("at the end of the window: permitted %d of 20", len(p.permit))
	}
	// The same destinations go first every time.
	if again := planRollout(s, "r2", at0, dests, at0); !reflect.DeepEqual(permitted(again), permitted(first)) {
		t.Errorf("jitter is not deterministic")
	}
}

func TestPlanComplete(t *testing.T) {
	dests := fleetOf(2, 0)
	for i := range dests {
		dests[i].current = "v2"
	}
	p := planRollout(&edgev1alpha1.RolloutStrategy{MaxInFlight: count(1)}, "r2", at0, dests, at0)
	if !p.complete || p.progressing || len(p.permit) != 0 {
		t.Errorf("complete %v progressing %v permit %v", p.complete, p.progressing, p.permit)
	}
}
