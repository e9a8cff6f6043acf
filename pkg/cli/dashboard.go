package cli

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/kcp-dev/logicalcluster/v3"
	"github.com/spf13/cobra"

	"github.com/kcp-dev/edge-mc/pkg/dashboard"
	"github.com/kcp-dev/edge-mc/pkg/workspaces"
)

func newDashboardCommand(o *Options) *cobra.Command {
	var wmws, imws []string
	port := 0
	cmd := &cobra.Command{
		Use:   "dashboard",
		Short: "Serve a live, read-only web page of the fleet on this machine (127.0.0.1), with your credentials",
		Long: `Serve a web page of the fleet on 127.0.0.1 and print its URL; it runs until interrupted (Ctrl-C).

The page reads kcp with your kubeconfig's credentials, and only reads (get, list and watch): it
shows what they may see and nothing more. Pages:
  - the fleet: the placements of each workload workspace (--wmw, or the kubeconfig's current
    workspace) with their destinations by state, rollouts in progress, and first the edge
    clusters whose syncer is not ready and the objects that failed;
  - a placement: summary, conditions, rollout, objects, and its destinations (filter, sort,
    pages), each with its state at the edge (this reads the mailboxes, as status --target does);
  - an edge cluster: its SyncTarget's and Locations' labels, heartbeat, syncer version, mailbox
    and shard, and the state of each object placed there, with the reason.

Pages update within a second or two of a change. When kcp cannot be read (unreachable, or your
credentials expired or refused) the page says so, and when it was last current, in place of the
data, and recovers by itself. Everything it serves is in this binary: it needs no internet.`,
		Example: `  kubectl edge dashboard
  kubectl edge dashboard --wmw root:wmw-a --wmw root:wmw-b --port 8001`,
		Args: positional(nil, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if port < 0 || port > 65535 {
				return fmt.Errorf("--port %d: give a port from 1 to 65535, or 0 for any free one", port)
			}
			cfg, err := o.restConfig()
			if err != nil {
				return err
			}
			base, current := workspaces.Split(cfg)
			c := dashboard.Config{Base: base}
			if len(wmws) == 0 {
				if current.Empty() {
					return fmt.Errorf("no --wmw given, and the kubeconfig's server %s names no workspace: give the workload workspace, e.g. --wmw root:wmw", cfg.Host)
				}
				wmws = []string{current.String()}
			}
			for _, flag := range []struct {
				name  string
				paths []string
				into  *[]logicalcluster.Path
			}{{"--wmw", wmws, &c.WorkloadWorkspaces}, {"--imw", imws, &c.InventoryWorkspaces}} {
				for _, s := range flag.paths {
					p, err := workspaces.ParsePath(s)
					if err != nil {
						return fmt.Errorf("%s: %w", flag.name, err)
					}
					*flag.into = append(*flag.into, p)
				}
			}
			server, err := dashboard.New(c)
			if err != nil {
				return err
			}
			l, err := dashboard.Listen(port)
			if err != nil {
				return err
			}
			ctx, cancel := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer cancel()
			fmt.Fprintf(o.Out, "The edge-mc dashboard is at http://%s/ (read-only, on this machine only; Ctrl-C stops it)\n", l.Addr())
			return server.Serve(ctx, l)
		},
	}
	cmd.Flags().StringArrayVar(&wmws, "wmw", nil, "a workload workspace whose placements to show; repeat for more (default: the kubeconfig's current workspace)")
	cmd.Flags().StringArrayVar(&imws, "imw", nil, "an inventory workspace whose edge clusters to show, beside those the placements reach; repeat for more")
	cmd.Flags().IntVar(&port, "port", 0, "the port on 127.0.0.1 to serve on (0: any free one)")
	return cmd
}
