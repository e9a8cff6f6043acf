// Package cli implements kubectl-edge, the kubectl plugin of edge-mc (`kubectl edge ...`). Each
// verb is idempotent: run again, it changes nothing that is already as asked.
package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/version"
	"github.com/kcp-dev/edge-mc/pkg/workspaces"
)

// Options are the flags every verb shares: kubectl's connection flags (--kubeconfig, --context,
// --server, ...) and the ESPW path.
type Options struct {
	Config  *genericclioptions.ConfigFlags
	ESPW    string
	Timeout time.Duration
	Out     io.Writer
	ErrOut  io.Writer
}

// NewCommand returns the kubectl-edge command tree.
func NewCommand(streams genericclioptions.IOStreams) *cobra.Command {
	o := &Options{
		Config: genericclioptions.NewConfigFlags(true),
		Out:    streams.Out,
		ErrOut: streams.ErrOut,
	}
	cmd := &cobra.Command{
		Use: "edge",
		Annotations: map[string]string{
			cobra.CommandDisplayNameAnnotation: "kubectl edge",
		},
		Short: "Manage edge-mc: the edge service provider workspace, inventory and workload workspaces",
		Long: `kubectl edge manages edge-mc, a kcp-based service that places workloads on fleets of edge
Kubernetes clusters. It talks to kcp with your kubeconfig, as kubectl does (--kubeconfig, --context).`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if o.Timeout <= 0 {
				return fmt.Errorf("--timeout %s: give a positive duration, such as 2m (the default is %s)", o.Timeout, workspaces.DefaultTimeout)
			}
			if f := cmd.Flags().Lookup("namespace"); f != nil && f.Changed {
				fmt.Fprintf(o.ErrOut, "warning: -n/--namespace %s has no effect: the objects kubectl edge works on (EdgePlacements, Locations, SyncTargets, workspaces) are cluster-scoped; --wmw, --imw and --espw say where\n", f.Value)
			}
			return nil
		},
	}
	// cobra prints the template for --version. The flag is declared here so that cobra does not
	// add -v for it: in kubectl, -v is the log verbosity.
	cmd.Version = version.Version
	cmd.SetVersionTemplate(version.String("kubectl-edge") + "\n")
	cmd.Flags().Bool("version", false, "print the version and exit (kubectl edge version also shows the fleet's)")
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)
	o.Config.AddFlags(cmd.PersistentFlags())
	// kubectl's -n means nothing to kubectl edge: kept, so that a habit does not fail, but out of
	// the help, and a warning if given.
	_ = cmd.PersistentFlags().MarkHidden("namespace")
	cmd.PersistentFlags().StringVar(&o.ESPW, "espw", edgev1alpha1.DefaultESPW, "path of the edge service provider workspace")
	cmd.PersistentFlags().DurationVar(&o.Timeout, "timeout", workspaces.DefaultTimeout, "how long to wait for workspaces, bindings and mailboxes to become ready")

	cmd.AddCommand(newInitCommand(o), newEnsureCommand(o), newRemoveCommand(o), newPrepForSyncerCommand(o), newStatusCommand(o), newRolloutCommand(o), newDiffCommand(o), newRotateKeyCommand(o),
		newDashboardCommand(o), newVersionCommand(o), newCompletionCommand(cmd))
	refuseUnknownVerbs(cmd)
	o.completeWorkspaceFlags(cmd)
	return cmd
}

// docsURL is where kubectl edge's help and errors send a reader: the docs of the main branch.
const docsURL = "https://github.com/kcp-dev/edge-mc/blob/main/docs/"

// Client-side rate limit of kubectl-edge's requests. client-go's default (5 a second, bursts of
// 10) made 'kubectl edge init' wait 6 of its 10 s on itself, writing the ESPW's twenty-odd
// schemas; kcp's own priority and fairness protects the server.
const (
	clientQPS   = 50
	clientBurst = 100
)

// restConfig loads the kubeconfig flags, with kubectl-edge's rate limit (a kubeconfig carries
// none).
func (o *Options) restConfig() (*rest.Config, error) {
	cfg, err := o.Config.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	if cfg.QPS == 0 && cfg.RateLimiter == nil {
		cfg.QPS, cfg.Burst = clientQPS, clientBurst
	}
	return cfg, nil
}

// kcpClient returns a cluster-aware kcp client built from the kubeconfig flags.
func (o *Options) kcpClient() (kcpclientset.ClusterInterface, *rest.Config, error) {
	cfg, err := o.restConfig()
	if err != nil {
		return nil, nil, err
	}
	base, _ := workspaces.Split(cfg)
	client, err := kcpclientset.NewForConfig(base)
	if err != nil {
		return nil, nil, err
	}
	return client, base, nil
}

func (o *Options) espwPath() (logicalcluster.Path, error) {
	p, err := workspaces.ParsePath(o.ESPW)
	if err != nil {
		return p, fmt.Errorf("--espw: %w", err)
	}
	return p, nil
}

func (o *Options) context(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	return context.WithCancel(cmd.Context())
}
