// Package placementtranslator is the placement translator. For every destination of every
// EdgePlacement (the SinglePlacementSlices the scheduler writes), it writes the objects of the
// placement's workload workspace that spec.downsync selects, customised for that destination,
// into the destination's mailbox workspace, and the mailbox's SyncerConfig, which tells the
// syncer what to watch there. It keeps the copies in step with their originals, the placements,
// the Customizers and the destinations' SyncTarget and Location labels, and deletes the copies it
// made once nothing selects them any more. The other way, it brings the objects that syncers
// up-synced into mailboxes, as spec.upsync says, back into the workload workspaces (upsync.go),
// and never selects them for down-sync. It reports in each placement's status (conditions
// Projected, Conflict, Upsynced and UpsyncConflict) what it could not do, and why.
//
// It reads the workload workspaces through the virtual workspace of the APIExport edge.kcp.io:
// the placements, slices, Customizers, SyncTargets and Locations it serves, and the workload
// objects of kinds that edge.kcp.io claims and the workspace's owner accepted (see
// espw.EdgeClaims); it writes the up-synced objects there through the same claims. Custom kinds
// that a workload workspace defines with its own CRDs belong to no export and cannot be claimed;
// it reads those with its own credential (see sources.go), and does not bring them back. It
// writes into mailboxes, which are its own workspaces, with its own credential, and watches the
// up-synced objects in all mailboxes through the virtual workspaces of mailbox.edge.kcp.io and
// workloads.edge.kcp.io (upsync_sources.go).
//
// The down-sync work is done per mailbox: a change anywhere queues the mailboxes it can affect,
// and a mailbox's reconcile computes everything that should be in it (desired.go) and makes it
// so (mailbox.go), writing only what differs from what it last wrote there. The up-sync work is
// done per object identity in a workload workspace (upsync_reconcile.go).
package placementtranslator

import (
	"context"
	"fmt"
	"sync"
	"time"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	kcpdynamic "github.com/kcp-dev/client-go/dynamic"
	kcpdynamicinformer "github.com/kcp-dev/client-go/dynamic/dynamicinformer"
	"github.com/kcp-dev/logicalcluster/v3"
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

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/mailbox"
)

// ControllerName names the controller in logs, metrics and --controllers.
const ControllerName = "placement-translator"

// FieldManager is the server-side-apply field manager of the copies and SyncerConfigs.
const FieldManager = "edge-placement-translator"

const resyncPeriod = 10 * time.Minute

var (
	placementsGVR   = edgev1alpha1.SchemeGroupVersion.WithResource("edgeplacements")
	slicesGVR       = edgev1alpha1.SchemeGroupVersion.WithResource("singleplacementslices")
	customizersGVR  = edgev1alpha1.SchemeGroupVersion.WithResource("customizers")
	syncTargetsGVR  = edgev1alpha1.SchemeGroupVersion.WithResource("synctargets")
	locationsGVR    = edgev1alpha1.SchemeGroupVersion.WithResource("locations")
	syncerConfigGVR = edgev1alpha1.SchemeGroupVersion.WithResource("syncerconfigs")
	namespacesGVR   = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	crdsGVR         = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// Index names.
const (
	// byMailbox indexes slices by the mailbox workspace names of their destinations.
	byMailbox = "byMailbox"
	// byPlacement indexes slices by <cluster>|<placement>.
	byPlacement = "byPlacement"
	// byLocation indexes slices by <cluster>|<location> of their destinations.
	byLocation = "byLocation"
	// syncTargetsByMailbox indexes SyncTargets by their mailbox workspace name.
	syncTargetsByMailbox = "syncTargetsByMailbox"
	// syncTargetsByMailboxCluster indexes SyncTargets by their mailbox's logical cluster.
	syncTargetsByMailboxCluster = "syncTargetsByMailboxCluster"
)

// Config is what the controller needs.
type Config struct {
	// ESPW is the edge service provider workspace, the mailboxes' parent.
	ESPW logicalcluster.Path
	// EdgeVWConfig reaches the virtual workspace of the APIExport edge.kcp.io.
	EdgeVWConfig *rest.Config
	// Admin reaches any workspace of kcp with the controller's own credential: mailboxes, and
	// the custom kinds of workload workspaces.
	Admin kcpdynamic.ClusterInterface
	// KCP reaches kcp's own APIs (APIBindings in mailboxes).
	KCP kcpclientset.ClusterInterface
	// Workers is the number of reconciles at once.
	Workers int
}

// Controller is the placement translator. Create it with NewController and run it with Start.
type Controller struct {
	cfg    Config
	edgeVW kcpdynamic.ClusterInterface
	queue  workqueue.TypedRateLimitingInterface[queueKey]

	placements  cache.SharedIndexInformer
	slices      cache.SharedIndexInformer
	customizers cache.SharedIndexInformer
	syncTargets cache.SharedIndexInformer
	locations   cache.SharedIndexInformer

	// workload holds one informer per workload resource served through the virtual workspace,
	// and the custom kinds of the workload workspaces; see sources.go.
	workload *sources
	// upsync holds the informers on up-synced objects in mailboxes; see upsync_sources.go.
	upsync *upsyncSources

	mailboxesMu sync.Mutex
	mailboxes   map[string]*mailboxState

	results       *results
	upsyncResults *upsyncResults
}

// queueKey is one of: a mailbox (by workspace name) to reconcile, a placement whose status to
// write, or an up-synced object identity in a workload workspace to bring back.
type queueKey struct {
	mailbox   string
	placement placementKey
	upsync    upsyncKey
}

// placementKey names an EdgePlacement.
type placementKey struct {
	cluster, name string
}

func (k placementKey) String() string { return k.cluster + "|" + k.name }

// NewController builds the controller and its informers. It discovers the workload resources
// that the virtual workspace serves.
func NewController(cfg Config) (*Controller, error) {
	if cfg.Workers <= 0 {
		cfg.Workers = 8
	}
	edgeVW, err := kcpdynamic.NewForConfig(cfg.EdgeVWConfig)
	if err != nil {
		return nil, err
	}
	c := &Controller{
		cfg:    cfg,
		edgeVW: edgeVW,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[queueKey](),
			workqueue.TypedRateLimitingQueueConfig[queueKey]{Name: ControllerName}),
		mailboxes:     map[string]*mailboxState{},
		results:       newResults(),
		upsyncResults: newUpsyncResults(),
	}
	newInformer := func(gvr schema.GroupVersionResource, indexers cache.Indexers) cache.SharedIndexInformer {
		indexers[kcpcache.ClusterIndexName] = kcpcache.ClusterIndexFunc
		return kcpdynamicinformer.NewFilteredDynamicInformer(edgeVW, gvr, resyncPeriod, indexers, nil).Informer()
	}
	c.placements = newInformer(placementsGVR, cache.Indexers{})
	c.slices = newInformer(slicesGVR, cache.Indexers{byMailbox: sliceMailboxes, byPlacement: slicePlacement, byLocation: sliceLocations})
	c.customizers = newInformer(customizersGVR, cache.Indexers{})
	c.syncTargets = newInformer(syncTargetsGVR, cache.Indexers{syncTargetsByMailbox: syncTargetMailbox, syncTargetsByMailboxCluster: syncTargetMailboxCluster})
	c.locations = newInformer(locationsGVR, cache.Indexers{})

	resources, err := discoverWorkloadResources(cfg.EdgeVWConfig)
	if err != nil {
		return nil, err
	}
	c.workload = newSources(c, resources)
	c.upsync = newUpsyncSources(c)

	handle := func(informer cache.SharedIndexInformer, onChange func(old, obj *unstructured.Unstructured)) error {
		_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { onChange(nil, asUnstructured(obj)) },
			UpdateFunc: func(old, obj any) { onChange(asUnstructured(old), asUnstructured(obj)) },
			DeleteFunc: func(obj any) { onChange(nil, asUnstructured(obj)) },
		})
		return err
	}
	for _, h := range []struct {
		informer cache.SharedIndexInformer
		onChange func(old, obj *unstructured.Unstructured)
	}{
		{c.placements, c.placementChanged},
		{c.slices, c.sliceChanged},
		{c.customizers, func(_, obj *unstructured.Unstructured) { c.workloadChanged(obj) }},
		{c.syncTargets, c.syncTargetChanged},
		{c.locations, c.locationChanged},
	} {
		if err := handle(h.informer, h.onChange); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// discoverWorkloadResources lists the resources that the virtual workspace serves besides
// edge.kcp.io's own and kcp's: the claimed workload kinds.
func discoverWorkloadResources(vw *rest.Config) ([]resource, error) {
	var lists []*metav1.APIResourceList
	err := wait.ExponentialBackoff(wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Steps: 6}, func() (bool, error) {
		l, err := discoverVirtualWorkspace(vw)
		if err != nil {
			return false, nil
		}
		lists = l
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("discovering the resources of the virtual workspace of %s: %w", edgev1alpha1.EdgeAPIExportName, err)
	}
	return workloadResources(lists), nil
}

// Start runs the informers and workers until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	logger := klog.FromContext(ctx).WithValues("controller", ControllerName)
	ctx = klog.NewContext(ctx, logger)
	for _, inf := range []cache.SharedIndexInformer{c.placements, c.slices, c.customizers, c.syncTargets, c.locations} {
		go inf.Run(ctx.Done())
	}
	c.workload.start(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), c.HasSynced) {
		return ctx.Err()
	}
	logger.Info("caches synced; projecting", "workloadResources", len(c.workload.resources))
	// The return path finds the mailboxes' virtual workspaces, and visits every object it made,
	// so that those no destination up-syncs any more after a restart go.
	c.upsync.start(ctx)
	c.enqueueReturned("")
	// Every mailbox that is ready is visited once, so that what was projected before a restart,
	// and is no longer wanted, goes.
	for _, obj := range c.syncTargets.GetStore().List() {
		if name := mailboxOf(asUnstructured(obj)); name != "" {
			c.queue.Add(queueKey{mailbox: name})
		}
	}
	for i := 0; i < c.cfg.Workers; i++ {
		go wait.UntilWithContext(ctx, c.runWorker, time.Second)
	}
	<-ctx.Done()
	return nil
}

// HasSynced says whether every informer has synced.
func (c *Controller) HasSynced() bool {
	for _, inf := range []cache.SharedIndexInformer{c.placements, c.slices, c.customizers, c.syncTargets, c.locations} {
		if !inf.HasSynced() {
			return false
		}
	}
	return c.workload.hasSynced()
}

func (c *Controller) runWorker(ctx context.Context) {
	for c.processNext(ctx) {
	}
}

func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	logger := klog.FromContext(ctx)
	var err error
	var requeue time.Duration
	switch {
	case key.mailbox != "":
		logger := logger.WithValues("mailbox", key.mailbox)
		requeue, err = c.reconcileMailbox(klog.NewContext(ctx, logger), key.mailbox)
	case key.upsync != upsyncKey{}:
		logger := logger.WithValues("upsync", key.upsync.String())
		err = c.reconcileUpsync(klog.NewContext(ctx, logger), key.upsync)
	default:
		logger := logger.WithValues("placement", key.placement.String())
		err = c.writePlacementStatus(klog.NewContext(ctx, logger), key.placement)
	}
	switch {
	case err != nil:
		logger.V(2).Info("will retry", "key", key, "err", err.Error())
		c.queue.AddRateLimited(key)
	case requeue > 0:
		c.queue.Forget(key)
		c.queue.AddAfter(key, requeue)
	default:
		c.queue.Forget(key)
	}
	return true
}

// mailboxState is what the controller knows of one mailbox: what it wrote there.
type mailboxState struct {
	// loaded: copies was read from the mailbox (once, after a start).
	loaded bool
	// copies are the copies in the mailbox, by identity, with the hash of their content.
	copies map[copyKey]copyRecord
	// configHash is the hash of the SyncerConfig spec last written.
	configHash string
	// workloadsBound: the mailbox binds the workloads export.
	workloadsBound bool
}

func (c *Controller) mailboxState(name string) *mailboxState {
	c.mailboxesMu.Lock()
	defer c.mailboxesMu.Unlock()
	s, ok := c.mailboxes[name]
	if !ok {
		s = &mailboxState{copies: map[copyKey]copyRecord{}}
		c.mailboxes[name] = s
	}
	return s
}

func (c *Controller) forgetMailbox(name string) {
	c.mailboxesMu.Lock()
	defer c.mailboxesMu.Unlock()
	delete(c.mailboxes, name)
}

func asUnstructured(obj any) *unstructured.Unstructured {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	u, _ := obj.(*unstructured.Unstructured)
	return u
}

// mailboxName is the mailbox workspace name of a destination.
func mailboxName(d edgev1alpha1.SinglePlacement) string {
	return mailbox.WorkspaceName(logicalcluster.Name(d.Cluster), d.SyncTargetUID)
}
