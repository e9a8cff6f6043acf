package transport

import (
	"encoding/json"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func parse(t *testing.T, text string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(text)); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestSanitize(t *testing.T) {
	in := parse(t, `{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": {
			"name": "front", "namespace": "web", "generateName": "front-",
			"uid": "1234", "resourceVersion": "42", "generation": 3,
			"creationTimestamp": "2024-01-01T00:00:00Z", "deletionTimestamp": "2024-01-02T00:00:00Z",
			"deletionGracePeriodSeconds": 30, "selfLink": "/apis/apps/v1/x",
			"managedFields": [{"manager": "kubectl"}], "finalizers": ["example.com/f"],
			"ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "9"}],
			"labels": {
				"app": "front", "example.com/team": "a", "edge.kcp.io/placement": "p",
				"kcp.io/x": "1", "claims.internal.apis.kcp.io/abc": "2", "notkcp.io/y": "3"
			},
			"annotations": {
				"kcp.io/cluster": "abc", "kubectl.kubernetes.io/last-applied-configuration": "{}",
				"edge.kcp.io/customizer": "c", "experimental.workload.kcp.io/z": "4",
				"kcp.io.example.com/q": "5", "note": "keep",
				"edge.kcp.io/executing-count": "3", "edge.kcp.io/singleton-status-from": "imw:edge-1"
			}
		},
		"spec": {"replicas": 2, "template": {"metadata": {"labels": {"kcp.io/inner": "kept"}}}},
		"status": {"readyReplicas": 2}
	}`)
	before := in.DeepCopy()
	want := parse(t, `{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": {
			"name": "front", "namespace": "web",
			"labels": {"app": "front", "example.com/team": "a", "edge.kcp.io/placement": "p", "notkcp.io/y": "3"},
			"annotations": {"edge.kcp.io/customizer": "c", "kcp.io.example.com/q": "5", "note": "keep"}
		},
		"spec": {"replicas": 2, "template": {"metadata": {"labels": {"kcp.io/inner": "kept"}}}}
	}`)

	got := Sanitize(in)
	if !reflect.DeepEqual(got.Object, want.Object) {
		g, _ := json.MarshalIndent(got.Object, "", "  ")
		t.Errorf("Sanitize gave\n%s", g)
	}
	if !reflect.DeepEqual(in.Object, before.Object) {
		t.Errorf("Sanitize modified its input")
	}
	// The copy is deep: changing it leaves the input alone.
	got.Object["spec"].(map[string]any)["replicas"] = int64(7)
	if in.Object["spec"].(map[string]any)["replicas"] != int64(2) {
		t.Errorf("Sanitize's result shares the input's spec")
	}
}

func TestSanitizeRemovesEmptiedMaps(t *testing.T) {
	in := parse(t, `{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": {"name": "c", "labels": {"kcp.io/x": "1"}, "annotations": {"kcp.io/cluster": "abc"}},
		"data": {"a": "b"}}`)
	want := map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "c"}, "data": map[string]any{"a": "b"}}
	if got := Sanitize(in); !reflect.DeepEqual(got.Object, want) {
		t.Errorf("Sanitize = %#v, want %#v", got.Object, want)
	}
	if Sanitize(nil) != nil {
		t.Errorf("Sanitize(nil) != nil")
	}
}

func TestIsKCPKey(t *testing.T) {
	for key, want := range map[string]bool{
		"kcp.io/cluster":                  true,
		"claims.internal.apis.kcp.io/abc": true,
		"workload.kcp.io/cluster":         true,
		"edge.kcp.io/placement":           false,
		"app":                             false,
		"kcp.io":                          false, // no prefix
		"example.com/kcp.io":              false,
		"notkcp.io/x":                     false,
		"kcp.io.example.com/x":            false,
	} {
		if got := isKCPKey(key); got != want {
			t.Errorf("isKCPKey(%q) = %v, want %v", key, got, want)
		}
	}
}

func TestHash(t *testing.T) {
	a := map[string]any{}
	a["kind"] = "ConfigMap"
	a["metadata"] = map[string]any{"name": "c", "labels": map[string]any{"x": "1", "y": "2"}}
	a["data"] = map[string]any{"k": "v", "n": int64(3)}
	b := map[string]any{}
	b["data"] = map[string]any{"n": int64(3), "k": "v"}
	b["metadata"] = map[string]any{"labels": map[string]any{"y": "2", "x": "1"}, "name": "c"}
	b["kind"] = "ConfigMap"

	h := Hash(a)
	if len(h) != 16 {
		t.Errorf("Hash length %d, want 16: %q", len(h), h)
	}
	if Hash(b) != h {
		t.Errorf("equal content, different hashes: %s, %s", h, Hash(b))
	}
	if Hash(a) != h {
		t.Errorf("Hash is not stable")
	}
	b["data"].(map[string]any)["k"] = "w"
	if Hash(b) == h {
		t.Errorf("changed content, same hash")
	}
	if Hash(nil) != Hash(map[string]any{}) {
		t.Errorf("nil and empty hash differently")
	}
	if Hash(map[string]any{"x": "1"}) == Hash(map[string]any{"x": int64(1)}) {
		t.Errorf("a string and a number hash alike")
	}
}
