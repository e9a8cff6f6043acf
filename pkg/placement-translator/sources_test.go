package placementtranslator

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

var listWatch = []string{"get", "list", "watch", "create", "update", "delete"}

func TestWorkloadResources(t *testing.T) {
	lists := []*metav1.APIResourceList{
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "statefulsets", Kind: "StatefulSet", Namespaced: true, Verbs: listWatch},
			{Name: "deployments", Kind: "Deployment", Namespaced: true, Verbs: listWatch},
			{Name: "deployments/status", Kind: "Deployment", Namespaced: true, Verbs: []string{"get", "update", "patch"}},
			{Name: "deployments/scale", Kind: "Scale", Namespaced: true, Verbs: []string{"get", "update", "patch"}},
		}},
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "namespaces", Kind: "Namespace", Namespaced: false, Verbs: listWatch},
			{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: listWatch},
			{Name: "bindings", Kind: "Binding", Namespaced: true, Verbs: []string{"create"}},
			{Name: "componentstatuses", Kind: "ComponentStatus", Verbs: []string{"get", "list"}},
		}},
		{GroupVersion: "edge.kcp.io/v1alpha1", APIResources: []metav1.APIResource{
			{Name: "edgeplacements", Kind: "EdgePlacement", Verbs: listWatch},
		}},
		{GroupVersion: "apis.kcp.io/v1alpha1", APIResources: []metav1.APIResource{
			{Name: "apibindings", Kind: "APIBinding", Verbs: listWatch},
		}},
		{GroupVersion: "tenancy.kcp.io/v1alpha1", APIResources: []metav1.APIResource{
			{Name: "workspaces", Kind: "Workspace", Verbs: listWatch},
		}},
		{GroupVersion: "rbac.authorization.k8s.io/v1", APIResources: []metav1.APIResource{
			{Name: "clusterroles", Kind: "ClusterRole", Namespaced: false, Verbs: listWatch},
		}},
		{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{
			{Name: "widgets", Kind: "Widget", Namespaced: true, Verbs: []string{"watch", "list"}},
		}},
		{GroupVersion: "not/a/valid/groupversion", APIResources: []metav1.APIResource{
			{Name: "things", Kind: "Thing", Verbs: listWatch},
		}},
	}
	want := []resource{
		{gvr: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, kind: "ConfigMap", namespaced: true},
		{gvr: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, kind: "Namespace", namespaced: false},
		{gvr: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, kind: "Deployment", namespaced: true, hasStatus: true},
		{gvr: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}, kind: "StatefulSet", namespaced: true},
		{gvr: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, kind: "Widget", namespaced: true},
		{gvr: schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}, kind: "ClusterRole", namespaced: false},
	}
	got := workloadResources(lists)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("workloadResources() =\n%+v\nwant\n%+v", got, want)
	}
	for _, r := range got {
		if r.custom {
			t.Errorf("%v is marked custom; discovered resources never are", r.gvr)
		}
	}
}

func TestWorkloadResourcesEmpty(t *testing.T) {
	if got := workloadResources(nil); len(got) != 0 {
		t.Errorf("workloadResources(nil) = %v, want none", got)
	}
	onlyKCP := []*metav1.APIResourceList{{GroupVersion: "edge.kcp.io/v1alpha1", APIResources: []metav1.APIResource{
		{Name: "synctargets", Kind: "SyncTarget", Verbs: listWatch},
	}}}
	if got := workloadResources(onlyKCP); len(got) != 0 {
		t.Errorf("workloadResources(edge.kcp.io only) = %v, want none", got)
	}
}

func TestHasVerbs(t *testing.T) {
	tests := []struct {
		have []string
		want bool
	}{
		{[]string{"list", "watch"}, true},
		{[]string{"watch", "get", "list"}, true},
		{[]string{"list"}, false},
		{[]string{"watch"}, false},
		{nil, false},
	}
	for _, tt := range tests {
		if got := hasVerbs(tt.have, "list", "watch"); got != tt.want {
			t.Errorf("hasVerbs(%v, list, watch) = %v, want %v", tt.have, got, tt.want)
		}
	}
}

func withCluster(u *unstructured.Unstructured, cluster string) *unstructured.Unstructured {
	u.SetAnnotations(map[string]string{"kcp.io/cluster": cluster})
	return u
}

func sliceWithOwners(refs ...metav1.OwnerReference) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetAPIVersion("edge.kcp.io/v1alpha1")
	u.SetKind("SinglePlacementSlice")
	u.SetName("slice")
	u.SetOwnerReferences(refs)
	return withCluster(u, "ws1")
}

func TestSliceOwner(t *testing.T) {
	yes, no := true, false
	placementRef := func(name string, controller *bool) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "edge.kcp.io/v1alpha1", Kind: "EdgePlacement", Name: name, UID: types.UID("uid-" + name), Controller: controller}
	}
	tests := []struct {
		name   string
		u      *unstructured.Unstructured
		want   placementKey
		wantOK bool
	}{
		{"nil", nil, placementKey{}, false},
		{"no owners", sliceWithOwners(), placementKey{}, false},
		{"controlling placement", sliceWithOwners(placementRef("p1", &yes)), placementKey{"ws1", "p1"}, true},
		{"placement not controller", sliceWithOwners(placementRef("p1", &no)), placementKey{}, false},
		{"placement, controller unset", sliceWithOwners(placementRef("p1", nil)), placementKey{}, false},
		{"controller of another kind", sliceWithOwners(metav1.OwnerReference{Kind: "ConfigMap", Name: "cm", Controller: &yes}), placementKey{}, false},
		{
			"the controlling placement among others",
			sliceWithOwners(placementRef("p0", &no), metav1.OwnerReference{Kind: "ConfigMap", Name: "cm"}, placementRef("p2", &yes)),
			placementKey{"ws1", "p2"}, true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := sliceOwner(tt.u)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("sliceOwner() = %v, %v; want %v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestSlicePlacementIndex(t *testing.T) {
	yes := true
	owned := sliceWithOwners(metav1.OwnerReference{Kind: "EdgePlacement", Name: "p1", Controller: &yes})
	if got, err := slicePlacement(owned); err != nil || !reflect.DeepEqual(got, []string{"ws1|p1"}) {
		t.Errorf("slicePlacement(owned) = %v, %v; want [ws1|p1]", got, err)
	}
	if got, err := slicePlacement(sliceWithOwners()); err != nil || len(got) != 0 {
		t.Errorf("slicePlacement(unowned) = %v, %v; want none", got, err)
	}
	if got, err := slicePlacement("not an object"); err != nil || len(got) != 0 {
		t.Errorf("slicePlacement(string) = %v, %v; want none", got, err)
	}
}

func TestDestinationsAndSliceMailboxes(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "edge.kcp.io/v1alpha1",
		"kind":       "SinglePlacementSlice",
		"metadata":   map[string]any{"name": "slice"},
		"destinations": []any{
			map[string]any{"cluster": "inv1", "locationName": "loc", "syncTargetName": "st1", "syncTargetUID": "u1"},
			map[string]any{"cluster": "inv2", "locationName": "loc", "syncTargetName": "st2", "syncTargetUID": "u2"},
		},
	}}
	dests := edgev1alpha1.SliceDestinations(u)
	if len(dests) != 2 || dests[0].SyncTargetName != "st1" || dests[1].Cluster != "inv2" {
		t.Fatalf("destinations() = %+v", dests)
	}
	names, err := sliceMailboxes(u)
	if err != nil || !reflect.DeepEqual(names, []string{"inv1-mb-u1", "inv2-mb-u2"}) {
		t.Errorf("sliceMailboxes() = %v, %v; want [inv1-mb-u1 inv2-mb-u2]", names, err)
	}
	if got := edgev1alpha1.SliceDestinations(nil); got != nil {
		t.Errorf("edgev1alpha1.SliceDestinations(nil) = %v, want nil", got)
	}
}

func TestMailboxOf(t *testing.T) {
	syncTarget := func(status map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "edge.kcp.io/v1alpha1",
			"kind":       "SyncTarget",
			"metadata":   map[string]any{"name": "st1"},
		}}
		if status != nil {
			u.Object["status"] = status
		}
		return withCluster(u, "inv1")
	}
	tests := []struct {
		name string
		u    *unstructured.Unstructured
		want string
	}{
		{"nil", nil, ""},
		{"no status", syncTarget(nil), ""},
		{"mailbox not recorded", syncTarget(map[string]any{}), ""},
		{"empty path", syncTarget(map[string]any{"mailboxWorkspace": ""}), ""},
		{"full path", syncTarget(map[string]any{"mailboxWorkspace": "root:espw:inv1-mb-u1"}), "inv1-mb-u1"},
		{"single segment", syncTarget(map[string]any{"mailboxWorkspace": "inv1-mb-u1"}), "inv1-mb-u1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mailboxOf(tt.u); got != tt.want {
				t.Errorf("mailboxOf() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSameProjection(t *testing.T) {
	base := func() *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "web", "namespace": "ns", "resourceVersion": "1",
				"labels": map[string]any{"app": "web"}},
			"spec":   map[string]any{"replicas": int64(1)},
			"status": map[string]any{"readyReplicas": int64(0)},
		}}
		return u
	}
	tests := []struct {
		name   string
		change func(u *unstructured.Unstructured)
		want   bool
	}{
		{"only the resourceVersion", func(u *unstructured.Unstructured) { u.SetResourceVersion("2") }, true},
		{"the summarizer's annotations", func(u *unstructured.Unstructured) {
			u.SetAnnotations(map[string]string{edgev1alpha1.AnnotationExecutingCount: "3", edgev1alpha1.AnnotationSingletonStatusFrom: "a|b"})
		}, true},
		{"the status", func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, int64(1), "status", "readyReplicas")
		}, true},
		{"the spec", func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, int64(2), "spec", "replicas")
		}, false},
		{"a label", func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"app": "db"}) }, false},
		{"an annotation of the author", func(u *unstructured.Unstructured) {
			u.SetAnnotations(map[string]string{edgev1alpha1.AnnotationCustomizer: "c"})
		}, false},
		{"deletion begins", func(u *unstructured.Unstructured) {
			now := metav1.Now()
			u.SetDeletionTimestamp(&now)
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old, obj := base(), base()
			tt.change(obj)
			if got := sameProjection(old, obj); got != tt.want {
				t.Errorf("sameProjection() = %v, want %v", got, tt.want)
			}
		})
	}
	if sameProjection(nil, base()) {
		t.Errorf("sameProjection(nil, obj) = true: a new object must queue its mailboxes")
	}
}
