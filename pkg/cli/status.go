package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	statussummarizer "github.com/kcp-dev/edge-mc/pkg/status-summarizer"
	"github.com/kcp-dev/edge-mc/pkg/workspaces"
)

var placementsGVR = edgev1alpha1.SchemeGroupVersion.WithResource("edgeplacements")

// statusOptions are the flags of kubectl edge status.
type statusOptions struct {
	*Options
	wmw    string
	watch  bool
	output string
	target string
	imw    string
}

func newStatusCommand(o *Options) *cobra.Command {
	so := &statusOptions{Options: o}
	cmd := &cobra.Command{
		Use:   "status [placement]",
		Short: "Show where the workload runs: per EdgePlacement, or per edge cluster with --target",
		Long: `Show the state of the fleet as the status summarizer reports it.

Without --target: for each EdgePlacement of the workload workspace (the current workspace of your
kubeconfig, or --wmw), its destinations, how many are ready, its state, and the broken
(destination, object) entries. Naming one placement also lists its objects.

With --target <synctarget> --imw <path>: everything placed on that edge cluster, object by object,
read from its mailbox (this needs read access to the mailbox workspaces under the ESPW).`,
		Example: `  kubectl edge status
  kubectl edge status web -w
  kubectl edge status --wmw root:wmw-a -o yaml
  kubectl edge status --target edge-1 --imw root:imw`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if so.output != "" && so.output != "json" && so.output != "yaml" {
				return fmt.Errorf("-o %s: the output formats are json and yaml (or none, for the table)", so.output)
			}
			ctx, cancel := o.context(cmd)
			defer cancel()
			if so.target != "" {
				if len(args) > 0 || so.wmw != "" {
					return fmt.Errorf("--target shows one edge cluster: give no placement and no --wmw with it")
				}
				if so.imw == "" {
					return fmt.Errorf("--target needs --imw, the inventory workspace of the SyncTarget")
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
	cmd.Flags().StringVarP(&so.output, "output", "o", "", "output format: json or yaml (default: a table)")
	cmd.Flags().StringVar(&so.target, "target", "", "show the objects placed on this SyncTarget (needs --imw)")
	cmd.Flags().StringVar(&so.imw, "imw", "", "path of the SyncTarget's inventory workspace, with --target")
	return cmd
}

// workloadClient reaches the workload workspace: --wmw, or the kubeconfig's own.
func (so *statusOptions) workloadClient() (dynamic.ResourceInterface, string, error) {
	cfg, err := so.Config.ToRESTConfig()
	if err != nil {
		return nil, "", fmt.Errorf("loading kubeconfig: %w", err)
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

// placementState says in a word or two where a placement stands.
func placementState(p *edgev1alpha1.EdgePlacement) string {
	s := p.Status.Summary
	n := p.Status.MatchingSyncTargetCount
	switch {
	case p.Spec.Rollout != nil && p.Spec.Rollout.Paused:
		return "Paused"
	case s == nil:
		return "Unknown (no summary: is the status-summarizer running?)"
	case n == 0:
		return "NoDestinations"
	case s.Failed > 0:
		return "Failing"
	case s.Ready == n:
		return "Ready"
	case s.Stale > 0 && s.Pending == 0 && s.Applied == 0:
		return "Stale"
	default:
		return "RollingOut"
	}
}

func (so *statusOptions) printPlacements(out io.Writer, where string, items []edgev1alpha1.EdgePlacement, detail bool) error {
	if so.output != "" {
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
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PLACEMENT\tDESTINATIONS\tREADY\t\tPENDING\tAPPLIED\tFAILED\tSTALE\tSTATE")
	for i := range items {
		p := &items[i]
		var c edgev1alpha1.DestinationCounts
		if p.Status.Summary != nil {
			c = *p.Status.Summary
		}
		n := p.Status.MatchingSyncTargetCount
		fmt.Fprintf(tw, "%s\t%d\t%d/%d\t%s\t%d\t%d\t%d\t%d\t%s\n", p.Name, n, c.Ready, n, bar(c.Ready, n, 20), c.Pending, c.Applied, c.Failed, c.Stale, placementState(p))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for i := range items {
		p := &items[i]
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
			fmt.Fprintln(tw, "  OBJECT\tREADY\tPENDING\tAPPLIED\tFAILED\tSTALE")
			for _, o := range p.Status.Objects {
				fmt.Fprintf(tw, "  %s\t%d/%d\t%d\t%d\t%d\t%d\n", o.Object, o.Ready, p.Status.MatchingSyncTargetCount, o.Pending, o.Applied, o.Failed, o.Stale)
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

// copyView is one object placed on an edge cluster, for --target.
type copyView struct {
	Object     string `json:"object"`
	Source     string `json:"sourceCluster"`
	Placements string `json:"placements"`
	State      string `json:"state"`
	Reason     string `json:"reason,omitempty"`
}

// runTarget shows what is placed on one SyncTarget, from its mailbox.
func (so *statusOptions) runTarget(ctx context.Context) error {
	inv, err := so.inventory(ctx, so.imw)
	if err != nil {
		return err
	}
	u, err := inv.syncTargets.Get(ctx, so.target, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("there is no SyncTarget %q in %s", so.target, inv.path)
	}
	if err != nil {
		return fmt.Errorf("reading SyncTarget %s in %s: %w", so.target, inv.path, err)
	}
	st := &edgev1alpha1.SyncTarget{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, st); err != nil {
		return err
	}
	if st.Status.MailboxWorkspace == "" {
		return fmt.Errorf("SyncTarget %s has no mailbox yet (see its MailboxReady condition); is edge-controller-manager running?", so.target)
	}
	mbPath, err := workspaces.ParsePath(st.Status.MailboxWorkspace)
	if err != nil {
		return err
	}
	cfg := workspaces.ConfigFor(inv.base, mbPath)
	show := func() (string, error) {
		views, err := mailboxCopies(ctx, cfg)
		if err != nil {
			return "", fmt.Errorf("reading mailbox %s: %w", mbPath, err)
		}
		syncer := meta.FindStatusCondition(st.Status.Conditions, edgev1alpha1.SyncTargetSyncerReady)
		if so.output != "" {
			return "", printAs(so.Out, so.output, map[string]any{"syncTarget": so.target, "mailbox": mbPath.String(), "syncerReady": syncer, "objects": views})
		}
		fmt.Fprintf(so.Out, "SyncTarget %s in %s, mailbox %s\n", so.target, inv.path, mbPath)
		if syncer != nil {
			fmt.Fprintf(so.Out, "Syncer: %s %s (%s)\n", syncer.Type, syncer.Status, oneLine(syncer.Message, 120))
		}
		if len(views) == 0 {
			fmt.Fprintln(so.Out, "Nothing is placed on this edge cluster.")
			return "", nil
		}
		tw := tabwriter.NewWriter(so.Out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "OBJECT\tSTATE\tPLACEMENTS\tREASON")
		for _, v := range views {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", v.Object, v.State, v.Placements, oneLine(v.Reason, 100))
		}
		return "", tw.Flush()
	}
	if _, err := show(); err != nil || !so.watch {
		return err
	}
	for ctx.Err() == nil {
		// The mailbox holds many kinds; a watch on each would cost more than a re-read now and then
		// for a person's screen.
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(2 * time.Second):
		}
		fmt.Fprintf(so.Out, "\n--- %s\n", time.Now().Format(time.TimeOnly))
		if _, err := show(); err != nil {
			return err
		}
	}
	return nil
}

// mailboxCopies lists the copies in a mailbox, of every kind it serves, with their state.
func mailboxCopies(ctx context.Context, cfg *rest.Config) ([]copyView, error) {
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	_, lists, err := disco.ServerGroupsAndResources()
	if err != nil && len(lists) == 0 {
		return nil, err
	}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	// Which version of each copy the syncer reports applied at the edge.
	var applied map[string]string
	if cfgObj, err := client.Resource(edgev1alpha1.SchemeGroupVersion.WithResource("syncerconfigs")).Get(ctx, edgev1alpha1.SyncerConfigName, metav1.GetOptions{}); err == nil {
		applied, _, _ = unstructured.NestedStringMap(cfgObj.Object, "status", "applied")
	}
	selector := edgev1alpha1.LabelProjected + "=true"
	var views []copyView
	seen := map[schema.GroupResource]bool{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			gr := schema.GroupResource{Group: gv.Group, Resource: r.Name}
			if strings.Contains(r.Name, "/") || seen[gr] || !hasVerb(r.Verbs, "list") {
				continue
			}
			seen[gr] = true
			items, err := client.Resource(gv.WithResource(r.Name)).List(ctx, metav1.ListOptions{LabelSelector: selector})
			if err != nil {
				continue // a kind this credential may not list holds no copies of ours
			}
			for i := range items.Items {
				c := &items.Items[i]
				name := edgev1alpha1.CopyKey(gr, c.GetNamespace(), c.GetName())
				state, reason := statussummarizer.CopyState(c, applied[name])
				views = append(views, copyView{
					Object: name,
					Source: c.GetLabels()[edgev1alpha1.LabelSourceCluster], Placements: c.GetAnnotations()[edgev1alpha1.AnnotationPlacements],
					State: string(state), Reason: reason,
				})
			}
		}
	}
	sort.Slice(views, func(i, j int) bool { return views[i].Object < views[j].Object })
	return views, nil
}

func hasVerb(verbs []string, verb string) bool {
	for _, v := range verbs {
		if v == verb {
			return true
		}
	}
	return false
}
