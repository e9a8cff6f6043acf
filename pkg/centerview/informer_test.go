package centerview

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	thirdpartyinformers "github.com/kcp-dev/apimachinery/v2/third_party/informers"
	kcpdynamic "github.com/kcp-dev/client-go/dynamic"
	"github.com/kcp-dev/logicalcluster/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"
)

// fakeShards gives each URL a fake source of ConfigMaps, standing in for a shard's virtual
// workspace.
type fakeShards struct {
	mu      sync.Mutex
	sources map[string]*fcache.FakeControllerSource
}

func (f *fakeShards) source(url string) *fcache.FakeControllerSource {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sources[url] == nil {
		f.sources[url] = fcache.NewFakeControllerSource()
	}
	return f.sources[url]
}

func configMap(cluster, name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + cluster + "-" + name),
		Annotations: map[string]string{logicalcluster.AnnotationKey: cluster}}}
}

// recorder records the events an informer delivers, as "add|update|delete <key>".
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) record(what string, obj any) {
	key, _ := kcpcache.DeletionHandlingMetaClusterNamespaceKeyFunc(obj)
	if _, tombstone := obj.(cache.DeletedFinalStateUnknown); tombstone {
		what += " (final state unknown)"
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, what+" "+key)
}

func (r *recorder) has(event string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.events, event)
}

func (r *recorder) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { r.record("add", obj) },
		UpdateFunc: func(_, obj any) { r.record("update", obj) },
		DeleteFunc: func(obj any) { r.record("delete", obj) },
	}
}

const byName = "byName"

func newTestInformer(t *testing.T, shards *fakeShards) (*Endpoints, *Informer) {
	t.Helper()
	e, err := NewEndpoints(nil, logicalcluster.NewPath("root:espw"), "test.export", &rest.Config{Host: "https://front-proxy.example"})
	if err != nil {
		t.Fatal(err)
	}
	indexers := cache.Indexers{
		kcpcache.ClusterIndexName: kcpcache.ClusterIndexFunc,
		byName: func(obj any) ([]string, error) {
			return []string{obj.(*corev1.ConfigMap).Name}, nil
		},
	}
	i := e.newInformer("configmaps", indexers, func(url string, _ kcpdynamic.ClusterInterface) cache.SharedIndexInformer {
		// Each shard's indexer gets a map of its own, as in NewInformer.
		return thirdpartyinformers.NewSharedIndexInformer(shards.source(url), &corev1.ConfigMap{}, 0, maps.Clone(indexers))
	})
	return e, i
}

// sliceRead marks the Endpoints' slice as read once, as Start does after its first read.
func sliceRead(e *Endpoints) {
	e.mu.Lock()
	e.synced = true
	e.mu.Unlock()
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil }); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func keys(i *Informer) []string {
	k := i.GetIndexer().ListKeys()
	sort.Strings(k)
	return k
}

func TestInformerFollowsTheSlice(t *testing.T) {
	shards := &fakeShards{sources: map[string]*fcache.FakeControllerSource{}}
	shards.source("https://shard-a/vw").Add(configMap("ca", "one"))
	shards.source("https://shard-b/vw").Add(configMap("cb", "two"))
	shards.source("https://shard-c/vw").Add(configMap("cc", "one"))
	e, i := newTestInformer(t, shards)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := &recorder{}
	if _, err := i.AddEventHandler(events.handler()); err != nil {
		t.Fatal(err)
	}
	go i.Run(ctx.Done())

	if i.HasSynced() {
		t.Fatal("HasSynced before the slice was read")
	}
	e.setURLs(ctx, []string{"https://shard-b/vw", "https://shard-a/vw"})
	if i.HasSynced() {
		t.Fatal("HasSynced before the slice was read once (setURLs alone does not say the slice was read)")
	}
	sliceRead(e)
	eventually(t, "both shards synced", i.HasSynced)
	if got, want := keys(i), []string{"ca|default/one", "cb|default/two"}; !slices.Equal(got, want) {
		t.Errorf("keys across shards: got %v, want %v", got, want)
	}
	if _, ok, _ := i.GetIndexer().GetByKey("cb|default/two"); !ok {
		t.Error("GetByKey does not find an object of the second shard")
	}
	if items, _ := i.GetIndexer().ByIndex(kcpcache.ClusterIndexName, kcpcache.ClusterIndexKey("cb")); len(items) != 1 {
		t.Errorf("ByIndex(cluster cb): %d items, want 1", len(items))
	}
	eventually(t, "adds from both shards", func() bool { return events.has("add ca|default/one") && events.has("add cb|default/two") })

	// Writes go through the URL whose informer shows the workspace, else through the base URL.
	for cluster, want := range map[string]string{"ca": "https://shard-a/vw", "cb": "https://shard-b/vw", "cz": ""} {
		e.mu.Lock()
		got, _ := e.urlOfLocked(logicalcluster.Name(cluster))
		e.mu.Unlock()
		if got != want {
			t.Errorf("the URL for writes to %s: got %q, want %q", cluster, got, want)
		}
	}

	// A third shard appears: its informer starts, and its objects join the view.
	e.setURLs(ctx, []string{"https://shard-a/vw", "https://shard-b/vw", "https://shard-c/vw"})
	eventually(t, "the new shard synced", i.HasSynced)
	eventually(t, "an add from the new shard", func() bool { return events.has("add cc|default/one") })
	if items, _ := i.GetIndexer().ByIndex(byName, "one"); len(items) != 2 {
		t.Errorf("ByIndex(byName, one) across shards: %d items, want 2", len(items))
	}
	if got := i.GetIndexer().ListIndexFuncValues(byName); !slices.Equal(got, []string{"one", "two"}) {
		t.Errorf("ListIndexFuncValues(byName): got %v, want [one two]", got)
	}

	// A change on a shard reaches the handlers.
	shards.source("https://shard-b/vw").Add(configMap("cb", "three"))
	eventually(t, "an add after the start", func() bool { return events.has("add cb|default/three") })

	// Shard b goes: its objects leave the view and are delivered as deleted.
	e.setURLs(ctx, []string{"https://shard-a/vw", "https://shard-c/vw"})
	if got, want := keys(i), []string{"ca|default/one", "cc|default/one"}; !slices.Equal(got, want) {
		t.Errorf("keys after shard b went: got %v, want %v", got, want)
	}
	eventually(t, "deletes of shard b's objects", func() bool {
		return events.has("delete (final state unknown) cb|default/two") && events.has("delete (final state unknown) cb|default/three")
	})
	if events.has("delete (final state unknown) ca|default/one") {
		t.Error("an object of a shard still followed was delivered as deleted")
	}
	if _, err := i.GetIndexer().ByIndex(byName, "one"); err != nil {
		t.Errorf("ByIndex after a shard went: %v", err)
	}
	if err := i.GetStore().Add(configMap("ca", "x")); err == nil {
		t.Error("the view accepted a write")
	}

	// The slice deleted: nothing is followed, and an empty view is synced.
	e.setURLs(ctx, nil)
	if got := keys(i); len(got) != 0 {
		t.Errorf("keys with no URL: %v", got)
	}
	if !i.HasSynced() {
		t.Error("an informer with no URL to follow, the slice read, is not synced")
	}
}

func TestInformerMadeAfterURLsAndStartedLate(t *testing.T) {
	shards := &fakeShards{sources: map[string]*fcache.FakeControllerSource{}}
	shards.source("https://shard-a/vw").Add(configMap("ca", "one"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e, first := newTestInformer(t, shards)
	e.setURLs(ctx, []string{"https://shard-a/vw"})
	sliceRead(e)
	// An informer made after the URLs are known gets a shard on each; before Run it has not synced.
	i := e.newInformer("late", cache.Indexers{kcpcache.ClusterIndexName: kcpcache.ClusterIndexFunc}, func(url string, _ kcpdynamic.ClusterInterface) cache.SharedIndexInformer {
		return thirdpartyinformers.NewSharedIndexInformer(shards.source(url), &corev1.ConfigMap{}, 0,
			cache.Indexers{kcpcache.ClusterIndexName: kcpcache.ClusterIndexFunc})
	})
	if i.HasSynced() || first.HasSynced() {
		t.Fatal("HasSynced before Run")
	}
	var transformed sync.Map
	_ = i.SetTransform(func(obj any) (any, error) {
		cm := obj.(*corev1.ConfigMap)
		transformed.Store(cm.Name, true)
		return cm, nil
	})
	go i.Run(ctx.Done())
	eventually(t, "synced after Run", i.HasSynced)
	if _, ok := transformed.Load("one"); !ok {
		t.Error("the transform set after the shard was made did not apply to it")
	}
	events := &recorder{}
	_, _ = i.AddEventHandler(events.handler())
	eventually(t, "a handler added late gets the cache replayed", func() bool { return events.has("add ca|default/one") })
	// Once Run returns, the informer no longer follows the slice.
	cancel()
	eventually(t, "the stopped informer forgotten", func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		return !slices.Contains(e.informers, i) && slices.Contains(e.informers, first)
	})
	e.setURLs(context.Background(), []string{"https://shard-a/vw", "https://shard-b/vw"})
	i.mu.RLock()
	defer i.mu.RUnlock()
	if len(i.shards) != 1 {
		t.Errorf("a stopped informer got a shard on a new URL: %d shards", len(i.shards))
	}
}

// TestInformerShardThatDoesNotServeTheResource: a virtual workspace that answers 404 for the
// resource (kcp serves a claimed kind only on shards where a binding accepted the claim) holds
// none of it, and does not keep the informer from syncing; one that fails otherwise does.
func TestInformerShardThatDoesNotServeTheResource(t *testing.T) {
	shards := &fakeShards{sources: map[string]*fcache.FakeControllerSource{}}
	shards.source("https://shard-a/vw").Add(configMap("ca", "one"))
	shards.source("https://shard-b/vw").ListError = apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "")
	shards.source("https://shard-c/vw").ListError = errors.New("connection refused")
	e, i := newTestInformer(t, shards)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go i.Run(ctx.Done())
	e.setURLs(ctx, []string{"https://shard-a/vw", "https://shard-b/vw"})
	sliceRead(e)
	eventually(t, "synced with a shard that does not serve the resource", i.HasSynced)
	if got := keys(i); !slices.Equal(got, []string{"ca|default/one"}) {
		t.Errorf("keys: %v", got)
	}
	e.setURLs(ctx, []string{"https://shard-a/vw", "https://shard-b/vw", "https://shard-c/vw"})
	time.Sleep(500 * time.Millisecond)
	if i.HasSynced() {
		t.Error("synced while a shard's virtual workspace cannot be listed")
	}
}

func TestIndexersAddedToEveryShard(t *testing.T) {
	shards := &fakeShards{sources: map[string]*fcache.FakeControllerSource{}}
	shards.source("https://shard-a/vw").Add(configMap("ca", "one"))
	shards.source("https://shard-b/vw").Add(configMap("cb", "two"))
	e, i := newTestInformer(t, shards)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e.setURLs(ctx, []string{"https://shard-a/vw"})
	sliceRead(e)
	go i.Run(ctx.Done())
	eventually(t, "synced", i.HasSynced)

	// A second reader of the same informer adds an index of its own, after the start.
	const byData = "byData"
	if err := i.AddIndexers(cache.Indexers{byData: func(obj any) ([]string, error) {
		return []string{"d-" + obj.(*corev1.ConfigMap).Name}, nil
	}}); err != nil {
		t.Fatal(err)
	}
	if err := i.AddIndexers(cache.Indexers{byName: func(any) ([]string, error) { return nil, nil }}); err == nil {
		t.Error("a second index named byName was accepted")
	}
	// A shard that appears later has it too.
	e.setURLs(ctx, []string{"https://shard-a/vw", "https://shard-b/vw"})
	eventually(t, "both shards synced", i.HasSynced)
	for _, name := range []string{"one", "two"} {
		got, err := i.GetIndexer().ByIndex(byData, "d-"+name)
		if err != nil || len(got) != 1 {
			t.Errorf("ByIndex(byData, d-%s) = %v, %v; want the ConfigMap %s", name, got, err, name)
		}
	}
}

func TestSharedIsOnePerResource(t *testing.T) {
	e, err := NewEndpoints(nil, logicalcluster.NewPath("root:espw"), "test.export", &rest.Config{Host: "https://front-proxy.example"})
	if err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: "edge.kcp.io", Version: "v1alpha1", Resource: "edgeplacements"}
	a, err := e.Shared(gvr, cache.Indexers{"byA": func(any) ([]string, error) { return nil, nil }})
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.Shared(gvr, cache.Indexers{"byB": func(any) ([]string, error) { return nil, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatal("two readers of one resource got two informers")
	}
	if _, err := e.Shared(gvr, cache.Indexers{"byA": func(any) ([]string, error) { return nil, nil }}); err == nil {
		t.Error("a second index named byA was accepted")
	}
	other, _ := e.Shared(schema.GroupVersionResource{Group: "edge.kcp.io", Version: "v1alpha1", Resource: "synctargets"}, nil)
	if other == a {
		t.Error("two resources share an informer")
	}
	for _, name := range []string{"byA", "byB", kcpcache.ClusterIndexName} {
		if _, ok := a.GetIndexer().GetIndexers()[name]; !ok {
			t.Errorf("the shared informer lacks index %s", name)
		}
	}
}
