package placementtranslator

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/centerview"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// Reasons of the Projected condition.
const (
	ReasonProjected        = "Projected"
	ReasonPending          = "Pending"
	ReasonProjectionFailed = "ProjectionFailed"
	ReasonNoDestinations   = "NoDestinations"
	ReasonMailboxNotReady  = "MailboxNotReady"
	ReasonNoConflict       = "NoConflict"
)

// mailboxResult is the outcome of a mailbox's last reconcile.
type mailboxResult struct {
	placements []placementKey
	problems   []problem
	// pending: the mailbox is not done yet for any of its placements (e.g. a workload
	// resource's objects not known yet).
	pending bool
	// held: placements whose new version is not delivered here yet (their rollout or their
	// dependencies hold it); the mailbox's other placements are not held up by them.
	held map[placementKey]bool
}

// hold records that the placement pk's new version waits in this mailbox.
func (r *mailboxResult) hold(pk placementKey) {
	if r.held == nil {
		r.held = map[placementKey]bool{}
	}
	r.held[pk] = true
}

// results holds the last outcome of every mailbox, and which mailboxes each placement has one in.
type results struct {
	mu          sync.Mutex
	byMailbox   map[string]mailboxResult
	byPlacement placementIndex[string]
}

func newResults() *results {
	return &results{byMailbox: map[string]mailboxResult{}, byPlacement: placementIndex[string]{}}
}

// placementIndex records, for each placement, the keys (mailboxes) whose
// outcome concerns it.
type placementIndex[K comparable] map[placementKey]map[K]bool

// move makes key concern the placements to instead of from, and returns all of them.
func (x placementIndex[K]) move(key K, from, to []placementKey) []placementKey {
	affected := map[placementKey]bool{}
	for _, pk := range from {
		affected[pk] = true
		delete(x[pk], key)
		if len(x[pk]) == 0 {
			delete(x, pk)
		}
	}
	for _, pk := range to {
		affected[pk] = true
		if x[pk] == nil {
			x[pk] = map[K]bool{}
		}
		x[pk][key] = true
	}
	out := make([]placementKey, 0, len(affected))
	for pk := range affected {
		out = append(out, pk)
	}
	return out
}

// set records a mailbox's outcome and returns the placements whose status it can change.
func (r *results) set(mailbox string, res mailboxResult) []placementKey {
	r.mu.Lock()
	defer r.mu.Unlock()
	old, had := r.byMailbox[mailbox]
	if had && reflect.DeepEqual(old, res) {
		return nil
	}
	if len(res.placements) == 0 {
		delete(r.byMailbox, mailbox)
	} else {
		r.byMailbox[mailbox] = res
	}
	return r.byPlacement.move(mailbox, old.placements, res.placements)
}

// of returns, for a placement, whether each given mailbox is done and the problems there.
func (r *results) of(pk placementKey, mailboxes map[string]bool) (notDone int, problems []problem) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for mb := range mailboxes {
		res, ok := r.byMailbox[mb]
		if !ok || !r.byPlacement[pk][mb] {
			notDone++
			continue
		}
		// A mailbox not done still reports its problems: a placement that waits for its
		// dependencies there says why.
		if res.pending || res.held[pk] {
			notDone++
		}
		for _, p := range res.problems {
			if p.placement == pk {
				problems = append(problems, p)
			}
		}
	}
	return notDone, problems
}

func (c *Controller) report(mailbox string, res mailboxResult) {
	for _, pk := range c.results.set(mailbox, res) {
		c.queue.Add(queueKey{placement: pk})
	}
}

// writePlacementStatus sets the conditions Projected, Conflict, DependenciesReady, and for a paced
// placement the rollout's (status.rollout, Progressing, RolloutStalled, RolloutComplete), and
// returns when to look again without an event. The return path (package upsync) writes the
// conditions Upsynced and UpsyncConflict itself.
func (c *Controller) writePlacementStatus(ctx context.Context, pk placementKey) (time.Duration, error) {
	item, exists, _ := c.placements.GetIndexer().GetByKey(kcpcache.ToClusterAwareKey(pk.cluster, "", pk.name))
	if !exists {
		c.rollouts.forget(pk)
		return 0, nil
	}
	u := centerview.AsUnstructured(item).DeepCopy()
	p := &edgev1alpha1.EdgePlacement{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
		return 0, nil
	}
	mailboxes := map[string]bool{}
	slices, _ := c.slices.GetIndexer().ByIndex(byPlacement, pk.String())
	for _, s := range slices {
		for _, d := range c.decodedSlices.destinations(centerview.AsUnstructured(s)) {
			mailboxes[mailboxName(d)] = true
		}
	}
	notDone, allProblems := c.results.of(pk, mailboxes)
	var problems, depProblems []problem
	for _, pr := range allProblems {
		if strings.HasPrefix(pr.reason, "Dependency") {
			depProblems = append(depProblems, pr)
		} else {
			problems = append(problems, pr)
		}
	}
	projected, conflict := placementConditions(len(mailboxes), notDone, problems)
	projected.ObservedGeneration, conflict.ObservedGeneration = p.Generation, p.Generation
	before := append([]metav1.Condition(nil), p.Status.Conditions...)
	beforeRollout := p.Status.Rollout.DeepCopy()
	meta.SetStatusCondition(&p.Status.Conditions, projected)
	meta.SetStatusCondition(&p.Status.Conditions, conflict)
	if len(p.Spec.DependsOn) == 0 {
		meta.RemoveStatusCondition(&p.Status.Conditions, edgev1alpha1.PlacementDependenciesReady)
	} else {
		deps := dependenciesCondition(depProblems)
		deps.ObservedGeneration = p.Generation
		meta.SetStatusCondition(&p.Status.Conditions, deps)
	}
	plan, rollout, recheck := c.reconcileRollout(pk, p)
	if plan == nil {
		for _, t := range []string{edgev1alpha1.PlacementProgressing, edgev1alpha1.PlacementRolloutStalled, edgev1alpha1.PlacementRolloutComplete} {
			meta.RemoveStatusCondition(&p.Status.Conditions, t)
		}
	} else {
		for _, cond := range rolloutConditions(p, plan) {
			meta.SetStatusCondition(&p.Status.Conditions, cond)
		}
	}
	if rollout != nil && rollout.Revision != "" {
		p.Status.Rollout = rollout
	}
	if equality.Semantic.DeepEqual(before, p.Status.Conditions) && equality.Semantic.DeepEqual(beforeRollout, p.Status.Rollout) {
		return recheck, nil
	}
	st, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&p.Status)
	if err != nil {
		return 0, err
	}
	if err := unstructured.SetNestedField(u.Object, st["conditions"], "status", "conditions"); err != nil {
		return 0, err
	}
	if r, ok := st["rollout"]; ok {
		if err := unstructured.SetNestedField(u.Object, r, "status", "rollout"); err != nil {
			return 0, err
		}
	}
	_, err = c.edgeVW.Cluster(logicalcluster.NewPath(pk.cluster)).Resource(placementsGVR).UpdateStatus(ctx, u, metav1.UpdateOptions{})
	return recheck, err
}

// dependenciesCondition is DependenciesReady from the dependency problems at the destinations.
func dependenciesCondition(problems []problem) metav1.Condition {
	cond := metav1.Condition{Type: edgev1alpha1.PlacementDependenciesReady, Status: metav1.ConditionTrue, Reason: edgev1alpha1.ReasonDependenciesReady,
		Message: "the placements of spec.dependsOn are ready at every destination where they are needed"}
	if len(problems) == 0 {
		return cond
	}
	reason := problems[0].reason
	var msgs []string
	for _, pr := range problems {
		msgs = append(msgs, pr.message)
		if pr.reason == edgev1alpha1.ReasonDependencyCycle || pr.reason == edgev1alpha1.ReasonDependencyMissing {
			reason = pr.reason
		}
	}
	sort.Strings(msgs)
	cond.Status, cond.Reason = metav1.ConditionFalse, reason
	cond.Message = fmt.Sprintf("%d destination(s) wait: %s", len(problems), transport.QuoteProblems(msgs))
	return cond
}

// placementConditions computes Projected and Conflict from the outcome at each destination.
func placementConditions(destinations, notDone int, problems []problem) (projected, conflict metav1.Condition) {
	projected = metav1.Condition{Type: edgev1alpha1.PlacementProjected}
	conflict = metav1.Condition{Type: edgev1alpha1.PlacementConflict, Status: metav1.ConditionFalse, Reason: ReasonNoConflict,
		Message: "no object collides with one from another workload workspace"}
	var conflicts, others []string
	allMailboxNotReady := len(problems) > 0
	for _, p := range problems {
		if p.reason == problemConflict {
			conflicts = append(conflicts, p.message)
		}
		if p.reason != problemMailbox {
			allMailboxNotReady = false
		}
	}
	others = groupedProblems(problems)
	if len(conflicts) > 0 {
		conflict.Status, conflict.Reason = metav1.ConditionTrue, edgev1alpha1.ReasonConflictingProjection
		conflict.Message = transport.QuoteProblems(conflicts)
	}
	switch {
	case destinations == 0:
		projected.Status, projected.Reason = metav1.ConditionFalse, ReasonNoDestinations
		projected.Message = "the placement has no destinations"
	case len(problems) > 0:
		projected.Status, projected.Reason = metav1.ConditionFalse, ReasonProjectionFailed
		if allMailboxNotReady {
			projected.Reason = ReasonMailboxNotReady
		}
		projected.Message = fmt.Sprintf("%d problem(s) among %d destinations: %s", len(problems), destinations, transport.QuoteProblems(others))
	case notDone > 0:
		projected.Status, projected.Reason = metav1.ConditionFalse, ReasonPending
		projected.Message = fmt.Sprintf("%d of %d destinations are not projected yet", notDone, destinations)
	default:
		projected.Status, projected.Reason = metav1.ConditionTrue, ReasonProjected
		projected.Message = fmt.Sprintf("the selected objects are in the mailboxes of all %d destinations", destinations)
	}
	return projected, conflict
}

// groupedProblems quotes each problem once, sorted, with the destinations where it is: a problem
// of the placement itself (an unknown resource, a Customizer that fails everywhere) is the same at
// every destination, and a message listing it per destination would say little else. The
// destinations are those of the "destination <cluster>:<name>: " prefix of the messages.
func groupedProblems(problems []problem) []string {
	type group struct {
		reason, rest string
		dests        map[string]bool
	}
	groups := map[string]*group{}
	for _, p := range problems {
		dest, rest := "", p.message
		if after, ok := strings.CutPrefix(p.message, "destination "); ok {
			if d, r, ok := strings.Cut(after, ": "); ok {
				dest, rest = d, r
			}
		}
		key := p.reason + ": " + rest
		g := groups[key]
		if g == nil {
			g = &group{reason: p.reason, rest: rest, dests: map[string]bool{}}
			groups[key] = g
		}
		if dest != "" {
			g.dests[dest] = true
		}
	}
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		g := groups[k]
		dests := make([]string, 0, len(g.dests))
		for d := range g.dests {
			dests = append(dests, d)
		}
		sort.Strings(dests)
		switch len(dests) {
		case 0:
			out = append(out, g.reason+": "+g.rest)
		case 1:
			out = append(out, g.reason+": destination "+dests[0]+": "+g.rest)
		default:
			shown := dests
			if len(shown) > transport.MaxProblemsInMessage {
				shown = append(shown[:transport.MaxProblemsInMessage:transport.MaxProblemsInMessage], fmt.Sprintf("and %d more", len(dests)-transport.MaxProblemsInMessage))
			}
			out = append(out, fmt.Sprintf("%s at %d destinations (%s): %s", g.reason, len(dests), strings.Join(shown, ", "), g.rest))
		}
	}
	return out
}
