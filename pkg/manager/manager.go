// Package manager runs edge-mc's center controllers in one process: edge-controller-manager. It
// connects to kcp with the identity that 'kubectl edge init' makes for it (or a kcp admin's),
// waits (with backoff, saying why) until the ESPW serves
// edge-mc's APIExports, elects a leader among its replicas with a Lease in the ESPW, runs the
// selected controllers, and serves /healthz, /readyz and Prometheus /metrics.
package manager

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	kcpdynamic "github.com/kcp-dev/client-go/dynamic"
	kcpkubernetesclientset "github.com/kcp-dev/client-go/kubernetes"
	"github.com/kcp-dev/logicalcluster/v3"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"  // client-go request metrics
	_ "k8s.io/component-base/metrics/prometheus/workqueue" // workqueue metrics
	"k8s.io/klog/v2"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/centerview"
	"github.com/kcp-dev/edge-mc/pkg/controllerkit"
	"github.com/kcp-dev/edge-mc/pkg/espw"
	"github.com/kcp-dev/edge-mc/pkg/health"
	"github.com/kcp-dev/edge-mc/pkg/mailbox"
	placementtranslator "github.com/kcp-dev/edge-mc/pkg/placement-translator"
	"github.com/kcp-dev/edge-mc/pkg/pushhost"
	"github.com/kcp-dev/edge-mc/pkg/scheduler"
	statussummarizer "github.com/kcp-dev/edge-mc/pkg/status-summarizer"
	"github.com/kcp-dev/edge-mc/pkg/upsync"
	"github.com/kcp-dev/edge-mc/pkg/version"
	"github.com/kcp-dev/edge-mc/pkg/webhook"
	"github.com/kcp-dev/edge-mc/pkg/workspaces"
)

// Controllers are the names accepted by --controllers, with whether this version has them.
var Controllers = map[string]bool{
	mailbox.ControllerName:             true,
	scheduler.ControllerName:           true,
	placementtranslator.ControllerName: true,
	statussummarizer.ControllerName:    true,
	upsync.ControllerName:              true,
	pushhost.ControllerName:            true,
}

// AvailableControllers are the controllers this version has, sorted: the default of --controllers.
func AvailableControllers() []string {
	var names []string
	for n, available := range Controllers {
		if available {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// Options configure the manager.
type Options struct {
	// LoadConfig loads a config that reaches kcp as the controllers' identity (any workspace path
	// in it is ignored). It is called again at the start of every round.
	LoadConfig func() (*rest.Config, error)
	// KubeconfigPath, if set, is watched: when the file changes, the manager starts over with it.
	KubeconfigPath string
	// ESPW is the edge service provider workspace.
	ESPW logicalcluster.Path
	// Controllers to run.
	Controllers []string
	// Workers per controller.
	Workers int
	// HTTPAddress serves /healthz, /readyz and /metrics.
	HTTPAddress string
	// ProfilerAddress, if set, serves Go's profiles (/debug/pprof/) on a listener of its own.
	ProfilerAddress string
	// LeaderElect turns on leader election among replicas.
	LeaderElect bool
	// LeaderElectionID names the election's Lease in the ESPW's default namespace.
	LeaderElectionID string
	// Identity names this replica in the election.
	Identity string
	// HeartbeatInterval is how often every syncer renews its heartbeat (told to them in their
	// SyncerConfigs), and HeartbeatGracePeriod how long after its last heartbeat a syncer counts
	// as silent (SyncerReady Unknown, its destinations stale): the fleet's heartbeat settings,
	// set here for all of it. Zero takes the defaults (30 s and 90 s).
	HeartbeatInterval, HeartbeatGracePeriod time.Duration
	// WebhookAddress, if set, serves the admission webhook (pkg/webhook) on this address (port 0
	// picks one); WebhookURL is where kcp calls it (default: https:// and the address, with
	// 127.0.0.1 for an unspecified host). Without WebhookAddress the leader empties the ESPW's
	// webhook configuration.
	WebhookAddress, WebhookURL string
}

// ValidateControllers checks the names given to --controllers.
func ValidateControllers(names []string) error {
	var known []string
	for n := range Controllers {
		known = append(known, n)
	}
	sort.Strings(known)
	for _, n := range names {
		available, ok := Controllers[n]
		switch {
		case !ok:
			return fmt.Errorf("unknown controller %q: the controllers are %s", n, strings.Join(known, ", "))
		case !available:
			return fmt.Errorf("controller %q is not in this version of edge-controller-manager yet", n)
		}
	}
	if len(names) == 0 {
		return errors.New("no controllers selected")
	}
	return nil
}

// LeaderCheck names the part of /readyz that only the leader passes: /readyz?exclude=leader
// answers 200 on a replica that stands by, ready to take over.
const LeaderCheck = "leader"

// standingBy is /readyz's answer on a replica that stands by while another leads.
const standingBy = "standing by: another replica leads"

// Run runs the manager until ctx ends. It works in rounds: each round loads the kubeconfig,
// waits for the ESPW, wins the leader election (if enabled) and runs the controllers. A round
// ends when this replica loses the lease (kcp unreachable for longer than the renew deadline, for
// example) or the kubeconfig file changes (kcp's generated admin kubeconfig gets a new token at
// every kcp start); the next round starts over with fresh clients and caches, in the same
// process, standing by until it leads again.
func Run(ctx context.Context, o Options) error {
	logger := klog.FromContext(ctx)
	if err := ValidateControllers(o.Controllers); err != nil {
		return err
	}
	var ready atomic.Pointer[string]
	notReady := "waiting for the ESPW"
	ready.Store(&notReady)
	// /readyz: the controllers' caches synced, or why not. /readyz?exclude=leader also counts a
	// replica that stands by as ready: a Deployment's readiness probe asks that, so that its
	// replicas are all available while one leads (and a rolling update can proceed).
	readyz := func(excluded map[string]bool) (bool, string) { return readyGiven(ready.Load(), excluded) }
	serving.Store(&readyz)
	defer serving.Store(nil)
	srv, err := health.ServeChecks(o.HTTPAddress, readyz)
	if err != nil {
		return err
	}
	defer srv.Close()
	var hook *webhook.Server
	if o.WebhookAddress != "" {
		if hook, err = webhook.Listen(o.WebhookAddress); err != nil {
			return err
		}
		defer hook.Close()
		if o.WebhookURL == "" {
			o.WebhookURL = webhook.URL(hook.Addr())
		}
		logger.Info("serving the admission webhook", "address", hook.Addr().String(), "url", o.WebhookURL)
	}
	if o.ProfilerAddress != "" {
		profiler, err := health.ServeProfiler(o.ProfilerAddress)
		if err != nil {
			return err
		}
		defer profiler.Close()
		logger.Info("serving profiles", "address", o.ProfilerAddress)
	}

	for {
		roundCtx, endRound := context.WithCancel(ctx)
		if o.KubeconfigPath != "" {
			go endOnFileChange(roundCtx, o.KubeconfigPath, endRound)
		}
		err := runRound(roundCtx, o, &ready, hook)
		endRound()
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			logger.Error(err, "round ended")
		}
		standby := "starting over: reloading the kubeconfig"
		ready.Store(&standby)
		logger.Info("starting over with a fresh kubeconfig, clients and caches")
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}

// translatorWorkersPerWorker: the placement translator and the up-sync return path each run this
// many reconciles per --workers, because each of their reconciles mostly waits for a write to kcp.
const translatorWorkersPerWorker = 4

// runRound runs one round of Run, until ctx ends or the lease is lost.
func runRound(ctx context.Context, o Options, ready *atomic.Pointer[string], hook *webhook.Server) error {
	logger := klog.FromContext(ctx)
	cfg, err := o.LoadConfig()
	if err != nil {
		return fmt.Errorf("loading the kubeconfig: %w", err)
	}
	base, _ := workspaces.Split(cfg)
	base.UserAgent = "edge-controller-manager"
	// No client-side rate limit: the writes in flight to each kcp server follow what it accepts
	// (the controller kit's WriteLimiter: more while writes succeed, fewer on 429s and rising
	// latency), capped by --workers; reads and watches are kcp's own to pace (its priority and
	// fairness). Leader election has a client of its own, outside the limit.
	base.QPS, base.Burst = -1, 0
	electionConfig := rest.CopyConfig(base)
	base.Wrap(controllerkit.NewWriteLimiter(controllerkit.LimiterOptions{Max: translatorWorkersPerWorker * o.Workers}).Wrap)
	kcp, err := kcpclientset.NewForConfig(base)
	if err != nil {
		return err
	}
	kube, err := kcpkubernetesclientset.NewForConfig(base)
	if err != nil {
		return err
	}

	if err := waitForESPW(ctx, kcp, o.ESPW, func(why string) { ready.Store(&why) }); err != nil {
		return err
	}
	logger.Info("ESPW serves edge.kcp.io", "espw", o.ESPW)
	sealingSecret, why, err := espw.ReadSealingSecret(ctx, kube, o.ESPW)
	if err != nil {
		return err
	}
	if why != "" {
		logger.Info("sealing Secrets with fresh randomness: after a restart each assemblage that carries a sealed object is written once more", "reason", why)
	}
	webhooks, err := webhookRound(ctx, kube, o, hook)
	if err != nil {
		return err
	}

	// buildControllers waits for the virtual workspace of edge.kcp.io, which kcp publishes once
	// some workspace binds the export, and builds the selected controllers on it. Until then
	// there is nothing to do, and the manager says so while counting as ready.
	buildControllers := func(ctx context.Context) ([]runnable, error) {
		// One follower per export: each watches its APIExportEndpointSlice, whose URLs (one
		// virtual workspace per shard that holds a binding of the export) come and go while
		// the controllers run; the controllers' informers run on every URL.
		exports := map[string]*centerview.Endpoints{}
		for _, export := range []string{edgev1alpha1.EdgeAPIExportName, edgev1alpha1.MailboxAPIExportName, edgev1alpha1.WorkloadsAPIExportName} {
			e, err := centerview.NewEndpoints(kcp, o.ESPW, export, base)
			if err != nil {
				return nil, err
			}
			if export == edgev1alpha1.MailboxAPIExportName {
				// A shard down while the manager starts must not keep the controllers from
				// serving the mailboxes of the other shards.
				e.TolerateUnreachableShards()
			}
			e.Start(ctx)
			exports[export] = e
		}
		edge := exports[edgev1alpha1.EdgeAPIExportName]
		idle := fmt.Sprintf("idle: no workspace binds the APIExport %s of %s yet", edgev1alpha1.EdgeAPIExportName, o.ESPW)
		if _, ok := edge.WaitForURL(ctx, func() { ready.Store(nil); logger.Info(idle) }); !ok {
			return nil, ctx.Err()
		}
		syncing := "controllers are syncing their caches"
		ready.Store(&syncing)
		logger.Info("using the virtual workspaces of edge.kcp.io", "urls", edge.URLs())
		// One cache of the assemblages of every mailbox, for the translator and the summarizer.
		assemblages := centerview.NewAssemblages(exports[edgev1alpha1.MailboxAPIExportName])
		// The leader points kcp at its webhook (or at none), first: the controllers count as
		// ready only once kcp has been told.
		controllers := []runnable{configureWebhook(kube, o.ESPW, webhooks)}
		for _, name := range o.Controllers {
			switch name {
			case mailbox.ControllerName:
				c, err := mailbox.NewController(mailbox.Config{ESPW: o.ESPW, KCP: kcp, Kube: kube, Edge: edge, Mailbox: exports[edgev1alpha1.MailboxAPIExportName], Workers: o.Workers,
					HeartbeatGracePeriod: o.HeartbeatGracePeriod})
				if err != nil {
					return nil, err
				}
				controllers = append(controllers, runnable{name: name, start: c.Start, synced: c.HasSynced})
			case placementtranslator.ControllerName, upsync.ControllerName:
				// Both run on the translator's caches (the sources, the mailbox view): built once,
				// below the loop.
			case statussummarizer.ControllerName:
				c, err := statussummarizer.NewController(statussummarizer.Config{ESPW: o.ESPW, Edge: edge, Mailbox: exports[edgev1alpha1.MailboxAPIExportName],
					Assemblages: assemblages, Base: base, KCP: kcp, Workers: o.Workers})
				if err != nil {
					return nil, err
				}
				controllers = append(controllers, runnable{name: name, start: c.Start, synced: c.HasSynced})
			case pushhost.ControllerName:
				c, err := pushhost.NewController(pushhost.Config{Edge: edge, Kube: kube, Base: rest.CopyConfig(electionConfig), Identity: o.Identity, Workers: o.Workers})
				if err != nil {
					return nil, err
				}
				controllers = append(controllers, runnable{name: name, start: c.Start, synced: c.HasSynced})
			case scheduler.ControllerName:
				c, err := scheduler.NewController(scheduler.Config{Edge: edge, Workers: o.Workers})
				if err != nil {
					return nil, err
				}
				controllers = append(controllers, runnable{name: name, start: c.Start, synced: c.HasSynced})
			}
		}
		runTranslator, runUpsync := slices.Contains(o.Controllers, placementtranslator.ControllerName), slices.Contains(o.Controllers, upsync.ControllerName)
		if runTranslator || runUpsync {
			// The translator runs enough workers to keep kcp busy (one write per changed
			// assemblage each); the write limiter decides how many write at once.
			admin, err := kcpdynamic.NewForConfig(base)
			if err != nil {
				return nil, err
			}
			c, err := placementtranslator.NewController(placementtranslator.Config{ESPW: o.ESPW, Edge: edge, Mailbox: exports[edgev1alpha1.MailboxAPIExportName],
				Admin: admin, KCP: kcp, Assemblages: assemblages, SealingSecret: sealingSecret,
				Workers: translatorWorkersPerWorker * o.Workers, HeartbeatInterval: o.HeartbeatInterval})
			if err != nil {
				return nil, err
			}
			if runTranslator {
				controllers = append(controllers, runnable{name: placementtranslator.ControllerName, start: c.Start, synced: c.HasSynced})
			} else {
				// The return path alone: the translator's caches run, its workers do not.
				controllers = append(controllers, runnable{name: placementtranslator.ControllerName + "-caches", start: c.StartCaches, synced: c.HasSynced})
			}
			if runUpsync {
				u, err := upsync.NewController(upsync.Config{Caches: c.UpsyncCaches(), Edge: edge, Mailbox: exports[edgev1alpha1.MailboxAPIExportName],
					Workloads: exports[edgev1alpha1.WorkloadsAPIExportName], Workers: translatorWorkersPerWorker * o.Workers})
				if err != nil {
					return nil, err
				}
				controllers = append(controllers, runnable{name: upsync.ControllerName, start: u.Start, synced: u.HasSynced})
			}
		}
		return controllers, nil
	}

	// runControllers builds and runs the controllers until ctx ends, or until building them
	// fails or one of them stops: then it stops the others and says why, and the round ends, so
	// that a leader never holds the lease with controllers that do not run (after a restart of
	// kcp, discovery through a virtual workspace can time out while kcp starts serving it).
	runControllers := func(ctx context.Context) error {
		controllers, err := buildControllers(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("building controllers: %w", err)
		}
		ctx, stopAll := context.WithCancel(ctx)
		defer stopAll()
		var wg sync.WaitGroup
		var once sync.Once
		var stopped error
		for _, c := range controllers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := c.start(ctx)
				if ctx.Err() != nil {
					return
				}
				if err == nil {
					err = errors.New("it returned")
				}
				once.Do(func() { stopped = fmt.Errorf("controller %s stopped: %w", c.name, err); stopAll() })
			}()
		}
		go func() {
			_ = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(context.Context) (bool, error) {
				for _, c := range controllers {
					if !c.synced() {
						return false, nil
					}
				}
				return true, nil
			})
			if ctx.Err() == nil {
				ready.Store(nil)
				logger.Info("controllers running", "controllers", o.Controllers)
			}
		}()
		wg.Wait()
		return stopped
	}

	if !o.LeaderElect {
		return runControllers(ctx)
	}
	standby := standingBy
	ready.Store(&standby)
	electionClient, err := kcpkubernetesclientset.NewForConfig(electionConfig)
	if err != nil {
		return err
	}
	// The Lease carries the holder's version in a label, for `kubectl edge version`: the lock
	// writes it with every renewal it makes anyway, so it costs no request of its own.
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: leaseNamespace, Name: o.LeaderElectionID},
		Client:     electionClient.Cluster(o.ESPW).CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: o.Identity},
		Labels:     map[string]string{edgev1alpha1.LeaderVersionLabel: VersionLabelValue(version.Version)},
	}
	// Leading ends with the round: when the lease is lost, and when the controllers stop (the
	// lease is then given up, and the next round stands by for it again).
	leadCtx, endLeading := context.WithCancel(ctx)
	defer endLeading()
	var leadErr error
	leaderelection.RunOrDie(leadCtx, leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   15 * time.Second,
		RenewDeadline:   10 * time.Second,
		RetryPeriod:     2 * time.Second,
		ReleaseOnCancel: true,
		Name:            o.LeaderElectionID,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				logger.Info("leading", "identity", o.Identity)
				if err := runControllers(ctx); err != nil {
					leadErr = err
					endLeading()
				}
			},
			OnStoppedLeading: func() {
				logger.Info("stopped leading", "identity", o.Identity)
			},
		},
	})
	return leadErr
}

// leaseNamespace is the namespace of the ESPW that holds the leader election's Lease.
const leaseNamespace = "default"

// VersionLabelValue is v as a label value: at most 63 characters of letters, digits, '-', '_'
// and '.', beginning and ending with a letter or digit; any other character (a '+' of build
// metadata) becomes '_'. A git describe or release version is one already.
func VersionLabelValue(v string) string {
	b := []byte(v)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '_'
		}
	}
	out := strings.Trim(string(b[:min(len(b), 63)]), "-_.")
	if out == "" {
		return "unknown"
	}
	return out
}

// endOnFileChange calls end when the file's modification time or size changes; it looks every
// 5 s (a local stat, not a request to kcp).
func endOnFileChange(ctx context.Context, path string, end func()) {
	stamp := func() string {
		fi, err := os.Stat(path)
		if err != nil {
			return "missing"
		}
		return fi.ModTime().String() + "/" + fmt.Sprint(fi.Size())
	}
	first := stamp()
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if stamp() != first {
				klog.FromContext(ctx).Info("the kubeconfig changed", "path", path)
				end()
				return
			}
		}
	}
}

type runnable struct {
	name   string
	start  func(context.Context) error
	synced func() bool
}

// waitForESPW waits, with backoff and for as long as it takes, until the ESPW serves the
// APIExport edge.kcp.io, reporting why not through notReady.
func waitForESPW(ctx context.Context, kcp kcpclientset.ClusterInterface, espw logicalcluster.Path, notReady func(string)) error {
	logger := klog.FromContext(ctx)
	return retry(ctx, time.Second, 30*time.Second, func() bool {
		_, err := kcp.Cluster(espw).ApisV1alpha2().APIExports().Get(ctx, edgev1alpha1.EdgeAPIExportName, metav1.GetOptions{})
		if err != nil {
			why := fmt.Sprintf("waiting for the ESPW: cannot read the APIExport %s in %s (is kcp reachable, and has 'kubectl edge init --espw %s' run?): %v",
				edgev1alpha1.EdgeAPIExportName, espw, espw, err)
			logger.Error(nil, why)
			notReady(why)
			return false
		}
		return true
	})
}

// retry calls done with jittered exponential backoff, from initial up to limit between calls,
// until it returns true or ctx ends.
func retry(ctx context.Context, initial, limit time.Duration, done func() bool) error {
	delay := initial
	for {
		if done() {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait.Jitter(delay, 0.2)):
		}
		delay = min(2*delay, limit)
	}
}
