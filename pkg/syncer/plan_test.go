package syncer

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

const (
	testSyncTargetUID = "7c2f5e1a-0b7d-4d0e-9a61-3f2d8c1b9e40"
	testAssemblage    = "2abcdef.web"
)

var testMarks = transport.MarksFor(testSyncTargetUID)

// Keys of the ownership marks, spelled out so that the tests notice a change of them.
const (
	testOwnerLabel            = testSyncTargetUID + ".syncer.edge.kcp.io/owner"
	testSourceAnnotation      = testSyncTargetUID + ".syncer.edge.kcp.io/source"
	testHashAnnotation        = testSyncTargetUID + ".syncer.edge.kcp.io/hash"
	testAssemblageAnnotation  = testSyncTargetUID + ".syncer.edge.kcp.io/assemblage"
	testEdgeFieldManager      = "edge-syncer-" + testSyncTargetUID
	testForeignAssemblageName = "2abcdef.other"
)

func TestMarksKeys(t *testing.T) {
	want := transport.Marks{Label: testOwnerLabel, SourceAnnotation: testSourceAnnotation, HashAnnotation: testHashAnnotation,
		AssemblageAnnotation: testAssemblageAnnotation, FieldManager: testEdgeFieldManager}
	if testMarks != want {
		t.Errorf("marks = %+v, want %+v", testMarks, want)
	}
}

// serverMeta is metadata as a workload workspace's server and the placement translator may leave
// it on an object in an assemblage.
func serverMeta(namespace, name string) map[string]any {
	md := map[string]any{
		"name":              name,
		"uid":               "0f0e0d0c-aaaa-bbbb-cccc-000000000001",
		"resourceVersion":   "4711",
		"generation":        int64(3),
		"creationTimestamp": "2024-05-01T10:00:00Z",
		"managedFields":     []any{map[string]any{"manager": "kubectl", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1"}},
		"labels": map[string]any{
			"app":                        "web",
			"edge.kcp.io/projected":      "true",
			"edge.kcp.io/source-cluster": "root:acme:workloads",
		},
		"annotations": map[string]any{
			"kcp.io/cluster":              "2xyzabc",
			"team":                        "storefront",
			"edge.kcp.io/placements":      "web-placement",
			"edge.kcp.io/projection-hash": "0123456789abcdef",
		},
	}
	if namespace != "" {
		md["namespace"] = namespace
	}
	return md
}

func configMapEntry() transport.Entry {
	return transport.Entry{Version: "v1", Resource: "configmaps", Namespaced: true, Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": serverMeta("web", "settings"),
		"data":     map[string]any{"color": "blue", "size": "large"},
		"status":   map[string]any{"note": "a server-side status"},
	}}
}

func deploymentSpec() map[string]any {
	return map[string]any{
		"replicas": int64(2),
		"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
		"template": map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
			"spec": map[string]any{"containers": []any{map[string]any{
				"name": "web", "image": "nginx:1.25",
				"ports": []any{map[string]any{"containerPort": int64(80)}},
			}}},
		},
	}
}

func deploymentEntry(namespace, name string) transport.Entry {
	return transport.Entry{Group: "apps", Version: "v1", Resource: "deployments", Namespaced: true, Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": serverMeta(namespace, name),
		"spec":     deploymentSpec(),
		"status":   map[string]any{"replicas": int64(2), "readyReplicas": int64(2)},
	}}
}

func namespaceEntry(name string) transport.Entry {
	return transport.Entry{Version: "v1", Resource: "namespaces", Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}}}
}

func crdEntry(name string) transport.Entry {
	return transport.Entry{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions", Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": map[string]any{"name": name}}}
}

func plainConfigMap(namespace, name string, annotations map[string]any) transport.Entry {
	md := map[string]any{"name": name, "namespace": namespace}
	if annotations != nil {
		md["annotations"] = annotations
	}
	return transport.Entry{Version: "v1", Resource: "configmaps", Namespaced: true, Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": md, "data": map[string]any{"k": name}}}
}

// expectedHash is the hash that the edge form obj should carry: that of obj without the hash
// annotation and without the owner label.
func expectedHash(t *testing.T, obj *unstructured.Unstructured) string {
	t.Helper()
	c := obj.DeepCopy()
	annotations := c.GetAnnotations()
	delete(annotations, testHashAnnotation)
	c.SetAnnotations(annotations)
	labels := c.GetLabels()
	delete(labels, testOwnerLabel)
	c.SetLabels(labels)
	return transport.Hash(c.Object)
}

func TestEdgeForm(t *testing.T) {
	cases := []struct {
		name     string
		entry    transport.Entry
		wantRef  objectRef
		wantBody map[string]any // without metadata
		wantMeta map[string]any // without the hash annotation
	}{
		{
			name:     "ConfigMap",
			entry:    configMapEntry(),
			wantRef:  objectRef{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Namespace: "web", Name: "settings"},
			wantBody: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"color": "blue", "size": "large"}},
			wantMeta: map[string]any{"name": "settings", "namespace": "web", "labels": map[string]any{"app": "web"},
				"annotations": map[string]any{"team": "storefront", testSourceAnnotation: "configmaps/web/settings", testAssemblageAnnotation: testAssemblage}},
		},
		{
			name:     "Deployment",
			entry:    deploymentEntry("web", "frontend"),
			wantRef:  objectRef{GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Namespace: "web", Name: "frontend"},
			wantBody: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "spec": deploymentSpec()},
			wantMeta: map[string]any{"name": "frontend", "namespace": "web", "labels": map[string]any{"app": "web"},
				"annotations": map[string]any{"team": "storefront", testSourceAnnotation: "deployments.apps/web/frontend", testAssemblageAnnotation: testAssemblage}},
		},
		{
			name:     "Namespace without labels or annotations",
			entry:    namespaceEntry("web"),
			wantRef:  objectRef{GVR: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, Name: "web"},
			wantBody: map[string]any{"apiVersion": "v1", "kind": "Namespace"},
			wantMeta: map[string]any{"name": "web",
				"annotations": map[string]any{testSourceAnnotation: "namespaces/web", testAssemblageAnnotation: testAssemblage}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := c.entry.Object["metadata"].(map[string]any)
			beforeCopy := map[string]any{}
			for k, v := range before {
				beforeCopy[k] = v
			}
			obj, ref, err := edgeForm(&c.entry, testAssemblage, testMarks)
			if err != nil {
				t.Fatalf("edgeForm: %v", err)
			}
			if !reflect.DeepEqual(c.entry.Object["metadata"], beforeCopy) {
				t.Errorf("edgeForm modified the entry's metadata")
			}
			if ref != c.wantRef {
				t.Errorf("ref = %+v, want %+v", ref, c.wantRef)
			}
			hash := obj.GetAnnotations()[testHashAnnotation]
			if len(hash) != 16 || hash != expectedHash(t, obj) {
				t.Errorf("hash annotation = %q, want the 16-digit hash of the edge form without hash and owner label, %q", hash, expectedHash(t, obj))
			}
			if _, found := obj.GetLabels()[testOwnerLabel]; found {
				t.Errorf("the edge form carries an owner label; the syncer sets it as it applies")
			}
			want := map[string]any{}
			for k, v := range c.wantBody {
				want[k] = v
			}
			md := map[string]any{}
			for k, v := range c.wantMeta {
				md[k] = v
			}
			annotations := map[string]any{}
			for k, v := range c.wantMeta["annotations"].(map[string]any) {
				annotations[k] = v
			}
			annotations[testHashAnnotation] = hash
			md["annotations"] = annotations
			want["metadata"] = md
			if !reflect.DeepEqual(obj.Object, want) {
				t.Errorf("edge form:\n got %#v\nwant %#v", obj.Object, want)
			}
		})
	}
}

func TestEdgeFormHash(t *testing.T) {
	hashOf := func(t *testing.T, e transport.Entry, asm string) string {
		t.Helper()
		obj, _, err := edgeForm(&e, asm, testMarks)
		if err != nil {
			t.Fatalf("edgeForm: %v", err)
		}
		return obj.GetAnnotations()[testHashAnnotation]
	}
	base := hashOf(t, configMapEntry(), testAssemblage)
	meta := func(e transport.Entry) map[string]any { return e.Object["metadata"].(map[string]any) }
	cases := []struct {
		name   string
		change func(e transport.Entry) transport.Entry
		asm    string
		same   bool
	}{
		{name: "equal content", change: func(e transport.Entry) transport.Entry { return e }, same: true},
		{name: "maps filled in another order", same: true, change: func(e transport.Entry) transport.Entry {
			e.Object["data"] = map[string]any{"size": "large", "color": "blue"}
			return e
		}},
		{name: "another uid, resourceVersion, generation and status", same: true, change: func(e transport.Entry) transport.Entry {
			meta(e)["uid"], meta(e)["resourceVersion"], meta(e)["generation"] = "x", "9999", int64(17)
			e.Object["status"] = map[string]any{"note": "changed"}
			return e
		}},
		{name: "kcp's and the old mailbox's bookkeeping changed", same: true, change: func(e transport.Entry) transport.Entry {
			a := meta(e)["annotations"].(map[string]any)
			a["kcp.io/cluster"], a["edge.kcp.io/projection-hash"] = "elsewhere", "ffffffffffffffff"
			return e
		}},
		{name: "data changed", change: func(e transport.Entry) transport.Entry {
			e.Object["data"] = map[string]any{"color": "red", "size": "large"}
			return e
		}},
		{name: "user label changed", change: func(e transport.Entry) transport.Entry {
			meta(e)["labels"].(map[string]any)["app"] = "api"
			return e
		}},
		{name: "another name", change: func(e transport.Entry) transport.Entry {
			meta(e)["name"] = "settings-2"
			return e
		}},
		{name: "another assemblage", change: func(e transport.Entry) transport.Entry { return e }, asm: testForeignAssemblageName},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			asm := testAssemblage
			if c.asm != "" {
				asm = c.asm
			}
			got := hashOf(t, c.change(configMapEntry()), asm)
			if c.same && got != base {
				t.Errorf("hash = %q, want it unchanged (%q)", got, base)
			}
			if !c.same && got == base {
				t.Errorf("hash = %q, want it to change", got)
			}
		})
	}
}

const validatingWebhookYAML = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: check-web
  labels:
    app: web
webhooks:
- name: check.web.example.com
  admissionReviewVersions: ["v1"]
  sideEffects: None
  timeoutSeconds: 5
  clientConfig:
    url: https://hook.example.com/check
`

func denaturedEntry(manifest string) transport.Entry {
	md := serverMeta("web", "check-web-hook")
	md["labels"].(map[string]any)["edge.kcp.io/denatured"] = "true"
	return transport.Entry{Version: "v1", Resource: "configmaps", Namespaced: true, Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": md, "data": map[string]any{"object": manifest}}}
}

func TestEdgeFormDenatured(t *testing.T) {
	e := denaturedEntry(validatingWebhookYAML)
	obj, ref, err := edgeForm(&e, testAssemblage, testMarks)
	if err != nil {
		t.Fatalf("edgeForm: %v", err)
	}
	wantRef := objectRef{GVR: schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}, Name: "check-web"}
	if ref != wantRef {
		t.Errorf("ref = %+v, want %+v", ref, wantRef)
	}
	if obj.GetKind() != "ValidatingWebhookConfiguration" || obj.GetNamespace() != "" || obj.GetName() != "check-web" {
		t.Errorf("edge form is %s %s/%s, want the ValidatingWebhookConfiguration check-web", obj.GetKind(), obj.GetNamespace(), obj.GetName())
	}
	if _, found := obj.Object["data"]; found {
		t.Error("the edge form kept the ConfigMap's data")
	}
	hooks, _, _ := unstructured.NestedSlice(obj.Object, "webhooks")
	if len(hooks) != 1 || hooks[0].(map[string]any)["timeoutSeconds"] != int64(5) {
		t.Errorf("webhooks = %#v", hooks)
	}
	// The source is the ConfigMap that carries it, as the assemblage lists it.
	want := map[string]string{testSourceAnnotation: "configmaps/web/check-web-hook", testAssemblageAnnotation: testAssemblage,
		testHashAnnotation: obj.GetAnnotations()[testHashAnnotation]}
	if got := obj.GetAnnotations(); !reflect.DeepEqual(got, want) {
		t.Errorf("annotations = %v, want %v", got, want)
	}
	if got, want := obj.GetLabels(), map[string]string{"app": "web"}; !reflect.DeepEqual(got, want) {
		t.Errorf("labels = %v, want %v", got, want)
	}
}

func TestEdgeFormErrors(t *testing.T) {
	mismatched := deploymentEntry("web", "frontend")
	mismatched.Version = "v1beta1"
	noKind := configMapEntry()
	delete(noKind.Object, "kind")
	badVersion := configMapEntry()
	badVersion.Object["apiVersion"] = "a/b/c"
	cases := []struct {
		name    string
		entry   transport.Entry
		wantErr string
	}{
		{"denatured without a manifest", denaturedEntry(""), `has no "object"`},
		{"denatured, not a manifest", denaturedEntry("{not json"), "not the YAML or JSON manifest"},
		{"denatured, a kind that needs no denaturing", denaturedEntry("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n"), "needs no denaturing"},
		{"apiVersion and entry disagree", mismatched, "files it under apps/v1beta1"},
		{"no kind", noKind, "no kind"},
		{"bad apiVersion", badVersion, "a/b/c"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			obj, ref, err := edgeForm(&c.entry, testAssemblage, testMarks)
			if err == nil {
				t.Fatalf("edgeForm succeeded with %v, want an error", obj)
			}
			if !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("error %q does not say %q", err, c.wantErr)
			}
			if obj != nil || ref != (objectRef{}) {
				t.Errorf("edgeForm returned %v, %+v with its error, want nothing", obj, ref)
			}
		})
	}
}

func keysOf(objs []*desired) []string {
	var out []string
	for _, d := range objs {
		out = append(out, d.key.String())
	}
	return out
}

// TestNewPlanStaging checks the apply order of a version: CRDs, then Namespaces, then the rest,
// each in the document's order, whatever order the document has; and what a plan leaves out.
func TestNewPlanStaging(t *testing.T) {
	widget := transport.Entry{Group: "example.com", Version: "v1", Resource: "widgets", Namespaced: true, Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w1", "namespace": "app"}}}
	doc := &transport.Document{Objects: []transport.Entry{
		deploymentEntry("app", "web"),
		widget,
		namespaceEntry("app"),
		plainConfigMap("app", "shared-cm", nil),
		crdEntry("widgets.example.com"),
		plainConfigMap("app", "once", map[string]any{"edge.kcp.io/create-only": "true"}),
		denaturedEntry("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n"),
		namespaceEntry("other"),
		plainConfigMap("app", "once", nil), // a duplicate key: the first counts
	}}
	shared := []edgev1alpha1.SharedObject{{Object: "configmaps/app/shared-cm", Assemblage: testForeignAssemblageName}, {Object: "not a key", Assemblage: "x"}}
	p := newPlan(testAssemblage, "v-1", doc, shared, testMarks)

	wantOrder := []string{
		"customresourcedefinitions.apiextensions.k8s.io/widgets.example.com",
		"namespaces/app", "namespaces/other",
		"deployments.apps/app/web", "widgets.example.com/app/w1", "configmaps/app/once", "configmaps/web/check-web-hook",
	}
	if got := keysOf(p.objects); !reflect.DeepEqual(got, wantOrder) {
		t.Errorf("apply order:\n got %v\nwant %v", got, wantOrder)
	}
	if got := keysOf(p.inStage(stageNamespaces)); !reflect.DeepEqual(got, wantOrder[1:3]) {
		t.Errorf("namespace stage = %v", got)
	}
	if p.version != "v-1" || len(p.byKey) != len(wantOrder) {
		t.Errorf("plan version %q with %d keys", p.version, len(p.byKey))
	}
	sharedKey, _ := transport.ParseKey("configmaps/app/shared-cm")
	if p.shared[sharedKey] != testForeignAssemblageName || len(p.shared) != 1 || len(p.sharedOrder) != 1 {
		t.Errorf("shared = %v, want only configmaps/app/shared-cm from %s", p.shared, testForeignAssemblageName)
	}
	if _, carried := p.byKey[sharedKey]; carried {
		t.Errorf("a shared object is in the plan; another assemblage carries it")
	}
	once := p.byKey[transport.Key{Resource: "configmaps", Namespace: "app", Name: "once"}]
	if !once.createOnly || once.obj.Object["data"].(map[string]any)["k"] != "once" {
		t.Errorf("the create-only ConfigMap is not planned as such: %+v", once)
	}
	bad := p.byKey[transport.Key{Resource: "configmaps", Namespace: "web", Name: "check-web-hook"}]
	if bad.obj != nil || !strings.Contains(bad.invalid, "needs no denaturing") {
		t.Errorf("a malformed denatured object is planned as %+v, want it invalid with the reason", bad)
	}
	for _, d := range p.objects {
		if d.invalid == "" && d.hash != d.obj.GetAnnotations()[testHashAnnotation] {
			t.Errorf("%s: hash %q differs from its annotation", d.key, d.hash)
		}
	}
}

func TestNewPlanOneEdgeObjectTwice(t *testing.T) {
	hook := func(name string) transport.Entry {
		e := denaturedEntry(validatingWebhookYAML)
		e.Object["metadata"].(map[string]any)["name"] = name
		return e
	}
	p := newPlan(testAssemblage, "v", &transport.Document{Objects: []transport.Entry{hook("a"), hook("b")}}, nil, testMarks)
	first := p.byKey[transport.Key{Resource: "configmaps", Namespace: "web", Name: "a"}]
	second := p.byKey[transport.Key{Resource: "configmaps", Namespace: "web", Name: "b"}]
	if first.invalid != "" || first.obj == nil {
		t.Errorf("the first carrier of the webhook is invalid: %s", first.invalid)
	}
	if !strings.Contains(second.invalid, "carries one object twice") || !strings.Contains(second.invalid, "configmaps/web/a") {
		t.Errorf("the second carrier of the same webhook: invalid %q", second.invalid)
	}
}

// TestContainsAllLiveObject checks containsAll as the syncer uses it: the edge form against the
// object as an edge server returns it.
func TestContainsAllLiveObject(t *testing.T) {
	e := deploymentEntry("web", "frontend")
	desiredObj, _, err := edgeForm(&e, testAssemblage, testMarks)
	if err != nil {
		t.Fatalf("edgeForm: %v", err)
	}
	live := func() *unstructured.Unstructured {
		l := withLabel(desiredObj, testOwnerLabel, "created")
		l.SetUID("edge-uid")
		l.SetResourceVersion("12")
		l.SetGeneration(1)
		l.Object["metadata"].(map[string]any)["managedFields"] = []any{map[string]any{"manager": testEdgeFieldManager}}
		a := l.GetAnnotations()
		a["deployment.kubernetes.io/revision"] = "1"
		l.SetAnnotations(a)
		spec := l.Object["spec"].(map[string]any)
		spec["progressDeadlineSeconds"] = float64(600)
		spec["strategy"] = map[string]any{"type": "RollingUpdate"}
		c := spec["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
		c["imagePullPolicy"] = "IfNotPresent"
		c["ports"].([]any)[0].(map[string]any)["protocol"] = "TCP"
		l.Object["status"] = map[string]any{"replicas": int64(2)}
		return l
	}
	if !containsAll(live().Object, desiredObj.Object) {
		t.Fatal("the live object with server defaults does not contain the edge form")
	}
	edits := map[string]func(*unstructured.Unstructured){
		"replicas scaled at the edge": func(l *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(l.Object, int64(5), "spec", "replicas")
		},
		"hash annotation changed": func(l *unstructured.Unstructured) {
			a := l.GetAnnotations()
			a[testHashAnnotation] = "0000000000000000"
			l.SetAnnotations(a)
		},
		"assemblage annotation removed": func(l *unstructured.Unstructured) {
			a := l.GetAnnotations()
			delete(a, testAssemblageAnnotation)
			l.SetAnnotations(a)
		},
		"image changed": func(l *unstructured.Unstructured) {
			c := l.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
			c["image"] = "nginx:latest"
		},
	}
	for name, edit := range edits {
		t.Run(name, func(t *testing.T) {
			l := live()
			edit(l)
			if containsAll(l.Object, desiredObj.Object) {
				t.Error("containsAll = true after an edit at the edge, want false")
			}
		})
	}
}

func TestObjectRef(t *testing.T) {
	deploy := objectRef{GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Namespace: "web", Name: "frontend"}
	hook := objectRef{GVR: schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}, Name: "check-web"}
	if got := deploy.String(); got != "deployments.apps web/frontend" {
		t.Errorf("String() = %q", got)
	}
	if got := hook.String(); got != "validatingwebhookconfigurations.admissionregistration.k8s.io check-web" {
		t.Errorf("String() = %q", got)
	}
	other := deploy
	other.GVR.Version = "v1beta2"
	if !deploy.sameObject(other) {
		t.Errorf("the same object at two versions is not the same object")
	}
	other = deploy
	other.Name = "backend"
	if deploy.sameObject(other) || deploy.sameObject(hook) {
		t.Errorf("different objects are the same")
	}
}

func TestStageOf(t *testing.T) {
	for ref, want := range map[objectRef]stage{
		{GVR: schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}, Name: "a"}: stageCRDs,
		{GVR: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, Name: "a"}:                                               stageNamespaces,
		{GVR: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "namespaces"}, Name: "a"}:                         stageRest,
		{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Namespace: "n", Name: "a"}:                               stageRest,
	} {
		if got := stageOf(ref); got != want {
			t.Errorf("stageOf(%s) = %d, want %d", ref, got, want)
		}
	}
}

func TestIsCreateOnly(t *testing.T) {
	for name, c := range map[string]struct {
		annotations map[string]string
		want        bool
	}{
		"marked":            {map[string]string{"edge.kcp.io/create-only": "true"}, true},
		"marked false":      {map[string]string{"edge.kcp.io/create-only": "false"}, false},
		"marked True":       {map[string]string{"edge.kcp.io/create-only": "True"}, false},
		"other annotations": {map[string]string{"create-only": "true"}, false},
		"no annotations":    {nil, false},
	} {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}}
		u.SetAnnotations(c.annotations)
		if got := isCreateOnly(u); got != c.want {
			t.Errorf("%s: isCreateOnly = %v, want %v", name, got, c.want)
		}
	}
}
