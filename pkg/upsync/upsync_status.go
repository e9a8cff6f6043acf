package upsync

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"sync"

	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// Reasons of the Upsynced and UpsyncConflict conditions.
const (
	ReasonUpsynced         = "Upsynced"
	ReasonUpsyncFailed     = "UpsyncFailed"
	ReasonUpsyncPending    = "UpsyncPending"
	ReasonNoUpsyncConflict = "NoUpsyncConflict"
)

// problem is something the return path could not do for a placement, and why.
type problem struct {
	placement PlacementKey
	reason    string
	message   string
}

// results holds the problems of the return path, by identity, and which identities have
// problems of each placement. Identities without problems take no room.
type results struct {
	mu          sync.Mutex
	byKey       map[Key][]problem
	byPlacement map[PlacementKey]map[Key]bool
}

func newResults() *results {
	return &results{byKey: map[Key][]problem{}, byPlacement: map[PlacementKey]map[Key]bool{}}
}

// set records an identity's problems and returns the placements whose problems changed.
func (r *results) set(key Key, problems []problem) []PlacementKey {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.byKey[key]
	if reflect.DeepEqual(old, problems) || (len(old) == 0 && len(problems) == 0) {
		return nil
	}
	if len(problems) == 0 {
		delete(r.byKey, key)
	} else {
		r.byKey[key] = problems
	}
	affected := map[PlacementKey]bool{}
	for _, p := range old {
		affected[p.placement] = true
		delete(r.byPlacement[p.placement], key)
		if len(r.byPlacement[p.placement]) == 0 {
			delete(r.byPlacement, p.placement)
		}
	}
	for _, p := range problems {
		affected[p.placement] = true
		if r.byPlacement[p.placement] == nil {
			r.byPlacement[p.placement] = map[Key]bool{}
		}
		r.byPlacement[p.placement][key] = true
	}
	out := make([]PlacementKey, 0, len(affected))
	for pk := range affected {
		out = append(out, pk)
	}
	return out
}

// of returns a placement's problems, sorted, and the identities they concern.
func (r *results) of(pk PlacementKey) (problems []problem, keys []Key) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for key := range r.byPlacement[pk] {
		keys = append(keys, key)
		for _, p := range r.byKey[key] {
			if p.placement == pk {
				problems = append(problems, p)
			}
		}
	}
	sort.Slice(problems, func(i, j int) bool { return problems[i].message < problems[j].message })
	return problems, keys
}

// report records the problems of an identity, and queues the conditions of the placements whose
// problems changed.
func (c *Controller) report(key Key, problems []problem) {
	for _, pk := range c.results.set(key, problems) {
		c.queue.Add(queueKey{placement: pk})
	}
}

// writeConditions sets a placement's Upsynced and UpsyncConflict conditions (removes them from a
// placement without spec.upsync), and writes its status if they changed: nothing else of the
// status, which the placement translator and the status summarizer write.
func (c *Controller) writeConditions(ctx context.Context, pk PlacementKey) error {
	cached := c.placement(pk)
	if cached == nil {
		return nil
	}
	p := &edgev1alpha1.EdgePlacement{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(cached.Object, p); err != nil {
		return nil
	}
	before := append([]metav1.Condition(nil), p.Status.Conditions...)
	if len(p.Spec.Upsync) == 0 {
		meta.RemoveStatusCondition(&p.Status.Conditions, edgev1alpha1.PlacementUpsynced)
		meta.RemoveStatusCondition(&p.Status.Conditions, edgev1alpha1.PlacementUpsyncConflict)
	} else {
		ruleProblems, known := c.sources.unreturnable(p.Spec.Upsync)
		problems, _ := c.results.of(pk)
		upsynced, conflict := conditions(ruleProblems, known, problems)
		upsynced.ObservedGeneration, conflict.ObservedGeneration = p.Generation, p.Generation
		meta.SetStatusCondition(&p.Status.Conditions, upsynced)
		meta.SetStatusCondition(&p.Status.Conditions, conflict)
	}
	if equality.Semantic.DeepEqual(before, p.Status.Conditions) {
		return nil
	}
	u := cached.DeepCopy()
	st, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&p.Status)
	if err != nil {
		return err
	}
	conds, ok := st["conditions"]
	if !ok {
		conds = []any{}
	}
	if err := unstructured.SetNestedField(u.Object, conds, "status", "conditions"); err != nil {
		return err
	}
	// With the cached resourceVersion: a conflict (another writer of the status was first) is
	// retried on the newer object.
	_, err = c.cfg.Edge.Cluster(logicalcluster.NewPath(pk.Cluster)).Resource(placementsGVR).UpdateStatus(ctx, u, metav1.UpdateOptions{FieldManager: FieldManager})
	return err
}

// conditions computes Upsynced and UpsyncConflict from the rules that cannot be honoured (known:
// whether that could be judged) and the problems of the return path.
func conditions(ruleProblems []string, known bool, problems []problem) (upsynced, conflict metav1.Condition) {
	upsynced = metav1.Condition{Type: edgev1alpha1.PlacementUpsynced}
	conflict = metav1.Condition{Type: edgev1alpha1.PlacementUpsyncConflict, Status: metav1.ConditionFalse, Reason: ReasonNoUpsyncConflict,
		Message: "no two destinations up-sync the same object, and no object of the workspace's own is in the way"}
	failures := append([]string(nil), ruleProblems...)
	var conflicts []string
	for _, p := range problems {
		if p.reason == problemUpsyncConflict {
			conflicts = append(conflicts, p.message)
		} else {
			failures = append(failures, p.reason+": "+p.message)
		}
	}
	if len(conflicts) > 0 {
		conflict.Status, conflict.Reason = metav1.ConditionTrue, edgev1alpha1.ReasonConflictingUpsync
		conflict.Message = transport.QuoteProblems(conflicts)
	}
	switch {
	case len(failures) > 0:
		upsynced.Status, upsynced.Reason = metav1.ConditionFalse, ReasonUpsyncFailed
		upsynced.Message = fmt.Sprintf("%d problem(s): %s", len(failures), transport.QuoteProblems(failures))
	case !known:
		upsynced.Status, upsynced.Reason = metav1.ConditionFalse, ReasonUpsyncPending
		upsynced.Message = "waiting for the virtual workspaces that show the mailboxes"
	default:
		upsynced.Status, upsynced.Reason = metav1.ConditionTrue, ReasonUpsynced
		upsynced.Message = "what spec.upsync covers comes back from the destinations' mailboxes"
	}
	return upsynced, conflict
}
