// Package statussummarizer is the status summarizer. It rolls up what the syncers report on the
// mailbox copies (the annotations that say whether a copy's current version is applied at the
// edge or refused there, and the status copied back from the edge) into the workload workspaces:
//
//   - per EdgePlacement, in its status: the destinations counted by state (pending, applied,
//     ready, failed, stale), the same counts per object (at most 100 objects), a list of at most
//     20 broken (destination, object) entries with their total, and the Ready condition, and with
//     spec.wantSingletonReportedState the SingletonStatus condition. The status's size does not
//     grow with the number of destinations.
//   - per workload object: the annotation edge.kcp.io/executing-count, the number of edge
//     clusters where a version of it is applied; and, when a placement that selects it wants
//     singleton reported state and has exactly one destination, the object's status copied from
//     that destination (withdrawn when that stops holding).
//
// Readiness is kstatus's (sigs.k8s.io/cli-utils), computed on the copies' status. A destination
// whose SyncTarget's SyncerReady condition says the heartbeat is stale counts as stale.
//
// It watches the copies across all mailboxes at once: kcp's built-in kinds through the virtual
// workspace of mailbox.edge.kcp.io (whose read-only permission claims every mailbox accepts), the
// workloads export's kinds through that export's virtual workspace; placements, slices and
// SyncTargets through edge.kcp.io's; the mailbox workspaces with a watch on the ESPW. Changes are
// coalesced per placement and per object: a burst of any number of edge status changes makes at
// most one status write per placement each CoalescePeriod and one write per object each
// ObjectCoalescePeriod.
package statussummarizer

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	kcpdynamic "github.com/kcp-dev/client-go/dynamic"
	kcpdynamicinformer "github.com/kcp-dev/client-go/dynamic/dynamicinformer"
	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/kcp-dev/edge-mc/config/exports"
	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/espw"
	"github.com/kcp-dev/edge-mc/pkg/mailbox"
)

// ControllerName names the controller in logs, metrics and --controllers.
const ControllerName = "status-summarizer"

// CoalescePeriod is the least time between two writes for one placement: a change after a quiet
// period is summarized at once, later ones within the period together at its end.
const CoalescePeriod = time.Second

// ObjectCoalescePeriod is the same for one workload object (its executing-count, and a
// singleton's status). It is longer: while a placement rolls out, every object it selects
// changes count with every destination that applies it, and each write into the workload
// workspace is one more for kcp, which is busy writing the copies.
const ObjectCoalescePeriod = 5 * time.Second

const resyncPeriod = 10 * time.Minute

var (
	placementsGVR  = edgev1alpha1.SchemeGroupVersion.WithResource("edgeplacements")
	slicesGVR      = edgev1alpha1.SchemeGroupVersion.WithResource("singleplacementslices")
	syncTargetsGVR = edgev1alpha1.SchemeGroupVersion.WithResource("synctargets")
	// syncerConfigsGVR is a resource of mailbox.edge.kcp.io, watched through its virtual
	// workspace.
	syncerConfigsGVR = edgev1alpha1.SchemeGroupVersion.WithResource("syncerconfigs")
)

// Index names.
const (
	// copiesByPlacement indexes copies by <source cluster>|<placement>, one key per placement
	// that selects the original.
	copiesByPlacement = "copiesByPlacement"
	// copiesByOriginal indexes copies by their original's objectKey.String().
	copiesByOriginal = "copiesByOriginal"
	// slicesByPlacement indexes slices by <cluster>|<placement>.
	slicesByPlacement = "slicesByPlacement"
	// slicesByMailbox indexes slices by the mailbox workspace names of their destinations.
	slicesByMailbox = "slicesByMailbox"
	// mailboxesByCluster indexes mailbox workspaces by their logical cluster.
	mailboxesByCluster = "mailboxesByCluster"
)

// Config is what the controller needs.
type Config struct {
	// ESPW is the edge service provider workspace.
	ESPW logicalcluster.Path
	// EdgeVWConfig reaches the virtual workspace of the APIExport edge.kcp.io.
	EdgeVWConfig *rest.Config
	// Base reaches kcp with the controller's own credential; the other virtual workspaces are
	// reached with it.
	Base *rest.Config
	// KCP reaches kcp's own APIs (workspaces and endpoint slices in the ESPW).
	KCP kcpclientset.ClusterInterface
	// Workers is the number of reconciles at once, per queue.
	Workers int
}

// placementKey names an EdgePlacement.
type placementKey struct{ cluster, name string }

func (k placementKey) String() string { return k.cluster + "|" + k.name }

// objectKey names a workload object: its workload workspace, resource, namespace and name.
type objectKey struct {
	cluster   string
	gvr       schema.GroupVersionResource
	namespace string
	name      string
}

func (k objectKey) String() string {
	return k.cluster + "|" + k.gvr.GroupResource().String() + "|" + k.namespace + "|" + k.name
}

// Controller is the status summarizer. Create it with NewController and run it with Start.
type Controller struct {
	cfg    Config
	edgeVW kcpdynamic.ClusterInterface

	placements  cache.SharedIndexInformer
	slices      cache.SharedIndexInformer
	syncTargets cache.SharedIndexInformer
	mailboxes   cache.SharedIndexInformer
	copies      *copyWatches

	placementQueue *coalescingQueue[placementKey]
	objectQueue    *coalescingQueue[objectKey]

	// brokenSince remembers when each broken entry of each placement was first seen.
	brokenMu    sync.Mutex
	brokenSince map[placementKey]map[string]metav1.Time

	// reported remembers what was last written on each workload object, so that a new count
	// is written without reading the object first.
	reportedMu sync.Mutex
	reported   map[objectKey]objectReport
}

// objectReport is what the summarizer last wrote on a workload object, and when.
type objectReport struct {
	count, singletonFrom string
	at                   time.Time
}

// NewController builds the controller and its informers.
func NewController(cfg Config) (*Controller, error) {
	if cfg.Workers <= 0 {
		cfg.Workers = 4
	}
	edgeVW, err := kcpdynamic.NewForConfig(cfg.EdgeVWConfig)
	if err != nil {
		return nil, err
	}
	c := &Controller{
		cfg:            cfg,
		edgeVW:         edgeVW,
		placementQueue: newCoalescingQueue[placementKey]("status-summarizer-placements", CoalescePeriod),
		objectQueue:    newCoalescingQueue[objectKey]("status-summarizer-objects", ObjectCoalescePeriod),
		reported:       map[objectKey]objectReport{},
		brokenSince:    map[placementKey]map[string]metav1.Time{},
	}
	newInformer := func(gvr schema.GroupVersionResource, indexers cache.Indexers) cache.SharedIndexInformer {
		indexers[kcpcache.ClusterIndexName] = kcpcache.ClusterIndexFunc
		return kcpdynamicinformer.NewFilteredDynamicInformer(edgeVW, gvr, resyncPeriod, indexers, nil).Informer()
	}
	c.placements = newInformer(placementsGVR, cache.Indexers{})
	c.slices = newInformer(slicesGVR, cache.Indexers{
		slicesByPlacement: func(obj any) ([]string, error) {
			u := asUnstructured(obj)
			if p := u.GetLabels()[edgev1alpha1.LabelPlacement]; p != "" {
				return []string{logicalcluster.From(u).String() + "|" + p}, nil
			}
			return nil, nil
		},
		slicesByMailbox: func(obj any) ([]string, error) {
			var names []string
			for _, d := range edgev1alpha1.SliceDestinations(asUnstructured(obj)) {
				names = append(names, mailbox.WorkspaceName(logicalcluster.Name(d.Cluster), d.SyncTargetUID))
			}
			return names, nil
		},
	})
	c.syncTargets = newInformer(syncTargetsGVR, cache.Indexers{})

	c.mailboxes = mailbox.NewWorkspaceInformer(cfg.KCP, cfg.ESPW, resyncPeriod, mailboxesByCluster)

	workloads, err := loadWorkloadResources()
	if err != nil {
		return nil, err
	}
	c.copies = newCopyWatches(c, workloads)

	handlers := []struct {
		informer cache.SharedIndexInformer
		handler  cache.ResourceEventHandler
	}{
		{c.placements, cache.ResourceEventHandlerFuncs{
			AddFunc:    c.placementChanged,
			UpdateFunc: func(_, obj any) { c.placementChanged(obj) },
			DeleteFunc: c.placementChanged,
		}},
		{c.slices, cache.ResourceEventHandlerFuncs{
			AddFunc:    c.sliceChanged,
			UpdateFunc: func(old, obj any) { c.sliceChanged(old); c.sliceChanged(obj) },
			DeleteFunc: c.sliceChanged,
		}},
		{c.syncTargets, cache.ResourceEventHandlerFuncs{
			AddFunc:    c.syncTargetChanged,
			UpdateFunc: c.syncTargetUpdated,
			DeleteFunc: c.syncTargetChanged,
		}},
		{c.mailboxes, cache.ResourceEventHandlerFuncs{
			AddFunc:    c.mailboxChanged,
			UpdateFunc: func(_, obj any) { c.mailboxChanged(obj) },
			DeleteFunc: c.mailboxChanged,
		}},
	}
	for _, h := range handlers {
		if _, err := h.informer.AddEventHandler(h.handler); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// loadWorkloadResources returns the resources of the workloads export, as this version of
// edge-mc installs it: those are the non-built-in kinds a mailbox copy can be of.
func loadWorkloadResources() ([]schema.GroupVersionResource, error) {
	schemas, apiExports, err := exports.Load()
	if err != nil {
		return nil, fmt.Errorf("loading the embedded APIExports: %w", err)
	}
	wanted := map[string]bool{}
	for _, e := range apiExports {
		if e.Name == edgev1alpha1.WorkloadsAPIExportName {
			for _, r := range e.Spec.Resources {
				wanted[r.Schema] = true
			}
		}
	}
	var out []schema.GroupVersionResource
	for _, s := range schemas {
		if !wanted[s.Name] {
			continue
		}
		for _, v := range s.Spec.Versions {
			if v.Served && v.Storage {
				out = append(out, schema.GroupVersionResource{Group: s.Spec.Group, Version: v.Name, Resource: s.Spec.Names.Plural})
			}
		}
	}
	return out, nil
}

// Start runs the informers and workers until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	defer utilruntime.HandleCrash()
	defer c.placementQueue.ShutDown()
	defer c.objectQueue.ShutDown()
	logger := klog.FromContext(ctx).WithValues("controller", ControllerName)
	ctx = klog.NewContext(ctx, logger)
	for _, inf := range []cache.SharedIndexInformer{c.placements, c.slices, c.syncTargets, c.mailboxes} {
		go inf.Run(ctx.Done())
	}
	go c.copies.start(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), c.placements.HasSynced, c.slices.HasSynced, c.syncTargets.HasSynced, c.mailboxes.HasSynced) {
		return ctx.Err()
	}
	logger.Info("caches synced; summarizing")
	for i := 0; i < c.cfg.Workers; i++ {
		go wait.UntilWithContext(ctx, func(ctx context.Context) { runQueue(ctx, c.placementQueue, c.syncPlacement) }, time.Second)
		go wait.UntilWithContext(ctx, func(ctx context.Context) { runQueue(ctx, c.objectQueue, c.syncObject) }, time.Second)
	}
	<-ctx.Done()
	return nil
}

// HasSynced reports whether the caches are filled, the copies' included.
func (c *Controller) HasSynced() bool {
	return c.placements.HasSynced() && c.slices.HasSynced() && c.syncTargets.HasSynced() && c.mailboxes.HasSynced() && c.copies.hasSynced()
}

func runQueue[K comparable](ctx context.Context, q *coalescingQueue[K], sync func(context.Context, K) error) {
	for {
		key, quit := q.Get()
		if quit {
			return
		}
		func() {
			defer q.Done(key)
			if err := sync(ctx, key); err != nil {
				klog.FromContext(ctx).V(2).Info("will retry", "key", key, "err", err.Error())
				q.Retry(key)
				return
			}
			q.Forget(key)
		}()
	}
}

// coalescingQueue is a rate-limited work queue that processes a key at most once per period: a
// key added after a quiet period is processed at once, one added again sooner waits for the
// period's end, and all additions in between make one.
type coalescingQueue[K comparable] struct {
	workqueue.TypedRateLimitingInterface[K]
	period time.Duration
	mu     sync.Mutex
	last   map[K]time.Time
}

func newCoalescingQueue[K comparable](name string, period time.Duration) *coalescingQueue[K] {
	return &coalescingQueue[K]{
		TypedRateLimitingInterface: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[K](),
			workqueue.TypedRateLimitingQueueConfig[K]{Name: name}),
		period: period,
		last:   map[K]time.Time{},
	}
}

// Enqueue adds key, at once or at the end of its period.
func (q *coalescingQueue[K]) Enqueue(key K) {
	q.mu.Lock()
	last, ok := q.last[key]
	q.mu.Unlock()
	if wait := q.period - time.Since(last); ok && wait > 0 {
		q.AddAfter(key, wait)
		return
	}
	q.Add(key)
}

// Get returns the next key and starts its period.
func (q *coalescingQueue[K]) Get() (K, bool) {
	key, quit := q.TypedRateLimitingInterface.Get()
	if !quit {
		q.mu.Lock()
		q.last[key] = time.Now()
		if len(q.last) > 10000 {
			for k, t := range q.last {
				if time.Since(t) > q.period {
					delete(q.last, k)
				}
			}
		}
		q.mu.Unlock()
	}
	return key, quit
}

// Retry adds key again after the rate limiter's backoff.
func (q *coalescingQueue[K]) Retry(key K) { q.AddRateLimited(key) }

// --- events -----------------------------------------------------------------------------------

func asUnstructured(obj any) *unstructured.Unstructured {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	u, _ := obj.(*unstructured.Unstructured)
	return u
}

func (c *Controller) placementChanged(obj any) {
	u := asUnstructured(obj)
	if u == nil {
		return
	}
	pk := placementKey{cluster: logicalcluster.From(u).String(), name: u.GetName()}
	c.placementQueue.Enqueue(pk)
	c.enqueueObjectsOf(pk)
}

func (c *Controller) sliceChanged(obj any) {
	u := asUnstructured(obj)
	if u == nil {
		return
	}
	if p := u.GetLabels()[edgev1alpha1.LabelPlacement]; p != "" {
		pk := placementKey{cluster: logicalcluster.From(u).String(), name: p}
		c.placementQueue.Enqueue(pk)
		c.enqueueObjectsOf(pk)
	}
}

// syncTargetUpdated reacts to a SyncTarget's update only when its SyncerReady condition changed:
// heartbeats update SyncTargets all the time and change nothing here.
func (c *Controller) syncTargetUpdated(old, obj any) {
	wasStale, _ := syncerStaleness(asUnstructured(old))
	isStale, _ := syncerStaleness(asUnstructured(obj))
	if wasStale != isStale {
		c.syncTargetChanged(obj)
	}
}

func (c *Controller) syncTargetChanged(obj any) {
	u := asUnstructured(obj)
	if u == nil {
		return
	}
	c.enqueuePlacementsAt(mailbox.WorkspaceName(logicalcluster.From(u), u.GetUID()))
}

func (c *Controller) mailboxChanged(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if ws, ok := obj.(*tenancyv1alpha1.Workspace); ok {
		c.enqueuePlacementsAt(ws.Name)
	}
}

// enqueuePlacementsAt queues the placements that have the mailbox as a destination.
func (c *Controller) enqueuePlacementsAt(mailboxName string) {
	slices, _ := c.slices.GetIndexer().ByIndex(slicesByMailbox, mailboxName)
	for _, s := range slices {
		c.sliceChanged(s)
	}
}

// enqueueObjectsOf queues the workload objects whose copies the placement selects.
func (c *Controller) enqueueObjectsOf(pk placementKey) {
	for _, cp := range c.copies.byIndex(copiesByPlacement, pk.String()) {
		if k, ok := originalOf(cp.obj, cp.gvr); ok {
			c.objectQueue.Enqueue(k)
		}
	}
}

// copyChanged queues what a copy's change affects: its placements and its original.
func (c *Controller) copyChanged(gvr schema.GroupVersionResource, obj any) {
	u := asUnstructured(obj)
	if u == nil {
		return
	}
	k, ok := originalOf(u, gvr)
	if !ok {
		return
	}
	c.objectQueue.Enqueue(k)
	for _, p := range placementsOf(u) {
		c.placementQueue.Enqueue(placementKey{cluster: k.cluster, name: p})
	}
}

// originalOf names the workload object a mailbox copy was made from.
func originalOf(u *unstructured.Unstructured, gvr schema.GroupVersionResource) (objectKey, bool) {
	src := u.GetLabels()[edgev1alpha1.LabelSourceCluster]
	if src == "" {
		return objectKey{}, false
	}
	return objectKey{cluster: src, gvr: gvr, namespace: u.GetNamespace(), name: u.GetName()}, true
}

// placementsOf lists the placements (of the copy's source cluster) that select a copy's original.
func placementsOf(u *unstructured.Unstructured) []string {
	v := u.GetAnnotations()[edgev1alpha1.AnnotationPlacements]
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// syncerStaleness says whether a SyncTarget's syncer is stale (silent past the grace period),
// and since when.
func syncerStaleness(u *unstructured.Unstructured) (stale bool, since time.Time) {
	if u == nil {
		return false, time.Time{}
	}
	conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, raw := range conditions {
		m, _ := raw.(map[string]any)
		if m["type"] != edgev1alpha1.SyncTargetSyncerReady {
			continue
		}
		if m["reason"] != edgev1alpha1.ReasonHeartbeatStale {
			return false, time.Time{}
		}
		t, _ := time.Parse(time.RFC3339, fmt.Sprint(m["lastTransitionTime"]))
		return true, t
	}
	return false, time.Time{}
}

// mailboxClaimed are the resources whose copies are watched through the mailbox export's
// virtual workspace.
func mailboxClaimed() []schema.GroupVersionResource {
	var out []schema.GroupVersionResource
	for _, c := range espw.MailboxClaims() {
		if c.Group == "coordination.k8s.io" {
			continue // the heartbeat Leases are no copies
		}
		out = append(out, schema.GroupVersionResource{Group: c.Group, Version: "v1", Resource: c.Resource})
	}
	return out
}
