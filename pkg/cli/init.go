package cli

import (
	"fmt"
	"os"

	kcpkubernetesclientset "github.com/kcp-dev/client-go/kubernetes"
	"github.com/spf13/cobra"

	"github.com/kcp-dev/edge-mc/pkg/espw"
)

func newInitCommand(o *Options) *cobra.Command {
	var controllerUser, controllerKubeconfig, controllerTokenFile string
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Create or update the edge service provider workspace with edge-mc's APIs and the controllers' rights",
		Long: `init makes sure the edge service provider workspace (--espw, default root:espw) exists and
serves the APIExports edge.kcp.io (the edge-mc API) and workloads.edge.kcp.io (Deployments,
Services, Jobs and the other common Kubernetes workload kinds, which kcp does not serve itself).

edge.kcp.io gets a maximal permission policy: wherever it is bound, everyone may use
EdgePlacements and Customizers, but only inventory admins (the group edge-mc:inventory-admins,
and kcp's admins) may make SyncTargets and Locations, and so mailboxes. The grants are the
ClusterRoleBindings edge-mc:edge-api:* in the ESPW; subjects you add to them are kept
(` + docsURL + `operations.md#who-may-make-synctargets-and-locations).

It also gives edge-controller-manager's identity, the kcp user --controller-user (default
edge-controller-manager), only the rights the controllers need in the ESPW: the ClusterRole and
ClusterRoleBinding edge-mc:controller-manager (` + docsURL + `operations.md#edge-controller-managers-identity
lists the rights and why).
"kubectl edge ensure wmw" grants the user what it needs in each workload workspace; kcp makes it
the admin of the mailboxes it creates. The user is one that kcp's authentication knows (a client
certificate of kcp's client CA, a token of kcp's --token-auth-file, an OIDC user), not a
ServiceAccount: the same page says why. With --controller-kubeconfig and
--controller-token-file (the user's bearer token), init writes a kubeconfig for
edge-controller-manager's --kubeconfig; it holds a credential: keep it secret.

Run again, it changes nothing that is already in place.`,
		Example: `  kubectl edge init
  kubectl edge init --controller-token-file ecm.token --controller-kubeconfig ecm.kubeconfig
  edge-controller-manager --kubeconfig ecm.kubeconfig
  kubectl edge init --espw root:edge:espw --controller-user edge-mc-controllers --kubeconfig .kcp/admin.kubeconfig`,
		Args: positional(nil, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := o.context(cmd)
			defer cancel()
			path, err := o.espwPath()
			if err != nil {
				return err
			}
			if (controllerKubeconfig == "") != (controllerTokenFile == "") {
				return fmt.Errorf("--controller-kubeconfig and --controller-token-file go together: the kubeconfig holds the token that the file holds")
			}
			var token []byte
			if controllerTokenFile != "" {
				if token, err = os.ReadFile(controllerTokenFile); err != nil {
					return fmt.Errorf("--controller-token-file: %w", err)
				}
				if len(token) == 0 {
					return fmt.Errorf("--controller-token-file: %s is empty", controllerTokenFile)
				}
			}
			kcp, base, err := o.kcpClient()
			if err != nil {
				return err
			}
			kube, err := kcpkubernetesclientset.NewForConfig(base)
			if err != nil {
				return err
			}
			res, err := espw.Install(ctx, kcp, kube, path, o.Out)
			if err != nil {
				return err
			}
			if err := espw.EnsureControllerRights(ctx, kcp, kube, path, controllerUser, res); err != nil {
				return fmt.Errorf("granting edge-controller-manager's user %s its rights: %w", controllerUser, err)
			}
			fmt.Fprintf(o.Out, "edge-controller-manager runs as the kcp user %s (ClusterRoleBinding %s in %s)\n", controllerUser, espw.ControllerRole, path)
			if controllerKubeconfig != "" {
				if err := espw.WriteControllerKubeconfig(controllerKubeconfig, base, path, controllerUser, token); err != nil {
					return err
				}
				fmt.Fprintf(o.Out, "wrote the kubeconfig of edge-controller-manager to %s\n", controllerKubeconfig)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&controllerUser, "controller-user", espw.DefaultControllerUser, "the kcp user that edge-controller-manager runs as, given the controllers' rights")
	cmd.Flags().StringVar(&controllerTokenFile, "controller-token-file", "", "a file holding the bearer token of --controller-user, for --controller-kubeconfig")
	cmd.Flags().StringVar(&controllerKubeconfig, "controller-kubeconfig", "", "write to this file a kubeconfig for edge-controller-manager's --kubeconfig: kcp's address and CA from your kubeconfig, the token of --controller-token-file")
	return cmd
}
