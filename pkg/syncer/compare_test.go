package syncer

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

func TestContainsAll(t *testing.T) {
	container := func(extra map[string]any) map[string]any {
		c := map[string]any{
			"name":  "web",
			"image": "nginx:1.25",
			"ports": []any{map[string]any{"containerPort": int64(80)}},
		}
		for k, v := range extra {
			c[k] = v
		}
		return c
	}
	podSpec := func(containers ...any) map[string]any {
		return map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": containers}}}}
	}
	defaulted := map[string]any{
		"imagePullPolicy":          "IfNotPresent",
		"terminationMessagePath":   "/dev/termination-log",
		"terminationMessagePolicy": "File",
		"resources":                map[string]any{},
		"ports":                    []any{map[string]any{"containerPort": int64(80), "protocol": "TCP"}},
	}
	cases := []struct {
		name       string
		have, want any
		contains   bool
	}{
		{"equal maps", map[string]any{"a": "x"}, map[string]any{"a": "x"}, true},
		{"defaults added by the server", map[string]any{"a": "x", "b": "default", "c": map[string]any{"d": int64(1)}}, map[string]any{"a": "x"}, true},
		{"changed scalar", map[string]any{"a": "y"}, map[string]any{"a": "x"}, false},
		{"changed bool", map[string]any{"on": false}, map[string]any{"on": true}, false},
		{"removed key", map[string]any{"b": "x"}, map[string]any{"a": "x"}, false},
		{"nested changed scalar", map[string]any{"m": map[string]any{"a": "y", "b": "z"}}, map[string]any{"m": map[string]any{"a": "x"}}, false},
		{"map where a scalar was", map[string]any{"a": map[string]any{"x": "y"}}, map[string]any{"a": "x"}, false},
		{"scalar where a map was", map[string]any{"a": "x"}, map[string]any{"a": map[string]any{"x": "y"}}, false},
		{"scalar where a list was", map[string]any{"a": "x"}, map[string]any{"a": []any{"x"}}, false},

		{"lists equal", []any{"a", "b"}, []any{"a", "b"}, true},
		{"list reordered", []any{"b", "a"}, []any{"a", "b"}, false},
		{"list longer at the edge", []any{"a", "b", "c"}, []any{"a", "b"}, false},
		{"list shorter at the edge", []any{"a"}, []any{"a", "b"}, false},
		{"list emptied at the edge", []any{}, []any{"a"}, false},
		{"list filled at the edge where empty was wanted", []any{"a"}, []any{}, false},

		{"containers with defaulted fields", podSpec(container(defaulted)), podSpec(container(nil)), true},
		{"container image changed", podSpec(container(map[string]any{"image": "nginx:1.26", "imagePullPolicy": "IfNotPresent"})), podSpec(container(nil)), false},
		{"container port changed", podSpec(container(map[string]any{"ports": []any{map[string]any{"containerPort": int64(8080), "protocol": "TCP"}}})), podSpec(container(nil)), false},
		{"container added at the edge", podSpec(container(defaulted), map[string]any{"name": "sidecar", "image": "envoy"}), podSpec(container(nil)), false},
		{"container removed at the edge", podSpec(container(defaulted)), podSpec(container(nil), map[string]any{"name": "sidecar", "image": "envoy"}), false},

		{"int64 and float64 equal", map[string]any{"replicas": float64(3)}, map[string]any{"replicas": int64(3)}, true},
		{"float64 and int64 equal", map[string]any{"replicas": int64(3)}, map[string]any{"replicas": float64(3)}, true},
		{"int and int64 equal", map[string]any{"replicas": int64(3)}, map[string]any{"replicas": 3}, true},
		{"int32 and float32 equal", int32(7), float32(7), true},
		{"numbers differ", map[string]any{"replicas": float64(3.5)}, map[string]any{"replicas": int64(3)}, false},
		{"int64 numbers differ", map[string]any{"replicas": int64(2)}, map[string]any{"replicas": int64(3)}, false},
		{"number as string", map[string]any{"replicas": "3"}, map[string]any{"replicas": int64(3)}, false},
		{"number missing", map[string]any{}, map[string]any{"replicas": int64(0)}, false},

		{"nil wanted, field absent", map[string]any{"metadata": map[string]any{"name": "a"}}, map[string]any{"metadata": map[string]any{"name": "a", "creationTimestamp": nil}}, true},
		{"nil wanted, field null", map[string]any{"x": nil}, map[string]any{"x": nil}, true},
		{"nil wanted, field set", map[string]any{"x": "v"}, map[string]any{"x": nil}, false},
		{"nil wanted, field an empty map", map[string]any{"x": map[string]any{}}, map[string]any{"x": nil}, true},
		{"empty map wanted, field absent", map[string]any{}, map[string]any{"resources": map[string]any{}}, true},
		{"empty map wanted, field filled", map[string]any{"resources": map[string]any{"limits": "x"}}, map[string]any{"resources": map[string]any{}}, true},
		{"empty list wanted, field absent", map[string]any{}, map[string]any{"args": []any{}}, true},
		{"empty list wanted, field null", map[string]any{"args": nil}, map[string]any{"args": []any{}}, true},
		{"non-empty map wanted, field absent", map[string]any{}, map[string]any{"resources": map[string]any{"limits": "x"}}, false},
		{"non-empty list wanted, field absent", map[string]any{}, map[string]any{"args": []any{"-v"}}, false},
		{"empty map wanted, nothing there", nil, map[string]any{}, true},
		{"empty list wanted, nothing there", nil, []any{}, true},
		{"map wanted, nothing there", nil, map[string]any{"a": "x"}, false},

		{"label removed", map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web"}}},
			map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web", testMarks.Label: "created"}}}, false},
		{"label added at the edge", map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web", "extra": "x", testMarks.Label: "created"}}},
			map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web", testMarks.Label: "created"}}}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := containsAll(c.have, c.want); got != c.contains {
				t.Errorf("containsAll(%v, %v) = %v, want %v", c.have, c.want, got, c.contains)
			}
		})
	}
}

func TestContainsAllLargeIntegers(t *testing.T) {
	if containsAll(map[string]any{"n": int64(9007199254740993)}, map[string]any{"n": int64(9007199254740992)}) {
		t.Errorf("two different large integers compare equal")
	}
	if !containsAll(map[string]any{"n": int64(9007199254740993)}, map[string]any{"n": int64(9007199254740993)}) {
		t.Errorf("equal large integers compare different")
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
