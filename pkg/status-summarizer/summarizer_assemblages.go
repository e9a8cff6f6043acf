package statussummarizer

import (
	"context"
	"fmt"
	"sync"
	"time"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/espw"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// Index names of the assemblage cache.
const (
	// assemblagesByPlacement indexes assemblages by <placement cluster>|<placement name>.
	assemblagesByPlacement = "assemblagesByPlacement"
	// assemblagesByObject indexes assemblages by <placement cluster>|<object key>, for every
	// object they name (carried and shared).
	assemblagesByObject = "assemblagesByObject"
)

// assemblageWatch watches the Assemblages of all mailboxes through the virtual workspace of
// mailbox.edge.kcp.io, which kcp publishes once some mailbox binds the export: the watch starts
// when it appears. The cache holds slim typed copies (slimAssemblage); what it leaves out, the
// objects' .status, is read from the server for the few assemblages that need it
// (reportedStatus).
type assemblageWatch struct {
	// open returns the informer on the assemblages of every mailbox, and how to read one
	// assemblage from the server.
	open func() (espw.SharedInformer, func(ctx context.Context, mailbox logicalcluster.Name, name string) (*unstructured.Unstructured, error))
	// changed is called with the old and new slim assemblage (nil for none) on every event.
	changed func(old, obj *edgev1alpha1.Assemblage)
	// synced is called once, when the cache has synced.
	synced func()

	mu sync.RWMutex
	// get reads an assemblage of a mailbox from the server.
	get      func(ctx context.Context, mailbox logicalcluster.Name, name string) (*unstructured.Unstructured, error)
	informer espw.SharedInformer

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

func newAssemblageWatch(open func() (espw.SharedInformer, func(ctx context.Context, mailbox logicalcluster.Name, name string) (*unstructured.Unstructured, error))) *assemblageWatch {
	return &assemblageWatch{open: open, statuses: map[string]*reportedStatuses{}}
}

// mailboxAssemblages returns the informer on the assemblages of every mailbox, through the
// virtual workspaces of mailbox.edge.kcp.io (one per shard that holds a mailbox), with the
// controller's own credential, and how to read one through the virtual workspace that serves
// its mailbox.
func mailboxAssemblages(mailbox *espw.Endpoints) (espw.SharedInformer, func(ctx context.Context, mailbox logicalcluster.Name, name string) (*unstructured.Unstructured, error)) {
	return mailbox.NewInformer(assemblagesGVR, resyncPeriod, assemblageIndexers(), nil),
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
func (w *assemblageWatch) run(ctx context.Context, informer espw.SharedInformer, get func(ctx context.Context, mailbox logicalcluster.Name, name string) (*unstructured.Unstructured, error)) {
	logger := klog.FromContext(ctx)
	if err := informer.SetTransform(func(obj any) (any, error) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return obj, nil
		}
		a, err := slimAssemblage(u)
		if err != nil {
			// Kept by name, naming no placement: nothing is summarized from it, and the watch
			// goes on (an error here would make it list everything again, and fail again).
			logger.Error(err, "an assemblage the summarizer cannot read; it counts as absent")
		}
		return a, nil
	}); err != nil {
		logger.Error(err, "setting the transform of the assemblage watch")
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.changed(nil, asAssemblage(obj)) },
		UpdateFunc: func(old, obj any) { w.changed(asAssemblage(old), asAssemblage(obj)) },
		DeleteFunc: func(obj any) { w.changed(asAssemblage(obj), nil) },
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

func assemblageIndexers() cache.Indexers {
	return cache.Indexers{
		kcpcache.ClusterIndexName: kcpcache.ClusterIndexFunc,
		assemblagesByPlacement: func(obj any) ([]string, error) {
			a := asAssemblage(obj)
			if a == nil {
				return nil, nil
			}
			return []string{a.Spec.Placement.Cluster + "|" + a.Spec.Placement.Name}, nil
		},
		assemblagesByObject: func(obj any) ([]string, error) {
			a := asAssemblage(obj)
			if a == nil {
				return nil, nil
			}
			objects := transport.ObjectsOf(a)
			keys := make([]string, 0, len(objects))
			for _, o := range objects {
				keys = append(keys, a.Spec.Placement.Cluster+"|"+o)
			}
			return keys, nil
		},
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
		if a := asAssemblage(item); a != nil {
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
		if a := asAssemblage(item); a != nil && a.Spec.Placement.Name != "" {
			out = append(out, a)
		}
	}
	return out
}

// ofPlacement returns the placement's assemblages, in all mailboxes.
func (w *assemblageWatch) ofPlacement(pk placementKey) []*edgev1alpha1.Assemblage {
	return w.byIndex(assemblagesByPlacement, pk.String())
}

// naming returns the assemblages, in all mailboxes, that name the workload object.
func (w *assemblageWatch) naming(k objectKey) []*edgev1alpha1.Assemblage {
	return w.byIndex(assemblagesByObject, k.cluster+"|"+k.key.String())
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

// asAssemblage returns the assemblage an event or a cache entry holds (nil if none).
func asAssemblage(obj any) *edgev1alpha1.Assemblage {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	switch a := obj.(type) {
	case *edgev1alpha1.Assemblage:
		return a
	case *unstructured.Unstructured:
		slim, err := slimAssemblage(a)
		if err != nil {
			return nil
		}
		return slim
	}
	return nil
}

// slimAssemblage turns an assemblage read from the server into what the cache keeps of it:
// its name, logical cluster, generation and resourceVersion; its placement, version, and the
// objects it names; the syncer's observed and applied versions, its Refused condition, and each
// object's state and reason. It leaves out the carried objects (spec.data) and the objects'
// .status, which together are most of an assemblage, so that the cache costs per destination
// and placement about the names of its objects and little more. An assemblage that does not read
// as one is returned with its name and logical cluster only, and the error.
func slimAssemblage(u *unstructured.Unstructured) (*edgev1alpha1.Assemblage, error) {
	slim := &edgev1alpha1.Assemblage{ObjectMeta: metav1.ObjectMeta{
		Name:            u.GetName(),
		ResourceVersion: u.GetResourceVersion(),
		Generation:      u.GetGeneration(),
		Annotations:     map[string]string{logicalcluster.AnnotationKey: logicalcluster.From(u).String()},
	}}
	if spec, ok := u.Object["spec"].(map[string]any); ok {
		delete(spec, "data")
		delete(spec, "digest")
	}
	if status, ok := u.Object["status"].(map[string]any); ok {
		objects, _ := status["objects"].([]any)
		for _, raw := range objects {
			if m, ok := raw.(map[string]any); ok {
				delete(m, "status")
				delete(m, "uid")
				delete(m, "createdAt")
			}
		}
	}
	full := &edgev1alpha1.Assemblage{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, full); err != nil {
		return slim, fmt.Errorf("reading assemblage %s of mailbox %s: %w", u.GetName(), logicalcluster.From(u), err)
	}
	slim.Spec = edgev1alpha1.AssemblageSpec{
		Placement: full.Spec.Placement,
		Version:   full.Spec.Version,
		Objects:   full.Spec.Objects,
		Shared:    full.Spec.Shared,
	}
	slim.Status = edgev1alpha1.AssemblageStatus{
		ObservedVersion: full.Status.ObservedVersion,
		AppliedVersion:  full.Status.AppliedVersion,
		Objects:         full.Status.Objects,
	}
	if c := meta.FindStatusCondition(full.Status.Conditions, edgev1alpha1.AssemblageRefused); c != nil {
		slim.Status.Conditions = []metav1.Condition{*c}
	}
	return slim, nil
}
