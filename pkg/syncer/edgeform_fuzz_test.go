package syncer

import (
	"testing"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// FuzzEdgeForm turns assemblage entries whose labels, annotations and data the fuzzer chooses
// into what the syncer applies at the edge. It never panics; the result carries this syncer's
// marks (the source, the assemblage, the hash of the rest) and no owner label, none of the
// mailbox's bookkeeping or kcp's keys, and every other label, annotation and field as in the
// entry; and the entry is not modified.
func FuzzEdgeForm(f *testing.F) {
	marks := transport.MarksFor("st-uid")
	f.Add("app", "web", "kcp.io/cluster", "x", "v", false)
	f.Add(edgev1alpha1.LabelProjected, "true", edgev1alpha1.AnnotationProjectionHash, "abc", "", true)
	f.Add(marks.Label, "adopted", marks.HashAnnotation, "0", "%(x)", false)
	f.Fuzz(func(t *testing.T, labelKey, labelValue, annotationKey, annotationValue, data string, denatured bool) {
		for _, s := range []string{labelKey, labelValue, annotationKey, annotationValue, data} {
			if !utf8.ValidString(s) {
				return // objects read from a server hold only UTF-8 text
			}
		}
		object := map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{
				"name": "settings", "namespace": "app", "uid": "wmw-uid", "resourceVersion": "7",
				"labels":      map[string]any{labelKey: labelValue, edgev1alpha1.LabelSourceCluster: "wmw"},
				"annotations": map[string]any{annotationKey: annotationValue, edgev1alpha1.AnnotationPlacements: "p"},
			},
			"data": map[string]any{"k": data},
		}
		if denatured {
			manifest := map[string]any{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
				"metadata": map[string]any{"name": "hook", "labels": map[string]any{labelKey: labelValue},
					"annotations": map[string]any{annotationKey: annotationValue}}, "x": data}
			raw, err := utiljson.Marshal(manifest)
			if err != nil {
				t.Fatal(err)
			}
			object["metadata"].(map[string]any)["labels"] = map[string]any{transport.LabelDenatured: "true", labelKey: labelValue}
			object["data"] = map[string]any{transport.DenaturedDataKey: string(raw)}
		}
		e := &transport.Entry{Version: "v1", Resource: "configmaps", Namespaced: true, Object: object}
		before := runtime.DeepCopyJSON(object)
		obj, ref, err := edgeForm(e, "asm-1", marks)
		if !equalJSON(e.Object, before) {
			t.Fatal("edgeForm modified the assemblage entry")
		}
		if err != nil {
			if !denatured {
				t.Fatalf("a plain copy was refused: %v", err)
			}
			return // a manifest that the fuzzer made unparsable, e.g. with a key "apiVersion"
		}
		if _, ok := obj.GetLabels()[marks.Label]; ok {
			t.Fatalf("edgeForm set the owner label: %v", obj.GetLabels())
		}
		annotations := obj.GetAnnotations()
		if annotations[marks.SourceAnnotation] != e.Key().String() || annotations[marks.AssemblageAnnotation] != "asm-1" {
			t.Fatalf("source %q and assemblage %q, want %q and asm-1", annotations[marks.SourceAnnotation], annotations[marks.AssemblageAnnotation], e.Key())
		}
		// The hash covers everything but the owner label and the hash itself.
		bare := obj.DeepCopy()
		bareAnnotations := bare.GetAnnotations()
		delete(bareAnnotations, marks.HashAnnotation)
		bare.SetAnnotations(bareAnnotations)
		if want := transport.Hash(bare.Object); annotations[marks.HashAnnotation] != want {
			t.Fatalf("hash annotation %q, want %q (the hash of the rest)", annotations[marks.HashAnnotation], want)
		}
		adopted := withLabel(obj, marks.Label, transport.OwnerAdopted)
		if managed, created := marks.ManagedBy(adopted); !managed || created {
			t.Fatalf("an adopted object reads as managed %v, created %v", managed, created)
		}
		for _, k := range mailboxOnlyLabels {
			if _, ok := obj.GetLabels()[k]; ok {
				t.Fatalf("the mailbox's label %s went to the edge", k)
			}
		}
		for _, k := range mailboxOnlyAnnotations {
			if _, ok := annotations[k]; ok {
				t.Fatalf("the mailbox's annotation %s went to the edge", k)
			}
		}
		if obj.GetUID() != "" || obj.GetResourceVersion() != "" {
			t.Fatalf("the workspace's uid or resourceVersion went to the edge")
		}
		ours := func(k string) bool {
			return k == marks.Label || k == marks.SourceAnnotation || k == marks.HashAnnotation || k == marks.AssemblageAnnotation
		}
		kept := func(what, k, v string, got map[string]string, mailboxOnly []string) {
			if ours(k) || contains(mailboxOnly, k) || isKCP(k) {
				return
			}
			if got[k] != v {
				t.Fatalf("the %s %q=%q became %q at the edge", what, k, v, got[k])
			}
		}
		// A denatured object's own labels and annotations are those of its manifest.
		kept("label", labelKey, labelValue, obj.GetLabels(), mailboxOnlyLabels)
		kept("annotation", annotationKey, annotationValue, annotations, mailboxOnlyAnnotations)
		if denatured {
			if ref.GVR.Resource != "validatingwebhookconfigurations" || ref.Name != "hook" || ref.Namespace != "" {
				t.Fatalf("a denatured webhook goes to %v", ref)
			}
			if obj.Object["x"] != data {
				t.Fatalf("the manifest's field x is %v, want %q", obj.Object["x"], data)
			}
			return
		}
		if ref.GVR.Resource != "configmaps" || ref.Namespace != "app" || ref.Name != "settings" {
			t.Fatalf("a ConfigMap goes to %v", ref)
		}
		if got, _, _ := unstructured.NestedString(obj.Object, "data", "k"); got != data {
			t.Fatalf("data.k is %q at the edge, want %q", got, data)
		}
	})
}

// isKCP says whether a label or annotation key is kcp's, as transport.Sanitize sees it.
func isKCP(key string) bool {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetLabels(map[string]string{key: "x"})
	return len(transport.Sanitize(u).GetLabels()) == 0
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func equalJSON(a, b any) bool {
	ja, erra := utiljson.Marshal(a)
	jb, errb := utiljson.Marshal(b)
	return erra == nil && errb == nil && string(ja) == string(jb)
}

// FuzzContainsAll checks the drift test on JSON documents the fuzzer chooses: a document
// contains itself, and stays contained in what a server returns with fields of its own added.
func FuzzContainsAll(f *testing.F) {
	for _, s := range []string{`{"a": 1}`, `{"spec": {"replicas": 2, "ports": [{"port": 80}], "x": null, "m": {}}}`,
		`[1, 2.5, "x", true, null]`, `{"n": 9007199254740993}`, `{"f": 1.0, "e": []}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var v any
		if err := utiljson.Unmarshal(raw, &v); err != nil {
			return
		}
		if !containsAll(v, v) {
			t.Fatalf("%s does not contain itself", raw)
		}
		var live any
		if err := utiljson.Unmarshal(raw, &live); err != nil {
			t.Fatal(err)
		}
		if m, ok := live.(map[string]any); ok {
			m["status"+string(raw)] = map[string]any{"added": "by the server"}
			if !containsAll(live, v) {
				t.Fatalf("%s with a field added does not contain the original", raw)
			}
		}
	})
}

// FuzzDriftPaths checks that driftPaths agrees with containsAll on any pair of JSON documents:
// drift is reported by paths exactly when the syncer sees drift.
func FuzzDriftPaths(f *testing.F) {
	for _, s := range [][2]string{
		{`{"data": {"mode": "edge"}}`, `{"data": {"mode": "local"}}`},
		{`{"spec": {"ports": [{"port": 80}], "x": null, "m": {}}}`, `{"spec": {"ports": [{"port": 80}, {"port": 81}]}}`},
		{`{"a.b/c": [1, 2.5]}`, `{"a.b/c": [1, 2.5], "status": {}}`},
		{`[1, "x"]`, `{"n": 9007199254740993}`},
	} {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, rawWant, rawHave []byte) {
		var want, have any
		if utiljson.Unmarshal(rawWant, &want) != nil || utiljson.Unmarshal(rawHave, &have) != nil {
			return
		}
		paths := driftPaths(have, want)
		if in := containsAll(have, want); in != (len(paths) == 0) {
			t.Fatalf("want %s, have %s: containsAll %v, driftPaths %q", rawWant, rawHave, in, paths)
		}
		if len(driftPaths(want, want)) != 0 {
			t.Fatalf("%s drifts from itself", rawWant)
		}
	})
}
