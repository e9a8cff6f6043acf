// Command edge-controller-manager runs edge-mc's center controllers against kcp:
//
//	edge-controller-manager --kubeconfig <kubeconfig from kubectl edge init --controller-kubeconfig> [--espw root:espw] [--controllers mailbox,...]
//
// See `edge-controller-manager --help` and docs/operations.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/logging"
	"github.com/kcp-dev/edge-mc/pkg/mailbox"
	"github.com/kcp-dev/edge-mc/pkg/manager"
	placementtranslator "github.com/kcp-dev/edge-mc/pkg/placement-translator"
	"github.com/kcp-dev/edge-mc/pkg/version"
	"github.com/kcp-dev/edge-mc/pkg/workspaces"
)

func main() {
	fs := pflag.NewFlagSet("edge-controller-manager", pflag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of kcp: the one 'kubectl edge init --controller-kubeconfig' writes, with the identity made for edge-controller-manager (a kcp admin's works too)")
	kubeContext := fs.String("context", "", "context of the kubeconfig to use (default: its current context)")
	espw := fs.String("espw", edgev1alpha1.DefaultESPW, "path of the edge service provider workspace")
	controllers := fs.StringSlice("controllers", manager.AvailableControllers(), "controllers to run: mailbox, scheduler, placement-translator, status-summarizer, upsync, push-host")
	workers := fs.Int("workers", 8, "reconciles at once, per controller")
	httpAddress := fs.String("http-address", ":8090", "address serving /healthz, /readyz and /metrics")
	profilerAddress := fs.String("profiler-address", "", "address serving Go's profiles under /debug/pprof/ (none if empty); loopback preferably, e.g. 127.0.0.1:6060: a profile shows the process's work to whoever reaches it")
	leaderElect := fs.Bool("leader-elect", true, "elect a leader among replicas with a Lease in the ESPW, so that several replicas are safe")
	leaderElectionID := fs.String("leader-election-id", "edge-controller-manager", "name of the leader election Lease")
	hostname, _ := os.Hostname()
	identity := fs.String("identity", hostname+"-"+fmt.Sprint(os.Getpid()), "this replica's name in the leader election")
	heartbeatInterval := fs.Duration("heartbeat-interval", placementtranslator.DefaultHeartbeatInterval, "how often every syncer renews its heartbeat (told to the syncers in their SyncerConfigs): the fleet's heartbeat cost is one write per edge cluster per interval")
	heartbeatGrace := fs.Duration("heartbeat-grace-period", mailbox.DefaultHeartbeatGracePeriod, "how long after its last heartbeat a syncer counts as silent: its SyncTarget's SyncerReady turns Unknown and its destinations count as stale")
	webhookAddress := fs.String("webhook-address", "", "address serving the admission webhook that refuses StatusCollectors and HealthRules whose CEL does not compile (none if empty; port 0 picks one), e.g. 127.0.0.1:0 beside kcp, or :9443 in a pod; kcp must reach it at --webhook-url")
	webhookURL := fs.String("webhook-url", "", "https URL at which kcp calls the admission webhook (default: https://<--webhook-address>/validate-cel, 127.0.0.1 for an empty host); its host is the name in the webhook's certificate")
	showVersion := fs.Bool("version", false, "print the version and exit")
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	fs.AddGoFlagSet(klogFlags)
	if err := fs.Parse(os.Args[1:]); err != nil {
		if err == pflag.ErrHelp {
			return
		}
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(2)
	}
	if *showVersion {
		fmt.Println(version.String("edge-controller-manager"))
		return
	}
	lowered, err := logging.CapVerbosity(klogFlags)
	if err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(2)
	}
	if err := manager.ValidateControllers(*controllers); err != nil {
		fmt.Fprintf(os.Stderr, "error: --controllers: %v\n", err)
		os.Exit(2)
	}
	if *heartbeatInterval < time.Second || *heartbeatGrace <= *heartbeatInterval {
		fmt.Fprintf(os.Stderr, "error: --heartbeat-interval (%s) must be at least 1s and --heartbeat-grace-period (%s) longer than it (three intervals is usual)\n", *heartbeatInterval, *heartbeatGrace)
		os.Exit(2)
	}
	espwPath, err := workspaces.ParsePath(*espw)
	if err != nil {
		fmt.Fprintf(os.Stderr, "error: --espw: %v\n", err)
		os.Exit(2)
	}
	if *kubeconfig == "" {
		fmt.Fprintln(os.Stderr, "error: --kubeconfig (or KUBECONFIG) must name a kubeconfig of kcp: write one with 'kubectl edge init --controller-kubeconfig <file>'")
		os.Exit(2)
	}
	loadConfig := func() (*rest.Config, error) {
		return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
			&clientcmd.ClientConfigLoadingRules{ExplicitPath: *kubeconfig},
			&clientcmd.ConfigOverrides{CurrentContext: *kubeContext}).ClientConfig()
	}
	if _, err := loadConfig(); err != nil {
		fmt.Fprintf(os.Stderr, "error: loading %s: %v\n", *kubeconfig, err)
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = klog.NewContext(ctx, klog.Background().WithName("edge-controller-manager"))
	if lowered != "" {
		klog.FromContext(ctx).Info(lowered)
	}
	klog.FromContext(ctx).Info("starting", "version", version.Version, "espw", espwPath, "controllers", strings.Join(*controllers, ","), "leaderElect", *leaderElect)
	if err := manager.Run(ctx, manager.Options{
		LoadConfig:           loadConfig,
		KubeconfigPath:       *kubeconfig,
		ESPW:                 espwPath,
		Controllers:          *controllers,
		Workers:              *workers,
		HTTPAddress:          *httpAddress,
		ProfilerAddress:      *profilerAddress,
		LeaderElect:          *leaderElect,
		LeaderElectionID:     *leaderElectionID,
		Identity:             *identity,
		HeartbeatInterval:    *heartbeatInterval,
		HeartbeatGracePeriod: *heartbeatGrace,
		WebhookAddress:       *webhookAddress,
		WebhookURL:           *webhookURL,
	}); err != nil {
		klog.FromContext(ctx).Error(err, "exiting")
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}
