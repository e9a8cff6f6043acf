package syncer

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

func condition(typ, status, reason, message string) map[string]any {
	c := map[string]any{"type": typ, "status": status}
	if reason != "" {
		c["reason"] = reason
	}
	if message != "" {
		c["message"] = message
	}
	return c
}

func TestMailboxStatus(t *testing.T) {
	const msg = `the edge cluster refused deployments.apps web/frontend: Deployment.apps "frontend" is invalid`
	refused := condition("EdgeApplied", "False", "EdgeRefused", msg)
	available := condition("Available", "True", "MinimumReplicasAvailable", "")
	progressing := condition("Progressing", "True", "NewReplicaSetAvailable", "")

	cases := []struct {
		name   string
		edge   map[string]any
		errMsg string
		want   map[string]any
	}{
		{
			name: "no error, nil edge status",
			edge: nil,
			want: map[string]any{},
		},
		{
			name: "no error",
			edge: map[string]any{"replicas": int64(2), "conditions": []any{available}},
			want: map[string]any{"replicas": int64(2), "conditions": []any{available}},
		},
		{
			name:   "error, nil edge status",
			edge:   nil,
			errMsg: msg,
			want:   map[string]any{"conditions": []any{refused}},
		},
		{
			name:   "error, edge status without conditions",
			edge:   map[string]any{"replicas": int64(2)},
			errMsg: msg,
			want:   map[string]any{"replicas": int64(2), "conditions": []any{refused}},
		},
		{
			name:   "error, edge conditions kept",
			edge:   map[string]any{"replicas": int64(2), "conditions": []any{available, progressing}},
			errMsg: msg,
			want:   map[string]any{"replicas": int64(2), "conditions": []any{available, progressing, refused}},
		},
		{
			name: "error replaces an EdgeApplied condition",
			edge: map[string]any{"conditions": []any{
				available,
				condition("EdgeApplied", "False", "EdgeRefused", "an older reason"),
				progressing,
			}},
			errMsg: msg,
			want:   map[string]any{"conditions": []any{available, progressing, refused}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var before map[string]any
			if c.edge != nil {
				before = runtime.DeepCopyJSON(c.edge)
			}
			got := mailboxStatus(c.edge, c.errMsg)
			if got == nil {
				t.Fatal("mailboxStatus returned nil")
			}
			if c.edge != nil && !reflect.DeepEqual(c.edge, before) {
				t.Errorf("mailboxStatus modified the edge status: %v, was %v", c.edge, before)
			}
			if c.errMsg != "" {
				// Exactly one EdgeApplied condition, and it says why.
				conditions, _ := got["conditions"].([]any)
				n := 0
				for _, cond := range conditions {
					if m, ok := cond.(map[string]any); ok && m["type"] == ConditionEdgeApplied {
						n++
						if !reflect.DeepEqual(m, refused) {
							t.Errorf("EdgeApplied condition = %v, want %v", m, refused)
						}
					}
				}
				if n != 1 {
					t.Errorf("%d EdgeApplied conditions in %v, want 1", n, conditions)
				}
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("mailboxStatus =\n %#v\nwant\n %#v", got, c.want)
			}
		})
	}
}

func TestMailboxStatusDoesNotAliasConditions(t *testing.T) {
	edge := map[string]any{"conditions": []any{condition("Available", "True", "", "")}}
	first := mailboxStatus(edge, "refused once")
	second := mailboxStatus(edge, "refused twice")
	if got := len(edge["conditions"].([]any)); got != 1 {
		t.Fatalf("the edge status now has %d conditions, want 1", got)
	}
	c1 := first["conditions"].([]any)
	c2 := second["conditions"].([]any)
	if len(c1) != 2 || len(c2) != 2 {
		t.Fatalf("got %d and %d conditions, want 2 and 2", len(c1), len(c2))
	}
	if m := c1[1].(map[string]any)["message"]; m != "refused once" {
		t.Errorf("the first result's message became %q", m)
	}
	if m := c2[1].(map[string]any)["message"]; m != "refused twice" {
		t.Errorf("the second result's message is %q", m)
	}
}

func TestNormalizeJSON(t *testing.T) {
	cases := []struct {
		name  string
		a, b  map[string]any
		equal bool
	}{
		{"nil and empty", nil, map[string]any{}, true},
		{"int64 and float64", map[string]any{"replicas": int64(3)}, map[string]any{"replicas": float64(3)}, true},
		{"large integers", map[string]any{"n": int64(9007199254740993)}, map[string]any{"n": int64(9007199254740992)}, false},
		{"int and int32", map[string]any{"replicas": 3}, map[string]any{"replicas": int32(3)}, true},
		{"nested numbers", map[string]any{
			"conditions":         []any{map[string]any{"type": "Ready", "observedGeneration": int64(4)}},
			"observedGeneration": int64(4),
		}, map[string]any{
			"conditions":         []any{map[string]any{"type": "Ready", "observedGeneration": float64(4)}},
			"observedGeneration": float64(4),
		}, true},
		{"different numbers", map[string]any{"replicas": int64(3)}, map[string]any{"replicas": float64(3.5)}, false},
		{"different strings", map[string]any{"phase": "Running"}, map[string]any{"phase": "Pending"}, false},
		{"extra field", map[string]any{"phase": "Running"}, map[string]any{"phase": "Running", "x": "y"}, false},
		{"empty and non-empty", nil, map[string]any{"phase": "Running"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := reflect.DeepEqual(normalizeJSON(c.a), normalizeJSON(c.b)); got != c.equal {
				t.Errorf("normalized %v and %v equal: %v, want %v", c.a, c.b, got, c.equal)
			}
		})
	}
	if got := normalizeJSON(nil); got != nil {
		t.Errorf("normalizeJSON(nil) = %#v, want nil", got)
	}
	if reflect.DeepEqual(normalizeJSON(map[string]any{"n": int64(9007199254740993)}), normalizeJSON(map[string]any{"n": int64(9007199254740992)})) {
		t.Errorf("normalizeJSON makes two different large integers equal")
	}
}

func TestEqualIgnoring(t *testing.T) {
	object := func(edit func(m map[string]any)) map[string]any {
		m := map[string]any{
			"apiVersion": "apps/v1",
			"kind":       "Deployment",
			"metadata": map[string]any{
				"name":            "frontend",
				"namespace":       "web",
				"resourceVersion": "10",
				"generation":      int64(1),
				"managedFields":   []any{map[string]any{"manager": "a"}},
				"labels":          map[string]any{"app": "web"},
			},
			"spec":   map[string]any{"replicas": int64(2)},
			"status": map[string]any{"readyReplicas": int64(1)},
		}
		if edit != nil {
			edit(m)
		}
		return m
	}
	md := func(m map[string]any) map[string]any { return m["metadata"].(map[string]any) }
	cases := []struct {
		name  string
		b     map[string]any
		skip  []string
		equal bool
	}{
		{"same", object(nil), nil, true},
		{"resourceVersion, generation and managedFields differ", object(func(m map[string]any) {
			md(m)["resourceVersion"] = "11"
			md(m)["generation"] = int64(2)
			md(m)["managedFields"] = []any{map[string]any{"manager": "b"}}
		}), nil, true},
		{"resourceVersion absent", object(func(m map[string]any) { delete(md(m), "resourceVersion") }), nil, true},
		{"status differs, skipped", object(func(m map[string]any) { m["status"] = map[string]any{"readyReplicas": int64(2)} }), []string{"status"}, true},
		{"status differs, not skipped", object(func(m map[string]any) { m["status"] = map[string]any{"readyReplicas": int64(2)} }), nil, false},
		{"spec differs, status skipped", object(func(m map[string]any) { m["spec"] = map[string]any{"replicas": int64(3)} }), []string{"status"}, false},
		{"label differs, status skipped", object(func(m map[string]any) { md(m)["labels"] = map[string]any{"app": "api"} }), []string{"status"}, false},
		{"label differs, metadata skipped", object(func(m map[string]any) { md(m)["labels"] = map[string]any{"app": "api"} }), []string{"metadata", "spec", "data", "stringData"}, true},
		{"spec differs, metadata and spec skipped", object(func(m map[string]any) { m["spec"] = map[string]any{"replicas": int64(3)} }), []string{"metadata", "spec", "data", "stringData"}, true},
		{"status differs, metadata and spec skipped", object(func(m map[string]any) { m["status"] = map[string]any{} }), []string{"metadata", "spec", "data", "stringData"}, false},
		{"uid differs", object(func(m map[string]any) { md(m)["uid"] = "other" }), []string{"status"}, false},
		{"field added", object(func(m map[string]any) { m["data"] = map[string]any{"a": "b"} }), []string{"status"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := object(nil)
			aBefore, bBefore := runtime.DeepCopyJSON(a), runtime.DeepCopyJSON(c.b)
			if got := equalIgnoring(a, c.b, c.skip...); got != c.equal {
				t.Errorf("equalIgnoring(skip %v) = %v, want %v", c.skip, got, c.equal)
			}
			if got := equalIgnoring(c.b, a, c.skip...); got != c.equal {
				t.Errorf("equalIgnoring(skip %v), arguments swapped = %v, want %v", c.skip, got, c.equal)
			}
			if !reflect.DeepEqual(a, aBefore) || !reflect.DeepEqual(c.b, bBefore) {
				t.Error("equalIgnoring modified its arguments")
			}
		})
	}
}

func TestTranslateObservedGeneration(t *testing.T) {
	src := sourceKey{Group: "apps", Resource: "deployments", Namespace: "web", Name: "frontend"}
	s := &Syncer{own: testOwn}
	copyObj := mailboxDeployment()
	copyObj.SetGeneration(7)
	applied, _, err := edgeForm(copyObj, src, testOwn)
	if err != nil {
		t.Fatal(err)
	}
	stale := applied.DeepCopy()
	stale.SetAnnotations(map[string]string{testOwn.hashAnnotation: "an older hash"})
	for _, tc := range []struct {
		name           string
		edge           *unstructured.Unstructured
		edgeGeneration int64
		observed       int64
		want           int64
	}{
		{"the edge holds the copy and its controller observed it", applied, 2, 2, 7},
		{"the edge controller has not observed the latest generation", applied, 3, 2, 6},
		{"the edge holds an older version of the copy", stale, 2, 2, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			edge := tc.edge.DeepCopy()
			edge.SetGeneration(tc.edgeGeneration)
			status := map[string]any{"observedGeneration": tc.observed, "replicas": int64(1)}
			s.translateObservedGeneration(status, edge, copyObj, src)
			if status["observedGeneration"] != tc.want {
				t.Errorf("observedGeneration = %v, want %d", status["observedGeneration"], tc.want)
			}
		})
	}
	status := map[string]any{"replicas": int64(1)}
	s.translateObservedGeneration(status, applied, copyObj, src)
	if _, ok := status["observedGeneration"]; ok {
		t.Error("a status without observedGeneration must stay without")
	}
}
