package customize

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

var testParams = Parameters{
	SyncTargetLabels:      map[string]string{"zone": "z1", "shared": "st-label"},
	LocationLabels:        map[string]string{"region": "eu", "shared": "loc-label", "loc-only": "l"},
	SyncTargetAnnotations: map[string]string{"note": "st-ann", "shared": "st-ann", "both-ann": "st-ann"},
	LocationAnnotations:   map[string]string{"both-ann": "loc-ann", "loc-ann-only": "la", "pct": "100%(zone)"},
}

func TestLookup(t *testing.T) {
	for _, tc := range []struct {
		key    string
		want   string
		wantOK bool
	}{
		{"zone", "z1", true},
		{"shared", "st-label", true}, // SyncTarget labels win over everything
		{"loc-only", "l", true},
		{"region", "eu", true},
		{"note", "st-ann", true},
		{"both-ann", "st-ann", true}, // SyncTarget annotations win over Location annotations
		{"loc-ann-only", "la", true},
		{"missing", "", false},
	} {
		got, ok := testParams.Lookup(tc.key)
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("Lookup(%q) = %q, %v; want %q, %v", tc.key, got, ok, tc.want, tc.wantOK)
		}
	}
	if _, ok := (Parameters{}).Lookup("zone"); ok {
		t.Error("Lookup on empty Parameters found a key")
	}
	// Location labels win over SyncTarget annotations.
	p := Parameters{LocationLabels: map[string]string{"k": "loc"}, SyncTargetAnnotations: map[string]string{"k": "st"}}
	if got, _ := p.Lookup("k"); got != "loc" {
		t.Errorf("Location label should win over SyncTarget annotation, got %q", got)
	}
}

func TestExpand(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    string
		wantKey string // expected Error.Key
		wantErr string // substring of the error message
	}{
		{in: "", want: ""},
		{in: "plain", want: "plain"},
		{in: "%(zone)", want: "z1"},
		{in: "app-%(region)-%(zone).%(note)!", want: "app-eu-z1.st-ann!"},
		{in: "%(zone)%(zone)", want: "z1z1"},
		{in: "100%%", want: "100%"},
		{in: "%%(zone)", want: "%(zone)"},
		{in: "%%%(zone)", want: "%z1"},
		{in: "50% off", want: "50% off"},
		{in: "trailing %", want: "trailing %"},
		{in: "%x%(zone)", want: "%xz1"},
		{in: "%(pct)", want: "100%(zone)"}, // values are not expanded again
		{in: "a %(region) b %(nope) c", wantKey: "nope", wantErr: `unknown parameter "nope" (not a label or annotation of the SyncTarget or the Location)`},
		{in: "%(zone", wantErr: "unterminated %("},
		{in: "x %(", wantErr: "unterminated %("},
		{in: "%()", wantErr: "empty parameter name"},
	} {
		got, err := Expand(tc.in, testParams)
		if tc.wantErr == "" {
			if err != nil || got != tc.want {
				t.Errorf("Expand(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("Expand(%q) error = %v; want an *Error", tc.in, err)
			continue
		}
		if e.Key != tc.wantKey || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("Expand(%q) error = %q (Key %q); want Key %q and message containing %q", tc.in, err, e.Key, tc.wantKey, tc.wantErr)
		}
	}
}

func repl(path, value string) edgev1alpha1.Replacement {
	return edgev1alpha1.Replacement{Path: path, Value: apiextensionsv1.JSON{Raw: []byte(value)}}
}

func newObj(expand bool) map[string]any {
	annotations := map[string]any{"note": "%(zone)"}
	if expand {
		annotations[edgev1alpha1.AnnotationExpandParameters] = "true"
	}
	return map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata": map[string]any{
			"name":        "web-%(zone)",
			"namespace":   "ns-%(zone)",
			"labels":      map[string]any{"app": "web"},
			"annotations": annotations,
		},
		"spec": map[string]any{
			"replicas": int64(1),
			"template": map[string]any{
				"spec": map[string]any{
					"containers": []any{
						map[string]any{
							"name":  "c",
							"image": "img:%(region)",
							"args":  []any{"--zone=%(zone)", "--literal=%%(zone)", int64(3), true},
							"env": []any{
								map[string]any{"name": "A", "value": "a"},
								map[string]any{"name": "B", "value": "b"},
							},
						},
					},
				},
			},
		},
	}
}

// field returns the value at a dotted path with numeric steps indexing lists.
func field(t *testing.T, obj map[string]any, path ...any) any {
	t.Helper()
	var cur any = obj
	for _, step := range path {
		switch s := step.(type) {
		case string:
			m, ok := cur.(map[string]any)
			if !ok {
				t.Fatalf("at %v: %T is not a map", path, cur)
			}
			cur = m[s]
		case int:
			l, ok := cur.([]any)
			if !ok || s >= len(l) {
				t.Fatalf("at %v: %v is not a list with index %d", path, cur, s)
			}
			cur = l[s]
		}
	}
	return cur
}

func TestApplyReplacements(t *testing.T) {
	for _, tc := range []struct {
		name   string
		repls  []edgev1alpha1.Replacement
		expand bool
		path   []any
		want   any
	}{
		{"number", []edgev1alpha1.Replacement{repl("$.spec.replicas", "3")}, false, []any{"spec", "replicas"}, int64(3)},
		{"float", []edgev1alpha1.Replacement{repl("$.spec.ratio", "0.5")}, false, []any{"spec", "ratio"}, 0.5},
		{"bool", []edgev1alpha1.Replacement{repl(".spec.paused", "true")}, false, []any{"spec", "paused"}, true},
		{"null", []edgev1alpha1.Replacement{repl("$.spec.replicas", "null")}, false, []any{"spec", "replicas"}, nil},
		{"object with expansion", []edgev1alpha1.Replacement{repl("$.spec.selector", `{"matchLabels":{"zone":"%(zone)","n":1},"list":["%(region)",false]}`)}, false,
			[]any{"spec", "selector"}, map[string]any{"matchLabels": map[string]any{"zone": "z1", "n": int64(1)}, "list": []any{"eu", false}}},
		{"string with expansion and %%", []edgev1alpha1.Replacement{repl("$.spec.template.spec.containers[0].image", `"reg-%(region)/img:%%(v)"`)}, false,
			[]any{"spec", "template", "spec", "containers", 0, "image"}, "reg-eu/img:%(v)"},
		{"%% in value not expanded again by object-wide expansion", []edgev1alpha1.Replacement{repl("$.data.x", `{"y":"%%(zone)"}`)}, true,
			[]any{"data", "x", "y"}, "%(zone)"},
		{"creates nested maps", []edgev1alpha1.Replacement{repl("{.a.b.c}", `"v"`)}, false, []any{"a"}, map[string]any{"b": map[string]any{"c": "v"}}},
		{"creates maps through null", []edgev1alpha1.Replacement{repl("$.spec.strategy", "null"), repl("$.spec.strategy.type", `"Recreate"`)}, false,
			[]any{"spec", "strategy"}, map[string]any{"type": "Recreate"}},
		{"list element", []edgev1alpha1.Replacement{repl("{$.spec.template.spec.containers[0].env[1]}", `{"name":"B","value":"%(zone)"}`)}, false,
			[]any{"spec", "template", "spec", "containers", 0, "env", 1, "value"}, "z1"},
		{"list scalar", []edgev1alpha1.Replacement{repl("$.spec.template.spec.containers[0].args[2]", "7")}, false,
			[]any{"spec", "template", "spec", "containers", 0, "args", 2}, int64(7)},
		{"bracketed key with dots and slash", []edgev1alpha1.Replacement{repl("$.metadata.labels['app.kubernetes.io/name']", `"web"`)}, false,
			[]any{"metadata", "labels", "app.kubernetes.io/name"}, "web"},
		{"double-quoted key with escaped quote", []edgev1alpha1.Replacement{repl(`$.metadata.labels["a\"b.c"]`, `"q"`)}, false,
			[]any{"metadata", "labels", `a"b.c`}, "q"},
		{"bracket right after $", []edgev1alpha1.Replacement{repl("$['spec']['replicas']", "5")}, false, []any{"spec", "replicas"}, int64(5)},
		{"in order, later wins", []edgev1alpha1.Replacement{repl("$.spec.replicas", "2"), repl("$.spec.replicas", "4")}, false, []any{"spec", "replicas"}, int64(4)},
		{"metadata field other than identity", []edgev1alpha1.Replacement{repl("$.metadata.labels", `{"tier":"%(region)"}`)}, false,
			[]any{"metadata", "labels"}, map[string]any{"tier": "eu"}},
		{"replacement turns expansion on", []edgev1alpha1.Replacement{repl("$.metadata.annotations['edge.kcp.io/expand-parameters']", `"true"`)}, false,
			[]any{"metadata", "annotations", "note"}, "z1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := newObj(tc.expand)
			if err := Apply(obj, &edgev1alpha1.Customizer{Replacements: tc.repls}, testParams); err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if got := field(t, obj, tc.path...); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("at %v got %#v; want %#v", tc.path, got, tc.want)
			}
			if got := field(t, obj, "metadata", "name"); got != "web-%(zone)" {
				t.Errorf("metadata.name changed to %v", got)
			}
		})
	}
}

func TestApplyErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		path    string
		value   string
		wantKey string
		wantErr string // substring of Error(); "replacement 2 (<path>): " is checked separately
	}{
		{"root $", "$", "{}", "", "whole object cannot be replaced"},
		{"root braces", "{$}", "{}", "", "whole object cannot be replaced"},
		{"wildcard field", "$.spec.*", "1", "", "wildcards (*) are not supported in a replacement path"},
		{"wildcard index", "$.spec.template.spec.containers[*].image", `"x"`, "", "wildcards ([*]) are not supported in a replacement path"},
		{"recursive descent", "$..image", `"x"`, "", "recursive descents (..) are not supported in a replacement path"},
		{"filter", "$.spec.template.spec.containers[?(@.name=='c')].image", `"x"`, "", "filters ([?(...)]) are not supported in a replacement path"},
		{"slice", "$.spec.template.spec.containers[0:1]", `{}`, "", "slices ([start:end]) are not supported in a replacement path"},
		{"negative index", "$.spec.template.spec.containers[-1]", `{}`, "", "negative indexes are not supported in a replacement path"},
		{"union", "$.spec['a','b']", "1", "", "unions ([a,b]) are not supported in a replacement path"},
		{"name", "$.metadata.name", `"other"`, "", "metadata.name cannot be replaced: a copy must keep the object's identity"},
		{"bracketed name", "$.metadata['name']", `"other"`, "", "metadata.name cannot be replaced"},
		{"namespace", "{.metadata.namespace}", `"other"`, "", "metadata.namespace cannot be replaced"},
		{"apiVersion", "$.apiVersion", `"v2"`, "", "apiVersion cannot be replaced"},
		{"kind", ".kind", `"Pod"`, "", "kind cannot be replaced"},
		{"whole metadata", "$.metadata", `{"name":"x"}`, "", "metadata cannot be replaced as a whole"},
		{"invalid JSON", "$.spec.replicas", `{"a":`, "", "value is not valid JSON"},
		{"empty value", "$.spec.replicas", ``, "", "value is not valid JSON"},
		{"unknown key in value", "$.spec.x", `{"a":["%(nope)"]}`, "nope", `unknown parameter "nope" (not a label or annotation of the SyncTarget or the Location)`},
		{"unterminated in value", "$.spec.x", `"%(zone"`, "", "unterminated %("},
		{"index out of range", "$.spec.template.spec.containers[0].env[2].value", `"x"`, "", "index 2 is out of range: spec.template.spec.containers[0].env has 2 elements"},
		{"index into map", "$.spec[0]", "1", "", "cannot index spec with [0]: it is an object, not a list"},
		{"field of list", "$.spec.template.spec.containers.image", `"x"`, "", `cannot get field "image" of spec.template.spec.containers: it is a list`},
		{"into scalar", "$.spec.replicas.x", "1", "", "cannot go into spec.replicas: it is a number"},
		{"into string", "$.metadata.labels.app.x", "1", "", "cannot go into metadata.labels.app: it is a string"},
		{"missing list", "$.spec.ports[0]", "1", "", "spec.ports does not exist"},
		{"no leading dot", "spec.replicas", "1", "", "unexpected \"s\""},
		{"empty field", "$.spec..x", "1", "", "recursive descents"},
		{"trailing dot", "$.spec.", "1", "", "empty field name"},
		{"unbalanced brace", "{$.spec", "1", "", "unbalanced braces"},
		{"unterminated quote", "$.metadata.labels['a", "1", "", "unterminated quoted key"},
		{"missing bracket", "$.spec.x[0", "1", "", "missing ']'"},
		{"bad index", "$.spec.x[a]", "1", "", `invalid list index "a"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := newObj(false)
			c := &edgev1alpha1.Customizer{Replacements: []edgev1alpha1.Replacement{repl("$.spec.replicas", "2"), repl(tc.path, tc.value)}}
			err := Apply(obj, c, testParams)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Apply error = %v; want an *Error", err)
			}
			if e.Replacement != 2 || e.Path != tc.path || e.Key != tc.wantKey {
				t.Errorf("got Replacement %d, Path %q, Key %q; want 2, %q, %q", e.Replacement, e.Path, e.Key, tc.path, tc.wantKey)
			}
			if prefix := "replacement 2 (" + tc.path + "): "; !strings.HasPrefix(err.Error(), prefix) {
				t.Errorf("error %q does not start with %q", err, prefix)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %q does not contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestApplyExpansion(t *testing.T) {
	obj := newObj(true)
	obj["data"] = map[string]any{"%(zone)": "key-%(zone)", "nested": []any{[]any{"%(region)"}, map[string]any{"k": "%(loc-ann-only)"}}}
	if err := Apply(obj, nil, testParams); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	want := newObj(true)
	meta := want["metadata"].(map[string]any)
	meta["annotations"].(map[string]any)["note"] = "z1"
	container := want["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	container["image"] = "img:eu"
	container["args"] = []any{"--zone=z1", "--literal=%(zone)", int64(3), true}
	want["data"] = map[string]any{"%(zone)": "key-z1", "nested": []any{[]any{"eu"}, map[string]any{"k": "la"}}}
	if !reflect.DeepEqual(obj, want) {
		t.Errorf("got\n%#v\nwant\n%#v", obj, want)
	}
	// Identity fields and the opt-in annotation are left alone.
	if meta["name"] != "web-%(zone)" || meta["namespace"] != "ns-%(zone)" || obj["apiVersion"] != "apps/v1" || obj["kind"] != "Deployment" {
		t.Errorf("identity changed: %v", obj)
	}

	// apiVersion and kind are not expanded, even if they (wrongly) contain %(key).
	obj = map[string]any{"apiVersion": "%(nope)", "kind": "%(nope)", "metadata": map[string]any{
		"name": "%(nope)", "annotations": map[string]any{edgev1alpha1.AnnotationExpandParameters: "true"}}}
	if err := Apply(obj, nil, testParams); err != nil {
		t.Errorf("Apply expanded an identity field: %v", err)
	}
}

func TestApplyNoExpansionWithoutAnnotation(t *testing.T) {
	for _, value := range []any{nil, "false", "True", "yes"} {
		obj := newObj(false)
		if value != nil {
			obj["metadata"].(map[string]any)["annotations"].(map[string]any)[edgev1alpha1.AnnotationExpandParameters] = value
		}
		obj["data"] = map[string]any{"x": "%(nope)"}
		want := newObj(false)
		if value != nil {
			want["metadata"].(map[string]any)["annotations"].(map[string]any)[edgev1alpha1.AnnotationExpandParameters] = value
		}
		want["data"] = map[string]any{"x": "%(nope)"}
		c := &edgev1alpha1.Customizer{Replacements: []edgev1alpha1.Replacement{repl("$.data.y", `"%(zone)"`)}}
		if err := Apply(obj, c, testParams); err != nil {
			t.Fatalf("annotation %v: Apply: %v", value, err)
		}
		want["data"].(map[string]any)["y"] = "z1" // replacement values are always expanded
		if !reflect.DeepEqual(obj, want) {
			t.Errorf("annotation %v: got\n%#v\nwant\n%#v", value, obj, want)
		}
	}
	// A nil customizer and no annotation leave the object as is.
	obj := newObj(false)
	if err := Apply(obj, nil, testParams); err != nil || !reflect.DeepEqual(obj, newObj(false)) {
		t.Errorf("Apply(nil customizer) = %v, object %v", err, obj)
	}
}

func TestApplyExpansionErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		data    map[string]any
		wantErr string
		wantKey string
	}{
		{"map value", map[string]any{"greeting": "hi %(nope)"}, `unknown parameter "nope" in data.greeting (not a label or annotation of the SyncTarget or the Location)`, "nope"},
		{"list item", map[string]any{"l": []any{"ok", []any{"%(zone)", "%(gone)"}}}, `unknown parameter "gone" in data.l[1][1] (`, "gone"},
		{"key needing brackets", map[string]any{"a.b/c": "%(nope)"}, `unknown parameter "nope" in data["a.b/c"] (`, "nope"},
		{"unterminated", map[string]any{"x": "%(zone"}, "data.x: unterminated %(", ""},
		{"first in sorted order", map[string]any{"b": "%(second)", "a": "%(first)"}, `unknown parameter "first" in data.a`, "first"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := newObj(true)
			obj["data"] = tc.data
			err := Apply(obj, nil, testParams)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Apply error = %v; want an *Error", err)
			}
			if !strings.HasPrefix(err.Error(), tc.wantErr) || e.Key != tc.wantKey || e.Replacement != 0 {
				t.Errorf("got %q (Key %q, Replacement %d); want prefix %q, Key %q", err, e.Key, e.Replacement, tc.wantErr, tc.wantKey)
			}
		})
	}

	// The error path of a leaf deep in a pod template.
	obj := newObj(true)
	field(t, obj, "spec", "template", "spec", "containers", 0, "env", 1).(map[string]any)["value"] = "%(nope)"
	err := Apply(obj, nil, testParams)
	var e *Error
	if !errors.As(err, &e) || e.Path != "spec.template.spec.containers[0].env[1].value" || e.Key != "nope" {
		t.Errorf("got %v; want an *Error at spec.template.spec.containers[0].env[1].value with Key nope", err)
	}
}

func TestErrorMessages(t *testing.T) {
	for _, tc := range []struct {
		err  Error
		want string
	}{
		{Error{Msg: "boom"}, "boom"},
		{Error{Path: "data.x", Msg: "boom"}, "data.x: boom"},
		{Error{Replacement: 2, Path: "$.spec.replicas", Msg: "boom"}, "replacement 2 ($.spec.replicas): boom"},
		{Error{Path: "metadata.annotations.x", Key: "region", Msg: notFound},
			`unknown parameter "region" in metadata.annotations.x (not a label or annotation of the SyncTarget or the Location)`},
		{Error{Replacement: 1, Path: "$.a", Key: "region", Msg: notFound},
			`replacement 1 ($.a): unknown parameter "region" (not a label or annotation of the SyncTarget or the Location)`},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("got %q; want %q", got, tc.want)
		}
	}
}
