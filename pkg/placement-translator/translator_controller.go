// Package placementtranslator is the placement translator. For every destination of every
// EdgePlacement (the SinglePlacementSlices the scheduler writes), it writes into the
// destination's mailbox workspace one Assemblage: the objects of the placement's workload
// workspace that spec.downsync selects, customised for that destination, as one exactly-versioned
// document (package transport encodes it). It keeps each assemblage in step with the originals,
// the placement, the Customizers and the destination's SyncTarget and Location labels, writing
// an assemblage only when its version changes (one write per destination per change), and
// deletes the assemblages of placements that no longer have the destination. It writes the
// mailbox's SyncerConfig (the placements' upsync rules, the fleet's heartbeat interval), and
// moves mailboxes of the previous transport (one copy per object) to assemblages once their
// syncer reads them. It never selects for down-sync the objects that came back from the edge,
// which the up-sync return path (package upsync, the other way) brings into the workload
// workspaces: that stage runs beside the translator, on the translator's caches
// (upsync_caches.go). It reports in each placement's status what it could not do, and why
// (conditions Projected, with objects too large to travel among its problems, and Conflict), and
// how its rollout goes (Progressing, RolloutStalled, RolloutComplete, DependenciesReady;
// status.rollout).
//
// It reads the workload workspaces through the virtual workspace of the APIExport edge.kcp.io:
// the placements, slices, Customizers, SyncTargets and Locations it serves, and the workload
// objects of kinds that edge.kcp.io claims and the workspace's owner accepted (see
// espw.EdgeClaims). Custom kinds
// that a workload workspace defines with its own CRDs belong to no export and cannot be claimed;
// it reads those with its own credential (see sources.go). It watches what every mailbox holds
// (assemblages, their parts, SyncerConfigs) through the virtual workspace of mailbox.edge.kcp.io
// (mailbox_view.go), and writes into mailboxes, which are its own workspaces, with its own
// credential.
//
// The down-sync work is done per mailbox: a change anywhere queues the mailboxes it can affect,
// and a mailbox's reconcile computes everything that should be in it (desired.go) and makes it
// so (mailbox.go), writing only what differs from what the mailbox holds.
package placementtranslator

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	kcpdynamic "github.com/kcp-dev/client-go/dynamic"
	"github.com/kcp-dev/logicalcluster/v3"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/centerview"
	"github.com/kcp-dev/edge-mc/pkg/controllerkit"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// ControllerName names the controller in logs, metrics and --controllers.
const ControllerName = "placement-translator"

// FieldManager is the server-side-apply field manager of the assemblages and SyncerConfigs.
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
	// Edge follows the virtual workspaces of edge.kcp.io (one per shard that holds a binding of
	// it), and writes to each workload workspace through the one that serves it; Mailbox follows
	// those of mailbox.edge.kcp.io, where mailboxes are read.
	Edge, Mailbox *centerview.Endpoints
	// Admin reaches any workspace of kcp with the controller's own credential: mailboxes, and
	// the custom kinds of workload workspaces.
	Admin kcpdynamic.ClusterInterface
	// KCP reaches kcp's own APIs (APIBindings in mailboxes).
	KCP kcpclientset.ClusterInterface
	// Workers is the number of reconciles at once.
	Workers int
	// HeartbeatInterval is how often syncers renew their heartbeat (default
	// DefaultHeartbeatInterval), told to them in their SyncerConfig.
	HeartbeatInterval time.Duration
	// Assemblages is the shared cache of the assemblages of every mailbox
	// (centerview.NewAssemblages), which the status summarizer reads too; nil makes one.
	Assemblages centerview.SharedInformer
	// SealingSecret, when set, makes sealing deterministic (transport.SealWithSecret), so that
	// after a restart unchanged sealed objects make no new assemblage versions; nil seals with
	// fresh randomness, remembered in memory until the process ends.
	SealingSecret []byte
}

// Controller is the placement translator. Create it with NewController and run it with Start.
type Controller struct {
	cfg    Config
	edgeVW centerview.ClusterClient
	queue  *controllerkit.Queue[queueKey]

	placements  centerview.SharedInformer
	slices      centerview.SharedInformer
	customizers centerview.SharedInformer
	// statusCollectors and healthRules are the workload workspaces' (statusrules.go); rules
	// compiles them.
	statusCollectors centerview.SharedInformer
	healthRules      centerview.SharedInformer
	rules            ruleCompiler
	syncTargets      centerview.SharedInformer
	locations        centerview.SharedInformer
	// bindings are the APIBindings of the workspaces that bind edge.kcp.io: their accepted
	// permission claims are their owners' consent (see consent.go).
	bindings centerview.SharedInformer
	consent  consentTracker

	// decodedSlices decodes each slice's destinations once per version.
	decodedSlices *sliceDecoder
	// hashes and claims compute, once per version of an object, what every mailbox's reconcile
	// would otherwise compute again: the hash of a selected object (for the placement's
	// revision), and the claims a workload workspace's binding does not accept.
	hashes *versionMemo[string]
	claims *versionMemo[bindingClaims]

	// workload holds one informer per workload resource served through the virtual workspace,
	// and the custom kinds of the workload workspaces; see sources.go.
	workload *sources
	// view watches what the mailboxes hold; see mailbox_view.go. written holds what the
	// translator wrote there that the view does not show yet.
	view    mailboxView
	written writtenAssemblages
	// namespacesChanged are told the mailbox whose assemblages changed the namespaces they carry,
	// or whose workspaces (see OnDeliveredNamespacesChange); set before Start.
	namespacesChanged []func(mailbox logicalcluster.Name)

	mailboxesMu sync.Mutex
	mailboxes   map[string]*mailboxState

	results *results
	// rollouts paces the placements with spec.rollout; see rollout.go.
	rollouts *rolloutTracker

	// now is the clock, replaced in tests.
	now func() time.Time
}

// queueKey is one of: a mailbox (by workspace name) to reconcile, a placement whose status
// to write, or a status collector or health rule whose status to write.
type queueKey struct {
	mailbox   string
	placement placementKey
	rule      ruleKey
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
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = DefaultHeartbeatInterval
	}
	c := &Controller{
		cfg:       cfg,
		edgeVW:    cfg.Edge,
		queue:     controllerkit.NewQueue[queueKey](controllerkit.Options{Name: ControllerName, Workers: cfg.Workers}),
		mailboxes: map[string]*mailboxState{},
		results:   newResults(),
		rollouts:  newRolloutTracker(),
		hashes:    newVersionMemo[string](memoObjects),
		claims:    newVersionMemo[bindingClaims](memoBindings),
		now:       time.Now,
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
	c.slices = newInformer(slicesGVR, cache.Indexers{byMailbox: sliceMailboxes, byPlacement: slicePlacement, byLocation: sliceLocations})
	c.decodedSlices = newSliceDecoder(func() map[types.UID]bool {
		live := map[types.UID]bool{}
		for _, item := range c.slices.GetStore().List() {
			if u := centerview.AsUnstructured(item); u != nil {
				live[u.GetUID()] = true
			}
		}
		return live
	})
	c.customizers = newInformer(customizersGVR, cache.Indexers{})
	c.statusCollectors = newInformer(statusCollectorsGVR, cache.Indexers{})
	c.healthRules = newInformer(healthRulesGVR, cache.Indexers{})
	c.syncTargets = newInformer(syncTargetsGVR, cache.Indexers{syncTargetsByMailbox: syncTargetMailbox, syncTargetsByMailboxCluster: syncTargetMailboxCluster})
	c.locations = newInformer(locationsGVR, cache.Indexers{})
	c.bindings = newInformer(apiBindingsGVR, cache.Indexers{})
	if sharedErr != nil {
		return nil, sharedErr
	}

	resources, err := discoverWorkloadResources(cfg.Edge)
	if err != nil {
		return nil, err
	}
	c.workload = newSources(c, resources)

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
		{c.placements, c.placementChanged},
		{c.slices, c.sliceChanged},
		{c.customizers, func(_, obj *unstructured.Unstructured) { c.workloadChanged(obj) }},
		{c.statusCollectors, c.ruleChanged(statusCollectorsGVR.Resource)},
		{c.healthRules, c.ruleChanged(healthRulesGVR.Resource)},
		{c.syncTargets, c.syncTargetChanged},
		{c.locations, c.locationChanged},
		{c.bindings, c.bindingChanged},
	} {
		if err := handle(h.informer, h.onChange); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// discoverWorkloadResources lists the resources that the virtual workspaces of edge.kcp.io serve
// besides edge.kcp.io's own and kcp's: the claimed workload kinds. It asks every shard's: one
// serves a kind claimed from workloads.edge.kcp.io only if some binding on its shard accepted the
// claim. A shard whose virtual workspace appears later is not asked (see docs/operations.md).
func discoverWorkloadResources(edge *centerview.Endpoints) ([]resource, error) {
	byGVR := map[schema.GroupVersionResource]resource{}
	var errs []error
	for _, url := range edge.URLs() {
		var lists []*metav1.APIResourceList
		err := wait.ExponentialBackoff(wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Steps: 6}, func() (bool, error) {
			l, err := centerview.DiscoverVirtualWorkspace(edge.Config(url))
			if err != nil {
				return false, nil
			}
			lists = l
			return true, nil
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("discovering the resources of the virtual workspace %s of %s: %w", url, edgev1alpha1.EdgeAPIExportName, err))
			continue
		}
		for _, r := range workloadResources(lists) {
			byGVR[r.gvr] = r
		}
	}
	if len(byGVR) == 0 && len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	out := make([]resource, 0, len(byGVR))
	for _, r := range byGVR {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].gvr.String() < out[j].gvr.String() })
	return out, nil
}

// Start runs the informers and workers until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	logger := klog.FromContext(ctx).WithValues("controller", ControllerName)
	ctx = klog.NewContext(ctx, logger)
	if !c.startCaches(ctx) {
		return ctx.Err()
	}
	logger.Info("caches synced; projecting", "workloadResources", len(c.workload.resources))
	// Every mailbox that is ready is visited once, so that what was projected before a restart,
	// and is no longer wanted, goes.
	for _, obj := range c.syncTargets.GetStore().List() {
		if name := mailboxOf(centerview.AsUnstructured(obj)); name != "" {
			c.queue.Add(queueKey{mailbox: name})
		}
	}
	c.queue.Run(ctx, c.process)
	return nil
}

// StartCaches runs the informers and the view of the mailboxes, and no workers, until ctx ends:
// what the up-sync return path reads (UpsyncCaches), when it runs without the translator.
func (c *Controller) StartCaches(ctx context.Context) error {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("controller", ControllerName+"-caches"))
	if !c.startCaches(ctx) {
		return ctx.Err()
	}
	<-ctx.Done()
	return nil
}

// startCaches starts the informers, waits for them, then starts the view of the mailboxes; false
// if ctx ended first.
func (c *Controller) startCaches(ctx context.Context) bool {
	for _, inf := range []centerview.SharedInformer{c.placements, c.slices, c.customizers, c.statusCollectors, c.healthRules, c.syncTargets, c.locations, c.bindings} {
		go inf.Run(ctx.Done())
	}
	c.workload.start(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), c.HasSynced) {
		return false
	}
	go c.view.start(ctx, c)
	return true
}

// HasSynced says whether every informer has synced.
func (c *Controller) HasSynced() bool {
	for _, inf := range []centerview.SharedInformer{c.placements, c.slices, c.customizers, c.statusCollectors, c.healthRules, c.syncTargets, c.locations, c.bindings} {
		if !inf.HasSynced() {
			return false
		}
	}
	return c.workload.hasSynced()
}

// process reconciles one key; the kit retries it if it fails.
func (c *Controller) process(ctx context.Context, key queueKey) (time.Duration, error) {
	if key.mailbox != "" {
		return c.reconcileMailbox(klog.NewContext(ctx, klog.FromContext(ctx).WithValues("mailbox", key.mailbox)), key.mailbox)
	}
	if key.rule.name != "" {
		return c.writeRuleStatus(klog.NewContext(ctx, klog.FromContext(ctx).WithValues(key.rule.resource, key.rule.cluster+"|"+key.rule.name)), key.rule)
	}
	return c.writePlacementStatus(klog.NewContext(ctx, klog.FromContext(ctx).WithValues("placement", key.placement.String())), key.placement)
}

// String names the key in the kit's logs.
func (k queueKey) String() string {
	if k.mailbox != "" {
		return "mailbox " + k.mailbox
	}
	if k.rule.name != "" {
		return k.rule.resource + " " + k.rule.cluster + "|" + k.rule.name
	}
	return "placement " + k.placement.String()
}

// mailboxState is what the controller remembers of one mailbox besides what the mailbox view
// shows.
type mailboxState struct {
	// workloadsBound: the mailbox binds the workloads export (for up-sync).
	workloadsBound bool
	// upsyncGranted is what the ClusterRole transport.UpsyncClusterRole grants, as
	// upsyncGrantKey gives it; "" while unknown (before the translator wrote it).
	upsyncGranted string
	// sealed are the objects as last sealed for the mailbox's destination (sealing.go).
	sealed map[string]sealedMemo
}

func (c *Controller) mailboxState(name string) *mailboxState {
	c.mailboxesMu.Lock()
	defer c.mailboxesMu.Unlock()
	s, ok := c.mailboxes[name]
	if !ok {
		s = &mailboxState{}
		c.mailboxes[name] = s
	}
	return s
}

func (c *Controller) forgetMailbox(name string) {
	c.mailboxesMu.Lock()
	defer c.mailboxesMu.Unlock()
	delete(c.mailboxes, name)
}

// mailboxName is the mailbox workspace name of a destination.
func mailboxName(d edgev1alpha1.SinglePlacement) string {
	return transport.MailboxName(logicalcluster.Name(d.Cluster), d.SyncTargetUID)
}

// mailboxObjectChanged queues the mailbox that holds a changed assemblage, part or SyncerConfig,
// and, a second later, the status of an assemblage's placement, whose rollout may move on: all
// the changes of a second make one look.
func (c *Controller) mailboxObjectChanged(u *unstructured.Unstructured) {
	if u == nil {
		return
	}
	c.enqueueMailboxCluster(logicalcluster.From(u))
}

// assemblageChanged queues the mailbox of an assemblage that changed, and, a little later, its
// placement's rollout and status.
func (c *Controller) assemblageChanged(a *edgev1alpha1.Assemblage) {
	if a == nil {
		return
	}
	c.enqueueMailboxCluster(logicalcluster.From(a))
	if a.Spec.Placement.Cluster != "" && a.Spec.Placement.Name != "" {
		c.queue.AddAfter(queueKey{placement: placementKey{a.Spec.Placement.Cluster, a.Spec.Placement.Name}}, rolloutLookDelay)
	}
}

func (c *Controller) enqueueMailboxCluster(cluster logicalcluster.Name) {
	if st := c.syncTargetOfMailboxCluster(cluster); st != nil {
		c.queue.Add(queueKey{mailbox: transport.MailboxName(logicalcluster.From(st), st.GetUID())})
	}
}

// rolloutLookDelay gathers the changes of the assemblages of a placement into one look at its
// rollout and status.
const rolloutLookDelay = time.Second
