package placementtranslator

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kcp-dev/logicalcluster/v3"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/centerview"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

var (
	deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	configMapsGVR  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	rolesGVR       = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}
)

func ck(gvr schema.GroupVersionResource, namespace, name string) copyKey {
	return copyKey{gr: gvr.GroupResource(), namespace: namespace, name: name}
}

// An object that two placements of a workspace select travels once, in the assemblage of the
// first of them by name; the other lists it as shared.
func TestPlanAssemblagesSharesObjects(t *testing.T) {
	w := newTestWorld(t)
	w.placement(t, "ws1", "p2", deploymentsIn("app"))
	w.placement(t, "ws1", "p1", deploymentsIn("app"))
	w.workload(t, namespacesGVR, obj("v1", "Namespace", "ws1", "", "app", nil))
	w.workload(t, deploymentsGVR, obj("apps/v1", "Deployment", "ws1", "app", "web", nil))
	d, ok := w.c.computeDesired(testMailbox, nil)
	if !ok {
		t.Fatal("computeDesired() not ok")
	}
	plans := w.c.planAssemblages(context.Background(), logicalcluster.Path{}, d, nil, newSealer(destinationKey{}, nil, nil, nil))
	byName := map[string]*assemblagePlan{}
	for _, p := range plans {
		byName[p.name] = p
	}
	p1, p2 := byName[transport.AssemblageName("ws1", "p1")], byName[transport.AssemblageName("ws1", "p2")]
	if p1 == nil || p2 == nil || p1.hold || p2.hold {
		t.Fatalf("plans = %+v", plans)
	}
	if want := []string{"namespaces/app", "deployments.apps/app/web"}; !reflect.DeepEqual(p1.encoded.Objects, want) {
		t.Errorf("p1 carries %v, want %v", p1.encoded.Objects, want)
	}
	if len(p2.encoded.Objects) != 0 {
		t.Errorf("p2 carries %v, want nothing", p2.encoded.Objects)
	}
	wantShared := []edgev1alpha1.SharedObject{{Object: "deployments.apps/app/web", Assemblage: "ws1.p1"}, {Object: "namespaces/app", Assemblage: "ws1.p1"}}
	if !reflect.DeepEqual(p2.shared, wantShared) {
		t.Errorf("p2 shares %+v, want %+v", p2.shared, wantShared)
	}
	if !plans[0].gains || plans[0].name != p1.name {
		t.Errorf("the assemblage that gains objects is not written first: %s first", plans[0].name)
	}
}

func TestHeldObjects(t *testing.T) {
	current := map[string]*edgev1alpha1.Assemblage{
		"ws1.p1": {ObjectMeta: metav1.ObjectMeta{Name: "ws1.p1"}, Spec: edgev1alpha1.AssemblageSpec{
			Placement: edgev1alpha1.PlacementReference{Cluster: "ws1", Name: "p1"}, Objects: []string{"deployments.apps/app/web", "not a key"}}},
	}
	want := map[copyKey]copyRecord{ck(deploymentsGVR, "app", "web"): {source: "ws1", assemblage: "ws1.p1"}}
	if got := heldObjects(current); !reflect.DeepEqual(got, want) {
		t.Errorf("heldObjects = %v, want %v", got, want)
	}
}

func TestSameSpec(t *testing.T) {
	base := edgev1alpha1.AssemblageSpec{Placement: edgev1alpha1.PlacementReference{Cluster: "ws1", Name: "p1"}, Version: "v1", Format: transport.FormatV1,
		Objects: []string{"a/b"}, ObjectCount: 1, Parts: 1, Digest: "d", Data: []byte("x")}
	same := base
	same.Data = nil // the mailbox view holds no data
	if !sameSpec(&same, &base) {
		t.Errorf("a spec without its data differs")
	}
	for name, mutate := range map[string]func(s *edgev1alpha1.AssemblageSpec){
		"version":         func(s *edgev1alpha1.AssemblageSpec) { s.Version = "v2" },
		"digest mismatch": func(s *edgev1alpha1.AssemblageSpec) { s.Digest = centerview.DigestMismatch },
		"objects":         func(s *edgev1alpha1.AssemblageSpec) { s.Objects = nil },
		"shared": func(s *edgev1alpha1.AssemblageSpec) {
			s.Shared = []edgev1alpha1.SharedObject{{Object: "x", Assemblage: "y"}}
		},
		"placement": func(s *edgev1alpha1.AssemblageSpec) { s.Placement.Name = "p2" },
	} {
		edited := base
		mutate(&edited)
		if sameSpec(&edited, &base) {
			t.Errorf("an edit of the %s is not seen", name)
		}
	}
}

// A placement's revision is the same on every computation of the same content.
func TestRevisionIsStable(t *testing.T) {
	w := newTestWorld(t)
	w.placement(t, "ws1", "p1", deploymentsIn("app"))
	w.workload(t, namespacesGVR, obj("v1", "Namespace", "ws1", "", "app", nil))
	w.workload(t, deploymentsGVR, obj("apps/v1", "Deployment", "ws1", "app", "web", nil))
	first, _ := w.c.computeDesired(testMailbox, nil)
	second, _ := w.c.computeDesired(testMailbox, nil)
	pk := placementKey{"ws1", "p1"}
	if first.revisions[pk] == "" || first.revisions[pk] != second.revisions[pk] {
		t.Errorf("revisions %q and %q of the same content", first.revisions[pk], second.revisions[pk])
	}
}

// TestSameJSONOfWhatTheServerReturns: the spec the translator applies, as it converts it, and
// the same spec as the server returns it (decoded from JSON) compare equal, so that a normal
// write is not followed by a second one; a field added by hand does not.
func TestSameJSONOfWhatTheServerReturns(t *testing.T) {
	for _, obj := range []any{
		&edgev1alpha1.Assemblage{Spec: edgev1alpha1.AssemblageSpec{
			Placement: edgev1alpha1.PlacementReference{Cluster: "c", Name: "p"}, Version: "v1", Format: transport.FormatV1,
			Objects: []string{"configmaps/a/b"}, ObjectCount: 1, Parts: 2, Data: []byte{0, 1, 2, 255}, Digest: "d"}},
		&edgev1alpha1.AssemblagePart{Spec: edgev1alpha1.AssemblagePartSpec{Assemblage: "a", Version: "v1", Index: 1, Data: []byte("xyz"), Digest: "d"}},
		&edgev1alpha1.SyncerConfig{Spec: edgev1alpha1.SyncerConfigSpec{
			Upsync:    []edgev1alpha1.UpsyncSet{{Resources: []string{"configmaps"}, Namespaces: []string{"app"}}},
			Heartbeat: &edgev1alpha1.HeartbeatSettings{IntervalSeconds: 5}}},
	} {
		applied, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := json.Marshal(applied)
		if err != nil {
			t.Fatal(err)
		}
		returned := map[string]any{}
		if err := json.Unmarshal(raw, &returned); err != nil {
			t.Fatal(err)
		}
		if !sameJSON(returned["spec"], applied["spec"]) {
			t.Errorf("%T: the spec as returned differs from the spec as applied:\n%v\n%v", obj, returned["spec"], applied["spec"])
		}
		spec := returned["spec"].(map[string]any)
		spec["shared"] = []any{map[string]any{"object": "x", "assemblage": "y"}}
		if sameJSON(returned["spec"], applied["spec"]) {
			t.Errorf("%T: a field added by hand goes unnoticed", obj)
		}
	}
}

func TestUpsyncNeedsWorkloads(t *testing.T) {
	resources := []resource{{gvr: configMapsGVR}, {gvr: deploymentsGVR}, {gvr: schema.GroupVersionResource{Version: "v1", Resource: "services"}},
		{gvr: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, custom: true}}
	tests := []struct {
		name  string
		rules []edgev1alpha1.UpsyncSet
		want  bool
	}{
		{"none", nil, false},
		{"configmaps", []edgev1alpha1.UpsyncSet{{Resources: []string{"configmaps"}}}, false},
		{"services, of the workloads export", []edgev1alpha1.UpsyncSet{{Resources: []string{"services"}}}, true},
		{"all of the core group", []edgev1alpha1.UpsyncSet{{Resources: []string{"*"}}}, true},
		{"apps", []edgev1alpha1.UpsyncSet{{APIGroup: "apps", Resources: []string{"*"}}}, true},
		{"a custom kind", []edgev1alpha1.UpsyncSet{{APIGroup: "example.com", Resources: []string{"*"}}}, false},
	}
	for _, tt := range tests {
		if got := upsyncNeedsWorkloads(tt.rules, resources); got != tt.want {
			t.Errorf("%s: upsyncNeedsWorkloads() = %v, want %v", tt.name, got, tt.want)
		}
	}
}
