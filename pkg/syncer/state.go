package syncer

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// orphan is an object at the edge that the object with the given key no longer names.
type orphan struct {
	key transport.Key
	ref objectRef
}

// outcome is what became of one object of a version at the edge.
type outcome int

const (
	// outcomePending: not applied at this version yet (waiting for its namespace or kind, or
	// for the edge to answer).
	outcomePending outcome = iota
	// outcomeApplied: applied at this version, or found at the edge as this version has it.
	outcomeApplied
	// outcomeCreatedOnce: create-only, created at the edge earlier and deleted there since; it
	// is not created again.
	outcomeCreatedOnce
	// outcomeFailed: the edge refused it, or it cannot be applied as it is; not tried again
	// at this version.
	outcomeFailed
)

// result is the outcome of one object of a version, and why.
type result struct {
	outcome outcome
	reason  string
	// uid is the edge object's UID after it was applied.
	uid types.UID
	// unserved: pending because the edge does not serve the object's kind, and the assemblage
	// carries no CRD for it. Tried again with backoff like any pending object, but reported
	// failed, with the fix, since nothing edge-mc does will bring the kind.
	unserved bool
}

// assemblageState is what the syncer knows of one assemblage. The syncer's mutex guards it;
// only the worker holding the assemblage's name from the queue changes its plan and results.
type assemblageState struct {
	name string
	// uid is the Assemblage object's UID: a new object of the same name starts afresh.
	uid types.UID
	// plan is the newest version read, being applied or applied; nil before one was read.
	plan *plan
	// results are the outcomes of plan's objects, by key.
	results map[transport.Key]*result
	// since is when plan's version was first acted on.
	since time.Time
	// passed is the version of which a whole pass of applying ended (at passedAt), with
	// objects applied, refused or still waiting: its status is not written before, so that a
	// new version, or a restart, is reported once, not first as all pending.
	passed   string
	passedAt time.Time
	// appliedVersion is the newest version whose every object was applied.
	appliedVersion string
	// refusal, when not nil, says why refusedVersion (the assemblage's spec.version) cannot be
	// read.
	refusal        *transport.RefusedError
	refusedVersion string
	// owned are the objects at the edge that this syncer applied from this assemblage, by key,
	// with where they are: the candidates for deletion when they leave it.
	owned map[transport.Key]objectRef
	// orphans are objects at the edge that an object of this assemblage was written as before
	// it named another (a denatured object whose manifest was renamed): deleted as what left.
	orphans []orphan
	// appliedHash is the hash last applied (or found applied) of each object, to tell a repair
	// from an update.
	appliedHash map[transport.Key]string
	// createdAt is when each create-only object was created at the edge; it is not created
	// again.
	createdAt map[transport.Key]metav1.Time
	// restoredVersion and restoredApplied are what the status said at start: the version
	// observed, and which of its objects were applied, so that an object deleted at the edge
	// while the syncer was down is reported as a repair.
	restoredVersion string
	restoredApplied map[transport.Key]bool
	// written is the status as last written (or found at start), and writtenAt when.
	written   *edgev1alpha1.AssemblageStatus
	writtenAt time.Time
	// goneAtEdge is the UID of the last edge object of each key that the edge watch saw
	// deleted: an applied object missing from the watch's cache is deleted only if its UID is
	// there; otherwise the watch has not caught up with the syncer's own write yet.
	goneAtEdge map[transport.Key]types.UID
	// appliedRV is the edge resourceVersion each object had after the syncer's last apply of it.
	appliedRV map[transport.Key]string
	// drift is the drift report, as the status carries it (found in it at start).
	drift *edgev1alpha1.DriftReport
	// leftDrift is, for each create-only object whose drift the syncer reported and left, the
	// fingerprint of the state reported (driftFingerprint), or after a restart a mark of what
	// the status reports (restoredDriftMark).
	leftDrift map[transport.Key]string
}

func newAssemblageState(name string) *assemblageState {
	return &assemblageState{
		name:            name,
		results:         map[transport.Key]*result{},
		owned:           map[transport.Key]objectRef{},
		appliedHash:     map[transport.Key]string{},
		createdAt:       map[transport.Key]metav1.Time{},
		restoredApplied: map[transport.Key]bool{},
		goneAtEdge:      map[transport.Key]types.UID{},
		leftDrift:       map[transport.Key]string{},
		appliedRV:       map[transport.Key]string{},
	}
}

// restore takes in what the assemblage's status says the syncer did before it started: the
// applied version, the creation times of create-only objects, and which objects of the observed
// version were applied.
func (st *assemblageState) restore(a *edgev1alpha1.Assemblage) {
	st.uid = a.UID
	st.appliedVersion = a.Status.AppliedVersion
	st.restoredVersion = a.Status.ObservedVersion
	for _, o := range a.Status.Objects {
		key, ok := transport.ParseKey(o.Object)
		if !ok {
			continue
		}
		if o.CreatedAt != nil {
			st.createdAt[key] = *o.CreatedAt
		}
		if o.State == edgev1alpha1.ObjectApplied || o.State == edgev1alpha1.ObjectReady {
			st.restoredApplied[key] = true
		}
	}
	st.written = a.Status.DeepCopy()
	st.restoreDrift(a.Status.Drift)
}

// restoreDrift takes in the drift report found in the status: its counts go on, and the drift
// of create-only objects it reports is not reported again when it is found still there.
func (st *assemblageState) restoreDrift(r *edgev1alpha1.DriftReport) {
	st.drift = r.DeepCopy()
	if r == nil {
		return
	}
	for i := len(r.Recent) - 1; i >= 0; i-- {
		e := r.Recent[i]
		key, ok := transport.ParseKey(e.Object)
		if ok && !e.Repaired {
			st.leftDrift[key] = restoredDriftMark(e.Change, e.Paths)
		}
	}
}

// beginVersion makes p the version being applied, if it is not already. The outcomes start
// afresh; what the syncer knows of the objects at the edge stays.
func (st *assemblageState) beginVersion(p *plan, now time.Time) {
	if st.plan != nil && st.plan.version == p.version {
		st.plan = p
		return
	}
	st.plan = p
	st.results = make(map[transport.Key]*result, len(p.objects))
	st.since = now
	for _, d := range p.objects {
		st.results[d.key] = &result{outcome: outcomePending, reason: "not applied yet"}
	}
}

// planVersion is the version of the plan, "" before one was read.
func (st *assemblageState) planVersion() string {
	if st.plan == nil {
		return ""
	}
	return st.plan.version
}

// setResult records the outcome of one object of the plan's version.
func (st *assemblageState) setResult(key transport.Key, r result) {
	st.results[key] = &r
}

// pending counts the plan's objects not acted on yet, and failed those refused.
func (st *assemblageState) tally() (pending, failed int) {
	if st.plan == nil {
		return 0, 0
	}
	for _, d := range st.plan.objects {
		switch r := st.results[d.key]; {
		case r == nil || r.outcome == outcomePending:
			pending++
		case r.outcome == outcomeFailed:
			failed++
		}
	}
	return pending, failed
}

// wasApplied says whether the syncer applied the object at the hash given, as far as it knows:
// in this run, or, by the status it found at start, at the version it is applying now.
func (st *assemblageState) wasApplied(key transport.Key, hash string) bool {
	if h, ok := st.appliedHash[key]; ok {
		return h == hash
	}
	return st.plan != nil && st.restoredVersion == st.plan.version && st.restoredApplied[key]
}
