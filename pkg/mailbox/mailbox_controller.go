// Package mailbox is the mailbox controller. It reconciles every SyncTarget, in any inventory
// workspace that binds edge.kcp.io, into a mailbox workspace under the ESPW, named
// <inventory logical cluster>-mb-<SyncTarget UID>, that holds the APIBindings its syncer needs and
// a syncer identity (ServiceAccount, token Secret, ClusterRole, ClusterRoleBinding) good for that
// mailbox alone. It reports in the SyncTarget's status (mailbox path, MailboxReady; SyncerReady
// from the heartbeat Lease the syncer renews in the mailbox; SyncerCompatible from what the
// syncer reports in its SyncerConfig), writing it only when a condition changes, and deletes
// mailboxes whose SyncTarget is gone, also those left behind while it was not running.
//
// A mailbox workspace has the lean WorkspaceType "mailbox" of the ESPW, whose one default
// APIBinding is to mailbox.edge.kcp.io (Assemblages, their parts, the SyncerConfig, and a
// permission claim on Leases); the workload kinds are bound into it only when a placement's
// up-sync rules need them (by the placement translator).
//
// It sees SyncTargets through the virtual workspaces of the APIExport edge.kcp.io, heartbeat
// Leases and SyncerConfigs through those of mailbox.edge.kcp.io (one per shard that holds a
// binding; see centerview.Endpoints), and the mailbox workspaces with a watch on the ESPW: one watch
// each per shard, however many edge clusters.
package mailbox

import (
	"context"
	"fmt"
	"sync"
	"time"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	kcpkubernetesclientset "github.com/kcp-dev/client-go/kubernetes"
	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/centerview"
	"github.com/kcp-dev/edge-mc/pkg/controllerkit"
)

// ControllerName names the controller in logs, metrics and --controllers.
const ControllerName = "mailbox"

// DefaultHeartbeatGracePeriod is how long after the last heartbeat SyncerReady turns Unknown,
// unless edge-controller-manager is told otherwise: three of the default heartbeat intervals
// (30 s), so that one lost heartbeat is no alarm and silence shows within two minutes.
const DefaultHeartbeatGracePeriod = 90 * time.Second

// resyncPeriod is how often the informers replay their caches; nothing depends on it.
const resyncPeriod = 10 * time.Minute

var (
	syncTargetsGVR   = edgev1alpha1.SchemeGroupVersion.WithResource("synctargets")
	syncerConfigsGVR = edgev1alpha1.SchemeGroupVersion.WithResource("syncerconfigs")
	leasesGVR        = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
)

// Index names.
const (
	byClusterUID     = "byClusterUID"     // SyncTargets by <logical cluster>|<uid>
	byMailboxCluster = "byMailboxCluster" // mailbox workspaces by their logical cluster
)

// Config is what the controller needs.
type Config struct {
	// ESPW is the path of the edge service provider workspace, parent of the mailboxes.
	ESPW logicalcluster.Path
	// KCP and Kube reach any workspace by path (built from the admin config's base URL).
	KCP  kcpclientset.ClusterInterface
	Kube kcpkubernetesclientset.ClusterInterface
	// Edge follows the virtual workspaces of the APIExport edge.kcp.io (one per shard that
	// holds a binding of it), and writes SyncTarget status through the one that serves each.
	Edge *centerview.Endpoints
	// Mailbox follows those of mailbox.edge.kcp.io, which kcp publishes on a shard once a
	// mailbox there binds it.
	Mailbox *centerview.Endpoints
	// Workers is the number of reconciles at once.
	Workers int
	// MaxSetups bounds the mailboxes being set up at once (default DefaultMaxSetups).
	MaxSetups int
	// HeartbeatGracePeriod is how long after a syncer's last heartbeat its SyncerReady turns
	// Unknown (default DefaultHeartbeatGracePeriod).
	HeartbeatGracePeriod time.Duration
}

// DefaultMaxSetups is the default of Config.MaxSetups: enough to keep kcp busy, few enough that
// each mailbox is ready in seconds when a thousand SyncTargets arrive at once.
const DefaultMaxSetups = 64

// Controller is the mailbox controller. Create it with NewController and run it with Start.
type Controller struct {
	cfg   Config
	queue *controllerkit.Queue[queueKey]

	syncTargets centerview.SharedInformer
	mailboxes   cache.SharedIndexInformer
	// leases watches the heartbeats, and configs the syncers' reports in their SyncerConfigs,
	// in the mailboxes of every shard.
	leases  centerview.SharedInformer
	configs centerview.SharedInformer

	// contents records, per mailbox workspace UID, how far this process got in setting up its
	// contents, so that heartbeats cost no reads in the mailbox and a mailbox waiting for its
	// token costs one read a check.
	contentsMu sync.Mutex
	contents   map[types.UID]contentsStage
	// setups holds the mailboxes (by name) being set up, with when each began.
	setups map[string]time.Time
	// fresh holds the mailboxes (by name) whose workspace this process created and is setting up.
	fresh map[string]bool
	// notYet paces the checks of mailboxes being set up, per mailbox workspace.
	notYet workqueue.TypedRateLimiter[types.UID]

	// now is the clock, replaced in tests.
	now func() time.Time
}

// queueKey is what the queue holds: a SyncTarget to reconcile, or a mailbox workspace to check
// for an owner.
type queueKey struct {
	// syncTarget is the cluster-aware key <cluster>|<name> of a SyncTarget.
	syncTarget string
	// mailbox is the name of a mailbox workspace in the ESPW.
	mailbox string
}

// NewController builds the controller and its informers.
func NewController(cfg Config) (*Controller, error) {
	if cfg.Workers <= 0 {
		cfg.Workers = 8
	}
	if cfg.MaxSetups <= 0 {
		cfg.MaxSetups = DefaultMaxSetups
	}
	if cfg.HeartbeatGracePeriod <= 0 {
		cfg.HeartbeatGracePeriod = DefaultHeartbeatGracePeriod
	}
	c := &Controller{
		cfg:      cfg,
		queue:    controllerkit.NewQueue[queueKey](controllerkit.Options{Name: ControllerName, Workers: cfg.Workers}),
		contents: map[types.UID]contentsStage{},
		setups:   map[string]time.Time{},
		fresh:    map[string]bool{},
		notYet:   workqueue.NewTypedItemExponentialFailureRateLimiter[types.UID](notYetFirst, notYetMax),
		now:      time.Now,
	}

	// Shared with the other controllers of the process that read SyncTargets.
	syncTargets, err := cfg.Edge.Shared(syncTargetsGVR,
		cache.Indexers{
			byClusterUID: func(obj any) ([]string, error) {
				m, err := metaOf(obj)
				if err != nil {
					return nil, err
				}
				return []string{logicalcluster.From(m).String() + "|" + string(m.GetUID())}, nil
			},
		})
	if err != nil {
		return nil, err
	}
	c.syncTargets = syncTargets

	c.mailboxes = NewWorkspaceInformer(cfg.KCP, cfg.ESPW, resyncPeriod, byMailboxCluster)

	if _, err := c.syncTargets.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueSyncTarget,
		UpdateFunc: func(_, obj any) { c.enqueueSyncTarget(obj) },
		DeleteFunc: c.syncTargetDeleted,
	}); err != nil {
		return nil, err
	}
	if _, err := c.mailboxes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueMailbox,
		UpdateFunc: func(_, obj any) { c.enqueueMailbox(obj) },
		DeleteFunc: c.enqueueMailbox,
	}); err != nil {
		return nil, err
	}
	if err := c.watchHeartbeats(); err != nil {
		return nil, err
	}
	return c, nil
}

func metaOf(obj any) (metav1.Object, error) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("unexpected object %T", obj)
	}
	return m, nil
}

func (c *Controller) enqueueSyncTarget(obj any) {
	key, err := kcpcache.DeletionHandlingMetaClusterNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.queue.Add(queueKey{syncTarget: key})
}

// syncTargetDeleted queues the SyncTarget's mailbox for the orphan check.
func (c *Controller) syncTargetDeleted(obj any) {
	m, err := metaOf(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.queue.Add(queueKey{mailbox: WorkspaceName(logicalcluster.From(m), m.GetUID())})
}

// enqueueLeaseOwner queues the SyncTarget whose mailbox holds the heartbeat Lease.
func (c *Controller) enqueueLeaseOwner(obj any) {
	m, err := metaOf(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	wss, err := c.mailboxes.GetIndexer().ByIndex(byMailboxCluster, logicalcluster.From(m).String())
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	for _, o := range wss {
		c.enqueueMailboxOwner(o.(*tenancyv1alpha1.Workspace))
	}
}

// enqueueMailbox queues a mailbox workspace for the orphan check, and its SyncTarget.
func (c *Controller) enqueueMailbox(obj any) {
	m, err := metaOf(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.queue.Add(queueKey{mailbox: m.GetName()})
	if ws, ok := m.(*tenancyv1alpha1.Workspace); ok {
		c.enqueueMailboxOwner(ws)
	}
}

func (c *Controller) enqueueMailboxOwner(ws *tenancyv1alpha1.Workspace) {
	cluster, name := ws.Annotations[AnnotationSyncTargetCluster], ws.Annotations[AnnotationSyncTargetName]
	if cluster != "" && name != "" {
		c.queue.Add(queueKey{syncTarget: kcpcache.ToClusterAwareKey(cluster, "", name)})
	}
}

// Start runs the informers and workers until ctx ends. It returns an error if the informers do
// not sync, which means kcp or the ESPW cannot be reached.
func (c *Controller) Start(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithValues("controller", ControllerName)
	ctx = klog.NewContext(ctx, logger)
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()

	go c.syncTargets.Run(ctx.Done())
	go c.mailboxes.Run(ctx.Done())
	go c.leases.Run(ctx.Done())
	go c.configs.Run(ctx.Done())
	logger.Info("waiting for caches", "espw", c.cfg.ESPW)
	if !cache.WaitForCacheSync(ctx.Done(), c.syncTargets.HasSynced, c.mailboxes.HasSynced) {
		return fmt.Errorf("%s controller: caches did not sync (is the ESPW %s reachable and initialised?)", ControllerName, c.cfg.ESPW)
	}
	logger.Info("caches synced; starting workers", "workers", c.cfg.Workers)
	defer metricSyncTargetConditions.Count(c.syncTargets.GetStore())()
	// Mailboxes left behind while the controller was away are found by the informer's initial
	// list: every mailbox workspace was queued for the orphan check.
	c.queue.Run(ctx, c.process)
	return nil
}

// HasSynced says whether the informers have synced, for readiness. The heartbeat watch does not
// count: until it has, SyncerReady stays as it was.
func (c *Controller) HasSynced() bool {
	return c.syncTargets.HasSynced() && c.mailboxes.HasSynced()
}

// process reconciles one key; the kit retries it if it fails.
func (c *Controller) process(ctx context.Context, key queueKey) (time.Duration, error) {
	if key.mailbox != "" {
		return 0, c.checkOrphan(klog.NewContext(ctx, klog.FromContext(ctx).WithValues("mailbox", key.mailbox)), key.mailbox)
	}
	return c.reconcileKey(klog.NewContext(ctx, klog.FromContext(ctx).WithValues("key", key.syncTarget)), key.syncTarget)
}

// String names the key in the kit's logs.
func (k queueKey) String() string {
	if k.mailbox != "" {
		return "mailbox " + k.mailbox
	}
	return "SyncTarget " + k.syncTarget
}

// reconcileKey reconciles the SyncTarget with the given cluster-aware key.
func (c *Controller) reconcileKey(ctx context.Context, key string) (time.Duration, error) {
	obj, exists, err := c.syncTargets.GetIndexer().GetByKey(key)
	if err != nil || !exists {
		return 0, err // a deleted SyncTarget's mailbox goes through the orphan check
	}
	u := obj.(*unstructured.Unstructured)
	st := &edgev1alpha1.SyncTarget{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, st); err != nil {
		return 0, fmt.Errorf("decoding SyncTarget %s: %w", key, err)
	}
	return c.reconcile(ctx, logicalcluster.From(u), st)
}

// NewWorkspaceInformer returns an informer on the mailbox workspaces of the ESPW, indexed by
// their logical cluster under clusterIndex: one watch on the ESPW, however many mailboxes.
func NewWorkspaceInformer(kcp kcpclientset.ClusterInterface, espw logicalcluster.Path, resync time.Duration, clusterIndex string) cache.SharedIndexInformer {
	workspaces := kcp.Cluster(espw).TenancyV1alpha1().Workspaces()
	mailboxSelector := labels.SelectorFromSet(labels.Set{LabelMailbox: "true"}).String()
	return cache.NewSharedIndexInformer(&cache.ListWatch{
		ListFunc: func(o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = mailboxSelector
			return workspaces.List(context.Background(), o)
		},
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = mailboxSelector
			return workspaces.Watch(context.Background(), o)
		},
	}, &tenancyv1alpha1.Workspace{}, resync, cache.Indexers{
		clusterIndex: func(obj any) ([]string, error) {
			ws, ok := obj.(*tenancyv1alpha1.Workspace)
			if !ok || ws.Spec.Cluster == "" {
				return nil, nil
			}
			return []string{ws.Spec.Cluster}, nil
		},
	})
}
