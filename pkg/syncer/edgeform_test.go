package syncer

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kcp-dev/edge-mc/pkg/transport"
)

const testSyncTargetUID = "7c2f5e1a-0b7d-4d0e-9a61-3f2d8c1b9e40"

var testOwn = newOwnership(testSyncTargetUID)

// Keys of the ownership marks, spelled out so that the tests notice a change of them.
const (
	testOwnerLabel       = testSyncTargetUID + ".syncer.edge.kcp.io/owner"
	testSourceAnnotation = testSyncTargetUID + ".syncer.edge.kcp.io/source"
	testHashAnnotation   = testSyncTargetUID + ".syncer.edge.kcp.io/hash"
)

// mailboxMeta is metadata as a mailbox server and the placement translator leave it on a copy.
func mailboxMeta(namespace, name string) map[string]any {
	md := map[string]any{
		"name":              name,
		"uid":               "0f0e0d0c-aaaa-bbbb-cccc-000000000001",
		"resourceVersion":   "4711",
		"generation":        int64(3),
		"creationTimestamp": "2024-05-01T10:00:00Z",
		"managedFields": []any{map[string]any{
			"manager":    "placement-translator",
			"operation":  "Apply",
			"apiVersion": "v1",
			"fieldsType": "FieldsV1",
		}},
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
			"edge.kcp.io/sync-error":      "the edge cluster refused it",
			"edge.kcp.io/created-at-edge": "2024-05-01T10:00:05Z",
		},
	}
	if namespace != "" {
		md["namespace"] = namespace
	}
	return md
}

func mailboxConfigMap() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "ConfigMap",
		"metadata":   mailboxMeta("web", "settings"),
		"data":       map[string]any{"color": "blue", "size": "large"},
		"status":     map[string]any{"note": "a mailbox-side status"},
	}}
}

func deploymentSpec() map[string]any {
	return map[string]any{
		"replicas": int64(2),
		"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
		"template": map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
			"spec": map[string]any{
				"containers": []any{map[string]any{
					"name":  "web",
					"image": "nginx:1.25",
					"ports": []any{map[string]any{"containerPort": int64(80)}},
				}},
			},
		},
	}
}

func mailboxDeployment() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata":   mailboxMeta("web", "frontend"),
		"spec":       deploymentSpec(),
		"status": map[string]any{
			"replicas":      int64(2),
			"readyReplicas": int64(2),
			"conditions": []any{map[string]any{
				"type": "Available", "status": "True",
			}},
		},
	}}
}

// expectedHash is the hash that the edge form of obj should carry: that of obj without the hash
// annotation and without the ownership label.
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

func TestNewOwnership(t *testing.T) {
	want := ownership{
		label:            testOwnerLabel,
		sourceAnnotation: testSourceAnnotation,
		hashAnnotation:   testHashAnnotation,
		fieldManager:     "edge-syncer-" + testSyncTargetUID,
	}
	if got := newOwnership(testSyncTargetUID); got != want {
		t.Errorf("newOwnership = %+v, want %+v", got, want)
	}
	if other := newOwnership("another-uid"); other.label == testOwn.label || other.sourceAnnotation == testOwn.sourceAnnotation ||
		other.hashAnnotation == testOwn.hashAnnotation || other.fieldManager == testOwn.fieldManager {
		t.Errorf("the marks of two SyncTargets collide: %+v and %+v", other, testOwn)
	}
}

func TestEdgeFormPlainCopy(t *testing.T) {
	cases := []struct {
		name    string
		mb      *unstructured.Unstructured
		src     sourceKey
		wantRef objectRef
		// wantBody is the expected edge form without metadata.
		wantBody map[string]any
	}{
		{
			name:    "ConfigMap",
			mb:      mailboxConfigMap(),
			src:     sourceKey{Resource: "configmaps", Namespace: "web", Name: "settings"},
			wantRef: objectRef{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Namespace: "web", Name: "settings"},
			wantBody: map[string]any{
				"apiVersion": "v1",
				"kind":       "ConfigMap",
				"data":       map[string]any{"color": "blue", "size": "large"},
			},
		},
		{
			name:    "Deployment",
			mb:      mailboxDeployment(),
			src:     sourceKey{Group: "apps", Resource: "deployments", Namespace: "web", Name: "frontend"},
			wantRef: objectRef{GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Namespace: "web", Name: "frontend"},
			wantBody: map[string]any{
				"apiVersion": "apps/v1",
				"kind":       "Deployment",
				"spec":       deploymentSpec(),
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := c.mb.DeepCopy()
			obj, ref, err := edgeForm(c.mb, c.src, testOwn)
			if err != nil {
				t.Fatalf("edgeForm: %v", err)
			}
			if !reflect.DeepEqual(c.mb.Object, before.Object) {
				t.Errorf("edgeForm modified its input:\n got %v\nwant %v", c.mb.Object, before.Object)
			}
			if ref != c.wantRef {
				t.Errorf("ref = %+v, want %+v", ref, c.wantRef)
			}
			hash := obj.GetAnnotations()[testHashAnnotation]
			if len(hash) != 16 {
				t.Errorf("hash annotation = %q, want 16 hex digits", hash)
			}
			if want := expectedHash(t, obj); hash != want {
				t.Errorf("hash annotation = %q, want the hash of the edge form without hash and owner label, %q", hash, want)
			}
			want := map[string]any{}
			for k, v := range c.wantBody {
				want[k] = v
			}
			want["metadata"] = map[string]any{
				"name":      c.src.Name,
				"namespace": c.src.Namespace,
				"labels": map[string]any{
					"app":          "web",
					testOwnerLabel: "created",
				},
				"annotations": map[string]any{
					"team":               "storefront",
					testSourceAnnotation: c.src.String(),
					testHashAnnotation:   hash,
				},
			}
			if !reflect.DeepEqual(obj.Object, want) {
				t.Errorf("edge form:\n got %#v\nwant %#v", obj.Object, want)
			}
		})
	}
}

func TestEdgeFormDropsMailboxFields(t *testing.T) {
	// Spelled out field by field, so that a failure says which one leaked.
	obj, _, err := edgeForm(mailboxDeployment(), sourceKey{Group: "apps", Resource: "deployments", Namespace: "web", Name: "frontend"}, testOwn)
	if err != nil {
		t.Fatalf("edgeForm: %v", err)
	}
	if _, found := obj.Object["status"]; found {
		t.Error("status was kept")
	}
	md := obj.Object["metadata"].(map[string]any)
	for _, f := range []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields"} {
		if _, found := md[f]; found {
			t.Errorf("metadata.%s was kept", f)
		}
	}
	for _, k := range []string{"edge.kcp.io/projected", "edge.kcp.io/source-cluster"} {
		if _, found := obj.GetLabels()[k]; found {
			t.Errorf("label %s was kept", k)
		}
	}
	for _, k := range []string{"kcp.io/cluster", "edge.kcp.io/placements", "edge.kcp.io/projection-hash", "edge.kcp.io/sync-error", "edge.kcp.io/created-at-edge"} {
		if _, found := obj.GetAnnotations()[k]; found {
			t.Errorf("annotation %s was kept", k)
		}
	}
	if got := obj.GetLabels()[testOwnerLabel]; got != "created" {
		t.Errorf("owner label = %q, want created", got)
	}
	if got := obj.GetAnnotations()[testSourceAnnotation]; got != "apps/deployments/web/frontend" {
		t.Errorf("source annotation = %q, want apps/deployments/web/frontend", got)
	}
}

func TestEdgeFormWithoutLabelsOrAnnotations(t *testing.T) {
	mb := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "Namespace",
		"metadata":   map[string]any{"name": "web", "uid": "u-1", "resourceVersion": "9"},
	}}
	src := sourceKey{Resource: "namespaces", Name: "web"}
	obj, ref, err := edgeForm(mb, src, testOwn)
	if err != nil {
		t.Fatalf("edgeForm: %v", err)
	}
	wantRef := objectRef{GVR: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, Name: "web"}
	if ref != wantRef {
		t.Errorf("ref = %+v, want %+v", ref, wantRef)
	}
	if got, want := obj.GetLabels(), map[string]string{testOwnerLabel: "created"}; !reflect.DeepEqual(got, want) {
		t.Errorf("labels = %v, want %v", got, want)
	}
	annotations := obj.GetAnnotations()
	if len(annotations) != 2 || annotations[testSourceAnnotation] != "/namespaces//web" || annotations[testHashAnnotation] == "" {
		t.Errorf("annotations = %v, want only the source (/namespaces//web) and hash annotations", annotations)
	}
	if obj.GetNamespace() != "" {
		t.Errorf("namespace = %q, want none", obj.GetNamespace())
	}
}

func TestEdgeFormHash(t *testing.T) {
	src := sourceKey{Resource: "configmaps", Namespace: "web", Name: "settings"}
	hashOf := func(t *testing.T, mb *unstructured.Unstructured, src sourceKey) string {
		t.Helper()
		obj, _, err := edgeForm(mb, src, testOwn)
		if err != nil {
			t.Fatalf("edgeForm: %v", err)
		}
		return obj.GetAnnotations()[testHashAnnotation]
	}
	base := hashOf(t, mailboxConfigMap(), src)

	cases := []struct {
		name   string
		change func(u *unstructured.Unstructured)
		src    *sourceKey
		same   bool
	}{
		{name: "equal content", change: func(*unstructured.Unstructured) {}, same: true},
		{name: "maps filled in another order", same: true, change: func(u *unstructured.Unstructured) {
			u.Object["data"] = map[string]any{"size": "large", "color": "blue"}
		}},
		{name: "another resourceVersion, uid and generation", same: true, change: func(u *unstructured.Unstructured) {
			u.SetResourceVersion("9999")
			u.SetUID("another-uid")
			u.SetGeneration(17)
		}},
		{name: "another mailbox status", same: true, change: func(u *unstructured.Unstructured) {
			u.Object["status"] = map[string]any{"note": "changed"}
		}},
		{name: "mailbox bookkeeping changed", same: true, change: func(u *unstructured.Unstructured) {
			a := u.GetAnnotations()
			a["edge.kcp.io/sync-error"] = "another error"
			a["edge.kcp.io/created-at-edge"] = "2030-01-01T00:00:00Z"
			a["edge.kcp.io/placements"] = "p1,p2"
			a["edge.kcp.io/projection-hash"] = "ffffffffffffffff"
			a["kcp.io/cluster"] = "elsewhere"
			u.SetAnnotations(a)
			l := u.GetLabels()
			l["edge.kcp.io/source-cluster"] = "root:other"
			u.SetLabels(l)
		}},
		{name: "data changed", change: func(u *unstructured.Unstructured) {
			u.Object["data"] = map[string]any{"color": "red", "size": "large"}
		}},
		{name: "data key added", change: func(u *unstructured.Unstructured) {
			u.Object["data"].(map[string]any)["shape"] = "round"
		}},
		{name: "user label changed", change: func(u *unstructured.Unstructured) {
			l := u.GetLabels()
			l["app"] = "api"
			u.SetLabels(l)
		}},
		{name: "user annotation changed", change: func(u *unstructured.Unstructured) {
			a := u.GetAnnotations()
			a["team"] = "checkout"
			u.SetAnnotations(a)
		}},
		{name: "another source", change: func(*unstructured.Unstructured) {}, src: &sourceKey{Resource: "configmaps", Namespace: "web", Name: "settings-2"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mb := mailboxConfigMap()
			c.change(mb)
			s := src
			if c.src != nil {
				s = *c.src
			}
			got := hashOf(t, mb, s)
			if c.same && got != base {
				t.Errorf("hash = %q, want it unchanged (%q)", got, base)
			}
			if !c.same && got == base {
				t.Errorf("hash = %q, want it to change", got)
			}
		})
	}
}

func TestEdgeFormHashIgnoresOwnershipState(t *testing.T) {
	obj, _, err := edgeForm(mailboxDeployment(), sourceKey{Group: "apps", Resource: "deployments", Namespace: "web", Name: "frontend"}, testOwn)
	if err != nil {
		t.Fatalf("edgeForm: %v", err)
	}
	hash := obj.GetAnnotations()[testHashAnnotation]
	for _, state := range []string{"created", "adopted"} {
		c := obj.DeepCopy()
		setLabel(c, testOwnerLabel, state)
		if got := expectedHash(t, c); got != hash {
			t.Errorf("owner %s: the content hashes to %q, but the hash annotation is %q", state, got, hash)
		}
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

const validatingWebhookJSON = `{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
 "metadata": {"name": "check-web", "labels": {"app": "web"}},
 "webhooks": [{"name": "check.web.example.com", "admissionReviewVersions": ["v1"], "sideEffects": "None",
  "timeoutSeconds": 5, "clientConfig": {"url": "https://hook.example.com/check"}}]}`

func denaturedConfigMap(manifest string) *unstructured.Unstructured {
	md := mailboxMeta("web", "check-web-hook")
	md["labels"].(map[string]any)["edge.kcp.io/denatured"] = "true"
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "ConfigMap",
		"metadata":   md,
		"data":       map[string]any{"object": manifest},
	}}
}

func TestEdgeFormDenatured(t *testing.T) {
	src := sourceKey{Resource: "configmaps", Namespace: "web", Name: "check-web-hook"}
	wantRef := objectRef{
		GVR:  schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"},
		Name: "check-web",
	}
	wantWebhooks := []any{map[string]any{
		"name":                    "check.web.example.com",
		"admissionReviewVersions": []any{"v1"},
		"sideEffects":             "None",
		"timeoutSeconds":          int64(5),
		"clientConfig":            map[string]any{"url": "https://hook.example.com/check"},
	}}
	for name, manifest := range map[string]string{"YAML": validatingWebhookYAML, "JSON": validatingWebhookJSON} {
		t.Run(name, func(t *testing.T) {
			obj, ref, err := edgeForm(denaturedConfigMap(manifest), src, testOwn)
			if err != nil {
				t.Fatalf("edgeForm: %v", err)
			}
			if ref != wantRef {
				t.Errorf("ref = %+v, want %+v", ref, wantRef)
			}
			if obj.GetAPIVersion() != "admissionregistration.k8s.io/v1" || obj.GetKind() != "ValidatingWebhookConfiguration" {
				t.Errorf("edge form is a %s %s, want an admissionregistration.k8s.io/v1 ValidatingWebhookConfiguration", obj.GetAPIVersion(), obj.GetKind())
			}
			if obj.GetName() != "check-web" || obj.GetNamespace() != "" {
				t.Errorf("edge form is named %q in namespace %q, want check-web and no namespace", obj.GetName(), obj.GetNamespace())
			}
			if _, found := obj.Object["data"]; found {
				t.Error("the edge form kept the ConfigMap's data")
			}
			if got, found, _ := unstructured.NestedSlice(obj.Object, "webhooks"); !found || !reflect.DeepEqual(got, wantWebhooks) {
				t.Errorf("webhooks = %#v, want %#v", got, wantWebhooks)
			}
			if got, want := obj.GetLabels(), map[string]string{"app": "web", testOwnerLabel: "created"}; !reflect.DeepEqual(got, want) {
				t.Errorf("labels = %v, want %v", got, want)
			}
			hash := obj.GetAnnotations()[testHashAnnotation]
			if want := expectedHash(t, obj); hash != want {
				t.Errorf("hash annotation = %q, want %q", hash, want)
			}
			wantAnnotations := map[string]string{testSourceAnnotation: "/configmaps/web/check-web-hook", testHashAnnotation: hash}
			if got := obj.GetAnnotations(); !reflect.DeepEqual(got, wantAnnotations) {
				t.Errorf("annotations = %v, want %v", got, wantAnnotations)
			}
		})
	}
}

func TestEdgeFormErrors(t *testing.T) {
	src := sourceKey{Resource: "configmaps", Namespace: "web", Name: "check-web-hook"}
	cases := []struct {
		name    string
		mb      *unstructured.Unstructured
		wantErr string // a part of the message
	}{
		{"denatured without a manifest", denaturedConfigMap(""), `has no "object"`},
		{"denatured, not a manifest", denaturedConfigMap("{not json"), "not the YAML or JSON manifest"},
		{"denatured, a list", denaturedConfigMap("- a\n- b\n"), "not the YAML or JSON manifest"},
		{"denatured, two objects", denaturedConfigMap(validatingWebhookYAML + "---\n" + validatingWebhookYAML), "holds 2 objects"},
		{"denatured, no name", denaturedConfigMap("apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {}\n"), "lacks metadata.name"},
		{"denatured, a kind that needs no denaturing", denaturedConfigMap("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n"), "needs no denaturing"},
		{"denatured, namespaced", denaturedConfigMap("apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata:\n  name: x\n  namespace: web\n"), "cluster-scoped"},
		{"bad apiVersion", &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "a/b/c", "kind": "Widget",
			"metadata": map[string]any{"name": "w", "namespace": "web"},
		}}, "a/b/c"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			obj, ref, err := edgeForm(c.mb, src, testOwn)
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

func TestManagedBy(t *testing.T) {
	withMarks := func(labels, annotations map[string]string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}}
		u.SetName("settings")
		u.SetLabels(labels)
		u.SetAnnotations(annotations)
		return u
	}
	other := newOwnership("another-uid")
	cases := []struct {
		name             string
		live             *unstructured.Unstructured
		managed, created bool
	}{
		{"created", withMarks(map[string]string{testOwnerLabel: "created"}, map[string]string{testSourceAnnotation: "/configmaps/web/settings"}), true, true},
		{"adopted", withMarks(map[string]string{testOwnerLabel: "adopted"}, map[string]string{testSourceAnnotation: "/configmaps/web/settings"}), true, false},
		{"label removed, source annotation kept", withMarks(map[string]string{"app": "web"}, map[string]string{testSourceAnnotation: "/configmaps/web/settings"}), true, false},
		{"label with an unknown value, source annotation kept", withMarks(map[string]string{testOwnerLabel: "mine"}, map[string]string{testSourceAnnotation: "/configmaps/web/settings"}), true, false},
		{"foreign object", withMarks(map[string]string{"app": "web"}, map[string]string{"team": "storefront"}), false, false},
		{"no labels or annotations", withMarks(nil, nil), false, false},
		{"another syncer's object", withMarks(map[string]string{other.label: "created"}, map[string]string{other.sourceAnnotation: "/configmaps/web/settings"}), false, false},
		{"nil", nil, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			managed, created := testOwn.managedBy(c.live)
			if managed != c.managed || created != c.created {
				t.Errorf("managedBy = (managed %v, created %v), want (%v, %v)", managed, created, c.managed, c.created)
			}
		})
	}
}

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
			map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web", testOwnerLabel: "created"}}}, false},
		{"label added at the edge", map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web", "extra": "x", testOwnerLabel: "created"}}},
			map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web", testOwnerLabel: "created"}}}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := containsAll(c.have, c.want); got != c.contains {
				t.Errorf("containsAll(%v, %v) = %v, want %v", c.have, c.want, got, c.contains)
			}
		})
	}
}

// TestContainsAllLiveObject checks containsAll as applyAtEdge uses it: the edge form against the
// object as an edge server returns it.
func TestContainsAllLiveObject(t *testing.T) {
	desired, _, err := edgeForm(mailboxDeployment(), sourceKey{Group: "apps", Resource: "deployments", Namespace: "web", Name: "frontend"}, testOwn)
	if err != nil {
		t.Fatalf("edgeForm: %v", err)
	}
	live := func() *unstructured.Unstructured {
		l := desired.DeepCopy()
		l.SetUID("edge-uid")
		l.SetResourceVersion("12")
		l.SetGeneration(1)
		l.Object["metadata"].(map[string]any)["managedFields"] = []any{map[string]any{"manager": testOwn.fieldManager}}
		a := l.GetAnnotations()
		a["deployment.kubernetes.io/revision"] = "1"
		l.SetAnnotations(a)
		spec := l.Object["spec"].(map[string]any)
		spec["progressDeadlineSeconds"] = float64(600) // as if decoded without int64s
		spec["strategy"] = map[string]any{"type": "RollingUpdate"}
		c := spec["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
		c["imagePullPolicy"] = "IfNotPresent"
		c["ports"].([]any)[0].(map[string]any)["protocol"] = "TCP"
		l.Object["status"] = map[string]any{"replicas": int64(2)}
		return l
	}
	if !containsAll(live().Object, desired.Object) {
		t.Fatal("the live object with server defaults does not contain the edge form")
	}
	edits := map[string]func(*unstructured.Unstructured){
		"replicas scaled at the edge": func(l *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(l.Object, int64(5), "spec", "replicas")
		},
		"owner label removed": func(l *unstructured.Unstructured) {
			labels := l.GetLabels()
			delete(labels, testOwnerLabel)
			l.SetLabels(labels)
		},
		"hash annotation changed": func(l *unstructured.Unstructured) {
			a := l.GetAnnotations()
			a[testHashAnnotation] = "0000000000000000"
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
			if containsAll(l.Object, desired.Object) {
				t.Error("containsAll = true after an edit at the edge, want false")
			}
		})
	}
}

func TestSourceKeyRoundTrip(t *testing.T) {
	cases := []struct {
		key  sourceKey
		text string
	}{
		{sourceKey{Group: "apps", Resource: "deployments", Namespace: "web", Name: "frontend"}, "apps/deployments/web/frontend"},
		{sourceKey{Resource: "configmaps", Namespace: "web", Name: "settings"}, "/configmaps/web/settings"},
		{sourceKey{Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Name: "viewer"}, "rbac.authorization.k8s.io/clusterroles//viewer"},
		{sourceKey{Resource: "namespaces", Name: "web"}, "/namespaces//web"},
		{sourceKey{Group: "example.com", Resource: "widgets", Namespace: "ns", Name: "a.b-c"}, "example.com/widgets/ns/a.b-c"},
	}
	for _, c := range cases {
		t.Run(c.text, func(t *testing.T) {
			if got := c.key.String(); got != c.text {
				t.Errorf("String() = %q, want %q", got, c.text)
			}
			got, ok := parseSourceKey(c.text)
			if !ok || got != c.key {
				t.Errorf("parseSourceKey(%q) = %+v, %v, want %+v, true", c.text, got, ok, c.key)
			}
		})
	}
}

func TestParseSourceKeyRejects(t *testing.T) {
	for _, s := range []string{
		"",
		"apps",
		"apps/deployments/web",
		"apps/deployments/web/frontend/extra",
		"apps//web/frontend",    // no resource
		"apps/deployments/web/", // no name
		"///",
		"/namespaces//",
	} {
		if got, ok := parseSourceKey(s); ok || got != (sourceKey{}) {
			t.Errorf("parseSourceKey(%q) = %+v, %v, want a rejection", s, got, ok)
		}
	}
}

func TestObjectRef(t *testing.T) {
	cases := []struct {
		ref  objectRef
		text string
		src  sourceKey
	}{
		{
			objectRef{GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Namespace: "web", Name: "frontend"},
			"deployments.apps web/frontend",
			sourceKey{Group: "apps", Resource: "deployments", Namespace: "web", Name: "frontend"},
		},
		{
			objectRef{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Namespace: "web", Name: "settings"},
			"configmaps web/settings",
			sourceKey{Resource: "configmaps", Namespace: "web", Name: "settings"},
		},
		{
			objectRef{GVR: schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}, Name: "check-web"},
			"validatingwebhookconfigurations.admissionregistration.k8s.io check-web",
			sourceKey{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations", Name: "check-web"},
		},
	}
	for _, c := range cases {
		if got := c.ref.String(); got != c.text {
			t.Errorf("String() = %q, want %q", got, c.text)
		}
		if got := c.ref.sourceKey(); got != c.src {
			t.Errorf("%s: sourceKey() = %+v, want %+v", c.text, got, c.src)
		}
	}
}

func TestIsCreateOnly(t *testing.T) {
	cases := []struct {
		name        string
		annotations map[string]string
		want        bool
	}{
		{"marked", map[string]string{"edge.kcp.io/create-only": "true"}, true},
		{"marked false", map[string]string{"edge.kcp.io/create-only": "false"}, false},
		{"marked True", map[string]string{"edge.kcp.io/create-only": "True"}, false},
		{"marked empty", map[string]string{"edge.kcp.io/create-only": ""}, false},
		{"other annotations", map[string]string{"team": "storefront", "create-only": "true"}, false},
		{"no annotations", nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}}
			u.SetName("settings")
			u.SetAnnotations(c.annotations)
			if got := isCreateOnly(u); got != c.want {
				t.Errorf("isCreateOnly = %v, want %v", got, c.want)
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
