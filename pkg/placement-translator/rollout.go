package placementtranslator

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/centerview"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// Rollouts: a placement with spec.rollout paces its new versions. The mailbox reconciles report,
// per placement, the version each destination should have (desired) and ask, before writing a
// new one, for a permit. Permits are granted by the placement's own reconcile, which plans the
// rollout (planRollout) over every destination of the placement: what its mailbox holds and how
// the syncer reports it (the mailbox view), the SyncTarget's heartbeat and labels, and the
// desired versions reported. A grant is a reservation, counted in flight until the mailbox view
// shows the version written, so that the mailbox reconciles running at once cannot overrun
// maxInFlight; the planner queues the mailboxes it grants. A mailbox refused asks the placement
// to plan again, and the placement reconciles of a burst of refusals collapse into one
// (permitLookDelay): planning is O(destinations), once per look, not once per mailbox (at
// N=1000, planning per mailbox took 61% of edge-controller-manager's CPU and left it with a
// backlog while a rollout waited at a gate). Everything the planner needs after a restart is in
// kcp (the assemblages, their status and their delivery time, the placement's status.rollout);
// the desired versions come back as the mailboxes are reconciled, and until a destination's is
// known the destinations after it wait.

// AnnotationDeliveredAt on an assemblage is when the translator wrote its version: the start of
// the progress deadline, and of the soak.
const AnnotationDeliveredAt = "edge.kcp.io/delivered-at"

// rolloutTracker keeps what the rollouts need between reconciles.
type rolloutTracker struct {
	mu         sync.Mutex
	placements map[placementKey]*placementRollout
}

// placementRollout is what the tracker knows of one placement.
type placementRollout struct {
	// desired is each mailbox's newest version, as last reported.
	desired map[string]string
	// reserved are permits granted whose writes the mailbox view does not show yet.
	reserved map[string]reservation
	// revision is the newest revision reported, first seen at published.
	revision  string
	published time.Time
	// history are the last revisions, newest first.
	history []edgev1alpha1.RevisionHistory
	// waiting are mailboxes refused a permit, to queue again when the plan changes.
	waiting map[string]bool
}

// reservation is a permit the planner granted to a mailbox for version, at at; used once the
// mailbox reconcile took it and wrote (or tried to write) that version.
type reservation struct {
	version string
	at      time.Time
	used    bool
}

// reservationTimeout forgets a permit whose write never showed (the write failed, or the mailbox
// was not reconciled).
const reservationTimeout = time.Minute

// permitLookDelay gathers the refusals of a burst of mailbox reconciles into one plan of the
// placement.
const permitLookDelay = 200 * time.Millisecond

// maxHistory bounds status.rollout.history.
const maxHistory = 5

func newRolloutTracker() *rolloutTracker {
	return &rolloutTracker{placements: map[placementKey]*placementRollout{}}
}

// of returns the placement's record, made on first use; status seeds it after a restart.
func (t *rolloutTracker) of(pk placementKey, status *edgev1alpha1.RolloutStatus) *placementRollout {
	r, ok := t.placements[pk]
	if !ok {
		r = &placementRollout{desired: map[string]string{}, reserved: map[string]reservation{}, waiting: map[string]bool{}}
		if status != nil {
			r.revision = status.Revision
			if status.PublishedTime != nil {
				r.published = status.PublishedTime.Time
			}
			r.history = slices.Clone(status.History)
		}
		t.placements[pk] = r
	}
	return r
}

// forget drops a placement's record (it is gone).
func (t *rolloutTracker) forget(pk placementKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.placements, pk)
}

// publish records a placement's newest revision.
func (r *placementRollout) publish(revision string, now time.Time) {
	if revision == "" || revision == r.revision {
		return
	}
	r.revision, r.published = revision, now
	r.history = append([]edgev1alpha1.RevisionHistory{{Revision: revision, PublishedTime: &metav1.Time{Time: now}}}, r.history...)
	if len(r.history) > maxHistory {
		r.history = r.history[:maxHistory]
	}
}

// placementOf returns the EdgePlacement of a key, or nil.
func (c *Controller) placementOf(pk placementKey) *edgev1alpha1.EdgePlacement {
	item, exists, _ := c.placements.GetIndexer().GetByKey(kcpcache.ToClusterAwareKey(pk.cluster, "", pk.name))
	if !exists {
		return nil
	}
	p := &edgev1alpha1.EdgePlacement{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(centerview.AsUnstructured(item).Object, p); err != nil {
		return nil
	}
	return p
}

// paced says whether a placement's versions go through the planner: it has a rollout strategy
// that can hold a version back.
func paced(p *edgev1alpha1.EdgePlacement) bool {
	return p.Spec.Rollout.Paces()
}

// permit records the version a mailbox should have for a placement, and says whether the
// translator may write it now: the planner granted it (reconcileRollout), for this version or
// not yet used. A mailbox refused waits; the placement is planned again shortly, and queues it
// when its turn comes.
func (c *Controller) permit(pk placementKey, p *edgev1alpha1.EdgePlacement, mailbox, version, revision string) bool {
	now := c.now()
	c.rollouts.mu.Lock()
	defer c.rollouts.mu.Unlock()
	r := c.rollouts.of(pk, p.Status.Rollout)
	r.desired[mailbox] = version
	r.publish(revision, now)
	if !paced(p) {
		return true
	}
	if res, ok := r.reserved[mailbox]; ok && (!res.used || res.version == version) && now.Sub(res.at) <= reservationTimeout {
		// Granted: in flight from now on, with the version written.
		r.reserved[mailbox] = reservation{version: version, at: now, used: true}
		delete(r.waiting, mailbox)
		return true
	}
	r.waiting[mailbox] = true
	c.queue.AddAfter(queueKey{placement: pk}, permitLookDelay)
	return false
}

// noteCurrent records that a mailbox holds the newest version of a paced placement, which needs
// no permit. When the tracker did not know it (after a restart), the placement's rollout is
// planned again: the destinations that waited for it may go.
func (c *Controller) noteCurrent(pk placementKey, p *edgev1alpha1.EdgePlacement, mailbox, version, revision string) {
	if !paced(p) {
		return
	}
	c.rollouts.mu.Lock()
	r := c.rollouts.of(pk, p.Status.Rollout)
	known := r.desired[mailbox] == version
	r.desired[mailbox] = version
	r.publish(revision, c.now())
	c.rollouts.mu.Unlock()
	if !known {
		c.queue.Add(queueKey{placement: pk})
	}
}

// rolloutDestinations gathers the state of every destination of a placement. Call with the
// tracker locked.
func (c *Controller) rolloutDestinations(pk placementKey, r *placementRollout, now time.Time) []rolloutDestination {
	dests := c.destinationsOfPlacement(pk)
	current := c.view.assemblagesOfPlacement(pk)
	out := make([]rolloutDestination, 0, len(dests))
	for mb, d := range dests {
		rd := rolloutDestination{mailbox: mb, name: d.Cluster + ":" + d.SyncTargetName, desired: r.desired[mb]}
		st := c.syncTargetOfMailbox(mb)
		if st != nil {
			rd.labels = map[string]string{}
			maps.Copy(rd.labels, st.GetLabels())
			rd.stale = syncerSilent(st)
			if cluster := mailboxClusterOf(st); cluster != "" {
				if a := current[cluster.String()]; a != nil {
					fillFromAssemblage(&rd, a)
				}
			}
		}
		if loc, ok, _ := c.locations.GetIndexer().GetByKey(kcpcache.ToClusterAwareKey(d.Cluster, "", d.LocationName)); ok {
			if rd.labels == nil {
				rd.labels = map[string]string{}
			}
			maps.Copy(rd.labels, centerview.AsUnstructured(loc).GetLabels())
		}
		if res, ok := r.reserved[mb]; ok {
			switch {
			case rd.current == res.version || now.Sub(res.at) > reservationTimeout:
				delete(r.reserved, mb)
			default:
				// Written or being written: in flight from the reservation on.
				rd.current, rd.deliveredAt, rd.applied, rd.readySince, rd.failure = res.version, res.at, false, time.Time{}, ""
			}
		}
		out = append(out, rd)
	}
	return out
}

// fillFromAssemblage takes a destination's current version and its state from its assemblage.
func fillFromAssemblage(rd *rolloutDestination, a *edgev1alpha1.Assemblage) {
	rd.current = a.Spec.Version
	if t, err := time.Parse(time.RFC3339, a.Annotations[AnnotationDeliveredAt]); err == nil {
		rd.deliveredAt = t
	} else {
		rd.deliveredAt = a.CreationTimestamp.Time
	}
	if a.Status.ObservedVersion != a.Spec.Version {
		return
	}
	if c := meta.FindStatusCondition(a.Status.Conditions, edgev1alpha1.AssemblageRefused); c != nil && c.Status == metav1.ConditionTrue {
		rd.failure = "the syncer refuses the assemblage: " + c.Message
		return
	}
	if a.Status.Counts.Failed > 0 {
		rd.failure = fmt.Sprintf("%d object(s) failed at the edge", a.Status.Counts.Failed)
	}
	rd.applied = a.Status.AppliedVersion == a.Spec.Version
	if c := meta.FindStatusCondition(a.Status.Conditions, edgev1alpha1.AssemblageReady); rd.applied && c != nil && c.Status == metav1.ConditionTrue {
		rd.readySince = c.LastTransitionTime.Time
	}
}

// syncerSilent says whether a SyncTarget's syncer has been silent past the grace period.
func syncerSilent(st *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(st.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == edgev1alpha1.SyncTargetSyncerReady {
			reason, _ := m["reason"].(string)
			return edgev1alpha1.SyncerSilent(reason)
		}
	}
	return false
}

// destinationsOfPlacement returns a placement's destinations by mailbox name.
func (c *Controller) destinationsOfPlacement(pk placementKey) map[string]edgev1alpha1.SinglePlacement {
	out := map[string]edgev1alpha1.SinglePlacement{}
	slices, _ := c.slices.GetIndexer().ByIndex(byPlacement, pk.String())
	for _, s := range slices {
		for _, d := range c.decodedSlices.destinations(centerview.AsUnstructured(s)) {
			out[mailboxName(d)] = d
		}
	}
	return out
}

// reconcileRollout plans a paced placement's rollout again: it grants permits to the mailboxes
// that may now get their version and queues them, and returns the plan (nil for a placement not paced) and when to look again.
func (c *Controller) reconcileRollout(pk placementKey, p *edgev1alpha1.EdgePlacement) (*rolloutPlan, *edgev1alpha1.RolloutStatus, time.Duration) {
	now := c.now()
	c.rollouts.mu.Lock()
	defer c.rollouts.mu.Unlock()
	r := c.rollouts.of(pk, p.Status.Rollout)
	status := &edgev1alpha1.RolloutStatus{Revision: r.revision, History: slices.Clone(r.history)}
	if !r.published.IsZero() {
		status.PublishedTime = &metav1.Time{Time: r.published}
	}
	if !paced(p) {
		return nil, status, 0
	}
	plan := planRollout(p.Spec.Rollout, r.revision, r.published, c.rolloutDestinations(pk, r, now), now)
	for mb := range plan.permit {
		// Granted: it counts in flight from now on, so that the next plan leaves its room taken.
		r.reserved[mb] = reservation{version: r.desired[mb], at: now}
		delete(r.waiting, mb)
		c.queue.Add(queueKey{mailbox: mb})
	}
	status.Stages, status.PausedAt = plan.stages, plan.pausedAt
	if plan.complete && len(r.history) > 0 && r.history[0].Revision == r.revision && r.history[0].CompletedTime == nil {
		r.history[0].CompletedTime = &metav1.Time{Time: now}
		status.History = slices.Clone(r.history)
	}
	return &plan, status, plan.recheck
}

// rolloutConditions are Progressing, RolloutStalled and RolloutComplete of a paced placement.
func rolloutConditions(p *edgev1alpha1.EdgePlacement, plan *rolloutPlan) []metav1.Condition {
	progressing := metav1.Condition{Type: edgev1alpha1.PlacementProgressing, Status: metav1.ConditionFalse, Reason: edgev1alpha1.ReasonRolloutDone,
		Message: "every destination has its newest version"}
	stalled := metav1.Condition{Type: edgev1alpha1.PlacementRolloutStalled, Status: metav1.ConditionFalse, Reason: edgev1alpha1.ReasonNoFailures,
		Message: fmt.Sprintf("%d destination(s) failed or stale, within maxFailures", plan.failures)}
	complete := metav1.Condition{Type: edgev1alpha1.PlacementRolloutComplete, Status: metav1.ConditionFalse, Reason: edgev1alpha1.ReasonRollingOut,
		Message: rolloutProgressText(plan)}
	switch {
	case plan.stalled != nil:
		stalled.Status, stalled.Reason = metav1.ConditionTrue, edgev1alpha1.ReasonTooManyFailures
		stalled.Message = stalledMessage(*plan, p.Spec.Rollout.MaxFailures)
		progressing.Reason, progressing.Message = edgev1alpha1.ReasonTooManyFailures, "stopped: see RolloutStalled"
	case plan.paused && plan.progressing:
		progressing.Reason, progressing.Message = edgev1alpha1.ReasonRolloutPaused, "spec.rollout.paused: no destination gets a version it does not have yet; "+rolloutProgressText(plan)
	case plan.pausedAt != "":
		progressing.Reason = edgev1alpha1.ReasonWaitingAtGate
		progressing.Message = fmt.Sprintf("waiting at the pause gate after stage %s: resume with 'kubectl edge rollout resume %s'", plan.pausedAt, p.Name)
	case plan.progressing:
		progressing.Status, progressing.Reason, progressing.Message = metav1.ConditionTrue, edgev1alpha1.ReasonRollingOut, rolloutProgressText(plan)
	}
	if plan.complete {
		complete.Status, complete.Reason, complete.Message = metav1.ConditionTrue, edgev1alpha1.ReasonRolloutDone, "every destination is done with its newest version"
	}
	out := []metav1.Condition{progressing, stalled, complete}
	if len(plan.emptyStages) > 0 {
		// A warning, not a stop: said on Progressing's message.
		out[0].Message += fmt.Sprintf("; stage(s) %s match no destination", strings.Join(plan.emptyStages, ", "))
	}
	for i := range out {
		out[i].ObservedGeneration = p.Generation
	}
	return out
}

func rolloutProgressText(plan *rolloutPlan) string {
	var total edgev1alpha1.StageStatus
	for _, s := range plan.stages {
		total.Destinations += s.Destinations
		total.Updated += s.Updated
		total.InFlight += s.InFlight
		total.Failed += s.Failed
		total.Waiting += s.Waiting
	}
	return fmt.Sprintf("%d of %d destinations updated, %d in flight, %d failed, %d waiting", total.Updated, total.Destinations, total.InFlight, total.Failed, total.Waiting)
}

// dependencyProblem says why a placement may not be delivered to a mailbox yet because of
// spec.dependsOn, or "" if it may.
func (c *Controller) dependencyProblem(pk placementKey, p *edgev1alpha1.EdgePlacement, mbc logicalcluster.Name, placed map[placementKey]bool, dest string) (reason, message string) {
	if cycle := c.dependencyCycle(pk); cycle != "" {
		return edgev1alpha1.ReasonDependencyCycle, "spec.dependsOn makes a cycle: " + cycle + "; nothing of this placement is delivered until it is broken"
	}
	current := c.view.assemblagesOf(mbc)
	for _, dep := range p.Spec.DependsOn {
		dk := placementKey{pk.cluster, dep}
		if c.placementOf(dk) == nil {
			return edgev1alpha1.ReasonDependencyMissing, fmt.Sprintf("spec.dependsOn names EdgePlacement %s, which does not exist in this workspace", dep)
		}
		if !placed[dk] {
			return edgev1alpha1.ReasonDependencyNotPlaced, fmt.Sprintf("destination %s: EdgePlacement %s, which this one depends on, is not placed there", dest, dep)
		}
		a := current[transport.AssemblageName(pk.cluster, dep)]
		if a == nil || !assemblageReady(a) {
			return edgev1alpha1.ReasonDependencyNotReady, fmt.Sprintf("destination %s: waiting for EdgePlacement %s to be ready there", dest, dep)
		}
	}
	return "", ""
}

// assemblageReady: the syncer applied the assemblage's version and its objects are ready.
func assemblageReady(a *edgev1alpha1.Assemblage) bool {
	if a.Status.AppliedVersion != a.Spec.Version {
		return false
	}
	c := meta.FindStatusCondition(a.Status.Conditions, edgev1alpha1.AssemblageReady)
	return c != nil && c.Status == metav1.ConditionTrue
}

// dependencyCycle returns the cycle of dependsOn through pk, as "a -> b -> a", or "".
func (c *Controller) dependencyCycle(pk placementKey) string {
	var path []string
	onPath := map[string]bool{}
	var visit func(name string) string
	visit = func(name string) string {
		if onPath[name] {
			i := slices.Index(path, name)
			return strings.Join(append(slices.Clone(path[i:]), name), " -> ")
		}
		p := c.placementOf(placementKey{pk.cluster, name})
		if p == nil {
			return ""
		}
		onPath[name] = true
		path = append(path, name)
		deps := slices.Clone(p.Spec.DependsOn)
		sort.Strings(deps)
		for _, d := range deps {
			if cycle := visit(d); cycle != "" && strings.Contains(cycle, pk.name) {
				return cycle
			}
		}
		path = path[:len(path)-1]
		onPath[name] = false
		return ""
	}
	return visit(pk.name)
}
