package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"
	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/fleetview"
	"github.com/kcp-dev/edge-mc/pkg/transport"
	"github.com/kcp-dev/edge-mc/pkg/workspaces"
)

var placementsGVR = edgev1alpha1.SchemeGroupVersion.WithResource("edgeplacements")

// statusOptions are the flags of kubectl edge status.
type statusOptions struct {
	*Options
	wmw     string
	watch   bool
	output  string
	target  string
	imw     string
	collect string
}

func newStatusCommand(o *Options) *cobra.Command {
	so := &statusOptions{Options: o}
	cmd := &cobra.Command{
		Use:   "status [placement]",
		Short: "Show where the workload runs: per EdgePlacement, or per edge cluster with --target",
		Long: `Show the state of the fleet as the status summarizer reports it.

Without --target: for each EdgePlacement of the workload workspace (the current workspace of your
kubeconfig, or --wmw), its destinations, how many are ready, how many drifted (an object edited
or deleted at the edge since the current version was applied there), its state, and the broken
(destination, object) entries. Naming one placement also lists its objects.

With --target <synctarget> --imw <path>: everything placed on that edge cluster, read from the
assemblages in its mailbox: per placement the version delivered and the version applied, and each
object's state at the edge, with the syncer's version, then the latest drift the syncer found
there: the object, the fields changed (never their values), whether it was repaired, how often
and when (this needs read access to the mailbox workspaces under the ESPW).

With PLACEMENT --collect <collector>: the results of that StatusCollector (one the placement
names in spec.statusCollectors), combined over the placement's destinations: a table of its
groups (groupBy's values, then combine's) or rows (destination, object, then select's values),
with how many destinations reported, how many objects matched, and the run-time errors counted
at the edges, with one example.`,
		Example: `  kubectl edge status
  kubectl edge status web -w
  kubectl edge status --wmw root:wmw-a -o yaml
  kubectl edge status --target edge-1 --imw root:imw
  kubectl edge status web --collect available-replicas -o json`,
		Args:              positional(nil, 1),
		ValidArgsFunction: o.placementArg(&so.wmw),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutputFormat(so.output, "json", "yaml", "wide", "name"); err != nil {
				return err
			}
			if so.collect != "" && (len(args) != 1 || so.target != "" || so.output == "wide" || so.output == "name") {
				return fmt.Errorf("--collect shows one collector of one placement: kubectl edge status PLACEMENT --collect NAME [-o json|yaml]")
			}
			if so.target != "" && (so.output == "wide" || so.output == "name") {
				return fmt.Errorf("-o %s with --target: the formats of --target are json and yaml (or none, for the table)", so.output)
			}
			ctx, cancel := o.context(cmd)
			defer cancel()
			if so.target != "" {
				if len(args) > 0 || so.wmw != "" {
					return fmt.Errorf("--target shows one edge cluster: give no placement and no --wmw with it")
				}
				return so.runTarget(ctx)
			}
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			return so.runPlacements(ctx, name)
		},
	}
	cmd.Flags().StringVar(&so.wmw, "wmw", "", "path of the workload workspace (default: the kubeconfig's current workspace)")
	cmd.Flags().BoolVarP(&so.watch, "watch", "w", false, "keep watching and print again on every change")
	cmd.Flags().StringVarP(&so.output, "output", "o", "", "output format: json, yaml, wide (the table with LOCATIONS, OBJECTS, REVISION and SUMMARIZED) or name (default: a table)")
	cmd.Flags().StringVar(&so.target, "target", "", "show the objects placed on this SyncTarget (of --imw)")
	cmd.Flags().StringVar(&so.collect, "collect", "", "show the results of this StatusCollector of the placement, combined over its destinations")
	cmd.Flags().StringVar(&so.imw, "imw", "", "path of the SyncTarget's inventory workspace, with --target (default: the kubeconfig's current workspace)")
	_ = cmd.RegisterFlagCompletionFunc("target", func(c *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		return o.completeNames(c.Context(), flagPath(so.imw), syncTargetsGVR, toComplete)
	})
	return cmd
}

// workloadClient reaches the workload workspace: --wmw, or the kubeconfig's own.
func (so *statusOptions) workloadClient() (dynamic.ResourceInterface, string, error) {
	cfg, err := so.restConfig()
	if err != nil {
		return nil, "", err
	}
	base, current := workspaces.Split(cfg)
	where := current.String()
	if so.wmw != "" {
		path, err := workspaces.ParsePath(so.wmw)
		if err != nil {
			return nil, "", fmt.Errorf("--wmw: %w", err)
		}
		cfg, where = workspaces.ConfigFor(base, path), path.String()
	}
	if where == "" {
		where = cfg.Host
	}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, "", err
	}
	return client.Resource(placementsGVR), where, nil
}

func (so *statusOptions) runPlacements(ctx context.Context, name string) error {
	client, where, err := so.workloadClient()
	if err != nil {
		return err
	}
	list := func() ([]edgev1alpha1.EdgePlacement, string, error) {
		var items []unstructured.Unstructured
		rv := ""
		if name != "" {
			u, err := client.Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil, "", fmt.Errorf("there is no EdgePlacement %q in %s", name, where)
			}
			if err != nil {
				return nil, "", placementsError(err, where)
			}
			items, rv = []unstructured.Unstructured{*u}, u.GetResourceVersion()
		} else {
			l, err := client.List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, "", placementsError(err, where)
			}
			items, rv = l.Items, l.GetResourceVersion()
		}
		out := make([]edgev1alpha1.EdgePlacement, 0, len(items))
		for _, u := range items {
			p := edgev1alpha1.EdgePlacement{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p); err != nil {
				return nil, "", fmt.Errorf("reading EdgePlacement %s: %w", u.GetName(), err)
			}
			out = append(out, p)
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
		return out, rv, nil
	}
	show := func() (string, error) {
		items, rv, err := list()
		if err != nil {
			return "", err
		}
		return rv, so.printPlacements(so.Out, where, items, name != "")
	}
	rv, err := show()
	if err != nil || !so.watch {
		return err
	}
	return watchAndShow(ctx, so.Out, func(rv string) (<-chan struct{}, error) {
		opts := metav1.ListOptions{ResourceVersion: rv}
		if name != "" {
			opts.FieldSelector = "metadata.name=" + name
		}
		w, err := client.Watch(ctx, opts)
		if err != nil {
			return nil, err
		}
		changed := make(chan struct{})
		go func() {
			defer close(changed)
			defer w.Stop()
			for range w.ResultChan() {
				select {
				case changed <- struct{}{}:
				case <-ctx.Done():
					return
				}
			}
		}()
		return changed, nil
	}, rv, show)
}

// watchAndShow shows again on every change the watch reports, at most twice a second, and
// starts a new watch when one ends.
func watchAndShow(ctx context.Context, out io.Writer, watch func(rv string) (<-chan struct{}, error), rv string, show func() (string, error)) error {
	for ctx.Err() == nil {
		changed, err := watch(rv)
		if err != nil {
			return err
		}
		for range changed {
			time.Sleep(500 * time.Millisecond)
			for drained := false; !drained; {
				select {
				case _, ok := <-changed:
					drained = !ok
				default:
					drained = true
				}
			}
			fmt.Fprintf(out, "\n--- %s\n", time.Now().Format(time.TimeOnly))
			if rv, err = show(); err != nil {
				return err
			}
		}
		if rv, err = show(); err != nil {
			return err
		}
	}
	return nil
}

func placementsError(err error, where string) error {
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return fmt.Errorf("%s serves no EdgePlacements: is it a workload workspace? (kubectl edge ensure wmw %s)", where, where)
	}
	return fmt.Errorf("reading the EdgePlacements of %s: %w", where, err)
}

// placementView is what -o json|yaml prints for one placement.
type placementView struct {
	Name         string                         `json:"name"`
	Destinations int32                          `json:"destinations"`
	State        string                         `json:"state"`
	Summary      edgev1alpha1.DestinationCounts `json:"summary"`
	Broken       []edgev1alpha1.BrokenEntry     `json:"broken,omitempty"`
	BrokenCount  int32                          `json:"brokenCount,omitempty"`
	Objects      []edgev1alpha1.ObjectSummary   `json:"objects,omitempty"`
	Conditions   []metav1.Condition             `json:"conditions,omitempty"`
	SummaryTime  *metav1.Time                   `json:"summaryTime,omitempty"`
	Rollout      *edgev1alpha1.RolloutStrategy  `json:"rollout,omitempty"`
}

func viewOf(p *edgev1alpha1.EdgePlacement) placementView {
	v := placementView{
		Name: p.Name, Destinations: p.Status.MatchingSyncTargetCount, State: placementState(p),
		Broken: p.Status.Broken, BrokenCount: p.Status.BrokenCount, Objects: p.Status.Objects,
		Conditions: p.Status.Conditions, SummaryTime: p.Status.SummaryTime, Rollout: p.Spec.Rollout,
	}
	if p.Status.Summary != nil {
		v.Summary = *p.Status.Summary
	}
	return v
}

func (so *statusOptions) printPlacements(out io.Writer, where string, items []edgev1alpha1.EdgePlacement, detail bool) error {
	if so.collect != "" && len(items) == 1 {
		return so.printCollected(out, &items[0])
	}
	if so.output == "name" {
		for i := range items {
			fmt.Fprintf(out, "edgeplacement.%s/%s\n", edgev1alpha1.SchemeGroupVersion.Group, items[i].Name)
		}
		return nil
	}
	if so.output != "" && so.output != "wide" {
		views := make([]placementView, 0, len(items))
		for i := range items {
			views = append(views, viewOf(&items[i]))
		}
		return printAs(out, so.output, map[string]any{"workspace": where, "placements": views})
	}
	if len(items) == 0 {
		fmt.Fprintf(out, "No EdgePlacements in %s.\n", where)
		return nil
	}
	wide := so.output == "wide"
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	header := "PLACEMENT\tDESTINATIONS\tREADY\t\tPENDING\tAPPLIED\tFAILED\tSTALE\tDRIFTED\tSTATE"
	if wide {
		header += "\tLOCATIONS\tOBJECTS\tREVISION\tSUMMARIZED"
	}
	fmt.Fprintln(tw, header)
	for i := range items {
		p := &items[i]
		var c edgev1alpha1.DestinationCounts
		if p.Status.Summary != nil {
			c = *p.Status.Summary
		}
		n := p.Status.MatchingSyncTargetCount
		fmt.Fprintf(tw, "%s\t%d\t%d/%d\t%s\t%d\t%d\t%d\t%d\t%d\t%s", p.Name, n, c.Ready, n, bar(c.Ready, n, 20), c.Pending, c.Applied, c.Failed, c.Stale, c.Drifted, placementState(p))
		if wide {
			revision, summarized := "-", "-"
			if r := p.Status.Rollout; r != nil && r.Revision != "" {
				revision = r.Revision[:min(len(r.Revision), 12)]
			}
			if p.Status.SummaryTime != nil {
				summarized = p.Status.SummaryTime.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "\t%d\t%d\t%s\t%s", p.Status.MatchingLocationCount, p.Status.ObjectCount, revision, summarized)
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for i := range items {
		p := &items[i]
		if problems := problemConditions(p); len(problems) > 0 {
			fmt.Fprintf(out, "\nProblems of %s:\n", p.Name)
			for _, c := range problems {
				fmt.Fprintf(out, "  %s %s (%s): %s\n", c.Type, c.Status, c.Reason, oneLine(c.Message, 400))
			}
		}
		if len(p.Status.Broken) > 0 {
			fmt.Fprintf(out, "\nBroken in %s (%d", p.Name, p.Status.BrokenCount)
			if int(p.Status.BrokenCount) > len(p.Status.Broken) {
				fmt.Fprintf(out, ", the oldest %d shown", len(p.Status.Broken))
			}
			fmt.Fprintln(out, "):")
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "  DESTINATION\tOBJECT\tSINCE\tREASON")
			for _, b := range p.Status.Broken {
				object := b.Object
				if object == "" {
					object = "(all)"
				}
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", b.Destination, object, since(b.Since), oneLine(b.Reason, 100))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
		if detail && len(p.Status.Objects) > 0 {
			fmt.Fprintf(out, "\nObjects of %s (%d):\n", p.Name, p.Status.ObjectCount)
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "  OBJECT\tREADY\tPENDING\tAPPLIED\tFAILED\tSTALE\tDRIFTED")
			for _, o := range p.Status.Objects {
				fmt.Fprintf(tw, "  %s\t%d/%d\t%d\t%d\t%d\t%d\t%d\n", o.Object, o.Ready, p.Status.MatchingSyncTargetCount, o.Pending, o.Applied, o.Failed, o.Stale, o.Drifted)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// bar draws ready out of total as a bar of width characters.
func bar(ready, total int32, width int) string {
	if total <= 0 {
		return "[" + strings.Repeat(" ", width) + "]"
	}
	filled := int(int64(ready) * int64(width) / int64(total))
	return "[" + strings.Repeat("#", filled) + strings.Repeat(".", width-filled) + "]"
}

func since(t *metav1.Time) string {
	if t == nil {
		return "-"
	}
	return time.Since(t.Time).Round(time.Second).String() + " ago"
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		return s[:max-3] + "..."
	}
	return s
}

// checkOutputFormat refuses an -o that is not one of formats ("" is the verb's default output).
func checkOutputFormat(format string, formats ...string) error {
	if format == "" || slices.Contains(formats, format) {
		return nil
	}
	list := strings.Join(formats[:len(formats)-1], ", ") + " and " + formats[len(formats)-1]
	return fmt.Errorf("-o %s: the output formats are %s (or none, for the default)", format, list)
}

func printAs(out io.Writer, format string, v any) error {
	var raw []byte
	var err error
	if format == "json" {
		raw, err = json.MarshalIndent(v, "", "  ")
		raw = append(raw, '\n')
	} else {
		raw, err = yaml.Marshal(v)
	}
	if err != nil {
		return err
	}
	_, err = out.Write(raw)
	return err
}

// targetView is what --target shows of one edge cluster.
type targetView struct {
	SyncTarget string `json:"syncTarget"`
	Mailbox    string `json:"mailbox"`
	// Shard is the kcp shard that holds the mailbox, on a center of several shards, when the
	// user may read root's Shards.
	Shard string `json:"shard,omitempty"`
	// Mode is who runs the syncer: "pull" (in the edge cluster) or "push" (at the center).
	Mode string `json:"mode"`
	// SyncerReady is the SyncTarget's SyncerReady condition.
	SyncerReady *metav1.Condition `json:"syncerReady,omitempty"`
	// EdgeReachable is the SyncTarget's EdgeReachable condition, in push mode.
	EdgeReachable *metav1.Condition `json:"edgeReachable,omitempty"`
	// SyncerVersion is what the syncer reports in its SyncerConfig ("" until it does).
	SyncerVersion string           `json:"syncerVersion,omitempty"`
	Placements    []assemblageView `json:"placements"`
}

var (
	assemblagesGVR   = edgev1alpha1.SchemeGroupVersion.WithResource("assemblages")
	syncerConfigsGVR = edgev1alpha1.SchemeGroupVersion.WithResource("syncerconfigs")
)

// runTarget shows what is placed on one SyncTarget, from the assemblages in its mailbox.
func (so *statusOptions) runTarget(ctx context.Context) error {
	inv, err := so.inventory(ctx, so.imw)
	if err != nil {
		return err
	}
	readSyncTarget := func() (*edgev1alpha1.SyncTarget, error) { return inv.syncTargetWithMailbox(ctx, so.target) }
	st, err := readSyncTarget()
	if err != nil {
		return err
	}
	mbPath, client, err := inv.mailboxOf(st)
	if err != nil {
		return err
	}
	assemblages := client.Resource(assemblagesGVR)
	shard := ""
	if kcp, err := kcpclientset.NewForConfig(inv.base); err == nil {
		shard = workspaces.ShardOf(ctx, kcp, mbPath)
	}
	show := func() (string, error) {
		st, err := readSyncTarget()
		if err != nil {
			return "", err
		}
		list, err := assemblages.List(ctx, metav1.ListOptions{})
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return "", fmt.Errorf("mailbox %s serves no Assemblages: edge-controller-manager is older than this kubectl edge, or has not set the mailbox up yet", mbPath)
		}
		if err != nil {
			return "", fmt.Errorf("reading the assemblages of mailbox %s: %w", mbPath, err)
		}
		v := targetView{SyncTarget: so.target, Mailbox: mbPath.String(), Shard: shard, Mode: syncModeOf(st),
			SyncerReady:   meta.FindStatusCondition(st.Status.Conditions, edgev1alpha1.SyncTargetSyncerReady),
			EdgeReachable: meta.FindStatusCondition(st.Status.Conditions, edgev1alpha1.SyncTargetEdgeReachable)}
		if cfg, err := client.Resource(syncerConfigsGVR).Get(ctx, edgev1alpha1.SyncerConfigName, metav1.GetOptions{}); err == nil {
			v.SyncerVersion, _, _ = unstructured.NestedString(cfg.Object, "status", "syncerVersion")
		}
		if v.Placements, err = assemblageViews(list.Items); err != nil {
			return "", fmt.Errorf("mailbox %s: %w", mbPath, err)
		}
		return list.GetResourceVersion(), so.printTarget(so.Out, inv.path.String(), &v)
	}
	rv, err := show()
	if err != nil || !so.watch {
		return err
	}
	return watchAndShow(ctx, so.Out, func(rv string) (<-chan struct{}, error) {
		w, err := assemblages.Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
		if err != nil {
			return nil, err
		}
		changed := make(chan struct{})
		go func() {
			defer close(changed)
			defer w.Stop()
			for range w.ResultChan() {
				select {
				case changed <- struct{}{}:
				case <-ctx.Done():
					return
				}
			}
		}()
		return changed, nil
	}, rv, show)
}

// syncTargetWithMailbox reads SyncTarget name of the inventory workspace; one without a mailbox
// yet is an error that says where to look.
func (inv *inventoryClients) syncTargetWithMailbox(ctx context.Context, name string) (*edgev1alpha1.SyncTarget, error) {
	u, err := inv.syncTargets.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("there is no SyncTarget %q in %s", name, inv.path)
	}
	if err != nil {
		return nil, fmt.Errorf("reading SyncTarget %s in %s: %w", name, inv.path, err)
	}
	st := &edgev1alpha1.SyncTarget{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, st); err != nil {
		return nil, fmt.Errorf("reading SyncTarget %s in %s: %w", name, inv.path, err)
	}
	if st.Status.MailboxWorkspace == "" {
		return nil, fmt.Errorf("SyncTarget %s has no mailbox yet (see its MailboxReady condition); is edge-controller-manager running?", name)
	}
	return st, nil
}

// mailboxOf returns the path of a SyncTarget's mailbox and a client for it, with the user's
// credentials.
func (inv *inventoryClients) mailboxOf(st *edgev1alpha1.SyncTarget) (logicalcluster.Path, *dynamic.DynamicClient, error) {
	mbPath, err := workspaces.ParsePath(st.Status.MailboxWorkspace)
	if err != nil {
		return logicalcluster.Path{}, nil, fmt.Errorf("SyncTarget %s names mailbox %q: %w", st.Name, st.Status.MailboxWorkspace, err)
	}
	client, err := dynamic.NewForConfig(workspaces.ConfigFor(inv.base, mbPath))
	if err != nil {
		return logicalcluster.Path{}, nil, err
	}
	return mbPath, client, nil
}

// The views of placements and mailboxes live in pkg/fleetview, which kubectl edge dashboard
// shares.
type (
	assemblageView = fleetview.Assemblage
	objectView     = fleetview.Object
)

func placementState(p *edgev1alpha1.EdgePlacement) string { return fleetview.PlacementState(p) }

func problemConditions(p *edgev1alpha1.EdgePlacement) []metav1.Condition {
	return fleetview.ProblemConditions(p)
}

// syncModeOf says who runs a SyncTarget's syncer: push or pull.
func syncModeOf(st *edgev1alpha1.SyncTarget) string {
	if st.Labels[edgev1alpha1.LabelSyncMode] == edgev1alpha1.SyncModePush {
		return edgev1alpha1.SyncModePush
	}
	return edgev1alpha1.SyncModePull
}

// assemblageViews reads the assemblages of a mailbox, each with its objects' states, sorted by
// workspace and placement.
func assemblageViews(items []unstructured.Unstructured) ([]assemblageView, error) {
	return fleetview.Assemblages(items)
}

// printTarget prints what --target shows: the syncer, then per placement its assemblage's
// versions and state, and each object's state at the edge.
func (so *statusOptions) printTarget(out io.Writer, inventory string, v *targetView) error {
	if so.output != "" {
		return printAs(out, so.output, v)
	}
	fmt.Fprintf(out, "SyncTarget %s in %s, mailbox %s", v.SyncTarget, inventory, v.Mailbox)
	if v.Shard != "" {
		fmt.Fprintf(out, " on shard %s", v.Shard)
	}
	fmt.Fprintln(out)
	switch v.Mode {
	case edgev1alpha1.SyncModePush:
		mode := "Mode: push (edge-controller-manager runs the syncer at the center)"
		if v.EdgeReachable != nil {
			mode += fmt.Sprintf(", %s %s (%s)", v.EdgeReachable.Type, v.EdgeReachable.Status, oneLine(v.EdgeReachable.Message, 160))
		}
		fmt.Fprintln(out, mode)
	default:
		fmt.Fprintln(out, "Mode: pull (the syncer runs in the edge cluster)")
	}
	syncer := "Syncer:"
	if v.SyncerReady != nil {
		syncer += fmt.Sprintf(" %s %s (%s)", v.SyncerReady.Type, v.SyncerReady.Status, oneLine(v.SyncerReady.Message, 120))
	}
	if v.SyncerVersion != "" {
		syncer += ", version " + v.SyncerVersion
	} else {
		syncer += ", version not reported yet"
	}
	fmt.Fprintln(out, syncer)
	if len(v.Placements) == 0 {
		fmt.Fprintln(out, "Nothing is placed on this edge cluster.")
		return nil
	}
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKSPACE\tPLACEMENT\tVERSION\tAPPLIED\tSTATE\tOBJECTS\tREASON")
	for _, p := range v.Placements {
		ready := 0
		for _, o := range p.Objects {
			if o.State == string(transport.StateReady) {
				ready++
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d/%d ready\t%s\n", p.Workspace, p.Placement, p.Version, orDash(p.AppliedVersion), p.State,
			ready, len(p.Objects), oneLine(p.Reason, 80))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, p := range v.Placements {
		if len(p.Objects) == 0 {
			continue
		}
		fmt.Fprintf(out, "\nObjects of %s in %s:\n", p.Placement, p.Workspace)
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  OBJECT\tSTATE\tREASON")
		for _, o := range p.Objects {
			reason := o.Reason
			if o.SharedFrom != "" {
				reason = strings.TrimSpace("(carried by " + o.SharedFrom + ") " + reason)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", o.Object, o.State, oneLine(reason, 100))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, p := range v.Placements {
		if err := printDrift(out, p); err != nil {
			return err
		}
	}
	for _, p := range v.Placements {
		printCollectedAtEdge(out, p)
	}
	return nil
}

// printCollectedAtEdge prints what the placement's status collectors found at this edge, as the
// syncer reported it: per collector the objects matched, its groups (key, count and combined
// values) or rows (object and values), what was left out, and its run-time errors.
func printCollectedAtEdge(out io.Writer, p assemblageView) {
	if len(p.Collected) == 0 {
		return
	}
	fmt.Fprintf(out, "\nCollected at this edge for %s in %s:\n", p.Placement, p.Workspace)
	for _, c := range p.Collected {
		fmt.Fprintf(out, "  %s: %d objects matched\n", c.Name, c.Matched)
		for _, g := range c.Groups {
			cells := []string{fmt.Sprintf("count=%d", g.Count)}
			for _, v := range g.Values {
				cells = append(cells, v.Name+"="+fleetview.CollectedCell([]byte(v.Value)))
			}
			key := ""
			if len(g.Key) > 0 {
				keys := make([]string, len(g.Key))
				for i, k := range g.Key {
					keys[i] = fleetview.CollectedCell([]byte(k))
				}
				key = "[" + strings.Join(keys, ", ") + "] "
			}
			fmt.Fprintf(out, "    %s%s\n", key, strings.Join(cells, " "))
		}
		for _, r := range c.Rows {
			cells := make([]string, len(r.Values))
			for i, v := range r.Values {
				cells[i] = fleetview.CollectedCell([]byte(v))
			}
			fmt.Fprintf(out, "    %s: %s\n", r.Object, strings.Join(cells, ", "))
		}
		if c.Omitted > 0 {
			fmt.Fprintf(out, "    %d more left out (limit or size budget)\n", c.Omitted)
		}
		if c.Errors > 0 {
			line := fmt.Sprintf("    %d errors at run time", c.Errors)
			if e := c.ErrorExample; e != nil {
				line += fmt.Sprintf("; for example %s: %s", e.Object, oneLine(e.Error, 200))
			}
			fmt.Fprintln(out, line)
		}
	}
}

// printDrift prints the latest drift the syncer reports for one placement's assemblage: per
// entry the object, the change, whether it was repaired, the fields (never values), how often
// and when; entries of an older version than the current one are marked so.
func printDrift(out io.Writer, p assemblageView) error {
	r := p.Drift
	if r == nil || r.Count == 0 {
		return nil
	}
	fmt.Fprintf(out, "\nDrift of %s in %s: %d found at the edge, %d repaired", p.Placement, p.Workspace, r.Count, r.Repairs)
	if len(r.Recent) > 0 {
		fmt.Fprintf(out, "; the latest %d", len(r.Recent))
	}
	fmt.Fprintln(out, ":")
	if len(r.Recent) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  OBJECT\tCHANGE\tREPAIRED\tPATHS\tCOUNT\tLAST")
	for _, e := range r.Recent {
		repaired := "yes"
		if !e.Repaired {
			repaired = "no (create-only)"
		}
		last := since(&e.Time)
		if e.Version != p.Version {
			last += " (version " + shortVersion(e.Version) + ")"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%d\t%s\n", e.Object, e.Change, repaired, driftPathsText(e), e.Count, last)
	}
	return tw.Flush()
}

// driftPathsText lists an entry's paths, "-" for none, saying how many more were left out.
func driftPathsText(e edgev1alpha1.DriftEntry) string {
	if len(e.Paths) == 0 {
		return "-"
	}
	text := strings.Join(e.Paths, ",")
	if more := int(e.PathCount) - len(e.Paths); more > 0 {
		text += fmt.Sprintf(" (+%d more)", more)
	}
	return oneLine(text, 120)
}

func shortVersion(v string) string {
	if v == "" {
		return "-"
	}
	return v[:min(len(v), 12)]
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// printCollected prints one collector's results of a placement: as a table, or as its
// status.collected entry with -o json or yaml.
func (so *statusOptions) printCollected(out io.Writer, p *edgev1alpha1.EdgePlacement) error {
	var c *edgev1alpha1.CollectedStatus
	for i := range p.Status.Collected {
		if p.Status.Collected[i].Name == so.collect {
			c = &p.Status.Collected[i]
		}
	}
	if c == nil {
		if !slices.Contains(p.Spec.StatusCollectors, so.collect) {
			return fmt.Errorf("EdgePlacement %s does not name the StatusCollector %q in spec.statusCollectors (it names %s)", p.Name, so.collect, orNone(p.Spec.StatusCollectors))
		}
		return fmt.Errorf("EdgePlacement %s has no results of StatusCollector %q yet: is edge-controller-manager running?", p.Name, so.collect)
	}
	if so.output != "" {
		return printAs(out, so.output, c)
	}
	if c.Problem != "" {
		fmt.Fprintf(out, "%s: %s\n", c.Name, c.Problem)
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	header := make([]string, len(c.Columns))
	for i, col := range c.Columns {
		header[i] = strings.ToUpper(col)
	}
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, row := range c.Rows {
		cells := make([]string, len(row.Values))
		for i, v := range row.Values {
			cells[i] = fleetview.CollectedCell(v.Raw)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(c.Rows) == 0 {
		fmt.Fprintln(out, "(no rows)")
	}
	fmt.Fprintf(out, "%d of %d rows; %d destinations reported, %d objects matched", len(c.Rows), c.RowCount, c.Destinations, c.Matched)
	if c.Omitted > 0 {
		fmt.Fprintf(out, "; %d rows left out at the edges (limit or size budget)", c.Omitted)
	}
	fmt.Fprintln(out)
	if c.Errors > 0 {
		fmt.Fprintf(out, "%d errors at run time", c.Errors)
		if e := c.ErrorExample; e != nil {
			fmt.Fprintf(out, "; for example at %s, %s: %s", e.Destination, e.Object, oneLine(e.Error, 300))
		}
		fmt.Fprintln(out)
	}
	return nil
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
