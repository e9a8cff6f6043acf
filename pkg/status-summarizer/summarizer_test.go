package statussummarizer

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	kcpinformers "github.com/kcp-dev/apimachinery/v2/third_party/informers"
	"github.com/kcp-dev/logicalcluster/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/centerview"
	"github.com/kcp-dev/edge-mc/pkg/controllerkit"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

const (
	wmw = "wmw1"
	imw = "imw1"

	webKey    = "deployments.apps/app/web"
	nsKey     = "namespaces/app"
	widgetKey = "widgets.example.com/app/w1"
)

var deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

func withCluster(u *unstructured.Unstructured, cluster string) *unstructured.Unstructured {
	a := u.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[logicalcluster.AnnotationKey] = cluster
	u.SetAnnotations(a)
	return u
}

func newTestInformer(indexers cache.Indexers) cache.SharedIndexInformer {
	indexers[kcpcache.ClusterIndexName] = kcpcache.ClusterIndexFunc
	return kcpinformers.NewSharedIndexInformer(&cache.ListWatch{}, &unstructured.Unstructured{}, 0, indexers)
}

func placementObject(name string, singleton bool) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": edgev1alpha1.SchemeGroupVersion.String(), "kind": "EdgePlacement",
		"metadata": map[string]any{"name": name, "generation": int64(3), "resourceVersion": "10"},
		"spec":     map[string]any{"wantSingletonReportedState": singleton},
	}}
	return withCluster(u, wmw)
}

func sliceObject(placement string, syncTargets ...string) *unstructured.Unstructured {
	var dests []any
	for _, st := range syncTargets {
		dests = append(dests, map[string]any{"cluster": imw, "locationName": "loc", "syncTargetName": st, "syncTargetUID": "uid-" + st})
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": edgev1alpha1.SchemeGroupVersion.String(), "kind": "SinglePlacementSlice",
		"metadata":     map[string]any{"name": placement + "-slice", "labels": map[string]any{edgev1alpha1.LabelPlacement: placement}},
		"destinations": dests,
	}}
	return withCluster(u, wmw)
}

// syncTargetObject is a SyncTarget whose mailbox has the logical cluster mailbox ("" for none
// yet), with its syncer stale or not.
func syncTargetObject(name, mailbox string, stale bool) *unstructured.Unstructured {
	reason := edgev1alpha1.ReasonHeartbeatCurrent
	status := "True"
	if stale {
		reason, status = edgev1alpha1.ReasonHeartbeatStale, "Unknown"
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": edgev1alpha1.SchemeGroupVersion.String(), "kind": "SyncTarget",
		"metadata": map[string]any{"name": name, "uid": "uid-" + name},
		"status": map[string]any{"mailboxCluster": mailbox, "conditions": []any{map[string]any{
			"type": edgev1alpha1.SyncTargetSyncerReady, "status": status, "reason": reason, "lastTransitionTime": "2026-11-21T12:00:00Z"}}},
	}}
	return withCluster(u, imw)
}

// assemblageObject is a placement's assemblage in a mailbox, as the server holds it: its data,
// and a status as a syncer writes it, with each object "key=State[=reason]" and a Deployment's
// status for the Deployment.
func assemblageObject(t *testing.T, mailbox, placement string, states ...string) *unstructured.Unstructured {
	t.Helper()
	entries := []transport.Entry{{Version: "v1", Resource: "namespaces", Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "app"}}}}
	var keys []string
	for _, s := range states {
		keys = append(keys, strings.SplitN(s, "=", 2)[0])
	}
	enc, err := transport.Encode(entries)
	if err != nil {
		t.Fatal(err)
	}
	a := &edgev1alpha1.Assemblage{
		TypeMeta:   metav1.TypeMeta{APIVersion: edgev1alpha1.SchemeGroupVersion.String(), Kind: "Assemblage"},
		ObjectMeta: metav1.ObjectMeta{Name: transport.AssemblageName(wmw, placement), ResourceVersion: "5", Generation: 1},
		Spec: edgev1alpha1.AssemblageSpec{
			Placement: edgev1alpha1.PlacementReference{Cluster: wmw, Name: placement},
			Version:   enc.Version, Format: transport.FormatV1, Parts: 1, Data: enc.Pieces[0], Digest: enc.Digests[0],
			Objects: keys, ObjectCount: int32(len(keys)),
		},
	}
	a.Status.ObservedVersion = enc.Version
	a.Status.AppliedVersion = enc.Version
	for _, s := range states {
		parts := strings.SplitN(s, "=", 3)
		o := edgev1alpha1.ObjectState{Object: parts[0], State: parts[1], UID: "edge-uid"}
		if len(parts) == 3 {
			o.Reason = parts[2]
		}
		if o.Object == webKey {
			ready := o.State == edgev1alpha1.ObjectReady
			raw, _ := json.Marshal(deploymentStatus(ready))
			o.Status = &runtime.RawExtension{Raw: raw}
		}
		a.Status.Objects = append(a.Status.Objects, o)
	}
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(a)
	if err != nil {
		t.Fatal(err)
	}
	return withCluster(&unstructured.Unstructured{Object: raw}, mailbox)
}

func deploymentStatus(ready bool) map[string]any {
	s := map[string]any{"observedGeneration": int64(7), "replicas": int64(1), "updatedReplicas": int64(1)}
	if ready {
		s["readyReplicas"], s["availableReplicas"] = int64(1), int64(1)
	}
	return s
}

// testWorld is a controller on informers that the test fills, with the assemblages' watch fed by
// a fake list and watch, the workload objects in a fake dynamic client, and the placement status
// writes recorded.
type testWorld struct {
	t         *testing.T
	c         *Controller
	watcher   *watch.FakeWatcher
	objects   *dynamicfake.FakeDynamicClient
	written   []*unstructured.Unstructured
	gets      int // assemblages read from the server
	server    map[string]*unstructured.Unstructured
	placement map[string]*unstructured.Unstructured
}

func newTestWorld(t *testing.T, assemblages []*unstructured.Unstructured, objects ...runtime.Object) *testWorld {
	t.Helper()
	w := &testWorld{t: t, watcher: watch.NewFake(), server: map[string]*unstructured.Unstructured{}}
	for _, a := range assemblages {
		w.server[logicalcluster.From(a).String()+"|"+a.GetName()] = a
	}
	w.c = newController(Config{}, newTestInformer(cache.Indexers{}), newTestInformer(sliceIndexers()), newTestInformer(cache.Indexers{}), newAssemblageWatch(nil))
	// No coalescing: the tests look at what each event queues.
	w.c.placementQueue = controllerkit.NewQueue[placementKey](controllerkit.Options{Name: "test-placements"})
	w.c.objectQueue = controllerkit.NewQueue[objectKey](controllerkit.Options{Name: "test-objects"})
	synced := make(chan struct{})
	enqueueAll := w.c.assemblages.synced
	w.c.assemblages.synced = func() { enqueueAll(); close(synced) }
	w.c.writePlacementStatus = func(_ context.Context, cluster string, u *unstructured.Unstructured) error {
		if cluster != wmw {
			t.Errorf("status written into %s, want %s", cluster, wmw)
		}
		w.written = append(w.written, u)
		return nil
	}
	w.objects = dynamicfake.NewSimpleDynamicClient(runtime.NewScheme(), objects...)
	w.c.objectClient = func(_ context.Context, k objectKey) (dynamic.ResourceInterface, error) {
		if k.key.Group == "example.com" {
			return nil, apierrors.NewNotFound(schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}, "widgets.example.com")
		}
		return w.objects.Resource(deploymentsGVR).Namespace(k.key.Namespace), nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "edge.kcp.io/v1alpha1", "kind": "AssemblageList"}}
			list.SetResourceVersion("1")
			for _, a := range assemblages {
				list.Items = append(list.Items, *a.DeepCopy())
			}
			return list, nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return w.watcher, nil },
	}
	indexers := centerview.Indexers()
	indexers[kcpcache.ClusterIndexName] = kcpcache.ClusterIndexFunc
	informer := kcpinformers.NewSharedIndexInformer(listThenWatch{lw}, &unstructured.Unstructured{}, 0, indexers)
	if err := informer.SetTransform(centerview.Slim); err != nil {
		t.Fatal(err)
	}
	go w.c.assemblages.run(ctx, informer, func(_ context.Context, mailbox logicalcluster.Name, name string) (*unstructured.Unstructured, error) {
		w.gets++
		u, ok := w.server[mailbox.String()+"|"+name]
		if !ok {
			return nil, apierrors.NewNotFound(assemblagesGVR.GroupResource(), name)
		}
		return u.DeepCopy(), nil
	})
	select {
	case <-synced:
	case <-time.After(10 * time.Second):
		t.Fatal("the assemblage cache did not sync")
	}
	return w
}

// listThenWatch is a ListWatch that, like the fake clients, does not stream the initial list
// in its watch, so that the informer lists first.
type listThenWatch struct{ *cache.ListWatch }

func (listThenWatch) IsWatchListSemanticsUnSupported() bool { return true }

func (w *testWorld) add(informer centerview.SharedInformer, objs ...*unstructured.Unstructured) {
	for _, o := range objs {
		if err := informer.GetIndexer().Add(o); err != nil {
			w.t.Fatal(err)
		}
	}
}

// modify changes an assemblage on the server and sends the event, and waits for the cache to
// hold it.
func (w *testWorld) modify(u *unstructured.Unstructured) {
	w.t.Helper()
	w.server[logicalcluster.From(u).String()+"|"+u.GetName()] = u
	w.watcher.Modify(u.DeepCopy())
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, a := range w.c.assemblages.all() {
			if logicalcluster.From(a) == logicalcluster.From(u) && a.Name == u.GetName() && a.ResourceVersion == u.GetResourceVersion() {
				return
			}
		}
		if time.Now().After(deadline) {
			w.t.Fatal("the assemblage cache did not take the change")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// syncPlacement runs a pass over the placement and returns the status it wrote (nil if none),
// which it puts into the placement cache as the server would.
func (w *testWorld) syncPlacement(name string) *edgev1alpha1.EdgePlacementStatus {
	w.t.Helper()
	before := len(w.written)
	if err := w.c.syncPlacement(context.Background(), placementKey{cluster: wmw, name: name}); err != nil {
		w.t.Fatal(err)
	}
	if len(w.written) == before {
		return nil
	}
	u := w.written[len(w.written)-1]
	w.add(w.c.placements, u)
	p := &edgev1alpha1.EdgePlacement{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
		w.t.Fatal(err)
	}
	return &p.Status
}

func (w *testWorld) syncObject(key string) {
	w.t.Helper()
	k, ok := transport.ParseKey(key)
	if !ok {
		w.t.Fatalf("bad key %s", key)
	}
	if err := w.c.syncObject(context.Background(), objectKey{cluster: wmw, key: k}); err != nil {
		w.t.Fatal(err)
	}
}

func (w *testWorld) object(namespace, name string) *unstructured.Unstructured {
	w.t.Helper()
	u, err := w.objects.Resource(deploymentsGVR).Namespace(namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	return u
}

func deployment(namespace, name string, generation int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name, "namespace": namespace, "generation": generation},
		"spec":     map[string]any{"replicas": int64(1)},
	}}
}

func TestPlacementSummary(t *testing.T) {
	w := newTestWorld(t, []*unstructured.Unstructured{
		assemblageObject(t, "mb-east", "app", nsKey+"=Ready", webKey+"=Ready", widgetKey+"=Ready"),
		assemblageObject(t, "mb-west", "app", nsKey+"=Ready", webKey+"=Failed=ProgressDeadlineExceeded", widgetKey+"=Applied"),
		assemblageObject(t, "mb-stray", "app", nsKey+"=Ready", webKey+"=Ready", widgetKey+"=Ready"), // a mailbox that is no destination
	})
	w.add(w.c.placements, placementObject("app", false))
	w.add(w.c.slices, sliceObject("app", "east", "west", "north", "south"))
	w.add(w.c.syncTargets, syncTargetObject("east", "mb-east", false), syncTargetObject("west", "mb-west", false),
		syncTargetObject("north", "", false), syncTargetObject("south", "mb-south", true))

	s := w.syncPlacement("app")
	if s == nil {
		t.Fatal("no status written")
	}
	if want := (edgev1alpha1.DestinationCounts{Ready: 1, Failed: 1, Pending: 1, Stale: 1}); *s.Summary != want {
		t.Errorf("summary %+v, want %+v", *s.Summary, want)
	}
	counts := map[string]edgev1alpha1.DestinationCounts{}
	for _, o := range s.Objects {
		counts[o.Object] = o.DestinationCounts
	}
	if s.ObjectCount != 3 || counts[widgetKey] != (edgev1alpha1.DestinationCounts{Ready: 1, Applied: 1, Pending: 1, Stale: 1}) {
		t.Errorf("objects %+v (%d): want 3, the custom kind counted like the others", s.Objects, s.ObjectCount)
	}
	if s.BrokenCount != 2 || len(s.Broken) != 2 {
		t.Fatalf("broken %+v, want the stale destination and the failed Deployment", s.Broken)
	}
	if b := s.Broken[1]; b.Destination != imw+":west" || b.Object != webKey || b.Reason != "ProgressDeadlineExceeded" {
		t.Errorf("broken entry %+v", b)
	}
	if s.SummaryTime == nil {
		t.Error("no summaryTime")
	}
	ready := findCondition(s.Conditions, edgev1alpha1.PlacementReady)
	if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != edgev1alpha1.ReasonFailing || ready.ObservedGeneration != 3 {
		t.Errorf("Ready condition %+v", ready)
	}
	if findCondition(s.Conditions, edgev1alpha1.PlacementSingletonStatus) != nil {
		t.Error("a SingletonStatus condition on a placement that does not want singleton status")
	}

	// Nothing changed: no write.
	if again := w.syncPlacement("app"); again != nil {
		t.Errorf("a second pass with nothing changed wrote %+v", again.Summary)
	}

	// The west edge recovers: one write, and the broken entry is gone.
	recovered := assemblageObject(t, "mb-west", "app", nsKey+"=Ready", webKey+"=Ready", widgetKey+"=Ready")
	recovered.SetResourceVersion("6")
	w.modify(recovered)
	s = w.syncPlacement("app")
	if s == nil || *s.Summary != (edgev1alpha1.DestinationCounts{Ready: 2, Pending: 1, Stale: 1}) || s.BrokenCount != 1 {
		t.Errorf("after recovery: %+v", s)
	}
}

func TestPlacementSummaryWaitsForTheAssemblages(t *testing.T) {
	c := newController(Config{}, newTestInformer(cache.Indexers{}), newTestInformer(sliceIndexers()), newTestInformer(cache.Indexers{}), newAssemblageWatch(nil))
	writes := 0
	c.writePlacementStatus = func(context.Context, string, *unstructured.Unstructured) error { writes++; return nil }
	for _, add := range []struct {
		inf centerview.SharedInformer
		obj *unstructured.Unstructured
	}{{c.placements, placementObject("app", false)}, {c.slices, sliceObject("app", "east")}, {c.syncTargets, syncTargetObject("east", "mb-east", false)}} {
		if err := add.inf.GetIndexer().Add(add.obj); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.syncPlacement(context.Background(), placementKey{cluster: wmw, name: "app"}); err != nil {
		t.Fatal(err)
	}
	if writes != 0 {
		t.Error("a summary was written before the mailboxes' assemblages were known: it would say pending what may be ready")
	}
}

func TestExecutingCount(t *testing.T) {
	w := newTestWorld(t, []*unstructured.Unstructured{
		assemblageObject(t, "mb-east", "app", nsKey+"=Ready", webKey+"=Ready"),
		assemblageObject(t, "mb-west", "app", nsKey+"=Ready", webKey+"=Pending=waiting for its namespace"),
		// another placement shares the Deployment at the east edge: counted once there
		assemblageObject(t, "mb-east", "other", webKey+"=Ready"),
	}, deployment("app", "web", 2))
	w.add(w.c.placements, placementObject("app", false), placementObject("other", false))
	w.syncObject(webKey)
	if got := w.object("app", "web").GetAnnotations()[edgev1alpha1.AnnotationExecutingCount]; got != "1" {
		t.Errorf("executing-count %q, want 1", got)
	}

	// The west edge applies it: the count is written without reading the object first.
	applied := assemblageObject(t, "mb-west", "app", nsKey+"=Ready", webKey+"=Applied")
	applied.SetResourceVersion("6")
	w.modify(applied)
	w.objects.ClearActions()
	w.syncObject(webKey)
	if got := w.object("app", "web").GetAnnotations()[edgev1alpha1.AnnotationExecutingCount]; got != "2" {
		t.Errorf("executing-count %q, want 2", got)
	}
	for _, a := range w.objects.Actions() {
		if a.GetVerb() == "get" && a != w.objects.Actions()[len(w.objects.Actions())-1] {
			t.Errorf("the object was read before its count was written: %v", a)
		}
	}
	if n := countVerbs(w.objects.Actions(), "patch"); n != 1 {
		t.Errorf("%d patches, want 1", n)
	}

	// Nothing changed for it: no write at all.
	w.objects.ClearActions()
	w.syncObject(webKey)
	if n := len(w.objects.Actions()); n != 0 {
		t.Errorf("%d requests with nothing to change, want none: %v", n, w.objects.Actions())
	}

	// The custom kind's CRD is gone, and with it the object: nothing to do, no error.
	w.syncObject(widgetKey)
}

func TestExecutingCountRemovedWhenNothingNamesTheObject(t *testing.T) {
	d := deployment("app", "web", 2)
	d.SetAnnotations(map[string]string{edgev1alpha1.AnnotationExecutingCount: "3"})
	w := newTestWorld(t, nil, d)
	w.syncObject(webKey)
	if got, ok := w.object("app", "web").GetAnnotations()[edgev1alpha1.AnnotationExecutingCount]; ok {
		t.Errorf("executing-count %q left on an object that no assemblage names", got)
	}
}

func TestSingletonStatus(t *testing.T) {
	w := newTestWorld(t, []*unstructured.Unstructured{
		assemblageObject(t, "mb-east", "solo", webKey+"=Ready"),
	}, deployment("app", "web", 4))
	w.add(w.c.placements, placementObject("solo", true))
	w.add(w.c.slices, sliceObject("solo", "east"))
	w.add(w.c.syncTargets, syncTargetObject("east", "mb-east", false), syncTargetObject("west", "mb-west", false))

	w.syncObject(webKey)
	u := w.object("app", "web")
	if from := u.GetAnnotations()[edgev1alpha1.AnnotationSingletonStatusFrom]; from != imw+":east" {
		t.Errorf("singleton-status-from %q", from)
	}
	if r, _, _ := unstructured.NestedInt64(u.Object, "status", "readyReplicas"); r != 1 {
		t.Errorf("status %v, want the edge's, ready", u.Object["status"])
	}
	if og, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration"); og != 4 {
		t.Errorf("observedGeneration %d, want the object's own generation 4 (ready at the edge)", og)
	}
	if w.gets != 1 {
		t.Errorf("%d reads of the assemblage, want 1", w.gets)
	}
	s := w.syncPlacement("solo")
	if c := findCondition(s.Conditions, edgev1alpha1.PlacementSingletonStatus); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("SingletonStatus %+v, want True", c)
	}

	// A new version is being applied: the status is of the version before.
	applying := assemblageObject(t, "mb-east", "solo", webKey+"=Applied")
	applying.SetResourceVersion("6")
	w.modify(applying)
	w.syncObject(webKey)
	u = w.object("app", "web")
	if og, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration"); og != 3 {
		t.Errorf("observedGeneration %d, want one less than the object's generation while not ready", og)
	}
	if w.gets != 2 {
		t.Errorf("%d reads of the assemblage, want one per version of it (2)", w.gets)
	}

	// Past the syncer's size budget the status is left out: what the object holds stays.
	omitted := assemblageObject(t, "mb-east", "solo", webKey+"=Ready")
	omitted.SetResourceVersion("7")
	_ = unstructured.SetNestedField(omitted.Object, true, "status", "statusOmitted")
	objects, _, _ := unstructured.NestedSlice(omitted.Object, "status", "objects")
	delete(objects[0].(map[string]any), "status")
	_ = unstructured.SetNestedSlice(omitted.Object, objects, "status", "objects")
	w.modify(omitted)
	w.syncObject(webKey)
	if og, _, _ := unstructured.NestedInt64(w.object("app", "web").Object, "status", "observedGeneration"); og != 3 {
		t.Errorf("the status changed (observedGeneration %d) though the syncer reported none", og)
	}

	// A second destination: the status and the annotation are withdrawn.
	w.add(w.c.slices, sliceObject("solo", "east", "west"))
	w.modify(assemblageObject(t, "mb-west", "solo", webKey+"=Ready"))
	w.syncObject(webKey)
	u = w.object("app", "web")
	if _, ok := u.Object["status"]; ok {
		t.Errorf("status %v kept with two destinations", u.Object["status"])
	}
	if from, ok := u.GetAnnotations()[edgev1alpha1.AnnotationSingletonStatusFrom]; ok {
		t.Errorf("singleton-status-from %q kept with two destinations", from)
	}
	if got := u.GetAnnotations()[edgev1alpha1.AnnotationExecutingCount]; got != "2" {
		t.Errorf("executing-count %q, want 2", got)
	}
	s = w.syncPlacement("solo")
	if c := findCondition(s.Conditions, edgev1alpha1.PlacementSingletonStatus); c == nil || c.Status != metav1.ConditionFalse || c.Reason != edgev1alpha1.ReasonNotSingleton {
		t.Errorf("SingletonStatus %+v, want False NotSingleton", c)
	}
}

func TestAssemblageEventsQueueWhatTheyAffect(t *testing.T) {
	w := newTestWorld(t, []*unstructured.Unstructured{
		assemblageObject(t, "mb-east", "app", nsKey+"=Ready", webKey+"=Applied", widgetKey+"=Pending"),
		assemblageObject(t, "mb-east", "solo", webKey+"=Applied"),
	})
	w.add(w.c.placements, placementObject("app", false), placementObject("solo", true))
	drain := func() (placements, objects []string) {
		deadline := time.Now().Add(2 * time.Second)
		for time.Now().Before(deadline) && w.c.placementQueue.Len() == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond)
		for w.c.placementQueue.Len() > 0 {
			k, _ := w.c.placementQueue.Get()
			placements = append(placements, k.name)
		}
		for w.c.objectQueue.Len() > 0 {
			k, _ := w.c.objectQueue.Get()
			objects = append(objects, k.key.String())
		}
		return placements, objects
	}
	drain() // what the initial list queued

	// Applied to Ready, Pending to Applied: the placement, and the object that now runs there.
	a := assemblageObject(t, "mb-east", "app", nsKey+"=Ready", webKey+"=Ready", widgetKey+"=Applied")
	a.SetResourceVersion("6")
	w.modify(a)
	placements, objects := drain()
	if fmt.Sprint(placements) != "[app]" || fmt.Sprint(objects) != "["+widgetKey+"]" {
		t.Errorf("queued placements %v and objects %v, want [app] and [%s]", placements, objects, widgetKey)
	}

	// A placement that wants its objects' status back: every change of its assemblage queues
	// them, since the cache does not hold their status.
	a = assemblageObject(t, "mb-east", "solo", webKey+"=Applied")
	a.SetResourceVersion("7")
	w.modify(a)
	placements, objects = drain()
	if fmt.Sprint(placements) != "[solo]" || fmt.Sprint(objects) != "["+webKey+"]" {
		t.Errorf("queued placements %v and objects %v, want [solo] and [%s]", placements, objects, webKey)
	}
}

// TestSlimAssemblage: what the shared cache keeps of an assemblage is what summaries read.
func TestSlimAssemblage(t *testing.T) {
	u := assemblageObject(t, "mb-east", "app", webKey+"=Ready")
	_ = unstructured.SetNestedSlice(u.Object, []any{
		map[string]any{"type": edgev1alpha1.AssemblageReady, "status": "True", "reason": "AllObjectsReady", "lastTransitionTime": "2026-11-21T12:00:00Z"},
		map[string]any{"type": edgev1alpha1.AssemblageRefused, "status": "False", "reason": "Readable", "lastTransitionTime": "2026-11-21T12:00:00Z"},
	}, "status", "conditions")
	a := centerview.AsAssemblage(u)
	if logicalcluster.From(a) != "mb-east" || a.Name != transport.AssemblageName(wmw, "app") || a.ResourceVersion != "5" {
		t.Errorf("identity lost: %s|%s at %s", logicalcluster.From(a), a.Name, a.ResourceVersion)
	}
	if a.Spec.Data != nil || a.Status.Objects[0].Status != nil || a.Status.Objects[0].UID != "" {
		t.Error("the data, the objects' status or their UIDs are kept")
	}
	if a.Spec.Placement.Name != "app" || a.Spec.Version == "" || a.Status.ObservedVersion != a.Spec.Version || a.Status.Objects[0].State != "Ready" {
		t.Errorf("what summaries read is lost: %+v", a)
	}
	if c := meta.FindStatusCondition(a.Status.Conditions, edgev1alpha1.AssemblageRefused); c == nil {
		t.Errorf("conditions %+v lack Refused", a.Status.Conditions)
	}
	if key, _ := kcpcache.MetaClusterNamespaceKeyFunc(a); key != "mb-east|"+a.Name {
		t.Errorf("cache key %q", key)
	}

	bad := withCluster(&unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "x"}, "spec": "not an object"}}, "mb-east")
	if a := centerview.AsAssemblage(bad); a == nil || a.Name != "x" || a.Spec.Placement.Name != "" {
		t.Errorf("an unreadable assemblage: %+v; want its name and no placement (nothing is summarized from it)", a)
	}
}

func TestClaimedResources(t *testing.T) {
	claimed, err := claimedResources()
	if err != nil {
		t.Fatal(err)
	}
	for gr, want := range map[schema.GroupResource]string{
		{Group: "apps", Resource: "deployments"}:                               "v1",
		{Resource: "configmaps"}:                                               "v1",
		{Resource: "namespaces"}:                                               "v1",
		{Group: "batch", Resource: "cronjobs"}:                                 "v1",
		{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}: "v1",
	} {
		if claimed[gr] != want {
			t.Errorf("%s: %q, want %q", gr, claimed[gr], want)
		}
	}
	if _, ok := claimed[schema.GroupResource{Group: "example.com", Resource: "widgets"}]; ok {
		t.Error("a custom kind among the claimed")
	}
}

func TestKindResolverCustomKinds(t *testing.T) {
	reads := 0
	r := &kindResolver{claimed: map[schema.GroupResource]string{{Group: "apps", Resource: "deployments"}: "v1"}, custom: map[string]customKind{},
		getCRD: func(_ context.Context, cluster logicalcluster.Name, name string) (*unstructured.Unstructured, error) {
			reads++
			if name != "widgets.example.com" {
				return nil, apierrors.NewNotFound(crdsGVR.GroupResource(), name)
			}
			return &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": name},
				"spec": map[string]any{"versions": []any{
					map[string]any{"name": "v1beta1", "served": true, "storage": false},
					map[string]any{"name": "v1", "served": true, "storage": true}}}}}, nil
		}}
	ctx := context.Background()
	if gvr, custom, err := r.resolve(ctx, wmw, schema.GroupResource{Group: "apps", Resource: "deployments"}); err != nil || custom || gvr.Version != "v1" {
		t.Errorf("claimed: %v %v %v", gvr, custom, err)
	}
	for i := 0; i < 2; i++ {
		gvr, custom, err := r.resolve(ctx, wmw, schema.GroupResource{Group: "example.com", Resource: "widgets"})
		if err != nil || !custom || gvr.Version != "v1" {
			t.Errorf("custom: %v %v %v, want the storage version v1", gvr, custom, err)
		}
	}
	if reads != 1 {
		t.Errorf("the CRD read %d times, want once", reads)
	}
	if _, _, err := r.resolve(ctx, wmw, schema.GroupResource{Group: "example.com", Resource: "gadgets"}); !apierrors.IsNotFound(err) {
		t.Errorf("a kind without its CRD: %v, want NotFound", err)
	}
}

func TestTranslateObservedGeneration(t *testing.T) {
	for _, tc := range []struct {
		observed bool
		want     int64
	}{{true, 5}, {false, 4}} {
		s := map[string]any{"observedGeneration": int64(17)}
		translateObservedGeneration(s, 5, tc.observed)
		if s["observedGeneration"] != tc.want {
			t.Errorf("observed=%v: %v, want %d", tc.observed, s["observedGeneration"], tc.want)
		}
	}
	s := map[string]any{"replicas": int64(1)}
	translateObservedGeneration(s, 5, true)
	if _, ok := s["observedGeneration"]; ok {
		t.Error("an observedGeneration added to a status that had none")
	}
}

func findCondition(conditions []metav1.Condition, t string) *metav1.Condition {
	for i := range conditions {
		if conditions[i].Type == t {
			return &conditions[i]
		}
	}
	return nil
}

func countVerbs(actions []clienttesting.Action, verb string) int {
	n := 0
	for _, a := range actions {
		if a.GetVerb() == verb {
			n++
		}
	}
	return n
}

// TestSyncerStalenessOfAnUnreachableMailbox: a SyncTarget whose mailbox's shard is unreachable
// counts as stale, with the condition's message, which names the shard, as the reason.
func TestSyncerStalenessOfAnUnreachableMailbox(t *testing.T) {
	const why = "mailbox root:espw:x-mb-1 is on shard shard-1, unreachable since 2026-11-26T04:58:40Z: the syncer's heartbeats cannot be read (the last one seen: 2026-11-26T04:58:30Z)"
	u := syncTargetObject("south", "mb-south", true)
	if stale, _, reason := syncerStaleness(u); !stale || reason != "" {
		t.Errorf("HeartbeatStale: stale %v, reason %q; want stale and the summary's own words", stale, reason)
	}
	unreachable := u.DeepCopy()
	_ = unstructured.SetNestedSlice(unreachable.Object, []any{map[string]any{"type": edgev1alpha1.SyncTargetSyncerReady, "status": "Unknown",
		"reason": edgev1alpha1.ReasonMailboxUnreachable, "message": why, "lastTransitionTime": "2026-11-26T04:59:00Z"}}, "status", "conditions")
	stale, since, reason := syncerStaleness(unreachable)
	if !stale || reason != why || !since.Equal(time.Date(2026, 11, 26, 4, 59, 0, 0, time.UTC)) {
		t.Errorf("MailboxUnreachable: stale %v since %s, reason %q", stale, since, reason)
	}
	if stale, _, _ := syncerStaleness(syncTargetObject("east", "mb-east", false)); stale {
		t.Error("a current heartbeat counts as stale")
	}
}
