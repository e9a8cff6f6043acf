// Package upsync is the up-sync return path, the stage beside the placement translator that
// goes the other way: from the mailboxes back into the workload workspaces. Syncers up-sync the
// edge objects that the placements' spec.upsync covers into their mailboxes (labelled
// edge.kcp.io/upsynced, annotated with their SyncTarget). This controller brings each such object
// back into the workload workspace of every EdgePlacement that has the mailbox as a destination
// and whose spec.upsync covers it, written through edge.kcp.io's virtual workspace (the
// permission claims the workspace's owner accepted), and deletes what it brought back once no
// destination up-syncs it any more. It sets the placements' conditions Upsynced (whether what
// spec.upsync covers comes back, and the rules that cannot be honoured) and UpsyncConflict (two
// destinations, or an object of the workspace's own, at one identity).
//
// The unit of work is one object identity (group, resource, namespace, name) in one workload
// workspace (a Key). Its reconcile (upsync_reconcile.go) gathers the up-synced objects of that
// identity in the mailboxes of the workspace's covering placements, keeps one (the one already
// there, else the oldest), and writes, updates or deletes the workspace's copy.
//
// It watches the up-synced objects across all mailboxes itself (upsync_sources.go), one
// informer per resource that some placement's rules can cover. What else it reads (placements,
// their destinations, SyncTargets, the workspaces' consent, workload objects, what each mailbox's
// assemblages deliver) it reads from the placement translator's caches, given as Caches: the
// translator watches all of them anyway, and a second set of informers would double what the
// center serves to edge-controller-manager and what the controller holds in memory. It has its
// own queue and workers, and writes only its own two conditions of a placement's status, when
// they change.
package upsync

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/centerview"
	"github.com/kcp-dev/edge-mc/pkg/controllerkit"
)

// ControllerName names the controller in logs and metrics. It runs with the placement
// translator, whose caches it reads.
const ControllerName = "upsync"

// FieldManager is the field manager of the objects the return path writes.
const FieldManager = "edge-upsync"

var (
	placementsGVR = edgev1alpha1.SchemeGroupVersion.WithResource("edgeplacements")
	namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	crdsGVR       = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// PlacementKey, WorkloadResource and Caches are the center view's: what the return path reads
// from the placement translator's caches (centerview.UpsyncCaches).
type (
	PlacementKey     = centerview.PlacementRef
	WorkloadResource = centerview.WorkloadResource
	Caches           = centerview.UpsyncCaches
)

// Config is what the controller needs.
type Config struct {
	Caches Caches
	// Edge writes to the workload workspaces through edge.kcp.io's virtual workspaces; Mailbox
	// and Workloads follow those of mailbox.edge.kcp.io and workloads.edge.kcp.io, through
	// which the up-synced objects in mailboxes are watched.
	Edge               centerview.ClusterClient
	Mailbox, Workloads *centerview.Endpoints
	// Workers is the number of reconciles at once.
	Workers int
}

// Controller is the return path. Create it with NewController and run it with Start.
type Controller struct {
	cfg     Config
	caches  Caches
	queue   *controllerkit.Queue[queueKey]
	sources *sources
	results *results
}

// queueKey is one of: an up-synced object identity in a workload workspace to bring back, or a
// placement whose conditions to write.
type queueKey struct {
	object    Key
	placement PlacementKey
}

// NewController builds the controller and adds its event handlers to the translator's
// informers: call it before those run.
func NewController(cfg Config) (*Controller, error) {
	if cfg.Workers <= 0 {
		cfg.Workers = 4
	}
	c := &Controller{
		cfg:     cfg,
		caches:  cfg.Caches,
		queue:   controllerkit.NewQueue[queueKey](controllerkit.Options{Name: ControllerName, Workers: cfg.Workers}),
		results: newResults(),
	}
	c.sources = newSources(c)
	handle := func(informer centerview.SharedInformer, onChange func(old, obj *unstructured.Unstructured)) error {
		_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { onChange(nil, centerview.AsUnstructured(obj)) },
			UpdateFunc: func(old, obj any) { onChange(centerview.AsUnstructured(old), centerview.AsUnstructured(obj)) },
			DeleteFunc: func(obj any) { onChange(nil, centerview.AsUnstructured(obj)) },
		})
		return err
	}
	for _, h := range []struct {
		informer centerview.SharedInformer
		onChange func(old, obj *unstructured.Unstructured)
	}{
		{c.caches.Placements, c.placementChanged},
		{c.caches.Slices, c.sliceChanged},
		{c.caches.SyncTargets, c.syncTargetChanged},
		{c.caches.Bindings, c.bindingChanged},
	} {
		if err := handle(h.informer, h.onChange); err != nil {
			return nil, err
		}
	}
	for _, r := range c.caches.WorkloadResources {
		gr := r.GVR.GroupResource()
		if err := handle(c.caches.WorkloadInformer(r.GVR), func(_, obj *unstructured.Unstructured) { c.workloadChanged(gr, obj) }); err != nil {
			return nil, err
		}
	}
	if c.caches.OnDeliveredNamespacesChange != nil {
		// Whose namespace an up-synced object is in at its edge decides whether it comes back
		// (see upsync_reconcile.go): when that changes, its mailbox's objects are looked at again.
		c.caches.OnDeliveredNamespacesChange(c.enqueueMailbox)
	}
	return c, nil
}

// Start runs the workers until ctx ends, once the translator's caches have synced.
func (c *Controller) Start(ctx context.Context) error {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	logger := klog.FromContext(ctx).WithValues("controller", ControllerName)
	ctx = klog.NewContext(ctx, logger)
	if !cache.WaitForCacheSync(ctx.Done(), c.caches.HasSynced) {
		return ctx.Err()
	}
	// Find the mailboxes' virtual workspaces, and visit every object the return path made, so
	// that those no destination up-syncs any more after a restart go.
	c.sources.start(ctx)
	c.enqueueReturned("")
	c.queue.Run(ctx, c.process)
	return nil
}

// HasSynced says whether the caches it reads have synced.
func (c *Controller) HasSynced() bool { return c.caches.HasSynced() }

// process reconciles one key; the kit retries it if it fails.
func (c *Controller) process(ctx context.Context, key queueKey) (time.Duration, error) {
	if key.object != (Key{}) {
		return 0, c.reconcile(klog.NewContext(ctx, klog.FromContext(ctx).WithValues("object", key.object.String())), key.object)
	}
	return 0, c.writeConditions(klog.NewContext(ctx, klog.FromContext(ctx).WithValues("placement", key.placement.String())), key.placement)
}

// String names the key in the kit's logs.
func (k queueKey) String() string {
	if k.object != (Key{}) {
		return "object " + k.object.String()
	}
	return "placement " + k.placement.String()
}
