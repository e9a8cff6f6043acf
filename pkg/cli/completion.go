package cli

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kcp-dev/edge-mc/pkg/workspaces"
)

// workspacesGVR are kcp's workspaces, which completion lists for workspace paths.
var workspacesGVR = schema.GroupVersionResource{Group: "tenancy.kcp.io", Version: "v1alpha1", Resource: "workspaces"}

// completionTimeout bounds the requests a shell completion makes: a slow or unreachable kcp
// must not hang the user's shell.
const completionTimeout = 3 * time.Second

// pluginCompletionScript is the executable kubectl (v1.26 and later) runs to complete a
// plugin's arguments: named kubectl_complete-edge and put on the PATH, it hands the words to
// kubectl-edge's own completion.
const pluginCompletionScript = `#!/usr/bin/env sh
# kubectl runs this to complete "kubectl edge ..." (kubectl v1.26 and later): put it on the PATH
# as kubectl_complete-edge, executable.
exec kubectl-edge __complete "$@"
`

// newCompletionCommand replaces cobra's default completion command: the same bash, zsh, fish and
// powershell scripts for kubectl-edge run directly, and "plugin", the helper through which
// kubectl itself completes "kubectl edge ...".
func newCompletionCommand(root *cobra.Command) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell|plugin",
		Short: "Print a shell completion script: for kubectl edge (plugin) or for kubectl-edge run directly",
		Long: `completion prints a script that completes kubectl edge's verbs, flags and arguments, and the
names it finds in kcp: EdgePlacements of the workload workspace, SyncTargets of the inventory
workspace, and workspace paths for --wmw, --imw and --espw (looked up with your kubeconfig, for
at most 3 s).

Typed as "kubectl edge ...", completion goes through kubectl (v1.26 and later), which runs an
executable named kubectl_complete-edge from the PATH: "completion plugin" prints it. Run directly
as kubectl-edge, the bash, zsh, fish and powershell scripts complete it as other cobra commands.`,
		Example: `  # kubectl edge <TAB> through kubectl's own completion
  kubectl edge completion plugin > ~/.local/bin/kubectl_complete-edge
  chmod +x ~/.local/bin/kubectl_complete-edge

  # kubectl-edge <TAB>, in bash
  source <(kubectl edge completion bash)`,
		ValidArgs: []string{"bash", "zsh", "fish", "powershell", "plugin"},
		Args:      positional([]string{"bash|zsh|fish|powershell|plugin"}, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			// The scripts name the program the shell runs: kubectl-edge.
			name := root.Use
			root.Use = "kubectl-edge"
			defer func() { root.Use = name }()
			switch args[0] {
			case "plugin":
				_, err := fmt.Fprint(out, pluginCompletionScript)
				return err
			case "bash":
				return root.GenBashCompletionV2(out, true)
			case "zsh":
				return root.GenZshCompletion(out)
			case "fish":
				return root.GenFishCompletion(out, true)
			case "powershell":
				return root.GenPowerShellCompletionWithDesc(out)
			}
			return fmt.Errorf("completion %q: the shells are bash, zsh, fish and powershell, and plugin is kubectl's helper", args[0])
		},
	}
	return cmd
}

// completeNames lists the names of the objects of resource in the workspace path, those that
// begin with prefix.
func (o *Options) completeNames(ctx context.Context, path logicalcluster.Path, resource schema.GroupVersionResource, prefix string) ([]string, cobra.ShellCompDirective) {
	cfg, err := o.restConfig()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	base, current := workspaces.Split(cfg)
	if path.Empty() {
		path = current
	}
	if path.Empty() {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	client, err := dynamic.NewForConfig(workspaces.ConfigFor(base, path))
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	ctx, cancel := context.WithTimeout(ctx, completionTimeout)
	defer cancel()
	list, err := client.Resource(resource).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	var names []string
	for _, item := range list.Items {
		if strings.HasPrefix(item.GetName(), prefix) {
			names = append(names, item.GetName())
		}
	}
	sort.Strings(names)
	return names, cobra.ShellCompDirectiveNoFileComp
}

// flagPath is the workspace path a flag names, or the empty path (the kubeconfig's current
// workspace) when the flag is not given or not a path.
func flagPath(value string) logicalcluster.Path {
	if value == "" {
		return logicalcluster.Path{}
	}
	p, err := workspaces.ParsePath(value)
	if err != nil {
		return logicalcluster.Path{}
	}
	return p
}

// completeWorkspacePath completes a workspace path one level at a time: "root:te" lists the
// workspaces of root that begin with "te".
func (o *Options) completeWorkspacePath(ctx context.Context, toComplete string) ([]string, cobra.ShellCompDirective) {
	i := strings.LastIndex(toComplete, ":")
	if i < 0 {
		if strings.HasPrefix("root", toComplete) {
			return []string{"root:"}, cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveNoFileComp
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	parent := logicalcluster.NewPath(toComplete[:i])
	if !parent.IsValid() {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	names, directive := o.completeNames(ctx, parent, workspacesGVR, toComplete[i+1:])
	for j, n := range names {
		names[j] = parent.Join(n).String()
	}
	return names, directive
}

// placementArg completes a placement argument (the first) from the workload workspace of wmw.
func (o *Options) placementArg(wmw *string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return o.completeNames(cmd.Context(), flagPath(*wmw), placementsGVR, toComplete)
	}
}

// syncTargetArg completes a SyncTarget argument (the first) from the inventory workspace of imw.
func (o *Options) syncTargetArg(imw *string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return o.completeNames(cmd.Context(), flagPath(*imw), syncTargetsGVR, toComplete)
	}
}

// completeWorkspaceFlags has every workspace flag of the tree (--wmw, --imw, --espw) complete
// workspace paths.
func (o *Options) completeWorkspaceFlags(root *cobra.Command) {
	complete := func(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		return o.completeWorkspacePath(cmd.Context(), toComplete)
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, name := range []string{"wmw", "imw", "espw"} {
			if f := c.LocalNonPersistentFlags().Lookup(name); f != nil {
				_ = c.RegisterFlagCompletionFunc(name, complete)
			}
			if f := c.PersistentFlags().Lookup(name); f != nil {
				_ = c.RegisterFlagCompletionFunc(name, complete)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}
