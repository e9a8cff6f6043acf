package transport

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// jsonEqual reports whether a and b are the same JSON document: the transport, like the API
// servers it talks to, does not tell 1 from 1.0 or an int64 from a float64 of the same value.
func jsonEqual(t *testing.T, a, b any) bool {
	t.Helper()
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatalf("marshalling %#v: %v", a, err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatalf("marshalling %#v: %v", b, err)
	}
	return bytes.Equal(ja, jb)
}

// FuzzParseDenatured feeds ParseDenatured arbitrary text in a denatured ConfigMap. It must never
// panic; what it accepts must be an object that may travel denatured (an active kind,
// cluster-scoped, named), and that object, written back as JSON or as YAML into another
// denatured ConfigMap, must parse to the same object.
func FuzzParseDenatured(f *testing.F) {
	f.Add(webhookYAML)
	f.Add("apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {name: v1.example.com, labels: {a: 'yes'}}\nspec: {groupPriorityMinimum: 1.5e3}\n")
	f.Add(`{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration", "metadata": {"name": "m"}, "webhooks": [{"name": "a.b", "timeoutSeconds": 1.0}]}`)
	f.Add("---\n# a comment\n---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata:\n  name: \"0x1\"\n")
	f.Add("apiVersion: v1\nkind: APIService\nmetadata: {name: x}\n")
	f.Fuzz(func(t *testing.T, text string) {
		u, err := ParseDenatured(denatured(map[string]any{DenaturedDataKey: text}))
		if err != nil {
			if u != nil {
				t.Fatalf("an object with the error %v", err)
			}
			if !strings.Contains(err.Error(), "web/hook") {
				t.Fatalf("the error does not name the ConfigMap: %v", err)
			}
			return
		}
		if u.GetName() == "" || u.GetNamespace() != "" {
			t.Fatalf("accepted an object without a name or with a namespace: %v", u.Object)
		}
		gv, err := schema.ParseGroupVersion(u.GetAPIVersion())
		if err != nil {
			t.Fatalf("accepted an object whose apiVersion does not parse: %v", err)
		}
		if _, ok := ActiveResource(gv.WithKind(u.GetKind()).GroupKind()); !ok {
			t.Fatalf("accepted a kind that needs no denaturing: %s %s", u.GetAPIVersion(), u.GetKind())
		}
		asJSON, err := json.Marshal(u.Object)
		if err != nil {
			t.Fatalf("the parsed object does not marshal: %v", err)
		}
		forms := map[string]string{"JSON": string(asJSON)}
		// The YAML writer refuses some control characters that a YAML reader accepts escaped.
		if asYAML, err := yaml.Marshal(u.Object); err == nil {
			forms["YAML"] = string(asYAML)
		}
		for form, again := range forms {
			v, err := ParseDenatured(denatured(map[string]any{DenaturedDataKey: again}))
			if err != nil {
				t.Fatalf("the parsed object, written as %s, is refused: %v\n%s", form, err, again)
			}
			if !jsonEqual(t, v.Object, u.Object) {
				t.Fatalf("the parsed object, written as %s, parses differently:\nfirst  %s\nsecond %s", form, short(u.Object), short(v.Object))
			}
		}
	})
}

// FuzzDenaturedRoundTrip denatures a webhook configuration whose strings and numbers the fuzzer
// chooses, as a workload author would write it (YAML or JSON in a ConfigMap), and checks that
// re-naturing gives back exactly that object: no string is read as another type ("yes", "0x1",
// "null", "~" stay strings) and no number changes.
func FuzzDenaturedRoundTrip(f *testing.F) {
	f.Add("check", "yes", "https://x.example.com/validate", int64(5), 0.5, true)
	f.Add("0x1", "null", "~", int64(-1), 1e300, false)
	f.Add("a", "1.0", "'quoted'", int64(9007199254740993), -0.0, true)
	f.Fuzz(func(t *testing.T, name, label, url string, timeout int64, ratio float64, asJSON bool) {
		if name == "" {
			name = "n"
		}
		if !utf8.ValidString(name) || !utf8.ValidString(label) || !utf8.ValidString(url) {
			return // manifests are UTF-8 text
		}
		natural := map[string]any{
			"apiVersion": "admissionregistration.k8s.io/v1",
			"kind":       "ValidatingWebhookConfiguration",
			"metadata":   map[string]any{"name": name, "labels": map[string]any{"team": label}},
			"webhooks": []any{map[string]any{
				"name": name, "timeoutSeconds": timeout, "ratio": ratio,
				"clientConfig": map[string]any{"url": url},
			}},
		}
		raw, err := json.Marshal(natural)
		if err != nil {
			return // NaN or infinity: no manifest can hold them
		}
		text := string(raw)
		if !asJSON {
			y, err := yaml.JSONToYAML(raw)
			if err != nil {
				return // the YAML writer refuses some control characters; JSON is tried too
			}
			text = string(y)
		}
		u, err := ParseDenatured(denatured(map[string]any{DenaturedDataKey: text}))
		if err != nil {
			t.Fatalf("a valid denatured webhook configuration is refused: %v\n%s", err, text)
		}
		if !jsonEqual(t, u.Object, natural) {
			t.Fatalf("re-natured object differs from what was denatured:\nmanifest %q\ngot      %s\nwant     %s", text, short(u.Object), short(natural))
		}
	})
}

// FuzzSanitize checks Sanitize on labels and annotations the fuzzer chooses: kcp's keys go,
// edge-mc's and everyone else's stay with their values, server-owned fields go, the input is not
// modified, and sanitizing twice is sanitizing once.
func FuzzSanitize(f *testing.F) {
	f.Add("app", "web", "kcp.io/cluster", "abc", "edge.kcp.io/customizer", "c")
	f.Add("claims.internal.apis.kcp.io/x", "1", "kcp.io.example.com/q", "2", "kubectl.kubernetes.io/last-applied-configuration", "{}")
	f.Add("/x", "", "kcp.io", "v", "a.kcp.io/", "")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2, k3, v3 string) {
		labels := map[string]any{k1: v1, k2: v2, k3: v3}
		annotations := map[string]any{k3: v3, k1: v1, "note": "keep"}
		in := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{
				"name": "c", "namespace": "n", "uid": "u", "resourceVersion": "1",
				"labels": labels, "annotations": annotations,
			},
			"data":   map[string]any{"k": v1},
			"status": map[string]any{"x": "y"},
		}}
		before := in.DeepCopy()
		out := Sanitize(in)
		if !reflect.DeepEqual(in.Object, before.Object) {
			t.Fatalf("Sanitize modified its input")
		}
		if !reflect.DeepEqual(Sanitize(out).Object, out.Object) {
			t.Fatalf("sanitizing twice differs from once")
		}
		if out.GetUID() != "" || out.GetResourceVersion() != "" || out.Object["status"] != nil {
			t.Fatalf("server-owned fields stayed: %v", out.Object)
		}
		check := func(what string, in map[string]any, got map[string]string) {
			for k, v := range in {
				gone := isKCPKey(k) || (what == "annotation" && contains(droppedAnnotations, k))
				gv, kept := got[k]
				switch {
				case gone && kept:
					t.Fatalf("%s %q stayed", what, k)
				case !gone && (!kept || gv != v):
					t.Fatalf("%s %q=%q became %q (kept %v)", what, k, v, gv, kept)
				}
			}
			if len(got) > len(in) {
				t.Fatalf("%ss were added: %v", what, got)
			}
		}
		check("label", labels, out.GetLabels())
		check("annotation", annotations, out.GetAnnotations())
	})
}

// short is v as JSON, cut to a length that a failure message can show.
func short(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%#v", v)
	}
	const max = 600
	if len(raw) > max {
		return string(raw[:max]) + fmt.Sprintf("... (%d bytes)", len(raw))
	}
	return string(raw)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// FuzzEncodeRoundTrip encodes entries whose names and contents the fuzzer chooses, and decodes
// the pieces: the document comes back as encoded, the version does not depend on the order the
// entries were given in, and each object's key is listed.
func FuzzEncodeRoundTrip(f *testing.F) {
	f.Add("app", "web", "v", int64(3), 0.25, false)
	f.Add("kube-system", "a.b-c", "\x00\xff", int64(-9007199254740993), 1e-300, true)
	f.Fuzz(func(t *testing.T, ns, name, value string, n int64, x float64, big bool) {
		if ns == "" || name == "" || strings.Contains(ns, "/") || strings.Contains(name, "/") {
			return // no object is named so
		}
		if !utf8.ValidString(ns) || !utf8.ValidString(name) || !utf8.ValidString(value) {
			return // objects read from a server hold only UTF-8 text (JSON carries no other)
		}
		data := map[string]any{"v": value, "n": n, "x": x}
		if big {
			// Incompressible, so that the document takes two pieces.
			noise := make([]byte, PieceBytes*5/4)
			_, _ = rand.NewChaCha8(sha256.Sum256([]byte(value))).Read(noise)
			data["big"] = base64.StdEncoding.EncodeToString(noise)
		}
		entries := []Entry{configMap(ns, name, data), namespace(ns), deployment(ns, name, n), crd(name + ".example.com")}
		if _, err := json.Marshal(data); err != nil {
			return // NaN or infinity
		}
		reversed := []Entry{entries[3], entries[2], entries[1], entries[0]}
		enc, err := Encode(entries)
		if err != nil {
			t.Fatalf("Encode: %v", err)
		}
		enc2, err := Encode(reversed)
		if err != nil {
			t.Fatalf("Encode: %v", err)
		}
		if enc.Version != enc2.Version {
			t.Fatalf("the version depends on the order of the entries: %s, %s", enc.Version, enc2.Version)
		}
		doc, err := Decode(FormatV1, enc.Version, enc.Pieces)
		if err != nil {
			t.Fatalf("Decode of what Encode wrote: %v", err)
		}
		// Encode sorted entries in place.
		if !jsonEqual(t, doc.Objects, entries) {
			t.Fatalf("decoded document differs:\ngot  %s\nwant %s", short(doc.Objects), short(entries))
		}
		if big && len(enc.Pieces) < 2 {
			t.Fatalf("%d bytes compressed took %d pieces", enc.CompressedBytes, len(enc.Pieces))
		}
		if len(enc.Objects) != len(entries) {
			t.Fatalf("Objects lists %d keys for %d entries", len(enc.Objects), len(entries))
		}
		for i, k := range enc.Objects {
			if got := doc.Objects[i].Key().String(); got != k {
				t.Fatalf("Objects[%d] is %q, the entry's key %q", i, k, got)
			}
		}
	})
}

// FuzzDecodeDocument feeds Decode correctly compressed and versioned data whose JSON the fuzzer
// chooses, so that it reaches the checks of the document itself: it must never panic, it refuses
// with a reason, and what it accepts encodes again to a document that decodes to the same.
func FuzzDecodeDocument(f *testing.F) {
	enc, _ := Encode([]Entry{namespace("app"), deployment("app", "web", 2)})
	if doc, err := Decode(FormatV1, enc.Version, enc.Pieces); err == nil {
		raw, _ := json.Marshal(doc)
		f.Add(raw)
	}
	f.Add([]byte(`{"objects": [{"version": "v1", "resource": "configmaps", "namespaced": true, "object": {"metadata": {"name": "a"}}}]}`))
	f.Add([]byte(`{"objects": [{"version": "v1", "resource": "x", "object": {"metadata": {"name": "a"}, "n": 1e400}}]}`))
	f.Add([]byte(`{"objects": [{"version": "v1", "resource": "x", "object": null}]}`))
	f.Add([]byte(`{"objects": [{"version": "v1", "resource": "x", "object": {"metadata": {"name": "a"}, "l": [1, 2.5, -3e2, {"m": 18446744073709551616}]}}]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		_, _ = zw.Write(raw)
		_ = zw.Close()
		doc, err := Decode(FormatV1, hashBytes(raw), [][]byte{buf.Bytes()})
		if err != nil {
			if refusalReason(err) == "" {
				t.Fatalf("Decode failed without a refusal reason: %v", err)
			}
			return
		}
		for _, e := range doc.Objects {
			k := e.Key()
			if k.Name == "" || e.Resource == "" || e.Version == "" || (e.Namespaced && k.Namespace == "") {
				t.Fatalf("accepted an entry without its name, resource, version or namespace: %+v", e)
			}
		}
		again, err := Encode(append([]Entry(nil), doc.Objects...))
		if err != nil {
			t.Fatalf("an accepted document does not encode again: %v", err)
		}
		doc2, err := Decode(FormatV1, again.Version, again.Pieces)
		if err != nil {
			t.Fatalf("an accepted document, encoded again, is refused: %v", err)
		}
		SortEntries(doc.Objects)
		if len(doc.Objects)+len(doc2.Objects) > 0 && !jsonEqual(t, doc2.Objects, doc.Objects) {
			t.Fatalf("an accepted document, encoded again, decodes differently:\nfirst  %s\nsecond %s", short(doc.Objects), short(doc2.Objects))
		}
	})
}
