// Package syncer is edge-mc's agent in an edge cluster (pcluster). It opens every connection
// itself: it watches its mailbox workspace in kcp, with informers driven by the mailbox's
// SyncerConfig, and keeps the edge cluster in step with it:
//
//   - down-sync: every copy the placement translator made in the mailbox (labelled
//     edge.kcp.io/projected) within the SyncerConfig's scope is server-side-applied at the edge
//     with the syncer's own field manager, re-natured if it is a denatured object. Namespaces and
//     CRDs go first by construction: an object whose namespace or kind the edge does not serve yet
//     waits for it. What leaves the mailbox is deleted at the edge, but only objects this syncer
//     created, and only once the mailbox confirms the copy is gone;
//   - drift: an applied object edited or deleted at the edge is put back and the repair is
//     reported (log, Event, metric), unless the copy is marked create-only;
//   - status: the status of each edge object is written back to its mailbox copy, coalesced per
//     object and rate-limited, so that churn at the edge cannot flood the center; an object the
//     edge refuses gets the reason on its copy;
//   - up-sync: objects created at the edge that match the SyncerConfig's upsync rules are written
//     into the mailbox (labelled edge.kcp.io/upsynced), and updated and deleted with their
//     originals;
//   - heartbeat: it renews a Lease in the mailbox every 10 s, from which the mailbox controller
//     reports SyncerReady on the SyncTarget.
//
// With the center unreachable the syncer changes nothing at the edge: its caches keep the last
// state of the mailbox, it deletes only on a confirmed NotFound from the center, and its
// watches and writes retry with jittered backoff. On reconnect the watches resume; objects whose
// content did not change are not written, let alone recreated.
//
// Ownership marks on edge objects carry the SyncTarget's UID (label
// <uid>.syncer.edge.kcp.io/owner: created or adopted, annotations .../source and .../hash), so
// that the syncers of several SyncTargets can share an edge cluster.
package syncer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/mailbox"
)

// FieldManager is the field manager of the syncer's writes into its mailbox.
const FieldManager = "edge-syncer"

// The request rates of edge-syncer's clients unless its flags say otherwise: sustained requests
// per second and bursts, to the mailbox (the center) and to the edge cluster. Config takes its
// rest.Configs as given, so a program that runs syncers sets these itself.
const (
	DefaultMailboxQPS   = 20
	DefaultMailboxBurst = 40
	DefaultEdgeQPS      = 50
	DefaultEdgeBurst    = 100
)

var syncerConfigGVR = edgev1alpha1.SchemeGroupVersion.WithResource("syncerconfigs")

// Config configures a Syncer.
type Config struct {
	// Mailbox reaches the mailbox workspace (the kubeconfig from kubectl edge prep-for-syncer).
	Mailbox *rest.Config
	// Edge reaches the edge cluster.
	Edge *rest.Config
	// SyncTargetName and SyncTargetUID say whose syncer this is.
	SyncTargetName string
	SyncTargetUID  string
	// Identity names this syncer process in its heartbeat Lease.
	Identity string
	// Workers is the number of objects applied at once (default 4).
	Workers int
	// StatusCoalesce is the least time between two status writes of one copy into the mailbox
	// (default 2 s): a change after a quiet period is written at once, and later changes within
	// StatusCoalesce are gathered into one write at its end.
	StatusCoalesce time.Duration
	// HeartbeatInterval is how often the heartbeat Lease is renewed (default 10 s).
	HeartbeatInterval time.Duration
	// HeartbeatLease and HeartbeatNamespace name the Lease (default: the mailbox layout of
	// package mailbox).
	HeartbeatLease, HeartbeatNamespace string
}

// Syncer syncs one mailbox with one edge cluster. Build it with New, run it with Run.
type Syncer struct {
	cfg Config
	own ownership

	mailbox          dynamic.Interface
	mailboxKube      kubernetes.Interface
	mailboxDiscovery discovery.DiscoveryInterface
	edge             dynamic.Interface
	edgeKube         kubernetes.Interface
	edgeDiscovery    discovery.DiscoveryInterface
	events           record.EventRecorder

	config       cache.SharedIndexInformer
	configSignal chan struct{}

	downsyncQueue workqueue.TypedRateLimitingInterface[sourceKey]
	statusQueue   workqueue.TypedRateLimitingInterface[sourceKey]
	upsyncQueue   workqueue.TypedRateLimitingInterface[objectRef]
	reportQueue   workqueue.TypedRateLimitingInterface[string]

	mu sync.Mutex
	// configSeen: a SyncerConfig was read and acted on.
	configSeen bool
	// observedGeneration is the generation of the SyncerConfig acted on.
	observedGeneration int64
	// downsync are the mailbox resources to down-sync, by group and resource.
	downsync map[schema.GroupResource]*downsyncWatch
	// namespaces are the namespaces of the namespaced copies to down-sync.
	namespaces map[string]bool
	// edgeWatches watch the objects this syncer manages at the edge, by resource.
	edgeWatches map[schema.GroupVersionResource]*informerRun
	// upsync are the edge resources to up-sync, with their rules.
	upsync map[schema.GroupVersionResource]*upsyncWatch
	// targets is the edge object of each mailbox copy that has one (a re-natured object is of
	// another resource than its copy).
	targets map[sourceKey]objectRef
	// applied is the hash last applied for each copy, to tell a repair from an update.
	applied map[sourceKey]string
	// appliedCopies is the projection hash of the version of each copy that is at the edge,
	// reported in SyncerConfig status.applied.
	appliedCopies map[sourceKey]string
	// objectErrors and configErrors are reported in the SyncerConfig's status.
	objectErrors map[sourceKey]string
	// statusWritten is when the status of each copy was last written, for coalescing.
	statusWritten map[sourceKey]time.Time
	configErrors  []string
	// lastReport is the status last written to the SyncerConfig, and lastReportAt when.
	lastReport   string
	lastReportAt time.Time
	// heartbeatOK says whether the last heartbeat reached the center.
	heartbeatOK bool
	// lastLease is the heartbeat Lease as last written (used by the heartbeat goroutine only).
	lastLease *coordinationv1.Lease
}

// informerRun is an informer with the means to stop it.
type informerRun struct {
	informer cache.SharedIndexInformer
	stop     context.CancelFunc
}

// New builds a Syncer; it connects to nothing until Run.
func New(cfg Config) (*Syncer, error) {
	if cfg.Mailbox == nil || cfg.Edge == nil {
		return nil, errors.New("both the mailbox and the edge cluster must be configured")
	}
	if cfg.SyncTargetName == "" || cfg.SyncTargetUID == "" {
		return nil, errors.New("the SyncTarget's name and UID are required: take them from kubectl edge prep-for-syncer")
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 4
	}
	if cfg.StatusCoalesce <= 0 {
		cfg.StatusCoalesce = 2 * time.Second
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = 10 * time.Second
	}
	if cfg.HeartbeatLease == "" {
		cfg.HeartbeatLease = mailbox.HeartbeatLease
	}
	if cfg.HeartbeatNamespace == "" {
		cfg.HeartbeatNamespace = mailbox.SyncerNamespace
	}
	if cfg.Identity == "" {
		cfg.Identity = cfg.SyncTargetName
	}
	mailboxCfg := rest.CopyConfig(cfg.Mailbox)
	edgeCfg := rest.CopyConfig(cfg.Edge)
	for _, c := range []*rest.Config{mailboxCfg, edgeCfg} {
		c.UserAgent = "edge-syncer/" + cfg.SyncTargetName
	}
	s := &Syncer{
		cfg:           cfg,
		own:           newOwnership(cfg.SyncTargetUID),
		configSignal:  make(chan struct{}, 1),
		downsync:      map[schema.GroupResource]*downsyncWatch{},
		namespaces:    map[string]bool{},
		edgeWatches:   map[schema.GroupVersionResource]*informerRun{},
		upsync:        map[schema.GroupVersionResource]*upsyncWatch{},
		targets:       map[sourceKey]objectRef{},
		applied:       map[sourceKey]string{},
		appliedCopies: map[sourceKey]string{},
		objectErrors:  map[sourceKey]string{},
		statusWritten: map[sourceKey]time.Time{},
	}
	var err error
	if s.mailbox, err = dynamic.NewForConfig(mailboxCfg); err != nil {
		return nil, err
	}
	if s.mailboxKube, err = kubernetes.NewForConfig(mailboxCfg); err != nil {
		return nil, err
	}
	if s.mailboxDiscovery, err = discovery.NewDiscoveryClientForConfig(mailboxCfg); err != nil {
		return nil, err
	}
	if s.edge, err = dynamic.NewForConfig(edgeCfg); err != nil {
		return nil, err
	}
	if s.edgeKube, err = kubernetes.NewForConfig(edgeCfg); err != nil {
		return nil, err
	}
	if s.edgeDiscovery, err = discovery.NewDiscoveryClientForConfig(edgeCfg); err != nil {
		return nil, err
	}
	s.downsyncQueue = newQueue[sourceKey]("downsync")
	s.statusQueue = newQueue[sourceKey]("status")
	s.upsyncQueue = newQueue[objectRef]("upsync")
	s.reportQueue = newQueue[string]("report")
	s.config = dynamicinformer.NewFilteredDynamicInformer(s.mailbox, syncerConfigGVR, "", 0, cache.Indexers{},
		func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", edgev1alpha1.SyncerConfigName).String()
		}).Informer()
	signal := func() {
		select {
		case s.configSignal <- struct{}{}:
		default:
		}
	}
	if _, err := s.config.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { signal() },
		UpdateFunc: func(_, _ any) { signal() },
		DeleteFunc: func(any) { signal() },
	}); err != nil {
		return nil, err
	}
	return s, nil
}

// newQueue is a work queue whose retries back off exponentially, from 250 ms to a minute, with
// jitter, so that a fleet of syncers that lost the center does not come back in lockstep.
func newQueue[T comparable](name string) workqueue.TypedRateLimitingInterface[T] {
	return workqueue.NewTypedRateLimitingQueueWithConfig[T](
		&jitteredLimiter[T]{TypedRateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[T](250*time.Millisecond, time.Minute)},
		workqueue.TypedRateLimitingQueueConfig[T]{Name: "edge_syncer_" + name})
}

// jitteredLimiter spreads each delay of its TypedRateLimiter over 80% to 120% of it.
type jitteredLimiter[T comparable] struct {
	workqueue.TypedRateLimiter[T]
}

func (j *jitteredLimiter[T]) When(item T) time.Duration {
	return jitter(j.TypedRateLimiter.When(item))
}

// jitter spreads d over 80% to 120% of it.
func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// Run syncs until ctx ends.
func (s *Syncer) Run(ctx context.Context) error {
	defer utilruntime.HandleCrash()
	logger := klog.FromContext(ctx).WithValues("syncTarget", s.cfg.SyncTargetName)
	ctx = klog.NewContext(ctx, logger)

	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: s.edgeKube.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	s.events = broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "edge-syncer", Host: s.cfg.SyncTargetName})

	for _, q := range []interface{ ShutDown() }{s.downsyncQueue, s.statusQueue, s.upsyncQueue, s.reportQueue} {
		defer q.ShutDown()
	}
	go s.config.Run(ctx.Done())
	go s.heartbeat(ctx)
	logger.Info("waiting for the mailbox's SyncerConfig")
	if !cache.WaitForCacheSync(ctx.Done(), s.config.HasSynced) {
		return ctx.Err()
	}
	go s.watchConfig(ctx)
	for i := 0; i < s.cfg.Workers; i++ {
		go wait.UntilWithContext(ctx, func(ctx context.Context) { runQueue(ctx, s.downsyncQueue, s.syncDownsync) }, time.Second)
	}
	for i := 0; i < 2; i++ {
		go wait.UntilWithContext(ctx, func(ctx context.Context) { runQueue(ctx, s.statusQueue, s.syncStatus) }, time.Second)
		go wait.UntilWithContext(ctx, func(ctx context.Context) { runQueue(ctx, s.upsyncQueue, s.syncUpsync) }, time.Second)
	}
	go wait.UntilWithContext(ctx, func(ctx context.Context) { runQueue(ctx, s.reportQueue, s.writeReport) }, time.Second)
	<-ctx.Done()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.downsync {
		w.run.stop()
	}
	for _, w := range s.edgeWatches {
		w.stop()
	}
	for _, w := range s.upsync {
		w.stopAll()
	}
	return nil
}

// runQueue processes one key of q with sync: an error retries it with backoff, a positive
// duration looks again after that long.
func runQueue[T comparable](ctx context.Context, q workqueue.TypedRateLimitingInterface[T], sync func(context.Context, T) (time.Duration, error)) {
	for {
		key, quit := q.Get()
		if quit {
			return
		}
		again, err := sync(ctx, key)
		switch {
		case err != nil:
			klog.FromContext(ctx).V(2).Info("will retry", "key", fmt.Sprint(key), "err", err.Error())
			q.AddRateLimited(key)
		case again > 0:
			q.Forget(key)
			q.AddAfter(key, again)
		default:
			q.Forget(key)
		}
		q.Done(key)
	}
}

// Ready says whether the syncer is in touch with its mailbox and acting on its SyncerConfig,
// or why not.
func (s *Syncer) Ready() (bool, string) {
	if !s.config.HasSynced() {
		return false, "the mailbox's SyncerConfig has not been read yet"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.heartbeatOK {
		return false, "the last heartbeat did not reach the mailbox"
	}
	for gr, w := range s.downsync {
		if !w.run.informer.HasSynced() {
			return false, fmt.Sprintf("the mailbox's %s are not listed yet", gr)
		}
	}
	return true, ""
}

// asUnstructured returns obj as an *unstructured.Unstructured, unwrapping a tombstone.
func asUnstructured(obj any) *unstructured.Unstructured {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	u, _ := obj.(*unstructured.Unstructured)
	return u
}
