package statussummarizer

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/centerview"
)

// assemblageWatch watches the Assemblages of all mailboxes through the virtual workspace of
// mailbox.edge.kcp.io, which kcp publishes once some mailbox binds the export: the watch starts
// when it appears. The cache is the one the placement translator reads too (centerview), of slim typed copies; what it leaves out, the
// objects' .status, is read from the server for the few assemblages that need it
// (reportedStatus).
type assemblageWatch struct {
	// open returns the informer on the assemblages of every mailbox, and how to read one
	// assemblage from the server.
	open func() (centerview.SharedInformer, func(ctx context.Context, mailbox logicalcluster.Name, name string) (*unstructured.Unstructured, error))
	// changed is called with the old and new slim assemblage (nil for none) on every event.
	changed func(old, obj *edgev1alpha1.Assemblage)
	// synced is called once, when the cache has synced.
	synced func()

	mu sync.RWMutex
	// get reads an assemblage of a mailbox from the server.
	get      func(ctx context.Context, mailbox logicalcluster.Name, name string) (*unstructured.Unstructured, error)
	informer centerview.SharedInformer

	statusMu sync.Mutex
	statuses map[string]*reportedStatuses
}

// reportedStatuses are the objects' .status of one assemblage, at one resourceVersion.
type reportedStatuses struct {
	resourceVersion string
	omitted         bool
	// byObject holds each reported object's status (nil for an object reported without one).
	byObject map[string]map[string]any
	used     time.Time
}

func newAssemblageWatch(open func() (centerview.SharedInformer, func(ctx context.Context, mailbox logicalcluster.Name, name string) (*unstructured.Unstructured, error))) *assemblageWatch {
	return &assemblageWatch{open: open, statuses: map[string]*reportedStatuses{}}
}

// mailboxAssemblages returns the informer on the assemblages of every mailbox, through the
// virtual workspaces of mailbox.edge.kcp.io (one per shard that holds a mailbox), with the
// controller's own credential, and how to read one through the virtual workspace that serves
// its mailbox.
func mailboxAssemblages(mailbox *centerview.Endpoints, shared centerview.SharedInformer) (centerview.SharedInformer, func(ctx context.Context, mailbox logicalcluster.Name, name string) (*unstructured.Unstructured, error)) {
	if shared == nil {
		shared = centerview.NewAssemblages(mailbox)
	}
	return shared,
		func(ctx context.Context, cluster logicalcluster.Name, name string) (*unstructured.Unstructured, error) {
			return mailbox.Cluster(cluster.Path()).Resource(assemblagesGVR).Get(ctx, name, metav1.GetOptions{})
		}
}

func (w *assemblageWatch) start(ctx context.Context) {
	informer, get := w.open()
	w.run(ctx, informer, get)
}

// run serves the cache of informer until ctx ends; get reads single assemblages from the same
// server.
func (w *assemblageWatch) run(ctx context.Context, informer centerview.SharedInformer, get func(ctx context.Context, mailbox logicalcluster.Name, name string) (*unstructured.Unstructured, error)) {
	logger := klog.FromContext(ctx)
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.changed(nil, centerview.AsAssemblage(obj)) },
		UpdateFunc: func(old, obj any) { w.changed(centerview.AsAssemblage(old), centerview.AsAssemblage(obj)) },
		DeleteFunc: func(obj any) { w.changed(centerview.AsAssemblage(obj), nil) },
	}); err != nil {
		logger.Error(err, "watching assemblages")
		return
	}
	w.mu.Lock()
	w.get, w.informer = get, informer
	w.mu.Unlock()
	go informer.Run(ctx.Done())
	if cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) && w.synced != nil {
		w.synced()
	}
}

// hasSynced reports whether the cache has synced, or has not started yet.
func (w *assemblageWatch) hasSynced() bool {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.informer == nil || w.informer.HasSynced()
}

// ready reports whether the cache has started and synced: what it lacks before is unknown, not
// absent.
func (w *assemblageWatch) ready() bool {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.informer != nil && w.informer.HasSynced()
}

func (w *assemblageWatch) byIndex(index, key string) []*edgev1alpha1.Assemblage {
	w.mu.RLock()
	informer := w.informer
	w.mu.RUnlock()
	if informer == nil {
		return nil
	}
	items, _ := informer.GetIndexer().ByIndex(index, key)
	out := make([]*edgev1alpha1.Assemblage, 0, len(items))
	for _, item := range items {
		if a := centerview.AsAssemblage(item); a != nil {
			out = append(out, a)
		}
	}
	return out
}

// all returns every assemblage in the cache.
func (w *assemblageWatch) all() []*edgev1alpha1.Assemblage {
	w.mu.RLock()
	informer := w.informer
	w.mu.RUnlock()
	if informer == nil {
		return nil
	}
	items := informer.GetStore().List()
	out := make([]*edgev1alpha1.Assemblage, 0, len(items))
	for _, item := range items {
		if a := centerview.AsAssemblage(item); a != nil && a.Spec.Placement.Name != "" {
			out = append(out, a)
		}
	}
	return out
}

// ofPlacement returns the placement's assemblages, in all mailboxes.
func (w *assemblageWatch) ofPlacement(pk placementKey) []*edgev1alpha1.Assemblage {
	return w.byIndex(centerview.ByPlacement, pk.String())
}

// naming returns the assemblages, in all mailboxes, that name the workload object.
func (w *assemblageWatch) naming(k objectKey) []*edgev1alpha1.Assemblage {
	return w.byIndex(centerview.ByObject, k.cluster+"|"+k.key.String())
}

// reportedStatus returns the .status that the syncer reports for the object in the assemblage
// (nil if it reports none, or not on that object); omitted says the syncer left it out to keep
// within its size budget, so that nothing can be said of it. It reads the assemblage from the
// server once per resourceVersion.
func (w *assemblageWatch) reportedStatus(ctx context.Context, mailbox logicalcluster.Name, a *edgev1alpha1.Assemblage, object string) (status map[string]any, omitted bool, err error) {
	key := mailbox.String() + "|" + a.Name
	w.statusMu.Lock()
	cached := w.statuses[key]
	w.statusMu.Unlock()
	if cached == nil || cached.resourceVersion != a.ResourceVersion {
		w.mu.RLock()
		get := w.get
		w.mu.RUnlock()
		if get == nil {
			return nil, false, fmt.Errorf("the mailboxes' virtual workspace is not reached yet")
		}
		u, err := get(ctx, mailbox, a.Name)
		if err != nil {
			return nil, false, fmt.Errorf("reading assemblage %s in mailbox %s: %w", a.Name, mailbox, err)
		}
		cached = statusesOf(u)
		w.statusMu.Lock()
		w.statuses[key] = cached
		w.forgetUnusedLocked()
		w.statusMu.Unlock()
	}
	w.statusMu.Lock()
	cached.used = time.Now()
	w.statusMu.Unlock()
	status, reported := cached.byObject[object]
	return status, reported && status == nil && cached.omitted, nil
}

// forgetUnusedLocked drops the statuses not used for a while, once there are many: they are
// those of placements that no longer want them, or no longer have one destination.
func (w *assemblageWatch) forgetUnusedLocked() {
	if len(w.statuses) < 64 {
		return
	}
	for k, s := range w.statuses {
		if time.Since(s.used) > reportMemory {
			delete(w.statuses, k)
		}
	}
}

// statusesOf gathers the objects' .status from an assemblage read from the server.
func statusesOf(u *unstructured.Unstructured) *reportedStatuses {
	out := &reportedStatuses{resourceVersion: u.GetResourceVersion(), byObject: map[string]map[string]any{}}
	out.omitted, _, _ = unstructured.NestedBool(u.Object, "status", "statusOmitted")
	objects, _, _ := unstructured.NestedSlice(u.Object, "status", "objects")
	for _, raw := range objects {
		m, _ := raw.(map[string]any)
		name, _ := m["object"].(string)
		if name == "" {
			continue
		}
		status, _ := m["status"].(map[string]any)
		if len(status) == 0 {
			status = nil
		}
		out.byObject[name] = status
	}
	return out
}
