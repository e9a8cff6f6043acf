// Package pushhost is the push host: the controller of edge-controller-manager that runs, at the
// center, the syncer of every SyncTarget in push mode (label edge.kcp.io/sync-mode=push, set by
// kubectl edge ensure location --push). It reconciles each such SyncTarget, from its mailbox's
// syncer token and the edge kubeconfig stored in its inventory workspace, into one running
// syncer (package syncer, the same code that runs in an edge cluster in pull mode), and reports
// whether it reaches the edge in the SyncTarget's condition EdgeReachable.
//
// Each syncer reads and writes its mailbox with the token of the mailbox's syncer identity, the
// credential that kubectl edge prep-for-syncer gives a pull syncer (good for that mailbox alone),
// not with edge-controller-manager's identity, which only reads that token and the kubeconfig;
// it reaches the edge with the stored kubeconfig, and keeps its key pair for sealed objects in
// the edge cluster, as a pull syncer does. A syncer starts when its SyncTarget turns push and its
// mailbox is ready, starts again when the token or the kubeconfig changes (read again when the
// SyncTarget changes, and every Resync), and stops when the SyncTarget is deleted or turns pull; stopping deletes
// nothing at the edge. It heartbeats only while the edge answers (syncer.Config.HeartbeatNeedsEdge):
// an edge that the center cannot reach shows stale after the fleet's grace period, as a pull
// edge that lost the center does.
//
// Why a controller of edge-controller-manager rather than a process of its own: the manager's
// leader election already makes sure that one host at a time runs a SyncTarget's syncer (two
// would fight over the edge), its identity already reads the syncer tokens (it made the
// mailboxes) and it already watches every SyncTarget; a separate process would need an identity
// of its own with rights in every mailbox and inventory workspace, and a deployment of its own.
// The price: edge-controller-manager holds the edge clusters' credentials and its memory grows
// with the push targets (docs/operations.md).
package pushhost

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	kcpkubernetesclientset "github.com/kcp-dev/client-go/kubernetes"
	"github.com/kcp-dev/logicalcluster/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/centerview"
	"github.com/kcp-dev/edge-mc/pkg/controllerkit"
	"github.com/kcp-dev/edge-mc/pkg/syncer"
	"github.com/kcp-dev/edge-mc/pkg/version"
)

// ControllerName names the controller in logs, metrics and --controllers.
const ControllerName = "push-host"

// DefaultResync is how often a push SyncTarget's token and kubeconfig are read again, for a
// change that did not come with a change of the SyncTarget: kubectl edge ensure location --push
// records the kubeconfig's hash on the SyncTarget (AnnotationPushKubeconfigHash), whose update
// brings a new kubeconfig at once. Each re-read is two GETs; at 30 s, 100 push targets cost the
// center kcp 6.7 GETs a second when idle (bench -push, docs/dev/performance.md), at 5 minutes 0.7.
const DefaultResync = 5 * time.Minute

var syncTargetsGVR = edgev1alpha1.SchemeGroupVersion.WithResource("synctargets")

// Config is what the controller needs.
type Config struct {
	// Edge follows the virtual workspaces of edge.kcp.io: the SyncTargets, and their status.
	Edge *centerview.Endpoints
	// Kube reaches any workspace by path with edge-controller-manager's identity: it reads the
	// syncer's token in each mailbox and the edge kubeconfig in each inventory workspace.
	Kube kcpkubernetesclientset.ClusterInterface
	// Base is kcp's base URL and TLS trust; the syncers' mailbox clients take it without its
	// credentials.
	Base *rest.Config
	// Identity names this host in the syncers' heartbeat Leases.
	Identity string
	// Workers is the number of reconciles at once.
	Workers int
	// Resync is how often each push SyncTarget's token and kubeconfig are read again (default
	// DefaultResync).
	Resync time.Duration
}

// Controller is the push host. Create it with NewController and run it with Start.
type Controller struct {
	cfg         Config
	queue       *controllerkit.Queue[string]
	syncTargets centerview.SharedInformer

	mu sync.Mutex
	// running are the syncers, by the SyncTarget's cluster-aware key.
	running map[string]*runningSyncer
	// wg counts the running syncers' goroutines.
	wg sync.WaitGroup
	// newSyncer builds a syncer, and enqueue queues a SyncTarget; replaced in tests.
	newSyncer func(syncer.Config) (runner, error)
	enqueue   func(key string)
}

// runner is what the host needs of a syncer.
type runner interface {
	Run(ctx context.Context) error
}

// runningSyncer is one syncer the host runs.
type runningSyncer struct {
	// inputs is a hash of what the syncer was built from: a change starts it again.
	inputs string
	stop   context.CancelFunc
	done   chan struct{}
	// probe is the outcome of its last probe of the edge, nil before the first.
	probeMu sync.Mutex
	probe   *probeResult
}

// probeResult is the outcome of a probe of the edge.
type probeResult struct{ err error }

// NewController builds the controller and its informer.
func NewController(cfg Config) (*Controller, error) {
	if cfg.Edge == nil || cfg.Kube == nil || cfg.Base == nil {
		return nil, errors.New("push host: Edge, Kube and Base are required")
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 4
	}
	if cfg.Resync <= 0 {
		cfg.Resync = DefaultResync
	}
	if cfg.Identity == "" {
		cfg.Identity = "edge-controller-manager"
	}
	// The push syncers report edge-controller-manager's version as theirs: they are its code.
	if syncer.Version != version.Version {
		syncer.Version = version.Version
	}
	c := &Controller{
		cfg:     cfg,
		queue:   controllerkit.NewQueue[string](controllerkit.Options{Name: ControllerName, Workers: cfg.Workers}),
		running: map[string]*runningSyncer{},
		newSyncer: func(cfg syncer.Config) (runner, error) {
			return syncer.New(cfg)
		},
	}
	c.enqueue = c.queue.Add
	syncTargets, err := cfg.Edge.Shared(syncTargetsGVR, nil)
	if err != nil {
		return nil, err
	}
	c.syncTargets = syncTargets
	enqueue := func(obj any) {
		key, err := kcpcache.DeletionHandlingMetaClusterNamespaceKeyFunc(obj)
		if err != nil {
			utilruntime.HandleError(err)
			return
		}
		c.queue.Add(key)
	}
	if _, err := c.syncTargets.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: enqueue,
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// Start runs the informer and the workers until ctx ends, then stops every syncer.
func (c *Controller) Start(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithValues("controller", ControllerName)
	ctx = klog.NewContext(ctx, logger)
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	go c.syncTargets.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.syncTargets.HasSynced) {
		return fmt.Errorf("%s controller: caches did not sync", ControllerName)
	}
	logger.Info("caches synced; starting workers", "workers", c.cfg.Workers)
	c.queue.Run(ctx, c.process)
	c.stopAll()
	return nil
}

// HasSynced says whether the informer has synced, for readiness.
func (c *Controller) HasSynced() bool { return c.syncTargets.HasSynced() }

// Running returns the keys of the SyncTargets whose syncer runs.
func (c *Controller) Running() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]string, 0, len(c.running))
	for k := range c.running {
		keys = append(keys, k)
	}
	return keys
}

// process reconciles one SyncTarget.
func (c *Controller) process(ctx context.Context, key string) (time.Duration, error) {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("key", key))
	obj, exists, err := c.syncTargets.GetIndexer().GetByKey(key)
	if err != nil {
		return 0, err
	}
	if !exists {
		c.stop(ctx, key, "the SyncTarget is gone")
		return 0, nil
	}
	u := obj.(*unstructured.Unstructured)
	st := &edgev1alpha1.SyncTarget{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, st); err != nil {
		return 0, fmt.Errorf("decoding SyncTarget %s: %w", key, err)
	}
	return c.reconcile(ctx, key, logicalcluster.From(u), st)
}

// startSyncer starts a syncer for key, replacing the one that runs, if any.
func (c *Controller) startSyncer(ctx context.Context, key, inputs string, cfg syncer.Config) error {
	r := &runningSyncer{inputs: inputs, done: make(chan struct{})}
	cfg.EdgeProbed = func(err error) {
		r.probeMu.Lock()
		last := r.probe
		r.probe = &probeResult{err: err}
		r.probeMu.Unlock()
		if last == nil || reasonOf(last.err) != reasonOf(err) {
			c.enqueue(key)
		}
	}
	s, err := c.newSyncer(cfg)
	if err != nil {
		return err
	}
	c.stop(ctx, key, "its mailbox token or edge kubeconfig changed")
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.stop = cancel
	c.mu.Lock()
	c.running[key] = r
	c.mu.Unlock()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer close(r.done)
		if err := s.Run(runCtx); err != nil && !errors.Is(err, context.Canceled) {
			klog.FromContext(ctx).Error(err, "push syncer stopped", "syncTarget", cfg.SyncTargetName)
			time.AfterFunc(time.Second, func() { c.enqueue(key) })
		}
	}()
	klog.FromContext(ctx).Info("push syncer started", "syncTarget", cfg.SyncTargetName, "edge", cfg.Edge.Host)
	return nil
}

// running returns the syncer that runs for key, if any.
func (c *Controller) runningFor(key string) *runningSyncer {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.running[key]
}

// stop stops the syncer of key, if one runs, and waits until it has.
func (c *Controller) stop(ctx context.Context, key, why string) {
	c.mu.Lock()
	r := c.running[key]
	delete(c.running, key)
	c.mu.Unlock()
	if r == nil {
		return
	}
	r.stop()
	<-r.done
	klog.FromContext(ctx).Info("push syncer stopped", "reason", why)
}

// stopAll stops every syncer, as the controller ends.
func (c *Controller) stopAll() {
	c.mu.Lock()
	for _, r := range c.running {
		r.stop()
	}
	c.running = map[string]*runningSyncer{}
	c.mu.Unlock()
	c.wg.Wait()
}

// inputsHash identifies what a syncer was built from, without keeping the credentials.
func inputsHash(parts ...[]byte) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:", len(p))
		h.Write(p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// reasonOf classifies the outcome of a probe of the edge into EdgeReachable's reason.
func reasonOf(err error) string {
	switch {
	case err == nil:
		return edgev1alpha1.ReasonEdgeReachable
	case apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err):
		return edgev1alpha1.ReasonEdgeUnauthorized
	default:
		return edgev1alpha1.ReasonEdgeUnreachable
	}
}

// tokenOf returns the token of the mailbox's syncer token Secret, or why there is none yet.
func tokenOf(secret *corev1.Secret) ([]byte, string) {
	if token := secret.Data[corev1.ServiceAccountTokenKey]; len(token) > 0 {
		return token, ""
	}
	return nil, "the syncer's token Secret in the mailbox has no token yet"
}
