package cli

import (
	"github.com/spf13/cobra"

	"github.com/kcp-dev/edge-mc/pkg/espw"
)

func newInitCommand(o *Options) *cobra.Command {
	return &cobra.Command{
		Use:   "init",
		Short: "Create or update the edge service provider workspace with edge-mc's APIs",
		Long: `init makes sure the edge service provider workspace (--espw, default root:espw) exists and
serves the APIExports edge.kcp.io (the edge-mc API) and workloads.edge.kcp.io (Deployments,
Services, Jobs and the other common Kubernetes workload kinds, which kcp does not serve itself).
Run again, it changes nothing that is already in place.`,
		Example: `  kubectl edge init
  kubectl edge init --espw root:edge:espw --kubeconfig .kcp/admin.kubeconfig`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := o.context(cmd)
			defer cancel()
			path, err := o.espwPath()
			if err != nil {
				return err
			}
			kcp, _, err := o.kcpClient()
			if err != nil {
				return err
			}
			_, err = espw.Install(ctx, kcp, path, o.Out)
			return err
		},
	}
}
