package cli

import (
	"context"
	"fmt"
	"io"
	goruntime "runtime"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/version"
	"github.com/kcp-dev/edge-mc/pkg/workspaces"
)

var leasesGVR = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}

type versionOptions struct {
	*Options
	client bool
	imw    string
	output string
}

// versionView is what `kubectl edge version` reports, and prints with -o.
type versionView struct {
	Client      clientVersion       `json:"client"`
	Controllers []controllerVersion `json:"controllers,omitempty"`
	Syncers     *syncerVersions     `json:"syncers,omitempty"`
}

type clientVersion struct {
	Version  string `json:"version"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

// controllerVersion is one leader election Lease of edge-controller-manager in the ESPW.
type controllerVersion struct {
	Lease     string `json:"lease"`
	Holder    string `json:"holder"`
	Version   string `json:"version"`
	RenewTime string `json:"renewTime,omitempty"`
}

// syncerVersions counts the SyncTargets of an inventory workspace by the version their syncer
// reports ("" until one reports).
type syncerVersions struct {
	Workspace string          `json:"workspace"`
	Versions  []syncerVersion `json:"versions"`
}

type syncerVersion struct {
	Version     string   `json:"version"`
	SyncTargets []string `json:"syncTargets"`
}

func newVersionCommand(o *Options) *cobra.Command {
	vo := &versionOptions{Options: o}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print kubectl edge's version, and the versions of the fleet's controllers and syncers",
		Long: `version prints kubectl-edge's own version, and, unless --client, what runs in the fleet:

  - edge-controller-manager: the version of the replica that leads, from the label
    ` + edgev1alpha1.LeaderVersionLabel + ` of its leader election Lease in the ESPW (none without
    leader election);
  - edge-syncer: the SyncTargets of the inventory workspace (--imw, by default the kubeconfig's
    current workspace), counted by the version their syncer reports.

With -o json or yaml it prints the same for scripts.`,
		Example: `  kubectl edge version --client
  kubectl edge version --imw root:imw
  kubectl edge version --imw root:imw -o json`,
		Args: positional(nil, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutputFormat(vo.output, "json", "yaml"); err != nil {
				return err
			}
			ctx, cancel := o.context(cmd)
			defer cancel()
			return vo.run(ctx)
		},
	}
	cmd.Flags().BoolVar(&vo.client, "client", false, "print only kubectl-edge's own version, asking kcp nothing")
	cmd.Flags().StringVar(&vo.imw, "imw", "", "the inventory workspace whose syncers to count (default: the kubeconfig's current workspace)")
	cmd.Flags().StringVarP(&vo.output, "output", "o", "", "output format: json or yaml (default: text)")
	return cmd
}

func (vo *versionOptions) run(ctx context.Context) error {
	view := versionView{Client: clientVersion{Version: version.Version, Go: goruntime.Version(), Platform: goruntime.GOOS + "/" + goruntime.GOARCH}}
	if vo.client {
		return vo.print(view)
	}
	var errs []string
	controllers, err := vo.controllers(ctx)
	if err != nil {
		errs = append(errs, err.Error())
	}
	view.Controllers = controllers
	syncers, err := vo.syncers(ctx)
	if err != nil {
		errs = append(errs, err.Error())
	}
	view.Syncers = syncers
	if err := vo.print(view); err != nil {
		return err
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// controllers reads edge-controller-manager's leader election Leases in the ESPW.
func (vo *versionOptions) controllers(ctx context.Context) ([]controllerVersion, error) {
	espwPath, err := vo.espwPath()
	if err != nil {
		return nil, err
	}
	cfg, err := vo.restConfig()
	if err != nil {
		return nil, err
	}
	base, _ := workspaces.Split(cfg)
	client, err := dynamic.NewForConfig(workspaces.ConfigFor(base, espwPath))
	if err != nil {
		return nil, err
	}
	list, err := client.Resource(leasesGVR).Namespace("default").List(ctx, metav1.ListOptions{LabelSelector: edgev1alpha1.LeaderVersionLabel})
	if err != nil {
		return nil, fmt.Errorf("reading edge-controller-manager's leader Lease in the ESPW %s: %w", espwPath, err)
	}
	out := []controllerVersion{}
	for _, u := range list.Items {
		lease := &coordinationv1.Lease{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, lease); err != nil {
			return nil, err
		}
		cv := controllerVersion{Lease: "default/" + lease.Name, Version: lease.Labels[edgev1alpha1.LeaderVersionLabel]}
		if lease.Spec.HolderIdentity != nil {
			cv.Holder = *lease.Spec.HolderIdentity
		}
		if lease.Spec.RenewTime != nil {
			cv.RenewTime = lease.Spec.RenewTime.UTC().Format(time.RFC3339)
		}
		out = append(out, cv)
	}
	return out, nil
}

// syncers counts the SyncTargets of the inventory workspace by their syncer's version.
func (vo *versionOptions) syncers(ctx context.Context) (*syncerVersions, error) {
	base, path, _, err := vo.imwPath(vo.imw)
	if err != nil {
		return nil, err
	}
	client, err := dynamic.NewForConfig(workspaces.ConfigFor(base, path))
	if err != nil {
		return nil, err
	}
	list, err := client.Resource(syncTargetsGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the SyncTargets of %s (is it an inventory workspace? --imw names one): %w", path, err)
	}
	byVersion := map[string][]string{}
	for _, u := range list.Items {
		st := &edgev1alpha1.SyncTarget{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, st); err != nil {
			return nil, err
		}
		byVersion[st.Status.SyncerVersion] = append(byVersion[st.Status.SyncerVersion], st.Name)
	}
	return &syncerVersions{Workspace: path.String(), Versions: sortVersions(byVersion)}, nil
}

// sortVersions orders the versions by how many SyncTargets have them, most first (then by
// version), each with its SyncTargets' names sorted.
func sortVersions(byVersion map[string][]string) []syncerVersion {
	out := []syncerVersion{}
	for v, names := range byVersion {
		sort.Strings(names)
		out = append(out, syncerVersion{Version: v, SyncTargets: names})
	}
	sort.Slice(out, func(i, j int) bool {
		if len(out[i].SyncTargets) != len(out[j].SyncTargets) {
			return len(out[i].SyncTargets) > len(out[j].SyncTargets)
		}
		return out[i].Version < out[j].Version
	})
	return out
}

func (vo *versionOptions) print(view versionView) error {
	if vo.output != "" {
		return printAs(vo.Out, vo.output, view)
	}
	printVersions(vo.Out, view, vo.client)
	return nil
}

// printVersions writes the text form: a line for the client, one per leader Lease, and one per
// syncer version (naming the SyncTargets of every version but the most common, up to five).
func printVersions(out io.Writer, view versionView, clientOnly bool) {
	fmt.Fprintf(out, "kubectl-edge: %s (%s %s)\n", view.Client.Version, view.Client.Go, view.Client.Platform)
	if clientOnly {
		return
	}
	if view.Controllers != nil || view.Syncers != nil {
		if len(view.Controllers) == 0 {
			fmt.Fprintln(out, "edge-controller-manager: no leader Lease in the ESPW (it is not running, or runs without leader election)")
		}
		for _, c := range view.Controllers {
			fmt.Fprintf(out, "edge-controller-manager: %s (leader %s, Lease %s", c.Version, c.Holder, c.Lease)
			if c.RenewTime != "" {
				fmt.Fprintf(out, ", renewed %s", c.RenewTime)
			}
			fmt.Fprintln(out, ")")
		}
	}
	if view.Syncers == nil {
		return
	}
	total := 0
	for _, v := range view.Syncers.Versions {
		total += len(v.SyncTargets)
	}
	if total == 0 {
		fmt.Fprintf(out, "edge-syncer: no SyncTargets in %s\n", view.Syncers.Workspace)
		return
	}
	fmt.Fprintf(out, "edge-syncer, the %d SyncTargets of %s:\n", total, view.Syncers.Workspace)
	for i, v := range view.Syncers.Versions {
		name := v.Version
		if name == "" {
			name = "not reported yet"
		}
		fmt.Fprintf(out, "  %s: %d", name, len(v.SyncTargets))
		if i > 0 || v.Version == "" {
			shown := v.SyncTargets[:min(len(v.SyncTargets), 5)]
			fmt.Fprintf(out, " (%s", strings.Join(shown, ", "))
			if len(v.SyncTargets) > len(shown) {
				fmt.Fprintf(out, ", and %d more", len(v.SyncTargets)-len(shown))
			}
			fmt.Fprint(out, ")")
		}
		fmt.Fprintln(out)
	}
}
