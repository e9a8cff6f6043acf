package statuscel

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

func deployment(name, image string, available any) Object {
	status := map[string]any{}
	if available != nil {
		status["availableReplicas"] = available
	}
	return Object{Key: "deployments.apps/ns/" + name, Content: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name, "namespace": "ns"},
		"spec":     map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": image}}}}},
		"status":   status,
	}}
}

func mustCollector(t *testing.T, spec edgev1alpha1.StatusCollectorSpec) *Collector {
	t.Helper()
	c, err := CompileCollector("c", &spec)
	if err != nil {
		t.Fatalf("compiling: %v", err)
	}
	return c
}

var sumAvailable = edgev1alpha1.StatusCollectorSpec{
	Filter:  `object.kind == "Deployment"`,
	Select:  []edgev1alpha1.NamedExpression{{Name: "available", Expression: "object.status.availableReplicas"}},
	Combine: []edgev1alpha1.Combination{{Name: "deployments", Type: "count"}, {Name: "available", Type: "sum", Select: "available"}, {Name: "least", Type: "min", Select: "available"}, {Name: "most", Type: "max", Select: "available"}, {Name: "mean", Type: "avg", Select: "available"}},
}

func TestCollectSums(t *testing.T) {
	c := mustCollector(t, sumAvailable)
	objs := []Object{deployment("a", "x:1", int64(2)), deployment("b", "x:1", int64(3)), deployment("c", "x:1", nil),
		{Key: "configmaps/ns/cm", Content: map[string]any{"kind": "ConfigMap"}}}
	r := c.Collect(objs)
	if r.Matched != 3 || r.Errors != 0 || len(r.Groups) != 1 {
		t.Fatalf("report %+v", r)
	}
	g := r.Groups[0]
	if g.Count != 3 || len(g.Key) != 0 {
		t.Fatalf("group %+v", g)
	}
	want := map[string]string{"available": "5", "least": "2", "most": "3", "mean": "2.5"}
	for _, v := range g.Values {
		if want[v.Name] != v.Value || v.Count != 2 {
			t.Errorf("%s = %q (%d numbers), want %q of 2: a missing field adds nothing", v.Name, v.Value, v.Count, want[v.Name])
		}
	}
	total := Combine("c", &sumAvailable, []DestinationReport{{"imw:a", &r}, {"imw:b", &r}})
	if got := strings.Join(cells(total.Rows[0]), ","); got != "6,10,2,3,2.5" || total.Destinations != 2 || total.Matched != 6 {
		t.Errorf("combined %+v (row %s)", total, got)
	}
}

func TestCollectGroupsAndRows(t *testing.T) {
	spec := edgev1alpha1.StatusCollectorSpec{
		GroupBy: []edgev1alpha1.NamedExpression{{Name: "image", Expression: "object.spec.template.spec.containers[0].image"}},
		Combine: []edgev1alpha1.Combination{{Name: "count", Type: "count"}},
		Limit:   1,
	}
	c := mustCollector(t, spec)
	r := c.Collect([]Object{deployment("a", "x:2", 1), deployment("b", "x:1", 1), deployment("c", "x:2", 1)})
	if len(r.Groups) != 1 || r.Omitted != 1 || r.Groups[0].Key[0] != `"x:1"` || r.Groups[0].Count != 1 {
		t.Fatalf("limit 1 keeps the first group by key and counts the other: %+v", r)
	}
	spec.Limit = 0
	c = mustCollector(t, spec)
	r1 := c.Collect([]Object{deployment("a", "x:2", 1), deployment("b", "x:1", 1)})
	r2 := c.Collect([]Object{deployment("c", "x:2", 1)})
	total := Combine("c", &spec, []DestinationReport{{"d1", &r1}, {"d2", &r2}})
	if total.RowCount != 2 || fmt.Sprint(cells(total.Rows[0]), cells(total.Rows[1])) != `["x:1" 1] ["x:2" 2]` {
		t.Errorf("two groups over two destinations: %+v", total)
	}

	rowsSpec := edgev1alpha1.StatusCollectorSpec{Select: []edgev1alpha1.NamedExpression{
		{Name: "image", Expression: "object.spec.template.spec.containers[0].image"},
		{Name: "phase", Expression: "object.status.phase"}}}
	c = mustCollector(t, rowsSpec)
	r = c.Collect([]Object{deployment("b", "x:1", 1), deployment("a", "x:2", 1)})
	total = Combine("c", &rowsSpec, []DestinationReport{{"d1", &r}})
	if strings.Join(total.Columns, ",") != "destination,object,image,phase" || cells(total.Rows[0])[1] != `"deployments.apps/ns/a"` ||
		cells(total.Rows[0])[2] != `"x:2"` || cells(total.Rows[0])[3] != "" || r.Errors != 0 {
		t.Errorf("rows: %+v %+v", total, r)
	}
}

func TestRuntimeErrorsCounted(t *testing.T) {
	spec := edgev1alpha1.StatusCollectorSpec{
		Select:  []edgev1alpha1.NamedExpression{{Name: "n", Expression: "object.metadata.name"}},
		Combine: []edgev1alpha1.Combination{{Name: "total", Type: "sum", Select: "n"}},
		GroupBy: []edgev1alpha1.NamedExpression{{Name: "ratio", Expression: "1 / object.status.availableReplicas"}},
	}
	c := mustCollector(t, spec)
	r := c.Collect([]Object{deployment("a", "x", int64(0)), deployment("b", "x", int64(1))})
	if r.Errors != 2 || r.ErrorExample == nil || r.ErrorExample.Object != "deployments.apps/ns/a" || !strings.Contains(r.ErrorExample.Error, "division by zero") {
		t.Fatalf("a division by zero on a and a name that is no number on b, counted: %+v %+v", r, r.ErrorExample)
	}
}

func TestCompileErrors(t *testing.T) {
	_, err := CompileCollector("c", &edgev1alpha1.StatusCollectorSpec{Filter: "object.kind ==", Select: []edgev1alpha1.NamedExpression{{Name: "a", Expression: "object.x"}}})
	if err == nil || !strings.Contains(err.Error(), "spec.filter") || !strings.Contains(err.Error(), "at 1:") {
		t.Errorf("syntax error: %v", err)
	}
	_, err = CompileCollector("c", &edgev1alpha1.StatusCollectorSpec{Filter: "object.kind", Select: []edgev1alpha1.NamedExpression{{Name: "a", Expression: "nosuchvar.x"}}})
	if err == nil || !strings.Contains(err.Error(), "spec.select[a]") || !strings.Contains(err.Error(), "undeclared reference") {
		t.Errorf("undeclared variable: %v", err)
	}
	_, err = CompileCollector("c", &edgev1alpha1.StatusCollectorSpec{Select: []edgev1alpha1.NamedExpression{{Name: "a",
		Expression: "object.spec.items.all(a, object.spec.items.all(b, object.spec.items.all(c, a == b && b == c)))"}}})
	if err == nil || !strings.Contains(err.Error(), "estimated cost") {
		t.Errorf("cost over the limit: %v", err)
	}
	_, err = CompileHealthRule("h", &edgev1alpha1.HealthRuleSpec{Kind: "K", Ready: "object.status.phase"})
	if err != nil {
		t.Errorf("a dyn result may be a bool: %v", err)
	}
	_, err = CompileHealthRule("h", &edgev1alpha1.HealthRuleSpec{Kind: "K", Ready: "1 + 2"})
	if err == nil || !strings.Contains(err.Error(), "not a bool") {
		t.Errorf("an int is not a bool: %v", err)
	}
}

func TestRuntimeCostLimit(t *testing.T) {
	long := strings.Repeat("ab", 1<<20)
	spec := edgev1alpha1.StatusCollectorSpec{Select: []edgev1alpha1.NamedExpression{{Name: "a",
		Expression: "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].exists(i, object.s.matches('^(ab)*c'))"}}}
	c, err := CompileCollector("c", &spec) // within the estimate, for lists of up to SizeHint elements
	if err != nil {
		t.Fatal(err)
	}
	r := c.Collect([]Object{{Key: "k", Content: map[string]any{"s": long}}})
	if r.Errors != 1 || !strings.Contains(r.ErrorExample.Error, "cost") {
		t.Errorf("over the runtime cost limit: %+v", r)
	}
}

func TestDecide(t *testing.T) {
	h, err := CompileHealthRule("db", &edgev1alpha1.HealthRuleSpec{Group: "example.com", Kind: "Database",
		Ready: `object.status.phase == "Running"`, Failed: `object.status.phase == "Degraded"`, Message: `"phase " + object.status.phase`})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		status      map[string]any
		state, want string
	}{
		{map[string]any{"phase": "Running"}, edgev1alpha1.ObjectReady, ""},
		{map[string]any{"phase": "Degraded"}, edgev1alpha1.ObjectFailed, "phase Degraded"},
		{map[string]any{"phase": "Starting"}, edgev1alpha1.ObjectApplied, "phase Starting"},
		{map[string]any{}, edgev1alpha1.ObjectApplied, "health rule db says not ready yet"},
		{map[string]any{"phase": int64(3)}, edgev1alpha1.ObjectApplied, "health rule db"},
	} {
		state, reason := h.Decide(map[string]any{"status": tc.status})
		if state != tc.state || !strings.Contains(reason, tc.want) {
			t.Errorf("%v: %s %q, want %s %q", tc.status, state, reason, tc.state, tc.want)
		}
	}
}

func cells(r edgev1alpha1.CollectedRow) []string {
	out := make([]string, len(r.Values))
	for i, v := range r.Values {
		out[i] = string(v.Raw)
	}
	return out
}

// A placement's collected results read back from the server (through unstructured, as the
// summarizer's cache holds them) equal those computed: the summarizer writes only on a change.
func TestCollectedRoundTrip(t *testing.T) {
	spec := edgev1alpha1.StatusCollectorSpec{
		Select:  []edgev1alpha1.NamedExpression{{Name: "v", Expression: "object.v"}, {Name: "w", Expression: "object.w"}},
		GroupBy: []edgev1alpha1.NamedExpression{{Name: "g", Expression: "object.g"}},
		Combine: []edgev1alpha1.Combination{{Name: "n", Type: "count"}, {Name: "s", Type: "sum", Select: "v"}, {Name: "a", Type: "avg", Select: "v"}, {Name: "m", Type: "max", Select: "w"}},
	}
	c := mustCollector(t, spec)
	r := c.Collect([]Object{
		{Key: "a", Content: map[string]any{"g": map[string]any{"z": "<&>", "a": []any{int64(1), 2.5}}, "v": 0.1}},
		{Key: "b", Content: map[string]any{"g": "x", "v": 0.2, "w": 1e21}},
		{Key: "c", Content: map[string]any{"g": "x", "v": int64(3)}},
		{Key: "d", Content: map[string]any{}},
	})
	rowsSpec := edgev1alpha1.StatusCollectorSpec{Select: spec.Select}
	rr := mustCollector(t, rowsSpec).Collect([]Object{{Key: "a", Content: map[string]any{"v": "s"}}})
	for _, want := range []edgev1alpha1.CollectedStatus{
		Combine("c", &spec, []DestinationReport{{"d1", &r}}),
		Combine("r", &rowsSpec, []DestinationReport{{"d1", &rr}}),
	} {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&want)
		if err != nil {
			t.Fatal(err)
		}
		data, err := json.Marshal(u)
		if err != nil {
			t.Fatal(err)
		}
		var back map[string]any
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatal(err)
		}
		var got edgev1alpha1.CollectedStatus
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(back, &got); err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(got, want) {
			t.Errorf("read back\n%s\nwritten\n%s", fmt.Sprint(got.Rows), fmt.Sprint(want.Rows))
		}
	}
}
