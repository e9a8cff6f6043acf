package main

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

// TestPlayedStatus: the applied report says the version applied and not ready; the ready report
// says every object ready, with Ready's transition time moved and Applied's kept, as the syncer
// keeps the transition times of conditions that do not change.
func TestPlayedStatus(t *testing.T) {
	a := &edgev1alpha1.Assemblage{Spec: edgev1alpha1.AssemblageSpec{Version: "abc", Objects: []string{"namespaces/app", "configmaps/app/settings"}}}
	a.Generation = 3
	t1 := metav1.NewTime(time.Date(2026, 11, 23, 12, 0, 1, 0, time.UTC))
	t2 := metav1.NewTime(t1.Add(2 * time.Second))

	applied := playedStatus(a, false, nil, t1)
	if applied.ObservedVersion != "abc" || applied.AppliedVersion != "abc" {
		t.Errorf("versions %q/%q, want abc/abc", applied.ObservedVersion, applied.AppliedVersion)
	}
	if applied.Counts != (edgev1alpha1.ObjectCounts{Applied: 2}) {
		t.Errorf("counts %+v, want 2 applied", applied.Counts)
	}
	if !meta.IsStatusConditionTrue(applied.Conditions, edgev1alpha1.AssemblageApplied) ||
		!meta.IsStatusConditionFalse(applied.Conditions, edgev1alpha1.AssemblageReady) ||
		!meta.IsStatusConditionFalse(applied.Conditions, edgev1alpha1.AssemblageRefused) {
		t.Errorf("conditions %+v, want Applied True, Ready False, Refused False", applied.Conditions)
	}
	for _, o := range applied.Objects {
		if o.State != edgev1alpha1.ObjectApplied {
			t.Errorf("object %s is %s, want %s", o.Object, o.State, edgev1alpha1.ObjectApplied)
		}
	}

	ready := playedStatus(a, true, applied.Conditions, t2)
	if ready.Counts != (edgev1alpha1.ObjectCounts{Ready: 2}) || len(ready.Objects) != 2 || ready.Objects[1].State != edgev1alpha1.ObjectReady {
		t.Errorf("counts %+v, objects %+v, want 2 ready", ready.Counts, ready.Objects)
	}
	r := meta.FindStatusCondition(ready.Conditions, edgev1alpha1.AssemblageReady)
	if r == nil || r.Status != metav1.ConditionTrue || !r.LastTransitionTime.Equal(&t2) || r.ObservedGeneration != 3 {
		t.Errorf("Ready %+v, want True since %s, observedGeneration 3", r, t2)
	}
	if ap := meta.FindStatusCondition(ready.Conditions, edgev1alpha1.AssemblageApplied); ap == nil || !ap.LastTransitionTime.Equal(&t1) {
		t.Errorf("Applied %+v, want its transition time kept at %s", ap, t1)
	}
	// The applied report's conditions are not changed by the ready one.
	if meta.IsStatusConditionTrue(applied.Conditions, edgev1alpha1.AssemblageReady) {
		t.Error("the ready report changed the conditions it was given")
	}
}

// TestDoneAt: done is the soak after Ready's transition time, or after the delivery if later,
// both in whole seconds as kcp stores them.
func TestDoneAt(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	d := delivery{seen: t0.Add(300 * time.Millisecond), deliveredAt: t0}
	if !d.doneAt(3 * time.Second).IsZero() {
		t.Error("a delivery not reported ready has a done time")
	}
	d.ready, d.readySince = t0.Add(2400*time.Millisecond), t0.Add(2300*time.Millisecond)
	if got, want := d.doneAt(3*time.Second), t0.Add(5*time.Second); !got.Equal(want) {
		t.Errorf("doneAt = %s, want %s (ready at :02.3, stored as :02, plus 3 s)", got, want)
	}
	// Ready since before the delivery (it stayed ready from the version before): the soak
	// starts at the delivery.
	d.readySince = t0.Add(-time.Minute)
	if got, want := d.doneAt(3*time.Second), t0.Add(3*time.Second); !got.Equal(want) {
		t.Errorf("doneAt = %s, want %s", got, want)
	}
}
