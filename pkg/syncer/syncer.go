// Package syncer is edge-mc's agent in an edge cluster (pcluster). It opens every connection
// itself: it watches its mailbox workspace in kcp and keeps the edge cluster in step with it.
//
//   - down-sync: the mailbox holds one Assemblage per EdgePlacement that has this destination
//     (with AssemblageParts when it is large). The syncer reads each as a unit, refusing as a
//     whole one it cannot read (an unknown format, a corrupt or missing part: the edge keeps the
//     last good version), and applies its version at the edge, staged: CRDs first, until they
//     are established, then Namespaces, then the rest, with server-side apply and the syncer's
//     own field manager and ownership marks (package transport, marks.go), re-natured if
//     denatured. An object the edge refuses is Failed; the others still go. What left a version
//     is deleted at the edge once nothing of it is pending, only if this syncer created it and
//     no other assemblage of the mailbox carries it, and only after the center confirmed the
//     version; what a removed assemblage carried, only after the center confirmed it is gone;
//   - drift: an applied object edited or deleted at the edge is put back, and the repair is
//     reported in the assemblage's status (the object and the paths of the fields changed, never
//     their values), a log line, an Event and a metric; a create-only object's drift is reported
//     and left;
//   - reported state: per assemblage, its status (observed and applied version, conditions
//     Applied, Ready and Refused, and per object its state by kstatus, reason, uid and, within a
//     size budget, its .status at the edge), written at most once per coalescing window;
//   - up-sync: objects created at the edge that match the SyncerConfig's upsync rules are written
//     into the mailbox (labelled edge.kcp.io/upsynced), and updated and deleted with their
//     originals;
//   - heartbeat: it renews a Lease in the mailbox at the interval the SyncerConfig sets for the
//     fleet, from which the mailbox controller reports SyncerReady on the SyncTarget;
//   - SyncerConfig status: the generation acted on, errors, the syncer's version, the
//     assemblage formats it reads, and the public key for which the center seals Secrets and
//     objects annotated edge.kcp.io/sealed: "true" (key.go);
//   - sealed objects: the key pair is made at the edge and kept in a Secret there (its private
//     half never leaves the edge cluster); a sealed entry is opened before it is applied, and
//     one that does not open is Failed with the reason, its last good version left as it is.
//
// With the center unreachable the syncer changes nothing at the edge: its caches keep the last
// state of the mailbox, it deletes only after the center confirmed, and its watches and writes
// retry with jittered backoff. After a restart it learns what it applied from the assemblages'
// status and from its marks at the edge, and writes only what differs.
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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// Version is the syncer's version, reported in SyncerConfig status.syncerVersion so that operators
// see which edges run an old syncer. cmd/edge-syncer sets it from
// github.com/kcp-dev/edge-mc/pkg/version.Version, which the build sets.
var Version = "dev"

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

// Defaults of Config.
const (
	// DefaultHeartbeatInterval is the heartbeat interval when neither Config nor the
	// SyncerConfig sets one.
	DefaultHeartbeatInterval = 30 * time.Second
	// DefaultStatusCoalesce is the default Config.StatusCoalesce.
	DefaultStatusCoalesce = 2 * time.Second
	// DefaultWorkers is the default Config.Workers.
	DefaultWorkers = 4
	// StatusBudget bounds the JSON size of one assemblage's status: past it, objects are listed
	// with their state only (status.statusOmitted).
	StatusBudget = 256 << 10
)

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
	// StatusCoalesce is the least time between two status writes of one assemblage (default
	// 2 s): a change after a quiet period is written at once, and later changes within
	// StatusCoalesce are gathered into one write at its end.
	StatusCoalesce time.Duration
	// HeartbeatInterval, when set, is how often the heartbeat Lease is renewed, whatever the
	// SyncerConfig says (spec.heartbeat.intervalSeconds, else 30 s).
	HeartbeatInterval time.Duration
	// HeartbeatLease and HeartbeatNamespace name the Lease (default: the mailbox layout of
	// package transport).
	HeartbeatLease, HeartbeatNamespace string
	// StatusBudget bounds the size of an assemblage's status (default StatusBudget).
	StatusBudget int
	// KeyNamespace is the edge cluster's namespace that holds the syncer's key pair for sealed
	// objects (default transport.DefaultEdgeSyncerNamespace); the syncer creates it if missing.
	KeyNamespace string
	// HeartbeatNeedsEdge, set for a syncer that runs at the center (push mode, package pushhost),
	// makes every heartbeat first ask the edge cluster's API server for /readyz, and skip the
	// renewal when it does not answer: a pull syncer runs in its edge cluster and falls silent
	// with it, a push syncer would otherwise heartbeat for an edge that is gone.
	HeartbeatNeedsEdge bool
	// EdgeProbed, if set, is called with the outcome of each of those probes (nil: the edge
	// answered), so that the push host can report it on the SyncTarget.
	EdgeProbed func(error)
}

// Syncer syncs one mailbox with one edge cluster. Build it with New, run it with Run.
type Syncer struct {
	cfg   Config
	marks transport.Marks

	mailbox          dynamic.Interface
	mailboxEdge      mailboxAPI
	mailboxKube      kubernetes.Interface
	mailboxDiscovery discovery.DiscoveryInterface
	edge             dynamic.Interface
	edgeKube         kubernetes.Interface
	edgeDiscovery    discovery.DiscoveryInterface
	events           record.EventRecorder

	assemblages cache.SharedIndexInformer
	parts       cache.SharedIndexInformer
	config      cache.SharedIndexInformer

	configSignal    chan struct{}
	heartbeatSignal chan struct{}

	assemblageQueue workqueue.TypedRateLimitingInterface[string]
	statusQueue     workqueue.TypedRateLimitingInterface[string]
	upsyncQueue     workqueue.TypedRateLimitingInterface[objectRef]
	reportQueue     workqueue.TypedRateLimitingInterface[string]

	// applySlots bounds the objects applied at once, over all assemblages.
	applySlots chan struct{}

	mu sync.Mutex
	// swept: the edge was searched for the objects this syncer applied from assemblages;
	// nothing is deleted before.
	swept bool
	// states is what the syncer knows of each assemblage, by name.
	states map[string]*assemblageState
	// edgeWatches watch the objects this syncer manages at the edge, by resource.
	edgeWatches map[schema.GroupVersionResource]*informerRun
	// upsync are the edge resources to up-sync, with their rules.
	upsync map[schema.GroupVersionResource]*upsyncWatch
	// configGeneration is the generation of the SyncerConfig acted on, configErrors what is
	// wrong with it, configHeartbeat its heartbeat interval (0: unset).
	configSeen       bool
	configGeneration int64
	configErrors     []string
	configHeartbeat  time.Duration
	// statusRules are the SyncerConfig's status collectors and health rules, compiled.
	statusRules *statusRules
	// lastReport is the SyncerConfig status last written.
	lastReport   string
	lastReportAt time.Time
	// heartbeatOK says whether the last heartbeat reached the center.
	heartbeatOK bool
	// lastLease is the heartbeat Lease as last written (used by the heartbeat goroutine only).
	lastLease *coordinationv1.Lease
	// key is the syncer's key pair for sealed objects, nil until loaded; keys is what its
	// Secret holds (key, and the pair it replaced).
	key  *transport.KeyPair
	keys heldKeys
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
	if uid, ok := transport.SyncTargetUIDOfServer(cfg.Mailbox.Host); ok && string(uid) != cfg.SyncTargetUID {
		// Another SyncTarget's mailbox: this syncer would apply that edge's workload here and
		// renew its heartbeat, so that edge would look served while nobody serves it.
		return nil, fmt.Errorf("the mailbox kubeconfig points at the mailbox of the SyncTarget with UID %s, but this syncer is for SyncTarget %s with UID %s: "+
			"run kubectl edge prep-for-syncer %s again, and give the syncer the kubeconfig and the UID it prints (server %s)",
			uid, cfg.SyncTargetName, cfg.SyncTargetUID, cfg.SyncTargetName, cfg.Mailbox.Host)
	}
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.StatusCoalesce <= 0 {
		cfg.StatusCoalesce = DefaultStatusCoalesce
	}
	if cfg.StatusBudget <= 0 {
		cfg.StatusBudget = StatusBudget
	}
	if cfg.HeartbeatLease == "" {
		cfg.HeartbeatLease = transport.HeartbeatLease
	}
	if cfg.HeartbeatNamespace == "" {
		cfg.HeartbeatNamespace = transport.SyncerNamespace
	}
	if cfg.Identity == "" {
		cfg.Identity = cfg.SyncTargetName
	}
	if cfg.KeyNamespace == "" {
		cfg.KeyNamespace = transport.DefaultEdgeSyncerNamespace
	}
	mailboxCfg := rest.CopyConfig(cfg.Mailbox)
	edgeCfg := rest.CopyConfig(cfg.Edge)
	for _, c := range []*rest.Config{mailboxCfg, edgeCfg} {
		c.UserAgent = "edge-syncer/" + cfg.SyncTargetName
	}
	s := &Syncer{
		cfg:             cfg,
		marks:           transport.MarksFor(cfg.SyncTargetUID),
		configSignal:    make(chan struct{}, 1),
		heartbeatSignal: make(chan struct{}, 1),
		applySlots:      make(chan struct{}, cfg.Workers),
		states:          map[string]*assemblageState{},
		edgeWatches:     map[schema.GroupVersionResource]*informerRun{},
		upsync:          map[schema.GroupVersionResource]*upsyncWatch{},
	}
	var err error
	if s.mailbox, err = dynamic.NewForConfig(mailboxCfg); err != nil {
		return nil, err
	}
	if s.mailboxEdge, err = newMailboxAPI(mailboxCfg); err != nil {
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
	s.assemblageQueue = newQueue[string]("assemblages")
	s.statusQueue = newQueue[string]("status")
	s.upsyncQueue = newQueue[objectRef]("upsync")
	s.reportQueue = newQueue[string]("report")
	if err := s.buildMailboxInformers(); err != nil {
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

	for _, q := range []interface{ ShutDown() }{s.assemblageQueue, s.statusQueue, s.upsyncQueue, s.reportQueue} {
		defer q.ShutDown()
	}
	go s.config.RunWithContext(ctx)
	go s.assemblages.RunWithContext(ctx)
	go s.parts.RunWithContext(ctx)
	go s.heartbeat(ctx)
	logger.Info("waiting for the mailbox's assemblages and SyncerConfig")
	if !cache.WaitForCacheSync(ctx.Done(), s.config.HasSynced, s.assemblages.HasSynced, s.parts.HasSynced) {
		return ctx.Err()
	}
	// The key comes before the first report, which publishes its public half, and before any
	// assemblage is opened.
	if err := s.loadKeyUntilDone(ctx); err != nil {
		return err
	}
	go s.watchConfig(ctx)
	go wait.UntilWithContext(ctx, func(ctx context.Context) { runQueue(ctx, s.reportQueue, s.writeReport) }, time.Second)
	for i := 0; i < 2; i++ {
		go wait.UntilWithContext(ctx, func(ctx context.Context) { runQueue(ctx, s.upsyncQueue, s.syncUpsync) }, time.Second)
	}

	// What this syncer applied before it started is found by its marks at the edge before any
	// assemblage is acted on, so that what left meanwhile can be deleted and nothing is applied
	// twice.
	if err := s.sweepUntilDone(ctx); err != nil {
		return err
	}
	for _, name := range s.assemblages.GetStore().ListKeys() {
		s.assemblageQueue.Add(name)
	}
	for i := 0; i < 2; i++ {
		go wait.UntilWithContext(ctx, func(ctx context.Context) { runQueue(ctx, s.assemblageQueue, s.syncAssemblage) }, time.Second)
		go wait.UntilWithContext(ctx, func(ctx context.Context) { runQueue(ctx, s.statusQueue, s.writeStatus) }, time.Second)
	}
	<-ctx.Done()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.edgeWatches {
		w.stop()
	}
	for _, w := range s.upsync {
		w.stopAll()
	}
	return nil
}

// sweepUntilDone runs sweepEdge until it succeeds or ctx ends, backing off between tries.
func (s *Syncer) sweepUntilDone(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	delay := time.Second
	for {
		err := s.sweepEdge(ctx)
		if err == nil {
			s.mu.Lock()
			s.swept = true
			s.mu.Unlock()
			return nil
		}
		logger.Error(err, "searching the edge cluster for the objects this syncer applied; retrying")
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(jitter(delay)):
		}
		delay = min(2*delay, time.Minute)
	}
}

// runQueue processes one key of q with sync: an error retries it with backoff (the shortest
// when the attempt progressed), a positive duration looks again after that long.
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
			if errors.As(err, new(progressed)) {
				q.Forget(key)
			}
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

// Ready says whether the syncer is in touch with its mailbox and acting on its assemblages, or
// why not.
func (s *Syncer) Ready() (bool, string) {
	switch {
	case !s.assemblages.HasSynced() || !s.parts.HasSynced():
		return false, "the mailbox's assemblages have not been listed yet"
	case !s.config.HasSynced():
		return false, "the mailbox's SyncerConfig has not been read yet"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.swept {
		return false, "the edge cluster has not been searched yet for the objects this syncer applied"
	}
	if !s.heartbeatOK {
		return false, "the last heartbeat did not reach the mailbox"
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

// runInformer runs inf until ctx ends or the returned run is stopped.
func runInformer(ctx context.Context, inf cache.SharedIndexInformer) *informerRun {
	ctx, cancel := context.WithCancel(ctx)
	go inf.RunWithContext(ctx)
	return &informerRun{informer: inf, stop: cancel}
}
