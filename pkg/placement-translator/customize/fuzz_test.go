package customize

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

// FuzzExpand checks %(key) expansion on strings the fuzzer chooses: it never panics, fails only
// with an *Error (naming a key that the string holds, if the key is unknown), expands a
// string whose every % is doubled to the string itself, and puts a known key's value where the
// key was.
func FuzzExpand(f *testing.F) {
	for _, s := range []string{"", "plain", "%(zone)", "%%(zone)", "100%", "%(", "%()", "a%(zone)b%%c%(x"} {
		f.Add(s, "zone", "z1")
	}
	f.Add("%(a)(b)", "a)(b", "v")
	f.Fuzz(func(t *testing.T, s, key, value string) {
		params := Parameters{SyncTargetLabels: map[string]string{key: value}}
		got, err := Expand(s, params)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Expand(%q) failed with a %T, not an *Error: %v", s, err, err)
			}
			if e.Key != "" && !strings.Contains(s, "%("+e.Key+")") {
				t.Fatalf("Expand(%q) reports the unknown key %q, which the string does not hold", s, e.Key)
			}
		} else if !strings.Contains(s, "%") && got != s {
			t.Fatalf("Expand(%q) = %q, but the string has no %%", s, got)
		}
		escape := func(x string) string { return strings.ReplaceAll(x, "%", "%%") }
		if got, err := Expand(escape(s), params); err != nil || got != s {
			t.Fatalf("Expand(%q) = %q, %v; want the string with its %%%% undone, %q", escape(s), got, err, s)
		}
		if key == "" || strings.Contains(key, ")") {
			return // no %(key) names it
		}
		in := escape(s) + "%(" + key + ")" + escape(key)
		if got, err := Expand(in, params); err != nil || got != s+value+key {
			t.Fatalf("Expand(%q) = %q, %v; want %q", in, got, err, s+value+key)
		}
		if _, err := Expand(in, Parameters{}); err == nil {
			t.Fatalf("Expand(%q) without parameters succeeded", in)
		} else if e := (*Error)(nil); !errors.As(err, &e) || e.Key != key {
			t.Fatalf("Expand(%q) without parameters: %v; want an unknown key %q", in, err, key)
		}
	})
}

// fuzzObject is a workload object with lists, nested maps, and strings to expand.
func fuzzObject(expand bool) map[string]any {
	annotations := map[string]any{"note": "100%% sure"}
	if expand {
		annotations[edgev1alpha1.AnnotationExpandParameters] = "true"
	}
	return map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "app", "annotations": annotations, "labels": map[string]any{"zone": "%(zone)"}},
		"spec": map[string]any{
			"replicas": int64(1),
			"template": map[string]any{"spec": map[string]any{"containers": []any{
				map[string]any{"name": "web", "image": "nginx", "env": []any{map[string]any{"name": "REGION", "value": "%(region)"}}},
				map[string]any{"name": "side", "args": []any{"--zone=%(zone)", "%%literal"}},
			}}},
		},
	}
}

// lookup returns the value at segs in obj, and whether it is there.
func lookup(obj any, segs []segment) (any, bool) {
	cur := obj
	for _, s := range segs {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[s.key]
			if s.isIndex || !ok {
				return nil, false
			}
			cur = v
		case []any:
			if !s.isIndex || s.index >= len(c) {
				return nil, false
			}
			cur = c[s.index]
		default:
			return nil, false
		}
	}
	return cur, true
}

// expandedValue is value with %(key) expanded in every string leaf, as a replacement writes it.
func expandedValue(t *testing.T, v any, params Parameters) any {
	t.Helper()
	switch x := v.(type) {
	case string:
		s, err := Expand(x, params)
		if err != nil {
			t.Fatalf("a replacement that succeeded wrote %q, which does not expand: %v", x, err)
		}
		return s
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			out[k] = expandedValue(t, e, params)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = expandedValue(t, e, params)
		}
		return out
	}
	return v
}

// FuzzApply applies a replacement whose path and value the fuzzer chooses to an object, with
// and without object-wide expansion. It never panics; a failure is an *Error that names the
// replacement and its path; a success keeps the object's identity, puts the value (expanded
// once, never twice) at the path, and is deterministic.
func FuzzApply(f *testing.F) {
	for _, path := range []string{"$.spec.replicas", ".spec.template.spec.containers[0].image", "{$.metadata.labels['edge.kcp.io/x']}",
		"$.spec.template.spec.containers[1].args[1]", "$.metadata.name", "$..spec", "$.spec.x[0]", "$['a b'][\"c\\\"d\"]", "$.spec.replicas.x",
		"$.metadata.annotations['edge.kcp.io/expand-parameters']"} {
		f.Add(path, []byte(`"%(zone)-%%-%(region)"`), true)
		f.Add(path, []byte(`{"a": [1, 2.5, "x%%y", null, true]}`), false)
	}
	f.Add("$.spec", []byte(`"%(nope)"`), true)
	f.Add("$.spec", []byte(`not json`), false)
	f.Fuzz(func(t *testing.T, path string, value []byte, expand bool) {
		customizer := &edgev1alpha1.Customizer{Replacements: []edgev1alpha1.Replacement{{Path: path, Value: apiextensionsv1.JSON{Raw: value}}}}
		obj := fuzzObject(expand)
		err := Apply(obj, customizer, testParams)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Apply failed with a %T, not an *Error: %v", err, err)
			}
			if e.Replacement != 1 || e.Path != path {
				// Only the replacement can fail: the object's own strings all expand.
				t.Fatalf("Apply's error names replacement %d at %q, want 1 at %q: %v", e.Replacement, e.Path, path, err)
			}
			return
		}
		for _, f := range [][]string{{"apiVersion"}, {"kind"}, {"metadata", "name"}, {"metadata", "namespace"}} {
			want, _ := lookup(fuzzObject(expand), segsOf(f...))
			if got, _ := lookup(obj, segsOf(f...)); got != want {
				t.Fatalf("the replacement %q changed %s to %v", path, strings.Join(f, "."), got)
			}
		}
		segs, perr := parsePath(path)
		if perr != nil {
			t.Fatalf("Apply accepted %q, which parsePath refuses: %v", path, perr)
		}
		var decoded any
		if err := utiljson.Unmarshal(value, &decoded); err != nil {
			t.Fatalf("Apply accepted a value that is not JSON: %q", value)
		}
		want := expandedValue(t, decoded, testParams)
		got, ok := lookup(obj, segs)
		if !ok || !jsonEqual(got, want) {
			t.Fatalf("after the replacement %q with %s, the field holds %v (present %v), want %v", path, value, got, ok, want)
		}
		again := fuzzObject(expand)
		if err := Apply(again, customizer, testParams); err != nil || !reflect.DeepEqual(again, obj) {
			t.Fatalf("Apply is not deterministic: %v", err)
		}
	})
}

func segsOf(keys ...string) []segment {
	segs := make([]segment, len(keys))
	for i, k := range keys {
		segs[i] = segment{key: k}
	}
	return segs
}

func jsonEqual(a, b any) bool {
	ja, erra := json.Marshal(a)
	jb, errb := json.Marshal(b)
	return erra == nil && errb == nil && string(ja) == string(jb)
}
