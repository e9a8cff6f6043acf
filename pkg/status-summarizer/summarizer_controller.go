// Package statussummarizer is the status summarizer. It rolls up what the syncers report in the
// status of the assemblages in the mailboxes (per assemblage, the version the syncer took in and
// the one it applied, whether it refused it, and per object its state at the edge and its
// .status) into the workload workspaces:
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
// How an assemblage's status reads, and the summary itself, are pure functions of package
// transport (summary.go), which kubectl edge shares. The syncer computes each object's state at
// the edge with kstatus; a destination whose SyncTarget's SyncerReady condition says the heartbeat
// is stale counts as stale.
//
// It watches the Assemblages of all mailboxes at once through the virtual workspace of the
// APIExport mailbox.edge.kcp.io, keeping of each only what summaries read (not the carried objects,
// nor the objects' .status: a singleton's status is read from the one assemblage that holds it,
// when needed); and the placements, slices and SyncTargets (whose status names each mailbox's
// logical cluster) through edge.kcp.io's. Changes are coalesced per placement and per object: a
// burst of any number of edge status changes makes at most one status write per placement each
// CoalescePeriod and one write per object each ObjectCoalescePeriod.
package statussummarizer

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	kcpdynamic "github.com/kcp-dev/client-go/dynamic"
	"github.com/kcp-dev/logicalcluster/v3"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/centerview"
	"github.com/kcp-dev/edge-mc/pkg/controllerkit"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// ControllerName names the controller in logs, metrics and --controllers.
const ControllerName = "status-summarizer"

// CoalescePeriod is the least time between two writes for one placement: a change after a quiet
// period is summarized at once, later ones within the period together at its end.
const CoalescePeriod = time.Second

// ObjectCoalescePeriod is the same for one workload object (its executing-count, and a
// singleton's status). It is longer: while a placement rolls out, every object it selects
// changes count with every destination that applies it, and each write into the workload
// workspace is one more for kcp, which is busy writing the assemblages.
const ObjectCoalescePeriod = 5 * time.Second

const resyncPeriod = 10 * time.Minute

var (
	placementsGVR  = edgev1alpha1.SchemeGroupVersion.WithResource("edgeplacements")
	slicesGVR      = edgev1alpha1.SchemeGroupVersion.WithResource("singleplacementslices")
	syncTargetsGVR = edgev1alpha1.SchemeGroupVersion.WithResource("synctargets")
	// assemblagesGVR is a resource of mailbox.edge.kcp.io, watched through its virtual workspace.
	assemblagesGVR = edgev1alpha1.SchemeGroupVersion.WithResource("assemblages")
)

// Index names.
const (
	// slicesByPlacement indexes slices by <cluster>|<placement>.
	slicesByPlacement = "slicesByPlacement"
	// slicesBySyncTarget indexes slices by the <cluster>|<name> of their destinations' SyncTargets.
	slicesBySyncTarget = "slicesBySyncTarget"
)

// Config is what the controller needs.
type Config struct {
	// ESPW is the edge service provider workspace.
	ESPW logicalcluster.Path
	// Edge follows the virtual workspaces of the APIExport edge.kcp.io (one per shard that
	// holds a binding of it), and writes to each workspace through the one that serves it.
	Edge *centerview.Endpoints
	// Mailbox follows those of mailbox.edge.kcp.io, where the assemblages are read.
	Mailbox *centerview.Endpoints
	// Assemblages is the shared cache of the assemblages of every mailbox
	// (centerview.NewAssemblages), which the placement translator reads too; nil makes one.
	Assemblages centerview.SharedInformer
	// Base reaches kcp with the controller's own credential: the workload objects of custom
	// kinds, which no export can claim.
	Base *rest.Config
	// KCP reaches kcp's own APIs.
	KCP kcpclientset.ClusterInterface
	// Workers is the number of reconciles at once, per queue.
	Workers int
}

// placementKey names an EdgePlacement.
type placementKey struct{ cluster, name string }

func (k placementKey) String() string { return k.cluster + "|" + k.name }

// objectKey names a workload object: its workload workspace, and its key there.
type objectKey struct {
	cluster string
	key     transport.Key
}

func (k objectKey) String() string { return k.cluster + "|" + k.key.String() }

// Controller is the status summarizer. Create it with NewController and run it with Start.
type Controller struct {
	cfg Config

	placements  centerview.SharedInformer
	slices      centerview.SharedInformer
	syncTargets centerview.SharedInformer
	assemblages *assemblageWatch
	// collectors are the workload workspaces' StatusCollectors; nil: status.collected is not
	// written.
	collectors centerview.SharedInformer

	placementQueue *controllerkit.Queue[placementKey]
	objectQueue    *controllerkit.Queue[objectKey]

	// writePlacementStatus writes an EdgePlacement's status (the whole object, with its
	// resourceVersion).
	writePlacementStatus func(ctx context.Context, cluster string, placement *unstructured.Unstructured) error
	// objectClient reaches a workload object's resource in its workspace.
	objectClient func(ctx context.Context, k objectKey) (dynamic.ResourceInterface, error)

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
	edgeVW := cfg.Edge
	own, err := kcpdynamic.NewForConfig(cfg.Base)
	if err != nil {
		return nil, err
	}
	kinds, err := newKindResolver(edgeVW)
	if err != nil {
		return nil, err
	}
	var sharedErr error
	newInformer := func(gvr schema.GroupVersionResource, indexers cache.Indexers) centerview.SharedInformer {
		// One informer per resource for every controller of the process (centerview's Shared).
		inf, err := cfg.Edge.Shared(gvr, indexers)
		if err != nil && sharedErr == nil {
			sharedErr = err
		}
		return inf
	}
	c := newController(cfg,
		newInformer(placementsGVR, cache.Indexers{}),
		newInformer(slicesGVR, sliceIndexers()),
		newInformer(syncTargetsGVR, cache.Indexers{}),
		newAssemblageWatch(func() (centerview.SharedInformer, func(ctx context.Context, mailbox logicalcluster.Name, name string) (*unstructured.Unstructured, error)) {
			return mailboxAssemblages(cfg.Mailbox, cfg.Assemblages)
		}))
	c.collectors = newInformer(statusCollectorsGVR, cache.Indexers{})
	if sharedErr != nil {
		return nil, sharedErr
	}
	c.writePlacementStatus = func(ctx context.Context, cluster string, u *unstructured.Unstructured) error {
		_, err := edgeVW.Cluster(logicalcluster.NewPath(cluster)).Resource(placementsGVR).UpdateStatus(ctx, u, metav1.UpdateOptions{FieldManager: FieldManager})
		return err
	}
	c.objectClient = func(ctx context.Context, k objectKey) (dynamic.ResourceInterface, error) {
		gvr, custom, err := kinds.resolve(ctx, logicalcluster.Name(k.cluster), k.key.GroupResource())
		if err != nil {
			return nil, err
		}
		var client centerview.ClusterClient = edgeVW
		switch {
		case custom:
			client = own // custom kinds belong to no export, so the virtual workspace has none
		case gvr.GroupResource() == crdsGVR.GroupResource():
			// The virtual workspace serves CRDs with a schema that drops their openAPIV3Schema's
			// fields, so every write of a CRD there is refused as invalid (kcp issue 3389);
			// the workspace itself takes it.
			client = own
		}
		return client.Cluster(logicalcluster.NewPath(k.cluster)).Resource(gvr).Namespace(k.key.Namespace), nil
	}
	if err := c.addHandlers(); err != nil {
		return nil, err
	}
	return c, nil
}

// newController assembles a controller from its informers, without handlers or clients.
func newController(cfg Config, placements, slices, syncTargets centerview.SharedInformer, assemblages *assemblageWatch) *Controller {
	c := &Controller{
		cfg:            cfg,
		placements:     placements,
		slices:         slices,
		syncTargets:    syncTargets,
		assemblages:    assemblages,
		placementQueue: controllerkit.NewQueue[placementKey](controllerkit.Options{Name: "status-summarizer-placements", Workers: cfg.Workers, Period: CoalescePeriod}),
		objectQueue:    controllerkit.NewQueue[objectKey](controllerkit.Options{Name: "status-summarizer-objects", Workers: cfg.Workers, Period: ObjectCoalescePeriod}),
		reported:       map[objectKey]objectReport{},
		brokenSince:    map[placementKey]map[string]metav1.Time{},
	}
	assemblages.changed = c.assemblageChanged
	assemblages.synced = c.enqueueAll
	return c
}

func sliceIndexers() cache.Indexers {
	return cache.Indexers{
		slicesByPlacement: func(obj any) ([]string, error) {
			u := centerview.AsUnstructured(obj)
			if p := u.GetLabels()[edgev1alpha1.LabelPlacement]; p != "" {
				return []string{logicalcluster.From(u).String() + "|" + p}, nil
			}
			return nil, nil
		},
		slicesBySyncTarget: func(obj any) ([]string, error) {
			var keys []string
			for _, d := range edgev1alpha1.SliceDestinations(centerview.AsUnstructured(obj)) {
				keys = append(keys, d.Cluster+"|"+d.SyncTargetName)
			}
			return keys, nil
		},
	}
}

func (c *Controller) addHandlers() error {
	handlers := []struct {
		informer centerview.SharedInformer
		handler  cache.ResourceEventHandler
	}{
		{c.placements, cache.ResourceEventHandlerFuncs{
			AddFunc:    c.placementChanged,
			UpdateFunc: c.placementUpdated,
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
	}
	if c.collectors != nil {
		handlers = append(handlers, struct {
			informer centerview.SharedInformer
			handler  cache.ResourceEventHandler
		}{c.collectors, cache.ResourceEventHandlerFuncs{
			AddFunc:    c.collectorChanged,
			UpdateFunc: func(_, obj any) { c.collectorChanged(obj) },
			DeleteFunc: c.collectorChanged,
		}})
	}
	for _, h := range handlers {
		if _, err := h.informer.AddEventHandler(h.handler); err != nil {
			return err
		}
	}
	return nil
}

// Start runs the informers and workers until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	defer utilruntime.HandleCrash()
	defer c.placementQueue.ShutDown()
	defer c.objectQueue.ShutDown()
	logger := klog.FromContext(ctx).WithValues("controller", ControllerName)
	ctx = klog.NewContext(ctx, logger)
	synced := []cache.InformerSynced{c.placements.HasSynced, c.slices.HasSynced, c.syncTargets.HasSynced}
	for _, inf := range []centerview.SharedInformer{c.placements, c.slices, c.syncTargets} {
		go inf.Run(ctx.Done())
	}
	if c.collectors != nil {
		go c.collectors.Run(ctx.Done())
		synced = append(synced, c.collectors.HasSynced)
	}
	go c.assemblages.start(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return ctx.Err()
	}
	logger.Info("caches synced; summarizing")
	defer metricPlacementConditions.Count(c.placements.GetStore())()
	go c.objectQueue.Run(ctx, func(ctx context.Context, k objectKey) (time.Duration, error) { return 0, c.syncObject(ctx, k) })
	c.placementQueue.Run(ctx, func(ctx context.Context, k placementKey) (time.Duration, error) { return 0, c.syncPlacement(ctx, k) })
	return nil
}

// HasSynced reports whether the caches are filled. The assemblages' cache counts once its watch
// started: until some mailbox binds mailbox.edge.kcp.io, kcp serves no virtual workspace for it,
// and there is nothing to watch.
func (c *Controller) HasSynced() bool {
	return c.placements.HasSynced() && c.slices.HasSynced() && c.syncTargets.HasSynced() && c.assemblages.hasSynced()
}

// --- events -----------------------------------------------------------------------------------

func (c *Controller) placementChanged(obj any) {
	u := centerview.AsUnstructured(obj)
	if u == nil {
		return
	}
	pk := placementKey{cluster: logicalcluster.From(u).String(), name: u.GetName()}
	c.placementQueue.Add(pk)
	c.enqueueObjectsOf(pk)
}

// placementUpdated reacts to a change of a placement's spec (or its deletion starting); its
// status, which this controller and others write, changes nothing in its summary.
func (c *Controller) placementUpdated(old, obj any) {
	o, u := centerview.AsUnstructured(old), centerview.AsUnstructured(obj)
	if o == nil || u == nil || o.GetGeneration() != u.GetGeneration() || o.GetDeletionTimestamp().IsZero() != u.GetDeletionTimestamp().IsZero() {
		c.placementChanged(obj)
	}
}

func (c *Controller) sliceChanged(obj any) {
	u := centerview.AsUnstructured(obj)
	if u == nil {
		return
	}
	if p := u.GetLabels()[edgev1alpha1.LabelPlacement]; p != "" {
		pk := placementKey{cluster: logicalcluster.From(u).String(), name: p}
		c.placementQueue.Add(pk)
		c.enqueueObjectsOf(pk)
	}
}

// syncTargetUpdated reacts to a SyncTarget's update only when what summaries read of it changed:
// whether its syncer is stale and why, and its mailbox.
func (c *Controller) syncTargetUpdated(old, obj any) {
	o, u := centerview.AsUnstructured(old), centerview.AsUnstructured(obj)
	wasStale, _, wasWhy := syncerStaleness(o)
	isStale, _, isWhy := syncerStaleness(u)
	if wasStale != isStale || wasWhy != isWhy || mailboxClusterOf(o) != mailboxClusterOf(u) {
		c.syncTargetChanged(obj)
	}
}

func (c *Controller) syncTargetChanged(obj any) {
	u := centerview.AsUnstructured(obj)
	if u == nil {
		return
	}
	slices, _ := c.slices.GetIndexer().ByIndex(slicesBySyncTarget, logicalcluster.From(u).String()+"|"+u.GetName())
	for _, s := range slices {
		c.sliceChanged(s)
	}
}

// enqueueAll queues every placement, and every object that an assemblage names: once the
// assemblages are known, every summary can be made (those of placements with no assemblage yet
// too), and what was queued before was put off.
func (c *Controller) enqueueAll() {
	for _, obj := range c.placements.GetStore().List() {
		if u := centerview.AsUnstructured(obj); u != nil {
			c.placementQueue.Add(placementKey{cluster: logicalcluster.From(u).String(), name: u.GetName()})
		}
	}
	for _, a := range c.assemblages.all() {
		c.placementQueue.Add(placementKey{cluster: a.Spec.Placement.Cluster, name: a.Spec.Placement.Name})
		for _, o := range transport.ObjectsOf(a) {
			c.enqueueObject(a.Spec.Placement.Cluster, o)
		}
	}
}

// enqueueObjectsOf queues the workload objects that the placement's assemblages name.
func (c *Controller) enqueueObjectsOf(pk placementKey) {
	seen := map[string]bool{}
	for _, a := range c.assemblages.ofPlacement(pk) {
		for _, o := range transport.ObjectsOf(a) {
			if !seen[o] {
				seen[o] = true
				c.enqueueObject(pk.cluster, o)
			}
		}
	}
}

func (c *Controller) enqueueObject(cluster, object string) {
	if k, ok := transport.ParseKey(object); ok {
		c.objectQueue.Add(objectKey{cluster: cluster, key: k})
	}
}

// assemblageChanged queues what a change of an assemblage affects: its placement, and the objects
// whose executing state there changed, or that it started or stopped naming; all its objects if
// the placement wants their status reported back, which this cache does not hold.
func (c *Controller) assemblageChanged(old, obj *edgev1alpha1.Assemblage) {
	var ref edgev1alpha1.PlacementReference
	switch {
	case obj != nil:
		ref = obj.Spec.Placement
	case old != nil:
		ref = old.Spec.Placement
	default:
		return
	}
	if old != nil && obj != nil && old.Spec.Placement != obj.Spec.Placement {
		c.assemblageChanged(old, nil)
		c.assemblageChanged(nil, obj)
		return
	}
	pk := placementKey{cluster: ref.Cluster, name: ref.Name}
	c.placementQueue.Add(pk)
	everything := c.wantsSingletonStatus(pk)
	before, after := transport.ObjectsOf(old), transport.ObjectsOf(obj)
	named := make(map[string]bool, len(before)+len(after))
	for _, o := range before {
		named[o] = true
	}
	for _, o := range after {
		named[o] = true
	}
	for o := range named {
		if everything || transport.IsExecuting(old, o) != transport.IsExecuting(obj, o) || !names(old, o) || !names(obj, o) {
			c.enqueueObject(ref.Cluster, o)
		}
	}
}

// names reports whether the assemblage names the object.
func names(a *edgev1alpha1.Assemblage, object string) bool {
	for _, o := range transport.ObjectsOf(a) {
		if o == object {
			return true
		}
	}
	return false
}

// wantsSingletonStatus reports whether the placement asks for its objects' status to be
// reported back.
func (c *Controller) wantsSingletonStatus(pk placementKey) bool {
	item, exists, _ := c.placements.GetIndexer().GetByKey(kcpcache.ToClusterAwareKey(pk.cluster, "", pk.name))
	if !exists {
		return false
	}
	want, _, _ := unstructured.NestedBool(centerview.AsUnstructured(item).Object, "spec", "wantSingletonReportedState")
	return want
}

// syncerStaleness says whether a SyncTarget's syncer is stale (silent past the grace period, or
// its mailbox's shard unreachable as long), since when, and why, as a summary says it.
func syncerStaleness(u *unstructured.Unstructured) (stale bool, since time.Time, why string) {
	if u == nil {
		return false, time.Time{}, ""
	}
	conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, raw := range conditions {
		m, _ := raw.(map[string]any)
		if m["type"] != edgev1alpha1.SyncTargetSyncerReady {
			continue
		}
		reason, _ := m["reason"].(string)
		if !edgev1alpha1.SyncerSilent(reason) {
			return false, time.Time{}, ""
		}
		t, _ := time.Parse(time.RFC3339, fmt.Sprint(m["lastTransitionTime"]))
		if reason == edgev1alpha1.ReasonMailboxUnreachable {
			why, _ = m["message"].(string)
		}
		return true, t, why
	}
	return false, time.Time{}, ""
}

// mailboxClusterOf is the logical cluster of a SyncTarget's mailbox, as its status says ("" if
// none yet).
func mailboxClusterOf(u *unstructured.Unstructured) logicalcluster.Name {
	if u == nil {
		return ""
	}
	cluster, _, _ := unstructured.NestedString(u.Object, "status", "mailboxCluster")
	return logicalcluster.Name(cluster)
}

// sortedKeys returns the keys of a set, sorted.
func sortedKeys(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
