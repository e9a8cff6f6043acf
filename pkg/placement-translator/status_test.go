package placementtranslator

import (
	"reflect"
	"sort"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

var (
	pkA = placementKey{cluster: "ws1", name: "a"}
	pkB = placementKey{cluster: "ws1", name: "b"}
)

func TestPlacementConditions(t *testing.T) {
	conflictMsg := "deployments.apps/ns/web is selected from more than one workload workspace"
	tests := []struct {
		name         string
		destinations int
		notDone      int
		problems     []problem
		// Expected Projected condition; message checked with wantMessage (exact) or contains.
		wantStatus   metav1.ConditionStatus
		wantReason   string
		wantMessage  string
		wantContains []string
		wantMissing  []string
		// Expected Conflict condition.
		wantConflict        metav1.ConditionStatus
		wantConflictReason  string
		wantConflictMessage string
	}{
		{
			name:               "no destinations",
			destinations:       0,
			wantStatus:         metav1.ConditionFalse,
			wantReason:         ReasonNoDestinations,
			wantMessage:        "the placement has no destinations",
			wantConflict:       metav1.ConditionFalse,
			wantConflictReason: ReasonNoConflict,
		},
		{
			name:               "no destinations wins over pending",
			destinations:       0,
			notDone:            2,
			wantStatus:         metav1.ConditionFalse,
			wantReason:         ReasonNoDestinations,
			wantConflict:       metav1.ConditionFalse,
			wantConflictReason: ReasonNoConflict,
		},
		{
			name:               "all destinations done",
			destinations:       3,
			wantStatus:         metav1.ConditionTrue,
			wantReason:         ReasonProjected,
			wantMessage:        "the selected objects are in the mailboxes of all 3 destinations",
			wantConflict:       metav1.ConditionFalse,
			wantConflictReason: ReasonNoConflict,
		},
		{
			name:               "some destinations pending",
			destinations:       5,
			notDone:            2,
			wantStatus:         metav1.ConditionFalse,
			wantReason:         ReasonPending,
			wantMessage:        "2 of 5 destinations are not projected yet",
			wantConflict:       metav1.ConditionFalse,
			wantConflictReason: ReasonNoConflict,
		},
		{
			name:               "a problem wins over pending",
			destinations:       2,
			notDone:            1,
			problems:           []problem{{pkA, problemWrite, "boom"}},
			wantStatus:         metav1.ConditionFalse,
			wantReason:         ReasonProjectionFailed,
			wantMessage:        "1 problem(s) among 2 destinations: WriteError: boom",
			wantConflict:       metav1.ConditionFalse,
			wantConflictReason: ReasonNoConflict,
		},
		{
			name:         "at most three distinct problems are quoted",
			destinations: 4,
			problems: []problem{
				{pkA, problemWrite, "one"},
				{pkA, problemWrite, "one"},
				{pkA, problemCustomization, "two"},
				{pkA, problemWrite, "three"},
				{pkA, problemWrite, "four"},
				{pkA, problemWrite, "five"},
			},
			wantStatus: metav1.ConditionFalse,
			wantReason: ReasonProjectionFailed,
			wantMessage: "6 problem(s) among 4 destinations: CustomizationError: two; WriteError: five; " +
				"WriteError: four; and 2 more",
			wantConflict:       metav1.ConditionFalse,
			wantConflictReason: ReasonNoConflict,
		},
		{
			name:         "a problem of the placement is quoted once, with its destinations",
			destinations: 5,
			problems: []problem{
				{pkA, problemUnknownResource, "destination inv:st3: spec.downsync[0].resources names \"x\""},
				{pkA, problemWrite, "destination inv:st2: boom"},
				{pkA, problemUnknownResource, "destination inv:st1: spec.downsync[0].resources names \"x\""},
				{pkA, problemUnknownResource, "destination inv:st5: spec.downsync[0].resources names \"x\""},
				{pkA, problemUnknownResource, "destination inv:st4: spec.downsync[0].resources names \"x\""},
			},
			wantStatus: metav1.ConditionFalse,
			wantReason: ReasonProjectionFailed,
			wantMessage: "5 problem(s) among 5 destinations: UnknownResource at 4 destinations (inv:st1, inv:st3, inv:st4, and 1 more): " +
				"spec.downsync[0].resources names \"x\"; WriteError: destination inv:st2: boom",
			wantConflict:       metav1.ConditionFalse,
			wantConflictReason: ReasonNoConflict,
		},
		{
			name:         "only mailboxes not ready",
			destinations: 2,
			problems: []problem{
				{pkA, problemMailbox, "the mailbox of SyncTarget inv|st1 is not ready yet"},
				{pkA, problemMailbox, "the mailbox of SyncTarget inv|st2 is not ready yet"},
			},
			wantStatus:         metav1.ConditionFalse,
			wantReason:         ReasonMailboxNotReady,
			wantContains:       []string{"2 problem(s) among 2 destinations", "inv|st1", "inv|st2"},
			wantConflict:       metav1.ConditionFalse,
			wantConflictReason: ReasonNoConflict,
		},
		{
			name:         "a mailbox not ready among other problems",
			destinations: 2,
			problems: []problem{
				{pkA, problemMailbox, "not ready"},
				{pkA, problemSelection, "spec.downsync[0].labelSelectors: bad"},
			},
			wantStatus:         metav1.ConditionFalse,
			wantReason:         ReasonProjectionFailed,
			wantContains:       []string{"MailboxNotReady: not ready", "InvalidDownsync: spec.downsync[0].labelSelectors: bad"},
			wantConflict:       metav1.ConditionFalse,
			wantConflictReason: ReasonNoConflict,
		},
		{
			name:                "conflict",
			destinations:        1,
			problems:            []problem{{pkA, problemConflict, conflictMsg}},
			wantStatus:          metav1.ConditionFalse,
			wantReason:          ReasonProjectionFailed,
			wantMessage:         "1 problem(s) among 1 destinations: Conflict: " + conflictMsg,
			wantConflict:        metav1.ConditionTrue,
			wantConflictReason:  edgev1alpha1.ReasonConflictingProjection,
			wantConflictMessage: conflictMsg,
		},
		{
			name:         "the conflict message quotes only conflicts, deduplicated",
			destinations: 2,
			problems: []problem{
				{pkA, problemConflict, conflictMsg},
				{pkA, problemWrite, "boom"},
				{pkA, problemConflict, conflictMsg},
			},
			wantStatus:          metav1.ConditionFalse,
			wantReason:          ReasonProjectionFailed,
			wantContains:        []string{"3 problem(s) among 2 destinations", "Conflict: " + conflictMsg, "WriteError: boom"},
			wantConflict:        metav1.ConditionTrue,
			wantConflictReason:  edgev1alpha1.ReasonConflictingProjection,
			wantConflictMessage: conflictMsg,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			projected, conflict := placementConditions(tt.destinations, tt.notDone, tt.problems)
			if projected.Type != edgev1alpha1.PlacementProjected {
				t.Errorf("projected.Type = %q, want %q", projected.Type, edgev1alpha1.PlacementProjected)
			}
			if projected.Status != tt.wantStatus || projected.Reason != tt.wantReason {
				t.Errorf("Projected = %s/%s, want %s/%s (message %q)", projected.Status, projected.Reason, tt.wantStatus, tt.wantReason, projected.Message)
			}
			if tt.wantMessage != "" && projected.Message != tt.wantMessage {
				t.Errorf("Projected message = %q, want %q", projected.Message, tt.wantMessage)
			}
			for _, s := range tt.wantContains {
				if !strings.Contains(projected.Message, s) {
					t.Errorf("Projected message %q does not contain %q", projected.Message, s)
				}
			}
			if conflict.Type != edgev1alpha1.PlacementConflict {
				t.Errorf("conflict.Type = %q, want %q", conflict.Type, edgev1alpha1.PlacementConflict)
			}
			if conflict.Status != tt.wantConflict || conflict.Reason != tt.wantConflictReason {
				t.Errorf("Conflict = %s/%s, want %s/%s", conflict.Status, conflict.Reason, tt.wantConflict, tt.wantConflictReason)
			}
			if tt.wantConflictMessage != "" && conflict.Message != tt.wantConflictMessage {
				t.Errorf("Conflict message = %q, want %q", conflict.Message, tt.wantConflictMessage)
			}
			if conflict.Message == "" {
				t.Errorf("Conflict message is empty")
			}
		})
	}
}

func sortedPlacementKeys(pks []placementKey) []placementKey {
	out := append([]placementKey(nil), pks...)
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

func TestResultsSet(t *testing.T) {
	type step struct {
		mailbox string
		res     mailboxResult
		want    []placementKey // affected placements; nil: nothing changed
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{
			name: "a first result affects its placements",
			steps: []step{
				{"mb1", mailboxResult{placements: []placementKey{pkA, pkB}}, []placementKey{pkA, pkB}},
			},
		},
		{
			name: "the same result again changes nothing",
			steps: []step{
				{"mb1", mailboxResult{placements: []placementKey{pkA}}, []placementKey{pkA}},
				{"mb1", mailboxResult{placements: []placementKey{pkA}}, nil},
			},
		},
		{
			name: "a new problem affects the placement",
			steps: []step{
				{"mb1", mailboxResult{placements: []placementKey{pkA}}, []placementKey{pkA}},
				{"mb1", mailboxResult{placements: []placementKey{pkA}, problems: []problem{{pkA, problemWrite, "boom"}}}, []placementKey{pkA}},
			},
		},
		{
			name: "no longer pending affects the placement",
			steps: []step{
				{"mb1", mailboxResult{placements: []placementKey{pkA}, pending: true}, []placementKey{pkA}},
				{"mb1", mailboxResult{placements: []placementKey{pkA}}, []placementKey{pkA}},
			},
		},
		{
			name: "moving to another placement affects the old and the new",
			steps: []step{
				{"mb1", mailboxResult{placements: []placementKey{pkA}}, []placementKey{pkA}},
				{"mb1", mailboxResult{placements: []placementKey{pkB}}, []placementKey{pkA, pkB}},
			},
		},
		{
			name: "an empty result affects the old placements",
			steps: []step{
				{"mb1", mailboxResult{placements: []placementKey{pkA}}, []placementKey{pkA}},
				{"mb1", mailboxResult{}, []placementKey{pkA}},
				{"mb1", mailboxResult{}, nil},
			},
		},
		{
			name: "mailboxes are independent",
			steps: []step{
				{"mb1", mailboxResult{placements: []placementKey{pkA}}, []placementKey{pkA}},
				{"mb2", mailboxResult{placements: []placementKey{pkA}}, []placementKey{pkA}},
				{"mb1", mailboxResult{placements: []placementKey{pkA}}, nil},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newResults()
			for i, s := range tt.steps {
				got := r.set(s.mailbox, s.res)
				if len(s.want) == 0 {
					if len(got) != 0 {
						t.Errorf("step %d: set(%s) = %v, want nothing affected", i, s.mailbox, got)
					}
					continue
				}
				if got, want := sortedPlacementKeys(got), sortedPlacementKeys(s.want); !reflect.DeepEqual(got, want) {
					t.Errorf("step %d: set(%s) = %v, want %v", i, s.mailbox, got, want)
				}
			}
		})
	}
}

func TestResultsSetUnchangedIsNil(t *testing.T) {
	r := newResults()
	res := mailboxResult{placements: []placementKey{pkA}, problems: []problem{{pkA, problemWrite, "boom"}}}
	r.set("mb1", res)
	if got := r.set("mb1", res); got != nil {
		t.Errorf("set with an unchanged result = %#v, want nil", got)
	}
}

func TestResultsOf(t *testing.T) {
	r := newResults()
	r.set("done", mailboxResult{placements: []placementKey{pkA, pkB}, problems: []problem{
		{pkA, problemWrite, "a1"},
		{pkB, problemWrite, "b1"},
		{pkA, problemCustomization, "a2"},
	}})
	r.set("clean", mailboxResult{placements: []placementKey{pkA}})
	r.set("pending", mailboxResult{placements: []placementKey{pkA}, pending: true})
	r.set("onlyB", mailboxResult{placements: []placementKey{pkB}, problems: []problem{{pkB, problemWrite, "b2"}}})
	held := mailboxResult{placements: []placementKey{pkA, pkB}, problems: []problem{{pkB, "DependencyNotReady", "b-waits"}}}
	held.hold(pkB) // B's dependencies hold its new version in this mailbox
	r.set("heldB", held)

	tests := []struct {
		name         string
		pk           placementKey
		mailboxes    []string
		wantNotDone  int
		wantProblems []string // messages, sorted
	}{
		{"no mailboxes", pkA, nil, 0, nil},
		{"clean mailbox", pkA, []string{"clean"}, 0, nil},
		{"only this placement's problems", pkA, []string{"done"}, 0, []string{"a1", "a2"}},
		{"the other placement's problems", pkB, []string{"done"}, 0, []string{"b1"}},
		{"missing mailbox is not done", pkA, []string{"unknown"}, 1, nil},
		{"pending mailbox is not done", pkA, []string{"pending"}, 1, nil},
		{"mailbox not recording the placement is not done", pkA, []string{"onlyB"}, 1, nil},
		{"a held placement is not done, and says why", pkB, []string{"heldB"}, 1, []string{"b-waits"}},
		{"another placement's hold does not hold this one", pkA, []string{"heldB"}, 0, nil},
		{"all together", pkA, []string{"done", "clean", "pending", "onlyB", "unknown"}, 3, []string{"a1", "a2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mbs := map[string]bool{}
			for _, m := range tt.mailboxes {
				mbs[m] = true
			}
			notDone, problems := r.of(tt.pk, mbs)
			if notDone != tt.wantNotDone {
				t.Errorf("notDone = %d, want %d", notDone, tt.wantNotDone)
			}
			var msgs []string
			for _, p := range problems {
				if p.placement != tt.pk {
					t.Errorf("problem %+v is not of placement %v", p, tt.pk)
				}
				msgs = append(msgs, p.message)
			}
			sort.Strings(msgs)
			if !reflect.DeepEqual(msgs, tt.wantProblems) {
				t.Errorf("problems = %q, want %q", msgs, tt.wantProblems)
			}
		})
	}
}

func TestResultsMailboxMovesBetweenPlacements(t *testing.T) {
	r := newResults()
	mbs := map[string]bool{"mb1": true}
	r.set("mb1", mailboxResult{placements: []placementKey{pkA}, problems: []problem{{pkA, problemWrite, "boom"}}})
	if notDone, problems := r.of(pkA, mbs); notDone != 0 || len(problems) != 1 {
		t.Fatalf("before the move, of(A) = %d, %v; want 0 and one problem", notDone, problems)
	}

	r.set("mb1", mailboxResult{placements: []placementKey{pkB}})
	if notDone, problems := r.of(pkA, mbs); notDone != 1 || len(problems) != 0 {
		t.Errorf("after the move, of(A) = %d, %v; want 1 not done and no problems", notDone, problems)
	}
	if notDone, problems := r.of(pkB, mbs); notDone != 0 || len(problems) != 0 {
		t.Errorf("after the move, of(B) = %d, %v; want done and no problems", notDone, problems)
	}
	if r.byPlacement[pkA]["mb1"] {
		t.Errorf("placement A still records mailbox mb1")
	}

	r.set("mb1", mailboxResult{})
	if _, ok := r.byMailbox["mb1"]; ok {
		t.Errorf("an empty result left mailbox mb1 recorded")
	}
	if notDone, _ := r.of(pkB, mbs); notDone != 1 {
		t.Errorf("after an empty result, of(B) notDone = %d, want 1", notDone)
	}
}
