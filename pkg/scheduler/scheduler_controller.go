// Package scheduler is the edge scheduler. It resolves every EdgePlacement, in any workload
// workspace, to its destinations: the schedulable SyncTargets selected by the instanceSelector of
// each Location, in any inventory workspace, that one of the placement's locationSelectors
// matches. It writes them into SinglePlacementSlices owned by the placement (at most
// edgev1alpha1.MaxDestinationsPerSlice destinations each, in a stable order, so that an unchanged
// result writes nothing), and reports in the placement's status (observedGeneration, counts, the
// Scheduled condition) and in each Location's status (instances, availableInstances).
//
// It sees all four kinds through the virtual workspace of the APIExport edge.kcp.io, one watch
// each, and keeps the matching in an Engine: a change costs work in proportion to what it can
// affect (one Location against the placements, one SyncTarget against the Locations of its own
// workspace), and only the placements whose result can change are written.
//
// A placement with spec.numberOfDestinations gets that many of its destinations, picked by Pick
// (spread over the values of spec.spreadBy), and the condition DestinationsPicked. The picks are
// sticky: the current picks are read back from the placement's own slices, which the scheduler
// alone writes, which the placement translator delivers from, and which outlive a restart of the
// scheduler; the placement's status holds only counts and a message.
package scheduler

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/centerview"
	"github.com/kcp-dev/edge-mc/pkg/controllerkit"
)

// ControllerName names the controller in logs, metrics and --controllers.
const ControllerName = "scheduler"

// resyncPeriod is how often the informers replay their caches; nothing depends on it.
const resyncPeriod = 10 * time.Minute

var (
	placementsGVR  = edgev1alpha1.SchemeGroupVersion.WithResource("edgeplacements")
	locationsGVR   = edgev1alpha1.SchemeGroupVersion.WithResource("locations")
	syncTargetsGVR = edgev1alpha1.SchemeGroupVersion.WithResource("synctargets")
	slicesGVR      = edgev1alpha1.SchemeGroupVersion.WithResource("singleplacementslices")
)

// byOwner indexes SinglePlacementSlices by <cluster>|<name of the owning EdgePlacement>.
const byOwner = "byOwner"

// Config is what the controller needs.
type Config struct {
	// Edge follows the virtual workspaces of the APIExport edge.kcp.io (one per shard that
	// holds a binding of it), and writes to each workspace through the one that serves it.
	Edge *centerview.Endpoints
	// Workers is the number of reconciles at once.
	Workers int
	// MaxDestinationsPerSlice bounds a slice; 0 means edgev1alpha1.MaxDestinationsPerSlice.
	MaxDestinationsPerSlice int
}

// Controller is the edge scheduler. Create it with NewController and run it with Start.
type Controller struct {
	cfg   Config
	queue *controllerkit.Queue[queueKey]

	placements  centerview.SharedInformer
	locations   centerview.SharedInformer
	syncTargets centerview.SharedInformer
	slices      centerview.SharedInformer
	// fed are the registrations of the handlers that feed the engine: the engine knows every
	// placement, Location and SyncTarget only once they have synced.
	fed []cache.ResourceEventHandlerRegistration

	// engineMu guards engine, which the informers' handlers feed and the workers read.
	engineMu sync.Mutex
	engine   *Engine
}

// queueKey is a placement to write slices and status for, or a Location to write status for.
type queueKey struct {
	placement PlacementKey
	location  ObjectKey
}

// NewController builds the controller and its informers.
func NewController(cfg Config) (*Controller, error) {
	if cfg.Workers <= 0 {
		cfg.Workers = 8
	}
	c := &Controller{
		cfg:    cfg,
		queue:  controllerkit.NewQueue[queueKey](controllerkit.Options{Name: ControllerName, Workers: cfg.Workers}),
		engine: NewEngine(),
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
	c.placements = newInformer(placementsGVR, cache.Indexers{})
	c.locations = newInformer(locationsGVR, cache.Indexers{})
	c.syncTargets = newInformer(syncTargetsGVR, cache.Indexers{})
	c.slices = newInformer(slicesGVR, cache.Indexers{byOwner: func(obj any) ([]string, error) {
		if key, ok := sliceOwner(obj); ok {
			return []string{key.String()}, nil
		}
		return nil, nil
	}})
	if sharedErr != nil {
		return nil, sharedErr
	}

	handlers := []struct {
		informer centerview.SharedInformer
		set      func(cluster string, u *unstructured.Unstructured) []PlacementKey
		del      func(cluster, name string) []PlacementKey
	}{
		{c.placements, c.setPlacement, func(cluster, name string) []PlacementKey {
			return c.engine.DeletePlacement(PlacementKey{cluster, name})
		}},
		{c.locations, c.setLocation, func(cluster, name string) []PlacementKey {
			return c.engine.DeleteLocation(ObjectKey{cluster, name})
		}},
		{c.syncTargets, c.setSyncTarget, func(cluster, name string) []PlacementKey {
			return c.engine.DeleteSyncTarget(ObjectKey{cluster, name})
		}},
	}
	for _, h := range handlers {
		reg, err := h.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { c.feed(obj, h.set, nil) },
			UpdateFunc: func(_, obj any) { c.feed(obj, h.set, nil) },
			DeleteFunc: func(obj any) { c.feed(obj, nil, h.del) },
		})
		if err != nil {
			return nil, err
		}
		c.fed = append(c.fed, reg)
	}
	// A slice edited or deleted by someone else is put back. A slice's content is also an input
	// of a placement with numberOfDestinations (its current picks), so its creation counts too.
	if _, err := c.slices.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueSliceOwner,
		UpdateFunc: func(_, obj any) { c.enqueueSliceOwner(obj) },
		DeleteFunc: c.enqueueSliceOwner,
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// feed passes one informer event to the engine and queues what it says changed.
func (c *Controller) feed(obj any, set func(string, *unstructured.Unstructured) []PlacementKey, del func(string, string) []PlacementKey) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		utilruntime.HandleError(fmt.Errorf("%s: unexpected object %T", ControllerName, obj))
		return
	}
	cluster := logicalcluster.From(u).String()
	c.engineMu.Lock()
	var dirty []PlacementKey
	if set != nil && u.GetDeletionTimestamp() == nil {
		dirty = set(cluster, u)
	} else {
		dirty = del(cluster, u.GetName())
	}
	changedLocations := c.engine.TakeChangedLocations()
	c.engineMu.Unlock()
	for _, k := range dirty {
		c.queue.Add(queueKey{placement: k})
	}
	for _, k := range changedLocations {
		c.queue.Add(queueKey{location: k})
	}
}

// setPlacement, setLocation and setSyncTarget run with engineMu held. An object that does not
// decode (which admission should prevent) is logged and treated as matching nothing.
func (c *Controller) setPlacement(cluster string, u *unstructured.Unstructured) []PlacementKey {
	p := &edgev1alpha1.EdgePlacement{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
		utilruntime.HandleError(fmt.Errorf("decoding EdgePlacement %s|%s: %w", cluster, u.GetName(), err))
	}
	key := PlacementKey{cluster, u.GetName()}
	dirty := c.engine.SetPlacement(key, p.Spec.LocationSelectors)
	n := 0
	if p.Spec.NumberOfDestinations != nil {
		n = max(int(*p.Spec.NumberOfDestinations), 0)
	}
	if more := c.engine.SetPick(key, n, p.Spec.SpreadBy); len(more) > 0 && len(dirty) == 0 {
		dirty = more
	}
	return dirty
}

func (c *Controller) setLocation(cluster string, u *unstructured.Unstructured) []PlacementKey {
	l := &edgev1alpha1.Location{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, l); err != nil {
		utilruntime.HandleError(fmt.Errorf("decoding Location %s|%s: %w", cluster, u.GetName(), err))
	}
	return c.engine.SetLocation(ObjectKey{cluster, u.GetName()}, u.GetLabels(), &l.Spec.InstanceSelector)
}

func (c *Controller) setSyncTarget(cluster string, u *unstructured.Unstructured) []PlacementKey {
	unschedulable, _, _ := unstructured.NestedBool(u.Object, "spec", "unschedulable")
	return c.engine.SetSyncTarget(ObjectKey{cluster, u.GetName()}, u.GetUID(), u.GetLabels(), unschedulable)
}

func (c *Controller) enqueueSliceOwner(obj any) {
	if key, ok := sliceOwner(obj); ok {
		c.queue.Add(queueKey{placement: key})
	}
}

// sliceOwner returns the EdgePlacement that controls a SinglePlacementSlice.
func sliceOwner(obj any) (PlacementKey, bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return PlacementKey{}, false
	}
	for _, ref := range m.GetOwnerReferences() {
		if ref.Controller != nil && *ref.Controller && ref.Kind == "EdgePlacement" && ref.APIVersion == edgev1alpha1.SchemeGroupVersion.String() {
			return PlacementKey{logicalcluster.From(m).String(), ref.Name}, true
		}
	}
	return PlacementKey{}, false
}

// Start runs the informers and workers until ctx ends. It returns an error if the informers do
// not sync.
func (c *Controller) Start(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithValues("controller", ControllerName)
	ctx = klog.NewContext(ctx, logger)
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()

	informers := []centerview.SharedInformer{c.placements, c.locations, c.syncTargets, c.slices}
	for _, inf := range informers {
		go inf.Run(ctx.Done())
	}
	logger.Info("waiting for caches")
	if !cache.WaitForCacheSync(ctx.Done(), c.HasSynced) {
		return fmt.Errorf("%s controller: caches did not sync", ControllerName)
	}
	logger.Info("caches synced; starting workers", "workers", c.cfg.Workers)
	c.queue.Run(ctx, c.process)
	return nil
}

// HasSynced says whether the informers have synced and the engine has been fed all they listed:
// the workers start only then, and readiness waits for it. An informer's store syncs before its
// handlers have seen every object; a placement scheduled before the engine knew every Location
// and SyncTarget would lose destinations for a moment, and the placement translator would delete
// their assemblages, and the syncers what those carried (TestShardDown caught this after a
// restart of edge-controller-manager on a busy machine).
func (c *Controller) HasSynced() bool {
	if !c.placements.HasSynced() || !c.locations.HasSynced() || !c.syncTargets.HasSynced() || !c.slices.HasSynced() {
		return false
	}
	for _, reg := range c.fed {
		if !reg.HasSynced() {
			return false
		}
	}
	return true
}

// process reconciles one key; the kit retries it if it fails.
func (c *Controller) process(ctx context.Context, key queueKey) (time.Duration, error) {
	if key.location.Name != "" {
		return 0, c.reconcileLocation(klog.NewContext(ctx, klog.FromContext(ctx).WithValues("location", key.location.String())), key.location)
	}
	return 0, c.reconcilePlacement(klog.NewContext(ctx, klog.FromContext(ctx).WithValues("placement", key.placement.String())), key.placement)
}

// String names the key in the kit's logs.
func (k queueKey) String() string {
	if k.location.Name != "" {
		return "location " + k.location.String()
	}
	return "placement " + k.placement.String()
}
