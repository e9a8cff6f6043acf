package cli

import (
	"context"
	"encoding/json"
	"errors"
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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

// errRolloutStalled is what `rollout status -w` returns when the rollout stops for failures.
var errRolloutStalled = errors.New("the rollout is stalled")

func newRolloutCommand(o *Options) *cobra.Command {
	ro := &statusOptions{Options: o}
	cmd := &cobra.Command{
		Use:   "rollout",
		Short: "Follow, pause, resume and list the rollouts of EdgePlacements",
		Long: `An EdgePlacement with spec.rollout delivers each new version to its destinations within the
bounds it sets (` + docsURL + `rollouts.md). These commands, shaped like kubectl rollout, act on one
placement of the workload workspace (the current workspace of your kubeconfig, or --wmw).`,
	}
	cmd.PersistentFlags().StringVar(&ro.wmw, "wmw", "", "path of the workload workspace (default: the kubeconfig's current workspace)")
	status := &cobra.Command{
		Use:   "status <placement>",
		Short: "Show the rollout of a placement; -w follows it until it completes, and fails if it stalls",
		Long: `rollout status prints one line: the placement's revision and how many destinations have it, are
getting it, or failed. With -w it follows the rollout, a line per change, until it completes
(exit 0) or stalls (exit 1); --timeout, when given, bounds that wait (exit 1, as kubectl rollout
status does), and without it -w waits as long as the rollout takes. -o json or yaml prints the
placement's spec.rollout and status.rollout instead.`,
		Example: `  kubectl edge rollout status web
  kubectl edge rollout status web -w --timeout 10m
  kubectl edge rollout status web -o yaml`,
		Args:              positional([]string{"<placement>"}, 0),
		ValidArgsFunction: o.placementArg(&ro.wmw),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutputFormat(ro.output, "json", "yaml", "wide", "name"); err != nil {
				return err
			}
			if ro.output != "" && ro.watch {
				return fmt.Errorf("-o %s with -w: -w prints a progress line per change; drop one of them", ro.output)
			}
			ctx, cancel := o.context(cmd)
			defer cancel()
			if f := cmd.Flag("timeout"); ro.watch && f != nil && f.Changed {
				ctx, cancel = context.WithTimeout(ctx, o.Timeout)
				defer cancel()
			}
			return ro.rolloutStatus(ctx, args[0])
		},
	}
	status.Flags().BoolVarP(&ro.watch, "watch", "w", false, "follow the rollout with a progress bar until it completes (exit 0) or stalls (exit 1)")
	status.Flags().StringVarP(&ro.output, "output", "o", "", "output format: json, yaml, wide (each stage's selector, bound and gate) or name (default: a line and the stages)")
	pause := &cobra.Command{
		Use:   "pause <placement>",
		Short: "Pause a placement's rollout: no destination gets a version it does not have yet",
		Example: `  kubectl edge rollout pause web
  kubectl edge rollout pause web --wmw root:team-a`,
		Args:              positional([]string{"<placement>"}, 0),
		ValidArgsFunction: o.placementArg(&ro.wmw),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := o.context(cmd)
			defer cancel()
			return ro.patchRollout(ctx, args[0], func(p *edgev1alpha1.EdgePlacement) (map[string]any, string) {
				if p.Spec.Rollout != nil && p.Spec.Rollout.Paused {
					return nil, "is paused already"
				}
				return map[string]any{"paused": true}, "paused: deliveries in flight finish, no new ones start"
			})
		},
	}
	resume := &cobra.Command{
		Use:   "resume <placement>",
		Short: "Resume a placement's rollout: unpause it, and open the pause gate it waits at",
		Example: `  # After a canary stage whose gate holds the rollout (status.rollout.pausedAt)
  kubectl edge rollout resume web`,
		Args:              positional([]string{"<placement>"}, 0),
		ValidArgsFunction: o.placementArg(&ro.wmw),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := o.context(cmd)
			defer cancel()
			return ro.patchRollout(ctx, args[0], func(p *edgev1alpha1.EdgePlacement) (map[string]any, string) {
				patch := map[string]any{}
				var did []string
				if p.Spec.Rollout != nil && p.Spec.Rollout.Paused {
					patch["paused"] = false
					did = append(did, "unpaused")
				}
				if r := p.Status.Rollout; r != nil && r.PausedAt != "" {
					patch["resume"] = map[string]any{"stage": r.PausedAt, "revision": r.Revision}
					did = append(did, fmt.Sprintf("the gate after stage %s opened for revision %s", r.PausedAt, r.Revision))
				}
				if len(did) == 0 {
					return nil, "is neither paused nor waiting at a gate"
				}
				return patch, strings.Join(did, "; ")
			})
		},
	}
	history := &cobra.Command{
		Use:   "history <placement>",
		Short: "List the last revisions of a placement, with when each was published and completed",
		Example: `  kubectl edge rollout history web
  kubectl edge rollout history web -o json`,
		Args:              positional([]string{"<placement>"}, 0),
		ValidArgsFunction: o.placementArg(&ro.wmw),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutputFormat(ro.output, "json", "yaml", "wide", "name"); err != nil {
				return err
			}
			ctx, cancel := o.context(cmd)
			defer cancel()
			client, where, err := ro.workloadClient()
			if err != nil {
				return err
			}
			p, err := getPlacement(ctx, client, where, args[0])
			if err != nil {
				return err
			}
			switch ro.output {
			case "name":
				return printName(ro.Out, p)
			case "", "wide":
				return printHistory(ro.Out, p, ro.output == "wide")
			}
			return printAs(ro.Out, ro.output, historyView(where, p))
		},
	}
	history.Flags().StringVarP(&ro.output, "output", "o", "", "output format: json, yaml, wide (with how long each revision took) or name (default: a table)")
	cmd.AddCommand(status, pause, resume, history)
	return cmd
}

func getPlacement(ctx context.Context, client dynamic.ResourceInterface, where, name string) (*edgev1alpha1.EdgePlacement, error) {
	u, err := client.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("there is no EdgePlacement %q in %s", name, where)
	}
	if err != nil {
		return nil, placementsError(err, where)
	}
	p := &edgev1alpha1.EdgePlacement{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
		return nil, fmt.Errorf("reading EdgePlacement %s: %w", name, err)
	}
	return p, nil
}

// patchRollout merges what change returns into spec.rollout, and says what it did.
func (ro *statusOptions) patchRollout(ctx context.Context, name string, change func(p *edgev1alpha1.EdgePlacement) (map[string]any, string)) error {
	client, where, err := ro.workloadClient()
	if err != nil {
		return err
	}
	p, err := getPlacement(ctx, client, where, name)
	if err != nil {
		return err
	}
	fields, said := change(p)
	if fields == nil {
		fmt.Fprintf(ro.Out, "EdgePlacement %s %s\n", name, said)
		return nil
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"rollout": fields}})
	if err != nil {
		return err
	}
	if _, err := client.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("updating EdgePlacement %s in %s: %w", name, where, err)
	}
	fmt.Fprintf(ro.Out, "EdgePlacement %s %s\n", name, said)
	return nil
}

// rolloutStatus shows a placement's rollout once, or follows it with -w.
func (ro *statusOptions) rolloutStatus(ctx context.Context, name string) error {
	client, where, err := ro.workloadClient()
	if err != nil {
		return err
	}
	if !ro.watch {
		p, err := getPlacement(ctx, client, where, name)
		if err != nil {
			return err
		}
		switch ro.output {
		case "name":
			return printName(ro.Out, p)
		case "", "wide":
			return printRollout(ro.Out, p, ro.output == "wide")
		}
		return printAs(ro.Out, ro.output, rolloutView(where, p))
	}
	last := ""
	for {
		p, err := getPlacement(ctx, client, where, name)
		if err != nil {
			if ctx.Err() == context.DeadlineExceeded {
				return timedOut(name, last)
			}
			return err
		}
		line, done, stalled := rolloutLine(p)
		if line != last {
			fmt.Fprintln(ro.Out, line)
			last = line
		}
		switch {
		case stalled != "":
			fmt.Fprintln(ro.Out, stalled)
			return errRolloutStalled
		case done:
			return nil
		}
		// Wait for the next change of the placement (a watch; a new one when it ends).
		w, err := client.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name, ResourceVersion: p.ResourceVersion})
		if err != nil {
			return fmt.Errorf("watching EdgePlacement %s in %s: %w", name, where, err)
		}
		select {
		case <-ctx.Done():
			w.Stop()
			if ctx.Err() == context.DeadlineExceeded {
				return timedOut(name, last)
			}
			return ctx.Err()
		case <-w.ResultChan():
		}
		w.Stop()
	}
}

// timedOut is the error of `rollout status -w --timeout` when the rollout has not completed in time.
func timedOut(name, last string) error {
	if last == "" {
		last = "nothing yet"
	}
	return fmt.Errorf("timed out waiting for the rollout of EdgePlacement %s to complete (--timeout); last seen: %s", name, last)
}

// rolloutView is what `rollout status -o` prints: the placement's rollout, as asked and as it stands.
func rolloutView(where string, p *edgev1alpha1.EdgePlacement) map[string]any {
	return map[string]any{"workspace": where, "placement": p.Name, "spec": p.Spec.Rollout, "status": p.Status.Rollout}
}

// historyView is what `rollout history -o` prints: the placement's last revisions, newest first.
func historyView(where string, p *edgev1alpha1.EdgePlacement) map[string]any {
	history := []edgev1alpha1.RevisionHistory{}
	if p.Status.Rollout != nil {
		history = append(history, p.Status.Rollout.History...)
	}
	return map[string]any{"workspace": where, "placement": p.Name, "history": history}
}

// rolloutLine is one progress line of `rollout status -w`, whether the rollout is done, and the
// stall message if it stalled.
func rolloutLine(p *edgev1alpha1.EdgePlacement) (line string, done bool, stalled string) {
	if p.Spec.Rollout == nil {
		return fmt.Sprintf("EdgePlacement %s has no spec.rollout: every change goes to every destination at once", p.Name), true, ""
	}
	if !p.Spec.Rollout.Paces() {
		return fmt.Sprintf("EdgePlacement %s's spec.rollout sets none of maxInFlight, stages, paused, jitter and maxFailures: every change goes to every destination at once", p.Name), true, ""
	}
	var total, updated, inFlight, failed int32
	if r := p.Status.Rollout; r != nil {
		for _, s := range r.Stages {
			total += s.Destinations
			updated += s.Updated
			inFlight += s.InFlight
			failed += s.Failed
		}
	}
	const width = 30
	filled := 0
	if total > 0 {
		filled = int(updated) * width / int(total)
	}
	revision := ""
	if p.Status.Rollout != nil {
		revision = p.Status.Rollout.Revision
	}
	line = fmt.Sprintf("[%s%s] %d/%d updated, %d in flight, %d failed (revision %s)",
		strings.Repeat("#", filled), strings.Repeat(".", width-filled), updated, total, inFlight, failed, revision)
	if c := meta.FindStatusCondition(p.Status.Conditions, edgev1alpha1.PlacementProgressing); c != nil && c.Status != metav1.ConditionTrue && c.Reason != edgev1alpha1.ReasonRolloutDone {
		line += ": " + c.Message
	}
	current := func(c *metav1.Condition) bool { return c != nil && c.ObservedGeneration == p.Generation }
	if c := meta.FindStatusCondition(p.Status.Conditions, edgev1alpha1.PlacementRolloutStalled); current(c) && c.Status == metav1.ConditionTrue {
		return line, false, "stalled: " + c.Message
	}
	c := meta.FindStatusCondition(p.Status.Conditions, edgev1alpha1.PlacementRolloutComplete)
	return line, current(c) && c.Status == metav1.ConditionTrue, ""
}

// printName prints the placement as kubectl's -o name does.
func printName(out io.Writer, p *edgev1alpha1.EdgePlacement) error {
	_, err := fmt.Fprintf(out, "edgeplacement.%s/%s\n", edgev1alpha1.SchemeGroupVersion.Group, p.Name)
	return err
}

func printRollout(out io.Writer, p *edgev1alpha1.EdgePlacement, wide bool) error {
	line, _, stalled := rolloutLine(p)
	fmt.Fprintln(out, line)
	if stalled != "" {
		fmt.Fprintln(out, stalled)
	}
	r := p.Status.Rollout
	if !p.Spec.Rollout.Paces() || r == nil {
		return nil
	}
	if r.PausedAt != "" {
		fmt.Fprintf(out, "waiting at the pause gate after stage %s: kubectl edge rollout resume %s\n", r.PausedAt, p.Name)
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	header := "STAGE\tDESTINATIONS\tUPDATED\tIN FLIGHT\tFAILED\tWAITING"
	if wide {
		header += "\tSELECTOR\tMAX IN FLIGHT\tGATE"
	}
	fmt.Fprintln(w, header)
	for _, s := range r.Stages {
		name := s.Name
		if name == "" {
			name = "(no stage)"
		}
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d\t%d", name, s.Destinations, s.Updated, s.InFlight, s.Failed, s.Waiting)
		if wide {
			fmt.Fprintf(w, "\t%s", stageSpec(p.Spec.Rollout, s.Name))
		}
		fmt.Fprintln(w)
	}
	return w.Flush()
}

// stageSpec is what spec.rollout says of the named stage, for -o wide: its selector, its
// maxInFlight (or the rollout's) and whether a pause gate follows it. The unnamed stage holds the
// destinations no stage selects.
func stageSpec(r *edgev1alpha1.RolloutStrategy, name string) string {
	bound := func(v *intstr.IntOrString) string {
		if v == nil {
			return "-"
		}
		return v.String()
	}
	for _, st := range r.Stages {
		if st.Name != name {
			continue
		}
		var sel []string
		for k, v := range st.Selector.MatchLabels {
			sel = append(sel, k+"="+v)
		}
		sort.Strings(sel)
		if len(st.Selector.MatchExpressions) > 0 {
			sel = append(sel, fmt.Sprintf("+%d expressions", len(st.Selector.MatchExpressions)))
		}
		selector := strings.Join(sel, ",")
		if selector == "" {
			selector = "(all)"
		}
		maxInFlight := r.MaxInFlight
		if st.MaxInFlight != nil {
			maxInFlight = st.MaxInFlight
		}
		gate := "-"
		if st.Pause {
			gate = "pause"
		}
		return selector + "\t" + bound(maxInFlight) + "\t" + gate
	}
	return "(the rest)\t" + bound(r.MaxInFlight) + "\t-"
}

func printHistory(out io.Writer, p *edgev1alpha1.EdgePlacement, wide bool) error {
	if p.Status.Rollout == nil || len(p.Status.Rollout.History) == 0 {
		fmt.Fprintf(out, "EdgePlacement %s has no rollout history yet\n", p.Name)
		return nil
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	if wide {
		fmt.Fprintln(w, "REVISION\tPUBLISHED\tCOMPLETED\tTOOK")
	} else {
		fmt.Fprintln(w, "REVISION\tPUBLISHED\tCOMPLETED")
	}
	for i, h := range p.Status.Rollout.History {
		published, completed := "-", "superseded"
		if i == 0 {
			completed = "in progress"
		}
		if h.PublishedTime != nil {
			published = h.PublishedTime.UTC().Format(time.RFC3339)
		}
		if h.CompletedTime != nil {
			completed = h.CompletedTime.UTC().Format(time.RFC3339)
		}
		if wide {
			took := "-"
			if h.PublishedTime != nil && h.CompletedTime != nil {
				took = h.CompletedTime.Sub(h.PublishedTime.Time).Round(time.Second).String()
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", h.Revision, published, completed, took)
			continue
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", h.Revision, published, completed)
	}
	return w.Flush()
}
