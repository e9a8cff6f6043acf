package upsync

import (
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	kcpinformers "github.com/kcp-dev/apimachinery/v2/third_party/informers"
	"github.com/kcp-dev/logicalcluster/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/kcp-dev/edge-mc/internal/informertest"
	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/centerview"
	"github.com/kcp-dev/edge-mc/pkg/controllerkit"
)

var (
	configMapsGR = configMapsGVR.GroupResource()
	cmKey        = Key{Cluster: "ws1", GR: configMapsGR, Namespace: "app", Name: "report"}
	t0           = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
)

// candidate is an up-synced object at a destination, created at the given offset from t0.
func candidate(syncTarget string, created time.Duration, placements ...PlacementKey) upsyncCandidate {
	u := obj("v1", "ConfigMap", "mb-"+syncTarget, "app", "report", map[string]string{edgev1alpha1.LabelUpsynced: "true"})
	u.SetCreationTimestamp(metav1.NewTime(t0.Add(created)))
	annotate(u, edgev1alpha1.AnnotationUpsyncedFrom, syncTarget)
	return upsyncCandidate{dest: edgev1alpha1.SinglePlacement{Cluster: "inv", SyncTargetName: syncTarget}, obj: u, placements: placements}
}

// returnedFrom is a copy that the return path made from the SyncTarget's object.
func returnedFrom(syncTarget string) *unstructured.Unstructured {
	u := obj("v1", "ConfigMap", "ws1", "app", "report", map[string]string{edgev1alpha1.LabelUpsynced: "true", edgev1alpha1.LabelReturned: "true"})
	annotate(u, edgev1alpha1.AnnotationUpsyncedFrom, syncTarget, edgev1alpha1.AnnotationUpsyncedFromCluster, "inv")
	return u
}

// annotate adds annotations, given as key, value, ..., to u.
func annotate(u *unstructured.Unstructured, kv ...string) {
	a := u.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		a[kv[i]] = kv[i+1]
	}
	u.SetAnnotations(a)
}

func TestChooseUpsyncSource(t *testing.T) {
	own := obj("v1", "ConfigMap", "ws1", "app", "report", nil)
	tests := []struct {
		name     string
		cands    []upsyncCandidate
		existing *unstructured.Unstructured
		want     string // the winner's SyncTarget; "" for none
	}{
		{"nothing up-synced", nil, nil, ""},
		{"nothing up-synced, an old copy there", nil, returnedFrom("a"), ""},
		{"one, nothing there", []upsyncCandidate{candidate("a", 0)}, nil, "a"},
		{"two, nothing there: the oldest", []upsyncCandidate{candidate("a", time.Minute), candidate("b", 0)}, nil, "b"},
		{"two as old: by destination name", []upsyncCandidate{candidate("b", 0), candidate("a", 0)}, nil, "a"},
		{"the one already there stays, though younger", []upsyncCandidate{candidate("a", 0), candidate("b", time.Hour)}, returnedFrom("b"), "b"},
		{"the one there is no longer up-synced: the oldest of the rest", []upsyncCandidate{candidate("b", time.Minute), candidate("c", 0)}, returnedFrom("a"), "c"},
		{"same SyncTarget name in another inventory is another destination", []upsyncCandidate{candidate("a", time.Minute), candidate("b", 0)},
			func() *unstructured.Unstructured {
				u := returnedFrom("a")
				annotate(u, edgev1alpha1.AnnotationUpsyncedFromCluster, "other-inv")
				return u
			}(), "b"},
		{"the workspace's own object is never replaced", []upsyncCandidate{candidate("a", 0)}, own, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if i := chooseUpsyncSource(tt.cands, tt.existing); i >= 0 {
				got = tt.cands[i].dest.SyncTargetName
			}
			if got != tt.want {
				t.Errorf("chooseUpsyncSource() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestChooseUpsyncSourceIsStable(t *testing.T) {
	// Whatever order the candidates come in, the same one wins; once it is there, it stays when
	// an older one appears.
	a, b := candidate("a", time.Minute), candidate("b", 2*time.Minute)
	for _, cands := range [][]upsyncCandidate{{a, b}, {b, a}} {
		if i := chooseUpsyncSource(cands, nil); cands[i].dest.SyncTargetName != "a" {
			t.Errorf("chooseUpsyncSource(%s first) = %s, want a", cands[0].dest.SyncTargetName, cands[i].dest.SyncTargetName)
		}
	}
	older := candidate("c", 0)
	if i := chooseUpsyncSource([]upsyncCandidate{a, b, older}, returnedFrom("a")); i != 0 {
		t.Errorf("an older object elsewhere displaced the copy already there: winner %d", i)
	}
}

func TestUpsyncConflicts(t *testing.T) {
	p1, p2 := PlacementKey{Cluster: "ws1", Name: "p1"}, PlacementKey{Cluster: "ws1", Name: "p2"}
	t.Run("one destination: none", func(t *testing.T) {
		if got := upsyncConflicts(cmKey, []upsyncCandidate{candidate("a", 0, p1)}, nil, 0); got != nil {
			t.Errorf("upsyncConflicts() = %v, want none", got)
		}
	})
	t.Run("nothing up-synced, an object of the workspace's own: none", func(t *testing.T) {
		if got := upsyncConflicts(cmKey, nil, obj("v1", "ConfigMap", "ws1", "app", "report", nil), -1); got != nil {
			t.Errorf("upsyncConflicts() = %v, want none", got)
		}
	})
	t.Run("two destinations: every placement concerned, naming both and the one kept", func(t *testing.T) {
		cands := []upsyncCandidate{candidate("a", 0, p1), candidate("b", 0, p1, p2)}
		got := upsyncConflicts(cmKey, cands, nil, 1)
		want := "configmaps/app/report is up-synced from more than one destination (inv:a, inv:b); the one from inv:b is kept"
		if len(got) != 2 || got[0].placement != p1 || got[1].placement != p2 {
			t.Fatalf("upsyncConflicts() = %+v, want one problem for each of p1 and p2", got)
		}
		for _, p := range got {
			if p.reason != problemUpsyncConflict || p.message != want {
				t.Errorf("problem = %s %q, want %s %q", p.reason, p.message, problemUpsyncConflict, want)
			}
		}
	})
	t.Run("an object of the workspace's own", func(t *testing.T) {
		got := upsyncConflicts(cmKey, []upsyncCandidate{candidate("a", 0, p1)}, obj("v1", "ConfigMap", "ws1", "app", "report", nil), -1)
		want := "configmaps/app/report is up-synced from inv:a, but the workspace has an object of its own there, which up-sync never overwrites"
		if len(got) != 1 || got[0].message != want {
			t.Errorf("upsyncConflicts() = %+v, want %q", got, want)
		}
	})
}

func TestReturnedCopy(t *testing.T) {
	up := obj("v1", "ConfigMap", "mb-a", "app", "report", map[string]string{edgev1alpha1.LabelUpsynced: "true", "app": "web"})
	annotate(up, edgev1alpha1.AnnotationUpsyncedFrom, "a", edgev1alpha1.AnnotationUpsyncHash, "syncers-hash", "note", "kept")
	up.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "edge-syncer"}})
	up.Object["data"] = map[string]any{"k": "v"}
	up.Object["status"] = map[string]any{"phase": "done"}
	dest := edgev1alpha1.SinglePlacement{Cluster: "inv", SyncTargetName: "a"}

	got := returnedCopy(up, WorkloadResource{GVR: configMapsGVR}, dest)
	if got.GetUID() != "" || got.GetResourceVersion() != "" || got.GetManagedFields() != nil {
		t.Errorf("the copy keeps what the mailbox server set: %v", got.Object["metadata"])
	}
	wantLabels := map[string]string{edgev1alpha1.LabelUpsynced: "true", edgev1alpha1.LabelReturned: "true", "app": "web"}
	if !reflect.DeepEqual(got.GetLabels(), wantLabels) {
		t.Errorf("labels = %v, want %v", got.GetLabels(), wantLabels)
	}
	a := got.GetAnnotations()
	if a[edgev1alpha1.AnnotationUpsyncedFrom] != "a" || a[edgev1alpha1.AnnotationUpsyncedFromCluster] != "inv" || a["note"] != "kept" || a["kcp.io/cluster"] != "" {
		t.Errorf("annotations = %v", a)
	}
	if h := a[edgev1alpha1.AnnotationUpsyncHash]; h == "" || h == "syncers-hash" {
		t.Errorf("hash annotation = %q, want the copy's own", h)
	}
	if got.Object["status"] == nil {
		t.Errorf("status dropped, but the resource has no status subresource: it is part of the object")
	}
	if up.GetAnnotations()[edgev1alpha1.AnnotationUpsyncHash] != "syncers-hash" || up.GetLabels()[edgev1alpha1.LabelReturned] != "" {
		t.Errorf("returnedCopy modified its input")
	}

	withStatus := returnedCopy(up, WorkloadResource{GVR: configMapsGVR, HasStatus: true}, dest)
	if withStatus.Object["status"] != nil {
		t.Errorf("status in the object, but the resource has a status subresource")
	}

	// The hash changes with the content and the destination, not with what the servers set.
	same := up.DeepCopy()
	same.SetResourceVersion("99")
	annotate(same, edgev1alpha1.AnnotationUpsyncHash, "another")
	if h := returnedCopy(same, WorkloadResource{GVR: configMapsGVR}, dest).GetAnnotations()[edgev1alpha1.AnnotationUpsyncHash]; h != a[edgev1alpha1.AnnotationUpsyncHash] {
		t.Errorf("hash changed with the resourceVersion or the syncer's hash")
	}
	changed := up.DeepCopy()
	changed.Object["data"] = map[string]any{"k": "w"}
	if h := returnedCopy(changed, WorkloadResource{GVR: configMapsGVR}, dest).GetAnnotations()[edgev1alpha1.AnnotationUpsyncHash]; h == a[edgev1alpha1.AnnotationUpsyncHash] {
		t.Errorf("hash unchanged by a change of content")
	}
	other := returnedCopy(up, WorkloadResource{GVR: configMapsGVR}, edgev1alpha1.SinglePlacement{Cluster: "inv", SyncTargetName: "b"})
	if other.GetAnnotations()[edgev1alpha1.AnnotationUpsyncHash] == a[edgev1alpha1.AnnotationUpsyncHash] {
		t.Errorf("hash unchanged by a change of destination")
	}
}

func TestConditions(t *testing.T) {
	pk := PlacementKey{Cluster: "ws1", Name: "p1"}
	conflict := problem{pk, problemUpsyncConflict, "configmaps/app/x is up-synced from more than one destination (inv:a, inv:b); the one from inv:a is kept"}
	write := problem{pk, problemUpsyncWrite, "creating the up-synced configmaps/app/y from inv:a: forbidden"}
	tests := []struct {
		name                     string
		ruleProblems             []string
		known                    bool
		problems                 []problem
		wantUpsynced             metav1.ConditionStatus
		wantReason               string
		wantConflict             metav1.ConditionStatus
		wantMessage, wantConfMsg string
	}{
		{"all well", nil, true, nil, metav1.ConditionTrue, ReasonUpsynced, metav1.ConditionFalse, "comes back", "no two destinations"},
		{"not known yet", nil, false, nil, metav1.ConditionFalse, ReasonUpsyncPending, metav1.ConditionFalse, "waiting", "no two destinations"},
		{"a conflict only", nil, true, []problem{conflict}, metav1.ConditionTrue, ReasonUpsynced, metav1.ConditionTrue, "comes back", "inv:a, inv:b"},
		{"a rule that cannot be honoured", []string{"spec.upsync[0]: leases.coordination.k8s.io cannot come back"}, true, nil,
			metav1.ConditionFalse, ReasonUpsyncFailed, metav1.ConditionFalse, "1 problem(s): spec.upsync[0]: leases", "no two destinations"},
		{"a write error and a conflict", nil, true, []problem{write, conflict}, metav1.ConditionFalse, ReasonUpsyncFailed, metav1.ConditionTrue,
			"UpsyncWriteError: creating the up-synced configmaps/app/y", "configmaps/app/x"},
		{"failures win over not known", []string{"bad rule"}, false, nil, metav1.ConditionFalse, ReasonUpsyncFailed, metav1.ConditionFalse, "bad rule", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			upsynced, conf := conditions(tt.ruleProblems, tt.known, tt.problems)
			if upsynced.Type != edgev1alpha1.PlacementUpsynced || upsynced.Status != tt.wantUpsynced || upsynced.Reason != tt.wantReason || !strings.Contains(upsynced.Message, tt.wantMessage) {
				t.Errorf("Upsynced = %s %s %q, want %s %s containing %q", upsynced.Status, upsynced.Reason, upsynced.Message, tt.wantUpsynced, tt.wantReason, tt.wantMessage)
			}
			wantReason := ReasonNoUpsyncConflict
			if tt.wantConflict == metav1.ConditionTrue {
				wantReason = edgev1alpha1.ReasonConflictingUpsync
			}
			if conf.Type != edgev1alpha1.PlacementUpsyncConflict || conf.Status != tt.wantConflict || conf.Reason != wantReason || !strings.Contains(conf.Message, tt.wantConfMsg) {
				t.Errorf("UpsyncConflict = %s %s %q, want %s %s containing %q", conf.Status, conf.Reason, conf.Message, tt.wantConflict, wantReason, tt.wantConfMsg)
			}
		})
	}
}

func TestResults(t *testing.T) {
	r := newResults()
	p1, p2 := PlacementKey{Cluster: "ws1", Name: "p1"}, PlacementKey{Cluster: "ws1", Name: "p2"}
	k2 := Key{Cluster: "ws1", GR: configMapsGR, Namespace: "app", Name: "other"}
	if got := r.set(cmKey, nil); got != nil {
		t.Errorf("set(no problems) on nothing = %v, want nil", got)
	}
	got := r.set(cmKey, []problem{{p1, problemUpsyncConflict, "m1"}, {p2, problemUpsyncConflict, "m1"}})
	if len(sortedPlacementKeys(got)) != 2 {
		t.Errorf("set() affected %v, want p1 and p2", got)
	}
	if got := r.set(cmKey, []problem{{p1, problemUpsyncConflict, "m1"}, {p2, problemUpsyncConflict, "m1"}}); got != nil {
		t.Errorf("set(unchanged) = %v, want nil", got)
	}
	r.set(k2, []problem{{p1, problemUpsyncWrite, "m2"}})
	problems, keys := r.of(p1)
	if len(problems) != 2 || problems[0].message != "m1" || problems[1].message != "m2" || len(keys) != 2 {
		t.Errorf("of(p1) = %v %v, want m1 and m2 for both keys", problems, keys)
	}
	if got := r.set(cmKey, []problem{{p1, problemUpsyncConflict, "m1"}}); !reflect.DeepEqual(sortedPlacementKeys(got), []PlacementKey{p1, p2}) {
		t.Errorf("set(p2 no longer concerned) affected %v, want p1 and p2", got)
	}
	if problems, _ := r.of(p2); len(problems) != 0 {
		t.Errorf("of(p2) = %v, want none", problems)
	}
	r.set(cmKey, nil)
	r.set(k2, nil)
	if len(r.byKey) != 0 || len(r.byPlacement) != 0 {
		t.Errorf("cleared results keep room: %v %v", r.byKey, r.byPlacement)
	}
}

func TestRulesOf(t *testing.T) {
	p := obj("edge.kcp.io/v1alpha1", "EdgePlacement", "ws1", "", "p", nil)
	if got := rulesOf(p); got != nil {
		t.Errorf("rulesOf(no spec) = %v, want nil", got)
	}
	p.Object["spec"] = map[string]any{"upsync": []any{
		map[string]any{"apiGroup": "apps", "resources": []any{"deployments"}, "namespaces": []any{"app"}, "names": []any{"web"}},
		map[string]any{"resources": []any{"*"}},
	}}
	want := []edgev1alpha1.UpsyncSet{
		{APIGroup: "apps", Resources: []string{"deployments"}, Namespaces: []string{"app"}, Names: []string{"web"}},
		{Resources: []string{"*"}},
	}
	if got := rulesOf(p); !reflect.DeepEqual(got, want) {
		t.Errorf("rulesOf() = %+v, want %+v", got, want)
	}
}

func TestUpsyncSourcesCoverage(t *testing.T) {
	c := &Controller{caches: Caches{WorkloadResources: []WorkloadResource{{GVR: configMapsGVR}, {GVR: namespacesGVR}, {GVR: deploymentsGVR}}}}
	s := newSources(c)
	leases := schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}
	s.returnable[configMapsGR] = configMapsGVR
	s.returnable[deploymentsGVR.GroupResource()] = deploymentsGVR
	p1, p2 := PlacementKey{Cluster: "ws1", Name: "p1"}, PlacementKey{Cluster: "ws1", Name: "p2"}
	if !s.setRules(p1, []edgev1alpha1.UpsyncSet{{Resources: []string{"configmaps"}}}) {
		t.Errorf("setRules(new) = false")
	}
	if s.setRules(p1, []edgev1alpha1.UpsyncSet{{Resources: []string{"configmaps"}}}) {
		t.Errorf("setRules(same) = true")
	}
	if s.setRules(p2, nil) {
		t.Errorf("setRules(none, for a placement without rules) = true")
	}
	s.setRules(p2, []edgev1alpha1.UpsyncSet{{Resources: []string{"*"}}, {APIGroup: "apps", Resources: []string{"deployments"}}})
	if s.coverage[configMapsGR] != 2 || s.coverage[deploymentsGVR.GroupResource()] != 1 || s.coverage[leases] != 0 {
		t.Errorf("coverage = %v", s.coverage)
	}
	s.setRules(p2, nil)
	if s.coverage[configMapsGR] != 1 || s.coverage[deploymentsGVR.GroupResource()] != 0 {
		t.Errorf("coverage after p2 went = %v", s.coverage)
	}

	// What the rules name that cannot come back.
	s.clients[edgev1alpha1.MailboxAPIExportName] = nil
	problems, known := s.unreturnable([]edgev1alpha1.UpsyncSet{{Resources: []string{"configmaps", "namespaces"}}, {APIGroup: "coordination.k8s.io", Resources: []string{"leases"}}})
	if !known || len(problems) != 2 || !strings.Contains(problems[0], "spec.upsync[0]: namespaces do not come back") ||
		!strings.Contains(problems[1], "spec.upsync[1]: leases.coordination.k8s.io cannot come back") {
		t.Errorf("unreturnable() = %q, %v", problems, known)
	}
	if _, known := s.unreturnable([]edgev1alpha1.UpsyncSet{{APIGroup: "apps", Resources: []string{"deployments"}}}); known {
		t.Errorf("unreturnable(deployments) known before the workloads export's virtual workspace is")
	}
	s.clients[edgev1alpha1.WorkloadsAPIExportName] = nil
	problems, known = s.unreturnable([]edgev1alpha1.UpsyncSet{{APIGroup: "example.com", Resources: []string{"*"}}, {APIGroup: "apps", Resources: []string{"*"}}})
	if !known || len(problems) != 1 || !strings.Contains(problems[0], `spec.upsync[0]: no resource of group "example.com" can come back`) {
		t.Errorf("unreturnable(custom group) = %q, %v", problems, known)
	}
}

var (
	deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	configMapsGVR  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

func obj(apiVersion, kind, cluster, namespace, name string, labels map[string]string) *unstructured.Unstructured {
	return informertest.Object(apiVersion, kind, cluster, namespace, name, labels)
}

func sortedPlacementKeys(pks []PlacementKey) []PlacementKey {
	out := append([]PlacementKey(nil), pks...)
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

func add(t *testing.T, inf cache.SharedIndexInformer, u *unstructured.Unstructured) {
	t.Helper()
	if err := inf.GetIndexer().Add(u); err != nil {
		t.Fatal(err)
	}
}

// newTestController is a controller whose caches hold placements (added by the test) that all
// have one destination, inv:st1, whose mailbox has the logical cluster mbc1; the mailbox export's
// virtual workspace is known, with a running (hand-filled) informer on up-synced ConfigMaps.
func newTestController(t *testing.T) (*Controller, cache.SharedIndexInformer) {
	t.Helper()
	placements := kcpinformers.NewSharedIndexInformer(&cache.ListWatch{}, &unstructured.Unstructured{}, 0,
		cache.Indexers{kcpcache.ClusterIndexName: kcpcache.ClusterIndexFunc})
	st1 := edgev1alpha1.SinglePlacement{Cluster: "inv", LocationName: "loc", SyncTargetName: "st1", SyncTargetUID: "u1"}
	c := &Controller{
		caches: Caches{
			Placements:        placements,
			WorkloadResources: []WorkloadResource{{GVR: namespacesGVR}, {GVR: configMapsGVR}},
			PlacementsAt: func(mb logicalcluster.Name) map[PlacementKey]edgev1alpha1.SinglePlacement {
				if mb != "mbc1" {
					return nil
				}
				out := map[PlacementKey]edgev1alpha1.SinglePlacement{}
				for _, item := range placements.GetStore().List() {
					u := centerview.AsUnstructured(item)
					out[PlacementKey{Cluster: logicalcluster.From(u).String(), Name: u.GetName()}] = st1
				}
				return out
			},
		},
		results: newResults(),
	}
	c.sources = newSources(c)
	c.sources.clients[edgev1alpha1.MailboxAPIExportName] = nil // known below, without a client
	inf := informertest.Synced(t, cache.Indexers{byIdentity: identityIndex})
	c.sources.returnable[configMapsGR] = configMapsGVR
	c.sources.watches[configMapsGR] = &upsyncedWatch{informer: inf, stop: func() {}}
	return c, inf
}

func TestUpsyncCandidates(t *testing.T) {
	c, inf := newTestController(t)
	placements := c.caches.Placements.(cache.SharedIndexInformer)
	setUpsync := func(cluster, name string, rules ...any) {
		p := obj("edge.kcp.io/v1alpha1", "EdgePlacement", cluster, "", name, nil)
		p.Object["spec"] = map[string]any{"upsync": rules}
		add(t, placements, p)
	}
	setUpsync("ws1", "p1")
	setUpsync("ws2", "other")
	upsynced := func(cluster, ns, name string) {
		u := obj("v1", "ConfigMap", cluster, ns, name, map[string]string{edgev1alpha1.LabelUpsynced: "true"})
		annotate(u, edgev1alpha1.AnnotationUpsyncedFrom, "st1")
		add(t, inf, u)
	}
	upsynced("mbc1", "app", "report")
	upsynced("mbc-unknown", "app", "report") // a mailbox of no known SyncTarget
	// A namespace the syncer made in the mailbox bears the label but not the annotation.
	add(t, inf, obj("v1", "ConfigMap", "mbc1", "app", "unmarked", map[string]string{edgev1alpha1.LabelUpsynced: "true"}))

	cands, known := c.upsyncCandidates(cmKey)
	if !known || len(cands) != 0 {
		t.Errorf("no rule covers configmaps: candidates %v known %v, want none, known", cands, known)
	}
	setUpsync("ws1", "p1", map[string]any{"resources": []any{"configmaps"}, "namespaces": []any{"other"}})
	if cands, known := c.upsyncCandidates(cmKey); !known || len(cands) != 0 {
		t.Errorf("the rule covers another namespace: candidates %v, want none", cands)
	}
	setUpsync("ws1", "p1", map[string]any{"resources": []any{"configmaps"}, "namespaces": []any{"app"}})
	cands, known = c.upsyncCandidates(cmKey)
	if !known || len(cands) != 1 || cands[0].dest.SyncTargetName != "st1" || !reflect.DeepEqual(cands[0].placements, []PlacementKey{{Cluster: "ws1", Name: "p1"}}) {
		t.Errorf("candidates = %+v known %v, want the object of st1's mailbox, for p1", cands, known)
	}
	// Another workspace's placement with the same destination covers nothing of ws1.
	setUpsync("ws2", "other", map[string]any{"resources": []any{"*"}})
	if cands, _ := c.upsyncCandidates(cmKey); len(cands) != 1 || len(cands[0].placements) != 1 {
		t.Errorf("candidates = %+v, want p1's only", cands)
	}
	if cands, _ := c.upsyncCandidates(Key{Cluster: "ws1", GR: configMapsGR, Namespace: "app", Name: "unmarked"}); len(cands) != 0 {
		t.Errorf("an object without its origin counted as up-synced: %+v", cands)
	}

	// Not known while the informer of a covered resource has not synced, or its virtual
	// workspace is not known yet.
	delete(c.sources.watches, configMapsGR)
	if _, known := c.upsyncCandidates(cmKey); known {
		t.Errorf("known without an informer on configmaps")
	}
	delete(c.sources.clients, edgev1alpha1.MailboxAPIExportName)
	if _, known := c.upsyncCandidates(cmKey); known {
		t.Errorf("known without the mailbox export's virtual workspace")
	}
}

// TestUpsyncStaysWithinTheWorkspace: an up-synced object comes back to a workspace only from a
// namespace it delivers to that destination, or one that only the edge has; not from a namespace
// that another workspace delivers there (another tenant's, as the translator's caches tell), nor
// from the edge's own.
func TestUpsyncStaysWithinTheWorkspace(t *testing.T) {
	viewSynced := false
	c := &Controller{caches: Caches{DeliveredByOthersOnly: func(mb logicalcluster.Name, cluster, namespace string) (bool, bool) {
		return mb == "mbc1" && cluster == "ws1" && namespace == "theirs", viewSynced
	}}}
	p1 := PlacementKey{Cluster: "ws1", Name: "p1"}
	cand := upsyncCandidate{obj: obj("v1", "ConfigMap", "mbc1", "x", "r", nil), placements: []PlacementKey{p1},
		dest: edgev1alpha1.SinglePlacement{Cluster: "inv", SyncTargetName: "st1"}}
	// Until the translator knows every mailbox's assemblages, nothing in a namespace comes back:
	// it might be another tenant's.
	if kept, refused, known := c.withoutOthersNamespaces(Key{Cluster: "ws1", GR: configMapsGR, Namespace: "mine", Name: "r"}, []upsyncCandidate{cand}); known || kept != nil || refused != nil {
		t.Errorf("before the view synced: kept %v, refused %v, known %v; want nothing, not known", kept, refused, known)
	}
	viewSynced = true
	for _, tc := range []struct {
		namespace string
		kept      bool
		why       string
	}{
		{"mine", true, ""},
		{"", true, ""}, // cluster-scoped
		{"theirs", false, "another workspace delivers that namespace there"},
		{"kube-system", false, "a namespace of the edge cluster itself"},
		{"edge-syncer", false, "a namespace of the edge cluster itself"},
	} {
		key := Key{Cluster: "ws1", GR: configMapsGR, Namespace: tc.namespace, Name: "r"}
		kept, refused, _ := c.withoutOthersNamespaces(key, []upsyncCandidate{cand})
		if tc.kept {
			if len(kept) != 1 || len(refused) != 0 {
				t.Errorf("namespace %q: kept %d, refused %+v; want it returned", tc.namespace, len(kept), refused)
			}
			continue
		}
		if len(kept) != 0 || len(refused) != 1 || refused[0].placement != p1 || !strings.Contains(refused[0].message, tc.why) || !strings.Contains(refused[0].message, "inv:st1") {
			t.Errorf("namespace %q: kept %d, refused %+v; want it refused to p1, saying %q and naming the destination", tc.namespace, len(kept), refused, tc.why)
		}
	}
}

func TestServedResources(t *testing.T) {
	watchable := []string{"get", "list", "watch"}
	lists := []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "configmaps", Verbs: watchable}, {Name: "configmaps/status", Verbs: watchable}, {Name: "bindings", Verbs: []string{"create"}}}},
		{GroupVersion: "example.com/v2", APIResources: []metav1.APIResource{{Name: "widgets", Verbs: watchable}}},
		{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{{Name: "widgets", Verbs: watchable}}},
	}
	want := map[schema.GroupResource]schema.GroupVersionResource{
		configMapsGR: configMapsGVR,
		{Group: "example.com", Resource: "widgets"}: {Group: "example.com", Version: "v2", Resource: "widgets"},
	}
	if got := servedResources(lists); !reflect.DeepEqual(got, want) {
		t.Errorf("servedResources() = %v, want %v (no subresources, nothing that cannot be watched, the preferred version)", got, want)
	}
}

// TestEnqueueMailbox: when whose namespaces a mailbox's assemblages deliver changes, the
// identities of the up-synced objects in that mailbox are looked at again.
func TestEnqueueMailbox(t *testing.T) {
	c, inf := newTestController(t)
	c.queue = controllerkit.NewQueue[queueKey](controllerkit.Options{Name: "test"})
	defer c.queue.ShutDown()
	p := obj("edge.kcp.io/v1alpha1", "EdgePlacement", "ws1", "", "p1", nil)
	p.Object["spec"] = map[string]any{"upsync": []any{map[string]any{"resources": []any{"configmaps"}}}}
	add(t, c.caches.Placements.(cache.SharedIndexInformer), p)
	u := obj("v1", "ConfigMap", "mbc1", "app", "report-mbc1", map[string]string{edgev1alpha1.LabelUpsynced: "true"})
	annotate(u, edgev1alpha1.AnnotationUpsyncedFrom, "st1")
	add(t, inf, u)
	c.enqueueMailbox("mbc2")
	if c.queue.Len() != 0 {
		t.Fatalf("%d keys queued for a mailbox that holds no up-synced object", c.queue.Len())
	}
	c.enqueueMailbox("mbc1")
	if c.queue.Len() != 1 {
		t.Fatalf("%d keys queued, want the one up-synced object of mbc1", c.queue.Len())
	}
	got, _ := c.queue.Get()
	if want := (queueKey{object: Key{Cluster: "ws1", GR: configMapsGR, Namespace: "app", Name: "report-mbc1"}}); got != want {
		t.Errorf("queued %+v, want %+v", got, want)
	}
}
