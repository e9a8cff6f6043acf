package placementtranslator

import (
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	kcpinformers "github.com/kcp-dev/apimachinery/v2/third_party/informers"
	"github.com/kcp-dev/edge-mc/pkg/centerview"
	apisv1alpha2 "github.com/kcp-dev/sdk/apis/apis/v1alpha2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/kcp-dev/edge-mc/internal/informertest"
	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

func TestCopyKeyString(t *testing.T) {
	tests := []struct {
		key  copyKey
		want string
	}{
		{ck(deploymentsGVR, "ns", "name"), "deployments.apps/ns/name"},
		{ck(configMapsGVR, "ns", "cfg"), "configmaps/ns/cfg"},
		{ck(namespacesGVR, "", "name"), "namespaces/name"},
		{ck(crdsGVR, "", "widgets.example.com"), "customresourcedefinitions.apiextensions.k8s.io/widgets.example.com"},
	}
	for _, tt := range tests {
		if got := tt.key.String(); got != tt.want {
			t.Errorf("%#v.String() = %q, want %q", tt.key, got, tt.want)
		}
	}
}

func TestKeyOf(t *testing.T) {
	u := &unstructured.Unstructured{}
	u.SetNamespace("ns")
	u.SetName("web")
	got := keyOf(workloadObject{resource: resource{gvr: deploymentsGVR}, obj: u})
	if want := ck(deploymentsGVR, "ns", "web"); got != want {
		t.Errorf("keyOf() = %v, want %v", got, want)
	}
}

func keyStrings(keys []copyKey) []string {
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, k.String())
	}
	return out
}

var orderKeys = []copyKey{
	ck(deploymentsGVR, "ns-b", "web"),
	ck(namespacesGVR, "", "ns-b"),
	ck(configMapsGVR, "ns-a", "cfg"),
	ck(crdsGVR, "", "widgets.example.com"),
	ck(rolesGVR, "", "reader"),
	ck(namespacesGVR, "", "ns-a"),
	ck(crdsGVR, "", "gadgets.example.com"),
	ck(deploymentsGVR, "ns-a", "web"),
}

func TestGVROf(t *testing.T) {
	tests := []struct {
		gr         metav1.GroupResource
		apiVersion string
		want       schema.GroupVersionResource
	}{
		{metav1.GroupResource{Group: "apps", Resource: "deployments"}, "apps/v1", deploymentsGVR},
		{metav1.GroupResource{Resource: "configmaps"}, "v1", configMapsGVR},
	}
	for _, tt := range tests {
		if got := gvrOf(tt.gr, tt.apiVersion); got != tt.want {
			t.Errorf("gvrOf(%v, %q) = %v, want %v", tt.gr, tt.apiVersion, got, tt.want)
		}
	}
}

// computeDesired, on a controller whose informers are filled by hand (never started).

const (
	testInventory = "inv"
	testMailbox   = "inv-mb-u1"
)

func newTestInformer(indexers cache.Indexers) cache.SharedIndexInformer {
	indexers[kcpcache.ClusterIndexName] = kcpcache.ClusterIndexFunc
	return kcpinformers.NewSharedIndexInformer(&cache.ListWatch{}, &unstructured.Unstructured{}, 0, indexers)
}

func obj(apiVersion, kind, cluster, namespace, name string, labels map[string]string) *unstructured.Unstructured {
	return informertest.Object(apiVersion, kind, cluster, namespace, name, labels)
}

type testWorld struct {
	c *Controller
}

func newTestWorld(t *testing.T) *testWorld {
	t.Helper()
	resources := []resource{
		{gvr: namespacesGVR, kind: "Namespace"},
		{gvr: configMapsGVR, kind: "ConfigMap", namespaced: true},
		{gvr: deploymentsGVR, kind: "Deployment", namespaced: true},
	}
	c := &Controller{
		placements:  newTestInformer(cache.Indexers{}),
		slices:      newTestInformer(cache.Indexers{byMailbox: sliceMailboxes, byPlacement: slicePlacement, byLocation: sliceLocations}),
		customizers: newTestInformer(cache.Indexers{}),
		syncTargets: newTestInformer(cache.Indexers{syncTargetsByMailbox: syncTargetMailbox}),
		locations:   newTestInformer(cache.Indexers{}),
		bindings:    newTestInformer(cache.Indexers{}),
	}
	c.decodedSlices = newSliceDecoder(nil)
	c.workload = &sources{c: c, resources: resources, informers: map[schema.GroupVersionResource]centerview.SharedInformer{}, custom: map[customKey]*customSource{}}
	for _, r := range resources {
		c.workload.informers[r.gvr] = newTestInformer(cache.Indexers{})
	}
	return &testWorld{c: c}
}

func (w *testWorld) add(t *testing.T, inf centerview.SharedInformer, u *unstructured.Unstructured) {
	t.Helper()
	if err := inf.GetIndexer().Add(u); err != nil {
		t.Fatal(err)
	}
}

// placement adds an EdgePlacement with the given downsync tests, and its slice with the test
// mailbox as destination.
func (w *testWorld) placement(t *testing.T, cluster, name string, downsync []any) {
	t.Helper()
	p := obj("edge.kcp.io/v1alpha1", "EdgePlacement", cluster, "", name, nil)
	p.Object["spec"] = map[string]any{"downsync": downsync}
	w.add(t, w.c.placements, p)
	s := obj("edge.kcp.io/v1alpha1", "SinglePlacementSlice", cluster, "", name+"-slice", nil)
	yes := true
	s.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "edge.kcp.io/v1alpha1", Kind: "EdgePlacement", Name: name, UID: p.GetUID(), Controller: &yes}})
	s.Object["destinations"] = []any{map[string]any{"cluster": testInventory, "locationName": "loc", "syncTargetName": "st1", "syncTargetUID": "u1"}}
	w.add(t, w.c.slices, s)
}

func (w *testWorld) workload(t *testing.T, gvr schema.GroupVersionResource, u *unstructured.Unstructured) {
	t.Helper()
	w.add(t, w.c.workload.informers[gvr], u)
}

func deploymentsIn(ns string) []any {
	return []any{map[string]any{"apiGroup": "apps", "resources": []any{"deployments"}, "namespaces": []any{ns}}}
}

func TestComputeDesiredSelectsObjectsAndTheirNamespace(t *testing.T) {
	w := newTestWorld(t)
	w.placement(t, "ws1", "p1", deploymentsIn("app"))
	w.workload(t, namespacesGVR, obj("v1", "Namespace", "ws1", "", "app", map[string]string{"team": "one"}))
	w.workload(t, namespacesGVR, obj("v1", "Namespace", "ws1", "", "other", nil))
	w.workload(t, deploymentsGVR, obj("apps/v1", "Deployment", "ws1", "app", "web", nil))
	w.workload(t, deploymentsGVR, obj("apps/v1", "Deployment", "ws1", "other", "web", nil))
	w.workload(t, configMapsGVR, obj("v1", "ConfigMap", "ws1", "app", "cfg", nil))

	d, ok := w.c.computeDesired(testMailbox, nil)
	if !ok {
		t.Fatal("computeDesired() not ok")
	}
	want := []string{"deployments.apps/app/web", "namespaces/app"}
	var got []string
	for k := range d.copies {
		got = append(got, k.String())
	}
	sort.Strings(got)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("copies = %q, want %q", got, want)
	}
	if len(d.problems) != 0 {
		t.Errorf("problems = %+v, want none", d.problems)
	}
	if want := []placementKey{{"ws1", "p1"}}; !reflect.DeepEqual(d.placements, want) {
		t.Errorf("placements = %v, want %v", d.placements, want)
	}
	dep := d.copies[ck(deploymentsGVR, "app", "web")]
	if dep == nil {
		t.Fatal("no deployment copy")
	}
	if dep.source != "ws1" || !reflect.DeepEqual(dep.placements, []string{"p1"}) {
		t.Errorf("deployment copy source %q placements %v, want ws1 [p1]", dep.source, dep.placements)
	}
	if _, found := dep.obj.GetAnnotations()["kcp.io/cluster"]; found || dep.obj.GetUID() != "" || dep.obj.GetResourceVersion() != "" {
		t.Errorf("the copy is not sanitised: %v", dep.obj.Object)
	}
}

func TestComputeDesiredConflict(t *testing.T) {
	for _, tt := range []struct {
		name       string
		current    map[copyKey]copyRecord
		wantHolder string
	}{
		{"no copy yet", nil, "neither is projected"},
		{"a copy from ws2 already there", map[copyKey]copyRecord{ck(deploymentsGVR, "app", "web"): {source: "ws2"}}, "the copy from workspace ws2 stays"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newTestWorld(t)
			w.placement(t, "ws1", "p1", deploymentsIn("app"))
			w.placement(t, "ws1", "p3", deploymentsIn("app"))
			w.placement(t, "ws2", "p2", deploymentsIn("app"))
			for _, ws := range []string{"ws1", "ws2"} {
				w.workload(t, namespacesGVR, obj("v1", "Namespace", ws, "", "app", map[string]string{"from": ws}))
				w.workload(t, deploymentsGVR, obj("apps/v1", "Deployment", ws, "app", "web", nil))
			}
			w.workload(t, deploymentsGVR, obj("apps/v1", "Deployment", "ws1", "app", "only-ws1", nil))

			d, ok := w.c.computeDesired(testMailbox, tt.current)
			if !ok {
				t.Fatal("computeDesired() not ok")
			}
			web := ck(deploymentsGVR, "app", "web")
			if _, found := d.copies[web]; found {
				t.Errorf("the colliding deployment is projected")
			}
			if !d.keep[web] {
				t.Errorf("the colliding deployment is not kept")
			}
			only := d.copies[ck(deploymentsGVR, "app", "only-ws1")]
			if only == nil || !reflect.DeepEqual(only.placements, []string{"p1", "p3"}) {
				t.Errorf("only-ws1 copy = %+v, want one for placements p1 and p3", only)
			}
			// A namespace in both workspaces is no conflict: the first source's wins.
			ns := d.copies[ck(namespacesGVR, "", "app")]
			if ns == nil || ns.source != "ws1" || ns.obj.GetLabels()["from"] != "ws1" {
				t.Errorf("namespace copy = %+v, want the one from ws1", ns)
			}

			var conflicted []string
			for _, p := range d.problems {
				if p.reason != problemConflict {
					t.Errorf("unexpected problem %+v", p)
					continue
				}
				conflicted = append(conflicted, p.placement.String())
				for _, s := range []string{
					"destination inv:st1: deployments.apps/app/web is selected from more than one workload workspace",
					"EdgePlacement p1 of workspace ws1", "EdgePlacement p3 of workspace ws1", "EdgePlacement p2 of workspace ws2",
					tt.wantHolder,
				} {
					if !strings.Contains(p.message, s) {
						t.Errorf("conflict message %q does not contain %q", p.message, s)
					}
				}
			}
			sort.Strings(conflicted)
			if want := []string{"ws1|p1", "ws1|p3", "ws2|p2"}; !reflect.DeepEqual(conflicted, want) {
				t.Errorf("conflicts reported to %v, want %v", conflicted, want)
			}
		})
	}
}

func TestComputeDesiredInvalidDownsync(t *testing.T) {
	w := newTestWorld(t)
	w.placement(t, "ws1", "bad", []any{map[string]any{"labelSelectors": []any{map[string]any{"matchLabels": map[string]any{"not valid!": "x"}}}}})
	w.workload(t, configMapsGVR, obj("v1", "ConfigMap", "ws1", "app", "cfg", nil))

	d, ok := w.c.computeDesired(testMailbox, nil)
	if !ok {
		t.Fatal("computeDesired() not ok")
	}
	if len(d.copies) != 0 {
		t.Errorf("copies = %v, want none", d.copies)
	}
	if !d.keepSources["ws1"] {
		t.Errorf("the copies from ws1 are not kept")
	}
	if len(d.problems) != 1 {
		t.Fatalf("problems = %+v, want one", d.problems)
	}
	p := d.problems[0]
	if p.placement != (placementKey{"ws1", "bad"}) || p.reason != problemSelection ||
		!strings.HasPrefix(p.message, "destination inv:st1: spec.downsync[0].labelSelectors[0]") {
		t.Errorf("problem = %+v", p)
	}
}

func TestComputeDesiredUnknownResource(t *testing.T) {
	w := newTestWorld(t)
	w.placement(t, "ws1", "typo", []any{
		map[string]any{"resources": []any{"configmaps", "nosuchthings", "*"}, "namespaces": []any{"app"}},
		map[string]any{"apiGroup": "apps", "resources": []any{"deployment", "deployments"}, "namespaces": []any{"app"}},
		// configmaps exist, but not in apps.
		map[string]any{"apiGroup": "apps", "resources": []any{"configmaps"}},
	})
	w.workload(t, namespacesGVR, obj("v1", "Namespace", "ws1", "", "app", nil))
	w.workload(t, configMapsGVR, obj("v1", "ConfigMap", "ws1", "app", "cfg", nil))

	d, ok := w.c.computeDesired(testMailbox, nil)
	if !ok {
		t.Fatal("computeDesired() not ok")
	}
	if d.copies[ck(configMapsGVR, "app", "cfg")] == nil {
		t.Errorf("the rest of the placement is not delivered: copies %v", d.copies)
	}
	var got []string
	for _, p := range d.problems {
		if p.reason != problemUnknownResource {
			t.Errorf("problem %+v, want reason %s", p, problemUnknownResource)
		}
		got = append(got, p.message)
	}
	want := []string{
		`spec.downsync[0].resources names "nosuchthings", which is no resource of this workspace in any API group`,
		`spec.downsync[1].resources names "deployment", which is no resource of this workspace in API group "apps"`,
		`spec.downsync[2].resources names "configmaps", which is no resource of this workspace in API group "apps"`,
	}
	if len(got) != len(want) {
		t.Fatalf("problems = %q, want %d", got, len(want))
	}
	for i := range want {
		if !strings.Contains(got[i], want[i]) || !strings.Contains(got[i], "kubectl api-resources") || !strings.HasPrefix(got[i], "destination inv:st1: ") {
			t.Errorf("problem %d = %q, want it to contain %q, the fix and the destination", i, got[i], want[i])
		}
	}
}

func TestComputeDesiredNoPlacements(t *testing.T) {
	w := newTestWorld(t)
	w.workload(t, configMapsGVR, obj("v1", "ConfigMap", "ws1", "app", "cfg", nil))
	d, ok := w.c.computeDesired(testMailbox, nil)
	if !ok || len(d.copies) != 0 || len(d.problems) != 0 || len(d.placements) != 0 {
		t.Errorf("computeDesired() = %+v, %v; want nothing", d, ok)
	}
}

// edgeBinding is a workload workspace's APIBinding of edge.kcp.io, whose export claims
// ConfigMaps and Deployments, with the given answer to the ConfigMaps claim ("" for none).
func edgeBinding(cluster string, configMaps apisv1alpha2.AcceptablePermissionClaimState) *unstructured.Unstructured {
	claim := func(group, resource string) apisv1alpha2.PermissionClaim {
		return apisv1alpha2.PermissionClaim{GroupResource: apisv1alpha2.GroupResource{Group: group, Resource: resource}, Verbs: []string{"get"}}
	}
	b := &apisv1alpha2.APIBinding{
		Spec:   apisv1alpha2.APIBindingSpec{Reference: apisv1alpha2.BindingReference{Export: &apisv1alpha2.ExportBindingReference{Path: "root:espw", Name: "edge.kcp.io"}}},
		Status: apisv1alpha2.APIBindingStatus{ExportPermissionClaims: []apisv1alpha2.PermissionClaim{claim("", "configmaps"), claim("apps", "deployments")}},
	}
	answer := func(c apisv1alpha2.PermissionClaim, state apisv1alpha2.AcceptablePermissionClaimState) apisv1alpha2.AcceptablePermissionClaim {
		return apisv1alpha2.AcceptablePermissionClaim{ScopedPermissionClaim: apisv1alpha2.ScopedPermissionClaim{PermissionClaim: c}, State: state}
	}
	b.Spec.PermissionClaims = append(b.Spec.PermissionClaims, answer(claim("apps", "deployments"), apisv1alpha2.ClaimAccepted))
	if configMaps != "" {
		b.Spec.PermissionClaims = append(b.Spec.PermissionClaims, answer(claim("", "configmaps"), configMaps))
	}
	for _, a := range b.Spec.PermissionClaims {
		if a.State == apisv1alpha2.ClaimAccepted {
			b.Status.AppliedPermissionClaims = append(b.Status.AppliedPermissionClaims, a.ScopedPermissionClaim)
		}
	}
	raw, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(b)
	u := &unstructured.Unstructured{Object: raw}
	u.SetAPIVersion("apis.kcp.io/v1alpha2")
	u.SetKind("APIBinding")
	u.SetName("edge.kcp.io")
	return withCluster(u, cluster)
}

// TestComputeDesiredWithoutConsent: a workload workspace whose owner rejects (or never answers)
// edge.kcp.io's claim on ConfigMaps hides its ConfigMaps from the translator. The ConfigMaps the
// placement delivered before stay as they were, with the namespace of one alone in its namespace
// (which would otherwise leave, deleting what is in it at the edge), and a problem that names the
// claim; the
// Deployments, whose claim is accepted, are projected as usual; with the claim accepted, there is
// no problem and nothing is kept.
func TestComputeDesiredWithoutConsent(t *testing.T) {
	for _, tc := range []struct {
		state apisv1alpha2.AcceptablePermissionClaimState
		why   string
	}{
		{apisv1alpha2.ClaimRejected, "claim rejected"},
		{"", "claim not answered"},
		{apisv1alpha2.ClaimAccepted, ""},
	} {
		w := newTestWorld(t)
		w.placement(t, "ws1", "p1", []any{map[string]any{"namespaces": []any{"app", "quiet"}}})
		w.workload(t, namespacesGVR, obj("v1", "Namespace", "ws1", "", "app", nil))
		w.workload(t, namespacesGVR, obj("v1", "Namespace", "ws1", "", "quiet", nil))
		w.workload(t, deploymentsGVR, obj("apps/v1", "Deployment", "ws1", "app", "web", nil))
		w.add(t, w.c.bindings, edgeBinding("ws1", tc.state))
		// What the mailbox holds: the ConfigMaps delivered before the claim was withdrawn, one
		// of them the only object of its namespace.
		assemblage := transport.AssemblageName("ws1", "p1")
		current := map[copyKey]copyRecord{
			ck(configMapsGVR, "app", "cfg"):      {source: "ws1", assemblage: assemblage},
			ck(configMapsGVR, "quiet", "c2"):     {source: "ws1", assemblage: assemblage},
			ck(namespacesGVR, "", "quiet"):       {source: "ws1", assemblage: assemblage},
			ck(deploymentsGVR, "app", "web"):     {source: "ws1", assemblage: assemblage},
			ck(configMapsGVR, "other", "theirs"): {source: "ws2", assemblage: transport.AssemblageName("ws2", "p2")},
		}
		d, ok := w.c.computeDesired(testMailbox, current)
		if !ok {
			t.Fatal("computeDesired() not ok")
		}
		if d.copies[ck(deploymentsGVR, "app", "web")] == nil {
			t.Errorf("%q: the Deployment, whose claim is accepted, is not projected", tc.state)
		}
		if tc.why == "" {
			if len(d.keep) != 0 || len(d.problems) != 0 {
				t.Errorf("claim accepted: kept %v, problems %+v; want none", d.keep, d.problems)
			}
			continue
		}
		want := map[copyKey]bool{ck(configMapsGVR, "app", "cfg"): true, ck(configMapsGVR, "quiet", "c2"): true, ck(namespacesGVR, "", "quiet"): true}
		if !reflect.DeepEqual(d.keep, want) {
			t.Errorf("%s: kept %v, want ws1's ConfigMaps and the namespace of the one alone in it", tc.why, d.keep)
		}
		if len(d.problems) != 1 || d.problems[0].reason != problemNoConsent ||
			!strings.Contains(d.problems[0].message, "configmaps ("+tc.why+"; 2 object(s) kept)") || !strings.Contains(d.problems[0].message, "kubectl edge ensure wmw") {
			t.Errorf("%s: problems %+v, want one that names the ConfigMaps claim and the fix", tc.why, d.problems)
		}
	}
}

// TestConsentSettles: once a kind's claim is accepted and applied again, the workspace's mailboxes
// wait consentSettle for its objects to arrive, and only then; a workspace whose consent never
// went away does not wait.
func TestConsentSettles(t *testing.T) {
	var tr consentTracker
	start := time.Now()
	cm := schema.GroupResource{Resource: "configmaps"}
	if wait := tr.settling("ws1", nil, start); wait != 0 {
		t.Errorf("consent never lost: wait %s, want 0", wait)
	}
	if wait := tr.settling("ws1", map[schema.GroupResource]string{cm: "rejected"}, start); wait != 0 {
		t.Errorf("consent lost: wait %s, want 0 (what is out of sight is kept, not waited for)", wait)
	}
	if wait := tr.settling("ws1", nil, start.Add(time.Second)); wait != consentSettle {
		t.Errorf("consent back: wait %s, want %s", wait, consentSettle)
	}
	if wait := tr.settling("ws2", nil, start.Add(time.Second)); wait != 0 {
		t.Errorf("another workspace: wait %s, want 0", wait)
	}
	if wait := tr.settling("ws1", nil, start.Add(6*time.Second)); wait != consentSettle-5*time.Second {
		t.Errorf("5 s after consent came back: wait %s, want %s", wait, consentSettle-5*time.Second)
	}
	if wait := tr.settling("ws1", nil, start.Add(time.Second+consentSettle)); wait != 0 {
		t.Errorf("settled: wait %s, want 0", wait)
	}
}

func TestComputeDesiredSkipsUpsyncedObjects(t *testing.T) {
	w := newTestWorld(t)
	w.placement(t, "ws1", "p1", []any{map[string]any{"namespaces": []any{"app"}}})
	w.workload(t, namespacesGVR, obj("v1", "Namespace", "ws1", "", "app", nil))
	w.workload(t, configMapsGVR, obj("v1", "ConfigMap", "ws1", "app", "cfg", nil))
	w.workload(t, configMapsGVR, obj("v1", "ConfigMap", "ws1", "app", "report", map[string]string{edgev1alpha1.LabelUpsynced: "true", edgev1alpha1.LabelReturned: "true"}))
	d, ok := w.c.computeDesired(testMailbox, nil)
	if !ok {
		t.Fatal("computeDesired() not ok")
	}
	if _, found := d.copies[ck(configMapsGVR, "app", "report")]; found {
		t.Errorf("an up-synced object was selected for down-sync")
	}
	if _, found := d.copies[ck(configMapsGVR, "app", "cfg")]; !found {
		t.Errorf("the workspace's own object was not selected")
	}
}
