package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

func rolloutPlacement() *edgev1alpha1.EdgePlacement {
	p := &edgev1alpha1.EdgePlacement{ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: 3}}
	p.Spec.Rollout = &edgev1alpha1.RolloutStrategy{MaxInFlight: ptr.To(intstr.FromInt32(2))}
	p.Status.Rollout = &edgev1alpha1.RolloutStatus{Revision: "abc", Stages: []edgev1alpha1.StageStatus{
		{Name: "canary", Destinations: 2, Updated: 2},
		{Name: "", Destinations: 8, Updated: 3, InFlight: 2, Waiting: 3},
	}}
	return p
}

func TestRolloutLine(t *testing.T) {
	p := rolloutPlacement()
	line, done, stalled := rolloutLine(p)
	if !strings.Contains(line, "5/10 updated, 2 in flight, 0 failed (revision abc)") || done || stalled != "" {
		t.Errorf("line %q done %v stalled %q", line, done, stalled)
	}
	p.Status.Conditions = []metav1.Condition{{Type: edgev1alpha1.PlacementRolloutStalled, Status: metav1.ConditionTrue, ObservedGeneration: 3, Message: "edge-7: refused"}}
	if _, _, stalled := rolloutLine(p); !strings.Contains(stalled, "edge-7") {
		t.Errorf("stalled %q, want the condition's message", stalled)
	}
	// A condition of an older generation says nothing about the current spec.
	p.Status.Conditions = []metav1.Condition{{Type: edgev1alpha1.PlacementRolloutComplete, Status: metav1.ConditionTrue, ObservedGeneration: 2}}
	if _, done, _ := rolloutLine(p); done {
		t.Errorf("done on a condition of an older generation")
	}
	p.Status.Conditions[0].ObservedGeneration = 3
	if _, done, _ := rolloutLine(p); !done {
		t.Errorf("not done with RolloutComplete True")
	}
	var out bytes.Buffer
	if err := printRollout(&out, p, false); err != nil || !strings.Contains(out.String(), "canary") || !strings.Contains(out.String(), "(no stage)") {
		t.Errorf("printRollout: %v\n%s", err, out.String())
	}
}

func TestRolloutLineUnpaced(t *testing.T) {
	p := rolloutPlacement()
	// A soak time and a deadline alone hold nothing back: no rollout to wait for.
	p.Spec.Rollout = &edgev1alpha1.RolloutStrategy{MinReadySeconds: 30, ProgressDeadlineSeconds: ptr.To[int32](60)}
	line, done, stalled := rolloutLine(p)
	if !done || stalled != "" || !strings.Contains(line, "none of maxInFlight") {
		t.Errorf("line %q done %v stalled %q, want done with a line saying nothing paces", line, done, stalled)
	}
}

func TestPrintHistory(t *testing.T) {
	p := rolloutPlacement()
	now := metav1.Now()
	p.Status.Rollout.History = []edgev1alpha1.RevisionHistory{{Revision: "abc", PublishedTime: &now}, {Revision: "old", PublishedTime: &now, CompletedTime: &now}}
	var out bytes.Buffer
	if err := printHistory(&out, p, false); err != nil || !strings.Contains(out.String(), "in progress") || !strings.Contains(out.String(), "old") {
		t.Errorf("printHistory: %v\n%s", err, out.String())
	}
}

// TestRolloutAndHistoryViews: what `rollout status -o` and `rollout history -o` print, as a
// script would read it back.
func TestRolloutAndHistoryViews(t *testing.T) {
	p := rolloutPlacement()
	now := metav1.Now()
	p.Status.Rollout.History = []edgev1alpha1.RevisionHistory{{Revision: "abc", PublishedTime: &now}}
	var out bytes.Buffer
	if err := printAs(&out, "json", rolloutView("root:wmw", p)); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Workspace, Placement string
		Spec                 edgev1alpha1.RolloutStrategy
		Status               edgev1alpha1.RolloutStatus
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("rollout status -o json is not JSON: %v\n%s", err, out.String())
	}
	if got.Workspace != "root:wmw" || got.Placement != "web" || got.Spec.MaxInFlight.IntValue() != 2 || got.Status.Revision != "abc" || len(got.Status.Stages) != 2 {
		t.Errorf("rollout status -o json: %+v", got)
	}

	out.Reset()
	if err := printAs(&out, "yaml", historyView("root:wmw", p)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "revision: abc") || !strings.Contains(out.String(), "placement: web") {
		t.Errorf("rollout history -o yaml:\n%s", out.String())
	}
	p.Status.Rollout = nil
	out.Reset()
	if err := printAs(&out, "json", historyView("root:wmw", p)); err != nil || !strings.Contains(out.String(), `"history": []`) {
		t.Errorf("rollout history -o json of a placement with no history: %v\n%s", err, out.String())
	}
}

// TestRolloutWideAndName: -o wide adds each stage's selector, bound and gate from spec.rollout,
// and each revision's duration; -o name prints the placement as kubectl does.
func TestRolloutWideAndName(t *testing.T) {
	p := rolloutPlacement()
	p.Spec.Rollout.Stages = []edgev1alpha1.RolloutStage{{Name: "canary", Selector: edgev1alpha1.LabelSelector{MatchLabels: map[string]string{"ring": "canary"}}, MaxInFlight: ptr.To(intstr.FromInt32(1)), Pause: true}}
	var out bytes.Buffer
	if err := printRollout(&out, p, true); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	fields := func(l string) string { return strings.Join(strings.Fields(l), " ") }
	if got := fields(lines[len(lines)-3]); !strings.HasSuffix(got, "SELECTOR MAX IN FLIGHT GATE") {
		t.Errorf("-o wide header: %q\n%s", got, out.String())
	}
	if got := fields(lines[len(lines)-2]); got != "canary 2 2 0 0 0 ring=canary 1 pause" {
		t.Errorf("-o wide, the canary stage: %q", got)
	}
	if got := fields(lines[len(lines)-1]); got != "(no stage) 8 3 2 0 3 (the rest) 2 -" {
		t.Errorf("-o wide, the rest: %q", got)
	}

	published := metav1.NewTime(time.Date(2026, 11, 28, 20, 0, 0, 0, time.UTC))
	completed := metav1.NewTime(published.Add(4*time.Minute + 12*time.Second))
	p.Status.Rollout.History = []edgev1alpha1.RevisionHistory{{Revision: "abc", PublishedTime: &published}, {Revision: "old", PublishedTime: &published, CompletedTime: &completed}}
	out.Reset()
	if err := printHistory(&out, p, true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "TOOK") || !strings.Contains(fields(out.String()), "old 2026-11-28T20:00:00Z 2026-11-28T20:04:12Z 4m12s") {
		t.Errorf("rollout history -o wide:\n%s", out.String())
	}
	out.Reset()
	if err := printName(&out, p); err != nil || out.String() != "edgeplacement.edge.kcp.io/web\n" {
		t.Errorf("-o name: %v %q", err, out.String())
	}
}
