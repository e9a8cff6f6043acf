package placementtranslator

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

var (
	deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	configMapsGVR  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secretsGVR     = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	rolesGVR       = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}
)

// testVersions remembers the version each test key was made with.
var testVersions = map[copyKey]schema.GroupVersionResource{}

func ck(gvr schema.GroupVersionResource, namespace, name string) copyKey {
	k := copyKey{gr: gvr.GroupResource(), namespace: namespace, name: name}
	testVersions[k] = gvr
	return k
}

func desiredWith(keys ...copyKey) *desiredState {
	d := &desiredState{copies: map[copyKey]*desiredCopy{}}
	for _, k := range keys {
		d.copies[k] = &desiredCopy{resource: resource{gvr: testVersions[k]}, source: "ws1"}
	}
	return d
}

func currentWith(keys ...copyKey) map[copyKey]copyRecord {
	m := map[copyKey]copyRecord{}
	for _, k := range keys {
		m[k] = copyRecord{gvr: testVersions[k], source: "ws1"}
	}
	return m
}

func nsResource(group, resource, apiVersion string) edgev1alpha1.NamespaceScopeDownsyncResource {
	return edgev1alpha1.NamespaceScopeDownsyncResource{GroupResource: metav1.GroupResource{Group: group, Resource: resource}, APIVersion: apiVersion}
}

func clusterResource(group, resource, apiVersion string, objects ...string) edgev1alpha1.ClusterScopeDownsyncResource {
	return edgev1alpha1.ClusterScopeDownsyncResource{GroupResource: metav1.GroupResource{Group: group, Resource: resource}, APIVersion: apiVersion, Objects: objects}
}

func TestSyncerConfigSpec(t *testing.T) {
	// Desired: a deployment and a configmap in two namespaces, the namespaces, a CRD.
	desired := desiredWith(
		ck(deploymentsGVR, "ns-b", "web"),
		ck(deploymentsGVR, "ns-a", "web"),
		ck(configMapsGVR, "ns-a", "cfg"),
		ck(namespacesGVR, "", "ns-b"),
		ck(namespacesGVR, "", "ns-a"),
		ck(crdsGVR, "", "widgets.example.com"),
	)
	// Current: a secret in a third namespace, and a cluster role, on their way out.
	current := currentWith(
		ck(secretsGVR, "ns-c", "token"),
		ck(namespacesGVR, "", "ns-c"),
		ck(rolesGVR, "", "reader"),
	)
	tests := []struct {
		name    string
		d       *desiredState
		current map[copyKey]copyRecord
		ahead   bool
		want    edgev1alpha1.SyncerConfigSpec
	}{
		{
			name:    "ahead: desired and current copies",
			d:       desired,
			current: current,
			ahead:   true,
			want: edgev1alpha1.SyncerConfigSpec{
				NamespaceScope: edgev1alpha1.NamespaceScopeDownsyncs{
					Namespaces: []string{"ns-a", "ns-b", "ns-c"},
					Resources: []edgev1alpha1.NamespaceScopeDownsyncResource{
						nsResource("", "configmaps", "v1"),
						nsResource("apps", "deployments", "apps/v1"),
						nsResource("", "secrets", "v1"),
					},
				},
				ClusterScope: []edgev1alpha1.ClusterScopeDownsyncResource{
					clusterResource("rbac.authorization.k8s.io", "clusterroles", "rbac.authorization.k8s.io/v1", "reader"),
					clusterResource("apiextensions.k8s.io", "customresourcedefinitions", "apiextensions.k8s.io/v1", "widgets.example.com"),
					clusterResource("", "namespaces", "v1", "ns-a", "ns-b", "ns-c"),
				},
			},
		},
		{
			name:    "not ahead: current copies only",
			d:       desired,
			current: current,
			ahead:   false,
			want: edgev1alpha1.SyncerConfigSpec{
				NamespaceScope: edgev1alpha1.NamespaceScopeDownsyncs{
					Namespaces: []string{"ns-c"},
					Resources:  []edgev1alpha1.NamespaceScopeDownsyncResource{nsResource("", "secrets", "v1")},
				},
				ClusterScope: []edgev1alpha1.ClusterScopeDownsyncResource{
					clusterResource("rbac.authorization.k8s.io", "clusterroles", "rbac.authorization.k8s.io/v1", "reader"),
					clusterResource("", "namespaces", "v1", "ns-c"),
				},
			},
		},
		{
			name:    "a copy both desired and current counts once",
			d:       desiredWith(ck(configMapsGVR, "ns-a", "cfg")),
			current: currentWith(ck(configMapsGVR, "ns-a", "cfg")),
			ahead:   true,
			want: edgev1alpha1.SyncerConfigSpec{
				NamespaceScope: edgev1alpha1.NamespaceScopeDownsyncs{
					Namespaces: []string{"ns-a"},
					Resources:  []edgev1alpha1.NamespaceScopeDownsyncResource{nsResource("", "configmaps", "v1")},
				},
			},
		},
		{
			name:    "cluster-scoped copies name no namespace",
			d:       desiredWith(ck(namespacesGVR, "", "ns-a")),
			current: nil,
			ahead:   true,
			want: edgev1alpha1.SyncerConfigSpec{
				NamespaceScope: edgev1alpha1.NamespaceScopeDownsyncs{Namespaces: []string{}},
				ClusterScope:   []edgev1alpha1.ClusterScopeDownsyncResource{clusterResource("", "namespaces", "v1", "ns-a")},
			},
		},
		{
			name:    "nothing",
			d:       desiredWith(),
			current: nil,
			ahead:   true,
			want: edgev1alpha1.SyncerConfigSpec{
				NamespaceScope: edgev1alpha1.NamespaceScopeDownsyncs{Namespaces: []string{}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := syncerConfigSpec(tt.d, tt.current, tt.ahead)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("syncerConfigSpec() =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

func TestSyncerConfigSpecUpsync(t *testing.T) {
	pods := edgev1alpha1.UpsyncSet{Resources: []string{"pods"}, Namespaces: []string{"ns-a"}}
	leases := edgev1alpha1.UpsyncSet{APIGroup: "coordination.k8s.io", Resources: []string{"leases"}}
	podsAgain := edgev1alpha1.UpsyncSet{Resources: []string{"pods"}, Namespaces: []string{"ns-a"}}
	podsElsewhere := edgev1alpha1.UpsyncSet{Resources: []string{"pods"}, Namespaces: []string{"ns-b"}}

	d := desiredWith()
	d.upsync = []edgev1alpha1.UpsyncSet{pods, leases, podsAgain, podsElsewhere, leases}
	got := syncerConfigSpec(d, nil, false).Upsync
	want := []edgev1alpha1.UpsyncSet{pods, leases, podsElsewhere}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Upsync = %+v, want %+v (deduplicated, first occurrence order)", got, want)
	}
}

func TestSyncerConfigSpecDeterministic(t *testing.T) {
	var keys []copyKey
	for _, ns := range []string{"n5", "n3", "n1", "n4", "n2"} {
		keys = append(keys, ck(deploymentsGVR, ns, "web"), ck(configMapsGVR, ns, "cfg"), ck(secretsGVR, ns, "s"), ck(namespacesGVR, "", ns))
	}
	for _, n := range []string{"r3", "r1", "r2"} {
		keys = append(keys, ck(rolesGVR, "", n), ck(crdsGVR, "", n+".example.com"))
	}
	d := desiredWith(keys...)
	first := syncerConfigSpec(d, nil, true)
	for i := 0; i < 20; i++ {
		if got := syncerConfigSpec(d, nil, true); !reflect.DeepEqual(got, first) {
			t.Fatalf("call %d gave a different spec:\n%+v\nfirst:\n%+v", i, got, first)
		}
	}
	if got := first.NamespaceScope.Namespaces; !reflect.DeepEqual(got, []string{"n1", "n2", "n3", "n4", "n5"}) {
		t.Errorf("namespaces = %v, want sorted", got)
	}
	if got := first.ClusterScope[0].Objects; first.ClusterScope[0].Resource != "clusterroles" || !reflect.DeepEqual(got, []string{"r1", "r2", "r3"}) {
		t.Errorf("first cluster-scope entry = %+v, want clusterroles with sorted objects", first.ClusterScope[0])
	}
}

// A custom kind whose storage version changed is one copy, synced at the version now written.
func TestSyncerConfigSpecVersionChange(t *testing.T) {
	old := schema.GroupVersionResource{Group: "example.com", Version: "v1alpha1", Resource: "widgets"}
	now := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	key := copyKey{gr: now.GroupResource(), namespace: "app", name: "w"}
	d := &desiredState{copies: map[copyKey]*desiredCopy{key: {resource: resource{gvr: now}, source: "ws1"}}}
	current := map[copyKey]copyRecord{key: {gvr: old, source: "ws1"}}
	for _, ahead := range []bool{true, false} {
		for i := 0; i < 50; i++ {
			spec := syncerConfigSpec(d, current, ahead)
			if len(spec.NamespaceScope.Resources) != 1 || spec.NamespaceScope.Resources[0].APIVersion != "example.com/v1" {
				t.Fatalf("ahead=%t: resources = %+v, want widgets at example.com/v1 only", ahead, spec.NamespaceScope.Resources)
			}
		}
	}
}
