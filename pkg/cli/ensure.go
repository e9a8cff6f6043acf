package cli

import (
	"context"
	"fmt"
	"strings"

	kcpkubernetesclientset "github.com/kcp-dev/client-go/kubernetes"
	"github.com/kcp-dev/logicalcluster/v3"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/rest"

	apisv1alpha2 "github.com/kcp-dev/sdk/apis/apis/v1alpha2"
	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/espw"
	"github.com/kcp-dev/edge-mc/pkg/workspaces"
)

func newEnsureCommand(o *Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ensure",
		Short: "Make sure a workspace or an inventory object exists as described",
	}
	cmd.AddCommand(
		newEnsureWorkspaceCommand(o, "imw", "inventory management workspace",
			"binds edge.kcp.io, so that it can hold Locations and SyncTargets",
			edgev1alpha1.EdgeAPIExportName),
		newEnsureWorkspaceCommand(o, "wmw", "workload management workspace",
			"binds edge.kcp.io and workloads.edge.kcp.io, so that it can hold EdgePlacements, Customizers\nand workload objects such as Deployments and Services, accepting the permission claims of\nedge.kcp.io, which let edge-mc's controllers read the workload objects and write back what\ncomes from the edge; and it lets edge-controller-manager's identity read and update (never\ncreate or delete) the objects of custom kinds, which no claim can cover\n(ClusterRole and ClusterRoleBinding "+espw.ControllerRole+")",
			edgev1alpha1.WorkloadsAPIExportName, edgev1alpha1.EdgeAPIExportName),
		newEnsureLocationCommand(o),
	)
	return cmd
}

// newEnsureWorkspaceCommand builds `ensure imw` and `ensure wmw`: a workspace that binds the
// given APIExports of the ESPW, each through an APIBinding named after the export.
func newEnsureWorkspaceCommand(o *Options, verb, what, does string, exportNames ...string) *cobra.Command {
	return &cobra.Command{
		Use:   verb + " <workspace path>",
		Short: "Make sure " + article(what) + " " + what + " exists",
		Long: fmt.Sprintf(`ensure %s makes sure the workspace at the given path (e.g. root:%s) exists, creating missing
parent workspaces, and %s,
from the edge service provider workspace (--espw). Run "kubectl edge init" first.`, verb, verb, does),
		Example: fmt.Sprintf("  kubectl edge ensure %s root:%s", verb, verb),
		Args:    positional([]string{"<workspace path>"}, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := o.context(cmd)
			defer cancel()
			path, err := workspaces.ParsePath(args[0])
			if err != nil {
				return err
			}
			espwPath, err := o.espwPath()
			if err != nil {
				return err
			}
			kcp, base, err := o.kcpClient()
			if err != nil {
				return err
			}
			if err := checkESPW(ctx, kcp, espwPath, exportNames); err != nil {
				return err
			}
			ensurer := &workspaces.Ensurer{KCP: kcp, Out: o.Out, Timeout: o.Timeout}
			if _, err := ensurer.Workspace(ctx, path); err != nil {
				return err
			}
			// The bindings are made first and waited for together (see workspaces.Bindings).
			var reqs []workspaces.BindingRequest
			for _, name := range exportNames {
				// A workload workspace lets the placement translator read its workload objects (and
				// the up-sync return path bring objects back into it) by accepting the permission claims of edge.kcp.io; an
				// inventory workspace rejects them.
				var claims []apisv1alpha2.AcceptablePermissionClaim
				if name == edgev1alpha1.EdgeAPIExportName {
					export, err := kcp.Cluster(espwPath).ApisV1alpha2().APIExports().Get(ctx, name, metav1.GetOptions{})
					if err != nil {
						return fmt.Errorf("reading APIExport %s in %s: %w", name, espwPath, err)
					}
					claims = espw.RejectAll(export.Spec.PermissionClaims)
					if verb == "wmw" {
						claims = espw.AcceptAll(export.Spec.PermissionClaims)
					}
				}
				reqs = append(reqs, workspaces.BindingRequest{Name: name, ExportPath: espwPath, ExportName: name, Claims: claims})
			}
			if _, err := ensurer.Bindings(ctx, path, reqs...); err != nil {
				return err
			}
			if verb == "wmw" {
				if err := grantController(ctx, kcp, base, espwPath, path); err != nil {
					return err
				}
			}
			fmt.Fprintf(o.Out, "%s %s is ready\n", what, path)
			return nil
		},
	}
}

// grantController gives edge-controller-manager's identity, the kcp user that 'kubectl edge init'
// recorded on the APIExport edge.kcp.io (which whoever may bind it may read), its rights in the
// workload workspace at path (espw.ControllerWMWRules): the objects of custom kinds are reachable
// through no virtual workspace.
func grantController(ctx context.Context, kcp kcpclientset.ClusterInterface, base *rest.Config, espwPath, path logicalcluster.Path) error {
	export, err := kcp.Cluster(espwPath).ApisV1alpha2().APIExports().Get(ctx, edgev1alpha1.EdgeAPIExportName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading APIExport %s in %s: %w", edgev1alpha1.EdgeAPIExportName, espwPath, err)
	}
	kube, err := kcpkubernetesclientset.NewForConfig(base)
	if err != nil {
		return err
	}
	res := &espw.Result{}
	if err := espw.EnsureClusterRole(ctx, kube, path, espw.ControllerRole, espw.ControllerWMWRules(), res); err != nil {
		return fmt.Errorf("granting edge-controller-manager its rights in %s: %w", path, err)
	}
	user := espw.ControllerUserOf(export)
	if err := espw.EnsureClusterRoleBinding(ctx, kube, path, espw.ControllerRole, espw.ControllerRole,
		rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}, res); err != nil {
		return fmt.Errorf("granting edge-controller-manager its rights in %s: %w", path, err)
	}
	return nil
}

// article is "an" before a vowel, "a" otherwise.
func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}
