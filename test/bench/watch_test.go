package main

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func object(image string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"name": "app", "image": image}}, "spec", "template", "spec", "containers")
	return u
}

// TestView checks the bookkeeping the figures come from: when a destination first holds all its
// objects, what counts as present, and when a probed value first arrives.
func TestView(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	v := newView(2, map[string]bool{"deployments/app": true, "configmaps/cm-001": true})
	allThere := v.await(func(v *view) bool { return v.complete == 2 })

	v.observe(0, "deployments/app", object(initialImage), at(1))
	v.observe(0, "configmaps/kube-root-ca.crt", object(""), at(2)) // not a workload object
	if present, complete, _ := v.counts(); present != 1 || complete != 0 {
		t.Fatalf("after one of two objects: present %d, complete %d; want 1, 0", present, complete)
	}
	v.observe(0, "configmaps/cm-001", object(""), at(3))
	v.observe(0, "configmaps/cm-001", nil, at(4)) // deleted, and back: complete since 3 s
	v.observe(0, "configmaps/cm-001", object(""), at(5))
	v.observe(1, "configmaps/cm-001", object(""), at(6))
	select {
	case <-allThere:
		t.Fatal("the wait for both destinations ended while one lacked an object")
	default:
	}
	v.observe(1, "deployments/app", object(initialImage), at(7))
	select {
	case got := <-allThere:
		if !got.Equal(at(7)) {
			t.Errorf("the wait ended with the time %v, want that of the completing event %v", got, at(7))
		}
	default:
		t.Fatal("the wait did not end when both destinations held everything")
	}
	if got := v.completeTimes(); !got[0].Equal(at(3)) || !got[1].Equal(at(7)) {
		t.Errorf("complete at %v, want first completions %v and %v", got, at(3), at(7))
	}
	// A wait whose condition holds already ends at once.
	select {
	case <-v.await(func(v *view) bool { return v.present == 4 }):
	default:
		t.Error("a wait for what is already so did not end at once")
	}

	// The probe times only the destinations given, from the first event that satisfies it.
	v.startProbe("deployments/app", []int{1}, func(u *unstructured.Unstructured) bool { return imageOf(u) == updatedImage })
	probed := v.await(func(v *view) bool { return v.probed == 1 })
	v.observe(0, "deployments/app", object(updatedImage), at(8))
	v.observe(1, "deployments/app", object(initialImage), at(9))
	if _, _, n := v.counts(); n != 0 {
		t.Fatalf("%d destinations probed, want 0: destination 0 is not probed and 1 has the old value", n)
	}
	v.observe(1, "deployments/app", object(updatedImage), at(10))
	v.observe(1, "deployments/app", object(updatedImage), at(11))
	if got := <-probed; !got.Equal(at(10)) {
		t.Errorf("the probe's wait ended at %v, want %v", got, at(10))
	}
	if got := v.probeTimes([]int{1}); !got[0].Equal(at(10)) {
		t.Errorf("probe time %v, want the first match %v", got[0], at(10))
	}
}

func TestSecondsAndPercentiles(t *testing.T) {
	t0 := time.Unix(0, 0)
	got := seconds(t0, []time.Time{t0.Add(3 * time.Second), t0.Add(time.Second), t0.Add(2 * time.Second)})
	if len(got) != 3 || got[0] != 1 || got[2] != 3 {
		t.Fatalf("seconds = %v, want [1 2 3]", got)
	}
	if p := percentile(got, 0.5); p != 2 {
		t.Errorf("p50 = %v, want 2", p)
	}
	if p := percentile(got, 0.99); p != 3 {
		t.Errorf("p99 = %v, want 3", p)
	}
	if p := percentile(nil, 0.5); p != 0 {
		t.Errorf("p50 of nothing = %v, want 0", p)
	}
}
