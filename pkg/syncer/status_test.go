package syncer

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// deploymentAtEdge is the Deployment d as a Kubernetes edge holds it, with the status given.
func deploymentAtEdge(d *desired, generation int64, status map[string]any) *unstructured.Unstructured {
	l := atEdge(d, "created")
	l.SetGeneration(generation)
	if status != nil {
		l.Object["status"] = status
	}
	return l
}

func readyDeploymentStatus(generation int64) map[string]any {
	return map[string]any{
		"observedGeneration": generation, "replicas": int64(2), "updatedReplicas": int64(2),
		"readyReplicas": int64(2), "availableReplicas": int64(2),
		"conditions": []any{
			map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
			map[string]any{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"},
		},
	}
}

func TestObjectReport(t *testing.T) {
	dep := planned(t, deploymentEntry("app", "web"))
	cm := planned(t, plainConfigMap("app", "cm", nil))
	ns := planned(t, namespaceEntry("app"))
	once := planned(t, plainConfigMap("app", "once", map[string]any{"edge.kcp.io/create-only": "true"}))
	created := metav1.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	applied := &result{outcome: outcomeApplied, uid: "applied-uid"}
	cases := []struct {
		name       string
		d          *desired
		r          *result
		live       *unstructured.Unstructured
		known      bool
		createdAt  *metav1.Time
		state      string
		reasonPart string
		uid        string
		withStatus bool
	}{
		{"not tried yet", dep, nil, nil, true, nil, edgev1alpha1.ObjectPending, "not applied yet", "", false},
		{"waiting", dep, &result{outcome: outcomePending, reason: "waiting for namespace app at the edge"}, nil, true, nil,
			edgev1alpha1.ObjectPending, "namespace app", "", false},
		{"a kind the edge does not serve, and no CRD for it", dep, &result{outcome: outcomePending, unserved: true,
			reason: "the edge cluster does not serve deployments.apps"}, nil, true, nil, edgev1alpha1.ObjectFailed, "does not serve", "", false},
		{"refused", dep, &result{outcome: outcomeFailed, reason: "the edge cluster refused it: invalid selector"}, nil, true, nil,
			edgev1alpha1.ObjectFailed, "invalid selector", "", false},
		{"ready by kstatus", dep, applied, deploymentAtEdge(dep, 2, readyDeploymentStatus(2)), true, nil, edgev1alpha1.ObjectReady, "", "edge-uid", true},
		{"rolling out by kstatus", dep, applied, deploymentAtEdge(dep, 3, readyDeploymentStatus(2)), true, nil,
			edgev1alpha1.ObjectApplied, "observed generation", "edge-uid", true},
		{"no status yet", dep, applied, deploymentAtEdge(dep, 1, nil), true, nil, edgev1alpha1.ObjectApplied, "", "edge-uid", false},
		{"a ConfigMap is ready once there", cm, applied, atEdge(cm, "created"), true, nil, edgev1alpha1.ObjectReady, "", "edge-uid", false},
		{"a Namespace's status is not reported", ns, applied, func() *unstructured.Unstructured {
			l := atEdge(ns, "created")
			l.Object["status"] = map[string]any{"phase": "Active"}
			return l
		}(), true, nil, edgev1alpha1.ObjectReady, "", "edge-uid", false},
		{"edge watch not listed yet", dep, applied, nil, false, nil, edgev1alpha1.ObjectApplied, "", "applied-uid", false},
		{"deleted at the edge", dep, applied, nil, true, nil, edgev1alpha1.ObjectPending, "being put back", "", false},
		{"create-only created once", once, &result{outcome: outcomeCreatedOnce, reason: createdOnceReason(created)}, nil, true, &created,
			edgev1alpha1.ObjectApplied, "not created again", "", false},
		{"create-only deleted since it was applied in this run", once, applied, nil, true, &created,
			edgev1alpha1.ObjectApplied, "not created again", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := objectReport(c.d, c.r, c.live, c.known, c.createdAt, nil)
			s := got.state
			if s.Object != c.d.key.String() || s.State != c.state || !strings.Contains(s.Reason, c.reasonPart) || string(s.UID) != c.uid {
				t.Errorf("objectReport = %+v, want state %s, reason with %q, uid %q", s, c.state, c.reasonPart, c.uid)
			}
			if c.reasonPart == "" && s.State == edgev1alpha1.ObjectReady && s.Reason != "" {
				t.Errorf("a ready object has the reason %q", s.Reason)
			}
			if (len(got.status) > 0) != c.withStatus {
				t.Errorf("status reported: %v, want %v", got.status, c.withStatus)
			}
			if c.createdAt != nil && (s.CreatedAt == nil || !s.CreatedAt.Equal(c.createdAt)) {
				t.Errorf("createdAt = %v, want %v", s.CreatedAt, c.createdAt)
			}
		})
	}
}

func rep(key, state, reason string, status map[string]any) reported {
	return reported{state: edgev1alpha1.ObjectState{Object: key, State: state, Reason: reason}, status: status,
		failedToApply: state == edgev1alpha1.ObjectFailed && strings.HasPrefix(reason, "the edge cluster refused")}
}

func conditionOf(t *testing.T, s edgev1alpha1.AssemblageStatus, typ string) metav1.Condition {
	t.Helper()
	c := meta.FindStatusCondition(s.Conditions, typ)
	if c == nil {
		t.Fatalf("no condition %s in %+v", typ, s.Conditions)
	}
	return *c
}

func TestBuildStatusConditions(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	base := func(objects ...reported) statusInputs {
		return statusInputs{version: "v2", generation: 4, observedVersion: "v2", total: len(objects), objects: objects, now: now, budget: StatusBudget}
	}
	type want struct {
		applied, ready, refused                   metav1.ConditionStatus
		appliedReason, readyReason, refusedReason string
		messagePart                               string // of Applied's or Ready's message
	}
	cases := []struct {
		name string
		in   statusInputs
		want want
	}{
		{"all ready", func() statusInputs {
			in := base(rep("configmaps/a/x", "Ready", "", nil), rep("namespaces/a", "Ready", "", nil))
			in.appliedVersion = "v2"
			return in
		}(), want{"True", "True", "False", "VersionApplied", "AllObjectsReady", "Readable", "all 2 objects"}},
		{"applied, one not ready", func() statusInputs {
			in := base(rep("deployments.apps/a/web", "Applied", "Deployment does not have minimum availability", nil), rep("namespaces/a", "Ready", "", nil))
			in.appliedVersion = "v2"
			return in
		}(), want{"True", "False", "False", "VersionApplied", "ObjectsNotReady", "Readable", "minimum availability"}},
		{"applying", func() statusInputs {
			in := base(rep("configmaps/a/x", "Pending", "waiting for namespace a at the edge", nil), rep("namespaces/a", "Ready", "", nil))
			in.appliedVersion = "v1"
			return in
		}(), want{"False", "False", "False", "Applying", "Applying", "Readable", "1 of 2 objects pending"}},
		{"an object refused", base(rep("deployments.apps/a/bad", "Failed", "the edge cluster refused it: selector does not match", nil), rep("namespaces/a", "Ready", "", nil)),
			want{"False", "False", "False", "ObjectsFailed", "ObjectsFailed", "Readable", "selector does not match"}},
		{"failed by kstatus after it was applied", func() statusInputs {
			in := base(rep("jobs.batch/a/j", "Failed", "Job Failed", nil))
			in.appliedVersion = "v2"
			return in
		}(), want{"True", "False", "False", "VersionApplied", "ObjectsFailed", "Readable", "Job Failed"}},
		{"refused, nothing applied yet", statusInputs{version: "v3", generation: 5, now: now, budget: StatusBudget,
			refusal: &transport.RefusedError{Reason: "UnknownFormat", Message: `format "x" is unknown to this syncer`}},
			want{"False", "False", "True", "UnknownFormat", "UnknownFormat", "UnknownFormat", "nothing of it is applied"}},
		{"refused, the last good version kept", func() statusInputs {
			in := base(rep("configmaps/a/x", "Ready", "", nil))
			in.version, in.appliedVersion = "v3", "v2"
			in.refusal = &transport.RefusedError{Reason: "PartsMissing", Message: "lacks 1 of its 2 parts"}
			return in
		}(), want{"False", "False", "True", "PartsMissing", "PartsMissing", "PartsMissing", "keeps version v2"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := buildStatus(c.in)
			applied, ready, refused := conditionOf(t, s, "Applied"), conditionOf(t, s, "Ready"), conditionOf(t, s, "Refused")
			got := want{applied.Status, ready.Status, refused.Status, applied.Reason, ready.Reason, refused.Reason, c.want.messagePart}
			if got != c.want {
				t.Errorf("conditions = %+v, want %+v", got, c.want)
			}
			if !strings.Contains(applied.Message+" | "+ready.Message, c.want.messagePart) {
				t.Errorf("messages %q | %q do not say %q", applied.Message, ready.Message, c.want.messagePart)
			}
			for _, cond := range s.Conditions {
				if cond.ObservedGeneration != c.in.generation || !cond.LastTransitionTime.Time.Equal(now) {
					t.Errorf("condition %s: observedGeneration %d, transition %v", cond.Type, cond.ObservedGeneration, cond.LastTransitionTime)
				}
			}
			if s.ObservedVersion != c.in.observedVersion || s.AppliedVersion != c.in.appliedVersion {
				t.Errorf("versions observed %q applied %q, want %q %q", s.ObservedVersion, s.AppliedVersion, c.in.observedVersion, c.in.appliedVersion)
			}
		})
	}
}

func TestBuildStatusCountsAndTransitions(t *testing.T) {
	earlier := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	later := earlier.Add(time.Hour)
	in := statusInputs{version: "v", generation: 1, observedVersion: "v", appliedVersion: "v", total: 3, now: earlier, budget: StatusBudget,
		objects: []reported{
			rep("configmaps/a/x", "Ready", "", nil), rep("deployments.apps/a/w", "Applied", "rolling out", nil),
			rep("secrets/a/s", "Ready", "", nil),
			rep("configmaps/a/shared", "Pending", "carried by assemblage b, which has not delivered it yet", nil), // shared
		}}
	first := buildStatus(in)
	want := edgev1alpha1.ObjectCounts{Pending: 1, Applied: 1, Ready: 2}
	if first.Counts != want {
		t.Errorf("counts = %+v, want %+v (shared objects included)", first.Counts, want)
	}
	if len(first.Objects) != 4 || first.Objects[3].Object != "configmaps/a/shared" {
		t.Errorf("objects = %+v, want the 3 carried then the shared one", first.Objects)
	}
	// An hour later, nothing changed: the transition times stay, and the status is equal.
	in.previous, in.now = first.Conditions, later
	second := buildStatus(in)
	if !statusEqual(&first, &second) {
		t.Errorf("the same state built an hour later differs:\n%+v\n%+v", first, second)
	}
	// The deployment becomes ready: Ready turns True at the later time; Applied keeps its time.
	in.objects[1] = rep("deployments.apps/a/w", "Ready", "", nil)
	in.objects[3] = rep("configmaps/a/shared", "Ready", "", nil)
	third := buildStatus(in)
	if c := conditionOf(t, third, "Ready"); c.Status != "True" || !c.LastTransitionTime.Time.Equal(later) {
		t.Errorf("Ready = %s at %v, want True at %v", c.Status, c.LastTransitionTime, later)
	}
	if c := conditionOf(t, third, "Applied"); !c.LastTransitionTime.Time.Equal(earlier) {
		t.Errorf("Applied moved its transition time to %v", c.LastTransitionTime)
	}
	if statusEqual(&second, &third) {
		t.Errorf("statuses of different states are equal")
	}
}

func TestStatusEqualIgnoresReportTime(t *testing.T) {
	a := buildStatus(statusInputs{version: "v", observedVersion: "v", appliedVersion: "v", total: 1, now: time.Now(), budget: StatusBudget,
		objects: []reported{rep("configmaps/a/x", "Ready", "", map[string]any{"n": int64(1)})}})
	b := *a.DeepCopy()
	t1, t2 := metav1.NewTime(time.Unix(1000, 0)), metav1.NewTime(time.Unix(2000, 0))
	a.ReportTime, b.ReportTime = &t1, &t2
	if !statusEqual(&a, &b) {
		t.Errorf("statuses differing only in reportTime are not equal")
	}
	// As read back from the server: the raw status re-encoded with other whitespace, the times
	// at whole seconds.
	var back edgev1alpha1.AssemblageStatus
	data, _ := json.Marshal(a)
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	back.Objects[0].Status.Raw = []byte(`{ "n" : 1 }`)
	if !statusEqual(&a, &back) {
		t.Errorf("a status and its JSON round trip are not equal")
	}
	b.Counts.Ready = 7
	if statusEqual(&a, &b) {
		t.Errorf("different counts are equal")
	}
}

func TestFitBudget(t *testing.T) {
	big := func(n int) map[string]any { return map[string]any{"blob": strings.Repeat("x", n)} }
	objects := []reported{
		rep("configmaps/a/ready-1", "Ready", "", big(3000)),
		rep("deployments.apps/a/not-ready", "Applied", "rolling out", big(3000)),
		rep("jobs.batch/a/failed", "Failed", "Job Failed", big(3000)),
		rep("configmaps/a/ready-2", "Ready", "", big(100)),
		rep("configmaps/a/no-status", "Ready", "", nil),
	}
	whoHasStatus := func(s *edgev1alpha1.AssemblageStatus) string {
		var out []string
		for _, o := range s.Objects {
			if o.Status != nil {
				out = append(out, o.Object)
			}
		}
		return strings.Join(out, ",")
	}
	cases := []struct {
		budget  int
		with    string
		omitted bool
	}{
		{StatusBudget, "configmaps/a/ready-1,deployments.apps/a/not-ready,jobs.batch/a/failed,configmaps/a/ready-2", false},
		// Room for two big ones and the small one: failing and not ready first.
		{7500, "deployments.apps/a/not-ready,jobs.batch/a/failed,configmaps/a/ready-2", true},
		{4500, "jobs.batch/a/failed,configmaps/a/ready-2", true},
		{900, "", true},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.budget), func(t *testing.T) {
			s := buildStatus(statusInputs{version: "v", observedVersion: "v", appliedVersion: "v", total: len(objects), objects: objects, now: time.Now(), budget: c.budget})
			if got := whoHasStatus(&s); got != c.with {
				t.Errorf("objects with status: %q, want %q", got, c.with)
			}
			if s.StatusOmitted != c.omitted {
				t.Errorf("statusOmitted = %v, want %v", s.StatusOmitted, c.omitted)
			}
			if len(s.Objects) != len(objects) {
				t.Errorf("%d objects listed, want all %d: past the budget, their state only", len(s.Objects), len(objects))
			}
			data, _ := json.Marshal(s)
			if c.budget > 900 && len(data) > c.budget {
				t.Errorf("the status takes %d bytes, more than the budget of %d", len(data), c.budget)
			}
		})
	}
}

// TestStatusCarriesDrift: the drift report goes into the status as recorded, and a new drift
// makes the status differ from the one written, so that the next write in the coalescing window
// carries it (and no other write is needed).
func TestStatusCarriesDrift(t *testing.T) {
	in := statusInputs{version: "v", observedVersion: "v", appliedVersion: "v", total: 1, now: time.Now(), budget: StatusBudget,
		objects: []reported{rep("configmaps/a/x", "Ready", "", nil)}}
	written := buildStatus(in)
	if written.Drift != nil {
		t.Fatalf("drift %+v before any", written.Drift)
	}
	d := &desired{key: transport.Key{Resource: "configmaps", Namespace: "a", Name: "x"}}
	in.drift = recordDrift(nil, driftEntry(d, "v", edgev1alpha1.DriftEdited, true, []string{"data.mode"}, time.Now()))
	next := buildStatus(in)
	if statusEqual(&written, &next) {
		t.Fatal("a status with a new drift equals the one written before it")
	}
	if next.Drift == nil || next.Drift.Count != 1 || next.Drift.Recent[0].Paths[0] != "data.mode" {
		t.Errorf("drift in status = %+v", next.Drift)
	}
	var back edgev1alpha1.AssemblageStatus
	data, _ := json.Marshal(next)
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if !statusEqual(&next, &back) {
		t.Error("a status with drift and its JSON round trip are not equal: it would be written again and again")
	}
}
