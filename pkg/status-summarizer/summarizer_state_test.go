package statussummarizer

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

// deploymentCopy is a mailbox copy of a Deployment with the given annotations and status.
func deploymentCopy(annotations map[string]string, status map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "app", "generation": int64(3)},
		"spec":     map[string]any{"replicas": int64(2)},
	}}
	u.SetAnnotations(annotations)
	if status != nil {
		u.Object["status"] = status
	}
	return u
}

func applied(extra ...string) map[string]string {
	a := map[string]string{edgev1alpha1.AnnotationProjectionHash: "h2"}
	for i := 0; i+1 < len(extra); i += 2 {
		a[extra[i]] = extra[i+1]
	}
	return a
}

func readyStatus(observed int64) map[string]any {
	return map[string]any{
		"observedGeneration": observed, "replicas": int64(2), "updatedReplicas": int64(2), "readyReplicas": int64(2), "availableReplicas": int64(2),
		"conditions": []any{
			map[string]any{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"},
			map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
		},
	}
}

func TestCopyState(t *testing.T) {
	configMap := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "c", "namespace": "app"}}}
	configMap.SetAnnotations(applied())
	failedStatus := readyStatus(3)
	failedStatus["conditions"] = []any{map[string]any{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded", "message": "stuck"}}
	for _, tc := range []struct {
		name    string
		copy    *unstructured.Unstructured
		applied string // the hash the syncer reports applied
		state   State
	}{
		{"refused at the edge", deploymentCopy(applied(edgev1alpha1.AnnotationSyncError, "field is immutable"), readyStatus(3)), "h2", StateFailed},
		{"never applied", deploymentCopy(applied(), nil), "", StatePending},
		{"never applied, with a status", deploymentCopy(applied(), readyStatus(3)), "", StatePending},
		{"an older version applied", deploymentCopy(applied(), readyStatus(3)), "h1", StatePending},
		{"applied, no status yet", deploymentCopy(applied(), nil), "h2", StateApplied},
		{"applied, status of an older generation", deploymentCopy(applied(), readyStatus(2)), "h2", StateApplied},
		{"applied and ready", deploymentCopy(applied(), readyStatus(3)), "h2", StateReady},
		{"applied and failed", deploymentCopy(applied(), failedStatus), "h2", StateFailed},
		{"a kind without status, applied", configMap, "h2", StateReady},
		{"a kind without status, not applied", configMap, "", StatePending},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, reason := CopyState(tc.copy, tc.applied)
			if got != tc.state {
				t.Errorf("CopyState = %s (%s), want %s", got, reason, tc.state)
			}
			if got == StateFailed && reason == "" {
				t.Error("a failed copy must say why")
			}
		})
	}
}

func TestObjectName(t *testing.T) {
	if got := ObjectName(schema.GroupResource{Group: "apps", Resource: "deployments"}, "app", "web"); got != "deployments.apps/app/web" {
		t.Errorf("namespaced: %s", got)
	}
	if got := ObjectName(schema.GroupResource{Resource: "namespaces"}, "", "app"); got != "namespaces/app" {
		t.Errorf("core, cluster-scoped: %s", got)
	}
}

func TestSummarize(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	earlier := metav1.NewTime(now.Add(-time.Hour))
	objects := []string{"configmaps/app/c", "deployments.apps/app/web"}
	ready := ObjectState{State: StateReady}
	dests := []DestinationView{
		{Name: "imw:a", Objects: map[string]ObjectState{objects[0]: ready, objects[1]: ready}},
		{Name: "imw:b", Objects: map[string]ObjectState{objects[0]: ready, objects[1]: {State: StateFailed, Reason: "stuck"}}},
		{Name: "imw:c", Objects: map[string]ObjectState{objects[0]: ready}}, // the Deployment not projected yet
		{Name: "imw:d", Objects: map[string]ObjectState{objects[0]: ready, objects[1]: {State: StateApplied}}},
		{Name: "imw:e", Stale: true, StaleSince: earlier.Add(-time.Minute), Objects: map[string]ObjectState{objects[0]: ready, objects[1]: ready}},
	}
	s := Summarize(objects, dests, map[string]metav1.Time{brokenKey("imw:b", objects[1]): earlier}, now)
	want := edgev1alpha1.DestinationCounts{Ready: 1, Failed: 1, Pending: 1, Applied: 1, Stale: 1}
	if s.Counts != want {
		t.Errorf("counts %+v, want %+v", s.Counts, want)
	}
	if s.ObjectCount != 2 || len(s.Objects) != 2 {
		t.Fatalf("objects %+v", s.Objects)
	}
	// Not ready everywhere comes first; both are not, so by name.
	wantWeb := edgev1alpha1.DestinationCounts{Ready: 1, Failed: 1, Pending: 1, Applied: 1, Stale: 1}
	wantCM := edgev1alpha1.DestinationCounts{Ready: 4, Stale: 1}
	if s.Objects[0].Object != objects[0] || s.Objects[0].DestinationCounts != wantCM || s.Objects[1].DestinationCounts != wantWeb {
		t.Errorf("per-object counts %+v, want %v then %v", s.Objects, wantCM, wantWeb)
	}
	if s.BrokenCount != 2 || len(s.Broken) != 2 {
		t.Fatalf("broken %+v, want the stale destination and the failed Deployment", s.Broken)
	}
	if s.Broken[0].Destination != "imw:e" || s.Broken[0].Object != "" {
		t.Errorf("oldest first: %+v", s.Broken[0])
	}
	if b := s.Broken[1]; b.Destination != "imw:b" || b.Object != objects[1] || b.Reason != "stuck" || !b.Since.Equal(&earlier) {
		t.Errorf("the failed entry keeps its first-seen time: %+v", b)
	}
}

func TestSummarizeIsBounded(t *testing.T) {
	now := metav1.Now()
	var objects []string
	for i := 0; i < 150; i++ {
		objects = append(objects, fmt.Sprintf("configmaps/app/c%03d", i))
	}
	var dests []DestinationView
	for i := 0; i < 1000; i++ {
		d := DestinationView{Name: fmt.Sprintf("imw:d%04d", i), Objects: map[string]ObjectState{}}
		for _, o := range objects {
			d.Objects[o] = ObjectState{State: StateReady}
		}
		if i%10 == 0 {
			d.Objects[objects[149]] = ObjectState{State: StateFailed, Reason: "no"}
		}
		dests = append(dests, d)
	}
	s := Summarize(objects, dests, nil, now)
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

func TestCoalescingQueue(t *testing.T) {
	q := newCoalescingQueue[string]("test", 200*time.Millisecond)
	defer q.ShutDown()
	q.Enqueue("a")
	if k, _ := q.Get(); k != "a" {
		t.Fatalf("got %q", k)
	}
	q.Done("a")
	start := time.Now()
	for i := 0; i < 100; i++ {
		q.Enqueue("a") // a burst within the period makes one more pass, at its end
	}
	k, _ := q.Get()
	q.Done(k)
	if waited := time.Since(start); k != "a" || waited < 150*time.Millisecond {
		t.Errorf("second pass after %v, want about the period", waited)
	}
	if q.Len() != 0 {
		t.Errorf("%d more passes queued, want none", q.Len())
	}
}

// BenchmarkPlacementPass measures the pure part of one pass over a placement with 300
// destinations of 11 objects: the state of every copy (kstatus), then the summary.
func BenchmarkPlacementPass(b *testing.B) {
	copies := make([]*unstructured.Unstructured, 0, 3300)
	for i := 0; i < 3300; i++ {
		copies = append(copies, deploymentCopy(applied(), readyStatus(3)))
	}
	objects := make([]string, 11)
	for i := range objects {
		objects[i] = fmt.Sprintf("deployments.apps/app/web-%02d", i)
	}
	now := metav1.Now()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		dests := make([]DestinationView, 300)
		for d := range dests {
			dests[d] = DestinationView{Name: fmt.Sprintf("imw:edge-%03d", d), Objects: map[string]ObjectState{}}
			for o, name := range objects {
				state, reason := CopyState(copies[(d*11+o)%len(copies)], "h2")
				dests[d].Objects[name] = ObjectState{State: state, Reason: reason}
			}
		}
		Summarize(objects, dests, nil, now)
	}
}
