// Command edge-syncer is edge-mc's agent in an edge cluster: it opens the connection to its
// mailbox workspace in kcp and keeps the edge cluster in step with it (see package syncer):
//
//	edge-syncer --from-kubeconfig <mailbox kubeconfig> [--to-kubeconfig <edge kubeconfig>] \
//	  --sync-target-name N --sync-target-uid U [--qps Q --burst B] [--heartbeat-interval D]
//
// kubectl edge prep-for-syncer prints the YAML that runs it in an edge cluster, or with
// --kubeconfig-only the mailbox kubeconfig for running it as a local process. See
// docs/syncer.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"  // client-go request metrics
	_ "k8s.io/component-base/metrics/prometheus/workqueue" // work queue metrics
	"k8s.io/klog/v2"

	"github.com/kcp-dev/edge-mc/pkg/health"
	"github.com/kcp-dev/edge-mc/pkg/logging"
	"github.com/kcp-dev/edge-mc/pkg/syncer"
	"github.com/kcp-dev/edge-mc/pkg/transport"
	"github.com/kcp-dev/edge-mc/pkg/version"
)

func main() {
	fs := pflag.NewFlagSet("edge-syncer", pflag.ContinueOnError)
	from := fs.String("from-kubeconfig", "", "kubeconfig of the mailbox workspace (from kubectl edge prep-for-syncer)")
	to := fs.String("to-kubeconfig", "", "kubeconfig of the edge cluster (default: the in-cluster configuration)")
	name := fs.String("sync-target-name", "", "name of the SyncTarget this syncer serves")
	uid := fs.String("sync-target-uid", "", "UID of the SyncTarget this syncer serves")
	qps := fs.Float32("qps", syncer.DefaultMailboxQPS, "requests per second to the mailbox (the center), sustained")
	burst := fs.Int("burst", syncer.DefaultMailboxBurst, "requests to the mailbox in a burst")
	edgeQPS := fs.Float32("edge-qps", syncer.DefaultEdgeQPS, "requests per second to the edge cluster, sustained")
	edgeBurst := fs.Int("edge-burst", syncer.DefaultEdgeBurst, "requests to the edge cluster in a burst")
	workers := fs.Int("workers", syncer.DefaultWorkers, "objects applied at once")
	statusCoalesce := fs.Duration("status-coalesce", syncer.DefaultStatusCoalesce, "changes of one assemblage's reported state within this long make one status write to the mailbox")
	heartbeatInterval := fs.Duration("heartbeat-interval", 0, "how often to renew the heartbeat Lease, overriding the fleet's interval in the SyncerConfig (default: the SyncerConfig's, else 30s)")
	httpAddress := fs.String("http-address", ":8080", "address serving /healthz, /readyz and /metrics")
	hostname, _ := os.Hostname()
	identity := fs.String("identity", hostname, "this syncer's name in its heartbeat Lease")
	keyNamespace := fs.String("key-namespace", defaultKeyNamespace(), "namespace of the edge cluster holding the syncer's key pair for sealed objects (default: $POD_NAMESPACE, else "+transport.DefaultEdgeSyncerNamespace+")")
	showVersion := fs.Bool("version", false, "print the version and exit")
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	fs.AddGoFlagSet(klogFlags)
	if err := fs.Parse(os.Args[1:]); err != nil {
		if err == pflag.ErrHelp {
			return
		}
		fail("%v", err)
	}
	if *showVersion {
		fmt.Println(version.String("edge-syncer"))
		return
	}
	// The syncer reports its version in its SyncerConfig's status.syncerVersion.
	syncer.Version = version.Version
	lowered, err := logging.CapVerbosity(klogFlags)
	if err != nil {
		fail("%v", err)
	}
	switch {
	case *from == "":
		fail("--from-kubeconfig must name the mailbox kubeconfig (kubectl edge prep-for-syncer --kubeconfig-only prints it)")
	case *name == "" || *uid == "":
		fail("--sync-target-name and --sync-target-uid are required (kubectl edge prep-for-syncer prints them)")
	case *heartbeatInterval < 0 || (*heartbeatInterval > 0 && *heartbeatInterval < time.Second):
		fail("--heartbeat-interval %s: give at least 1s, or leave it out to take the fleet's interval from the SyncerConfig", *heartbeatInterval)
	}
	mailboxCfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: *from}, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		fail("--from-kubeconfig %s: %v", *from, err)
	}
	mailboxCfg.QPS, mailboxCfg.Burst = *qps, *burst
	var edgeCfg *rest.Config
	if *to == "" {
		if edgeCfg, err = rest.InClusterConfig(); err != nil {
			fail("not running in a cluster, so --to-kubeconfig must name the edge cluster's kubeconfig: %v", err)
		}
	} else if edgeCfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: *to}, &clientcmd.ConfigOverrides{}).ClientConfig(); err != nil {
		fail("--to-kubeconfig %s: %v", *to, err)
	}
	edgeCfg.QPS, edgeCfg.Burst = *edgeQPS, *edgeBurst

	s, err := syncer.New(syncer.Config{
		Mailbox: mailboxCfg, Edge: edgeCfg,
		SyncTargetName: *name, SyncTargetUID: *uid, Identity: *identity,
		Workers: *workers, StatusCoalesce: *statusCoalesce, HeartbeatInterval: *heartbeatInterval,
		KeyNamespace: *keyNamespace,
	})
	if err != nil {
		fail("%v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := klog.Background().WithName("edge-syncer")
	ctx = klog.NewContext(ctx, logger)
	if _, err := health.Serve(*httpAddress, s.Ready); err != nil {
		fail("%v", err)
	}
	if lowered != "" {
		logger.Info(lowered)
	}
	logger.Info("starting", "version", version.Version, "syncTarget", *name, "uid", *uid, "mailbox", mailboxCfg.Host, "edge", edgeCfg.Host)
	if err := s.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		logger.Error(err, "stopped")
		os.Exit(1)
	}
	logger.Info("stopped")
}

// defaultKeyNamespace is the namespace the syncer's pod runs in ($POD_NAMESPACE, which
// kubectl edge prep-for-syncer's Deployment sets), else transport.DefaultEdgeSyncerNamespace.
func defaultKeyNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	return transport.DefaultEdgeSyncerNamespace
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "error: "+format+"\n", args...)
	os.Exit(2)
}
