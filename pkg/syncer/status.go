package syncer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/statuscel"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// statusless are the resources whose .status the syncer does not report: a Namespace's or a
// CRD's status at the edge says nothing about the workload (their state is reported).
var statusless = map[string]bool{"namespaces": true, "customresourcedefinitions": true}

// queueStatus queues a status write of the assemblage, and of those sharing objects it carries:
// at once when the last write is older than StatusCoalesce, else when that much time has passed
// since it.
func (s *Syncer) queueStatus(name string) {
	s.queueStatusOf(name)
	for _, sharer := range s.sharingFrom(name) {
		if sharer != name {
			s.queueStatusOf(sharer)
		}
	}
}

func (s *Syncer) queueStatusOf(name string) {
	s.mu.Lock()
	var last time.Time
	if st := s.states[name]; st != nil {
		last = st.writtenAt
	}
	s.mu.Unlock()
	if wait := s.cfg.StatusCoalesce - time.Since(last); wait > 0 {
		s.statusQueue.AddAfter(name, wait)
		return
	}
	s.statusQueue.Add(name)
}

// writeStatus writes an assemblage's status as the syncer knows it, unless nothing but
// reportTime would change, at most once per StatusCoalesce.
func (s *Syncer) writeStatus(ctx context.Context, name string) (time.Duration, error) {
	a := s.cachedAssemblage(name)
	if a == nil {
		return 0, nil
	}
	s.mu.Lock()
	st := s.states[name]
	if st == nil || (st.plan == nil && st.refusal == nil) {
		s.mu.Unlock()
		return 0, nil // nothing known to report yet
	}
	if st.plan != nil && st.passed != st.plan.version && (st.refusal == nil || st.refusedVersion != a.Spec.Version) {
		s.mu.Unlock()
		return 0, nil // queued again when the first pass of applying this version ends
	}
	if wait := s.cfg.StatusCoalesce - time.Since(st.writtenAt); wait > 0 {
		s.mu.Unlock()
		return wait, nil
	}
	in, unlisted := s.statusInputsLocked(st, a)
	written, passedAt := st.written, st.passedAt
	s.mu.Unlock()
	if unlisted && time.Since(passedAt) < edgeListWait {
		// The state of objects whose edge watch has not listed yet is not known: reported
		// now, it would say less than the last status did.
		return edgeListRecheck, nil
	}

	status := buildStatus(in)
	if written != nil && statusEqual(&status, written) {
		return 0, nil
	}
	now := metav1.Now()
	status.ReportTime = &now
	if err := s.mailboxEdge.applyStatus(ctx, assemblagesResource, "Assemblage", name, &status); err != nil {
		if transport.Gone(err, assemblagesGR, name) {
			return 0, nil
		}
		metricStatusWrites.WithLabelValues("error").Inc()
		return 0, fmt.Errorf("writing the status of assemblage %s: %w", name, err)
	}
	metricStatusWrites.WithLabelValues("written").Inc()
	s.mu.Lock()
	st.written, st.writtenAt = &status, time.Now()
	s.mu.Unlock()
	klog.FromContext(ctx).V(2).Info("wrote the status of an assemblage", "assemblage", name,
		"observedVersion", status.ObservedVersion, "appliedVersion", status.AppliedVersion,
		"pending", status.Counts.Pending, "applied", status.Counts.Applied, "ready", status.Counts.Ready, "failed", status.Counts.Failed)
	return 0, nil
}

// statusInputs is what an assemblage's status is built from.
type statusInputs struct {
	// version and generation are the assemblage's spec.version and metadata.generation.
	version    string
	generation int64
	// observedVersion is the version of the plan the objects are of ("" if none was read).
	observedVersion string
	appliedVersion  string
	// total is the number of objects the observed version carries (without those shared).
	total int
	// objects are the objects of the observed version, those carried then those shared.
	objects []reported
	// refusal says why version cannot be read, if it cannot.
	refusal *transport.RefusedError
	// previous are the conditions as last written, for their transition times.
	previous []metav1.Condition
	// drift is the drift report (a copy).
	drift *edgev1alpha1.DriftReport
	// collectors are the placement's status collectors.
	collectors []*statuscel.Collector
	now        time.Time
	budget     int
}

// reported is one object's state with its .status at the edge, which goes into the assemblage's
// status while the budget allows.
type reported struct {
	state  edgev1alpha1.ObjectState
	status map[string]any
	// failedToApply: the edge refused it (not: kstatus says Failed).
	failedToApply bool
	// live is the object as the edge has it, if known (read only: it is the informer's).
	live *unstructured.Unstructured
}

// edgeListWait bounds how long a status write waits for the edge watches of its objects to list;
// edgeListRecheck is how often it looks whether they have.
const (
	edgeListWait    = 15 * time.Second
	edgeListRecheck = 500 * time.Millisecond
)

// statusInputsLocked gathers what the status of assemblage a is built from, and says whether the
// edge watch of some applied object has not listed yet; s.mu is held.
func (s *Syncer) statusInputsLocked(st *assemblageState, a *edgev1alpha1.Assemblage) (in statusInputs, unlisted bool) {
	in = statusInputs{
		version: a.Spec.Version, generation: a.Generation, appliedVersion: st.appliedVersion,
		now: time.Now(), budget: s.cfg.StatusBudget,
	}
	if st.written != nil {
		in.previous = st.written.Conditions
	}
	in.drift = st.drift.DeepCopy()
	in.collectors = s.collectorsLocked(a.Spec.Placement)
	if st.refusal != nil && st.refusedVersion == a.Spec.Version {
		in.refusal = st.refusal
	}
	if st.plan == nil {
		return in, false
	}
	in.observedVersion = st.plan.version
	in.total = len(st.plan.objects)
	for _, d := range st.plan.objects {
		r, known := s.reportLocked(st, d, a.Spec.Placement)
		in.objects = append(in.objects, r)
		unlisted = unlisted || !known
	}
	for _, key := range st.plan.sharedOrder {
		carrier := st.plan.shared[key]
		cst := s.states[carrier]
		var d *desired
		if cst != nil && cst.plan != nil {
			d = cst.plan.byKey[key]
		}
		if d == nil {
			in.objects = append(in.objects, reported{state: edgev1alpha1.ObjectState{
				Object: key.String(), State: edgev1alpha1.ObjectPending,
				Reason: fmt.Sprintf("carried by assemblage %s, which has not delivered it yet", carrier),
			}})
			continue
		}
		r, _ := s.reportLocked(cst, d, a.Spec.Placement)
		in.objects = append(in.objects, r)
	}
	return in, unlisted
}

// reportLocked is the reported state of the object d of st's plan, for the assemblage of
// placement p, and whether what the edge has of it is known (false when it is applied but its
// edge watch has not listed yet); s.mu is held.
func (s *Syncer) reportLocked(st *assemblageState, d *desired, p edgev1alpha1.PlacementReference) (reported, bool) {
	var live *unstructured.Unstructured
	known := false
	if d.obj != nil {
		if run := s.edgeWatches[d.ref.GVR]; run != nil && run.informer.HasSynced() {
			known = true
			if obj, exists, _ := run.informer.GetStore().GetByKey(cacheKey(d.ref.Namespace, d.ref.Name)); exists {
				live = asUnstructured(obj)
			} else if r := st.results[d.key]; r != nil && r.outcome == outcomeApplied && r.uid != "" && st.goneAtEdge[d.key] != r.uid {
				// Applied, and the watch has not seen it yet (a big object takes a moment):
				// not known, rather than reported deleted at the edge.
				known = false
			}
		}
	}
	var createdAt *metav1.Time
	if t, ok := st.createdAt[d.key]; ok && d.createOnly {
		createdAt = &t
	}
	r := st.results[d.key]
	return objectReport(d, r, live, known, createdAt, s.healthRuleLocked(p, live)), known || r == nil || r.outcome != outcomeApplied || d.obj == nil
}

// objectReport is the reported state of the object d: from the outcome r of applying it and,
// once applied, kstatus on the edge object live (if known: the edge watch has listed), or the
// health rule for its kind when there is one.
func objectReport(d *desired, r *result, live *unstructured.Unstructured, known bool, createdAt *metav1.Time, rule *statuscel.HealthRule) reported {
	out := reported{state: edgev1alpha1.ObjectState{Object: d.key.String(), CreatedAt: createdAt}}
	os := &out.state
	switch {
	case r == nil:
		os.State, os.Reason = edgev1alpha1.ObjectPending, "not applied yet"
		return out
	case r.outcome == outcomeFailed:
		os.State, os.Reason, os.UID = edgev1alpha1.ObjectFailed, r.reason, r.uid
		out.failedToApply = true
		return out
	case r.outcome == outcomePending && r.unserved:
		os.State, os.Reason = edgev1alpha1.ObjectFailed, r.reason
		out.failedToApply = true
		return out
	case r.outcome == outcomePending:
		os.State, os.Reason = edgev1alpha1.ObjectPending, r.reason
		return out
	case r.outcome == outcomeCreatedOnce:
		os.State, os.Reason = edgev1alpha1.ObjectApplied, r.reason
		return out
	}
	os.State, os.UID, os.Reason = edgev1alpha1.ObjectApplied, r.uid, r.reason
	if !known {
		return out
	}
	if live == nil {
		os.UID = ""
		switch {
		case d.createOnly && r.reason != "":
			os.Reason = r.reason
			return out
		case d.createOnly && createdAt != nil:
			os.Reason = createdOnceReason(*createdAt)
			return out
		}
		os.State, os.Reason, os.UID = edgev1alpha1.ObjectPending, "deleted at the edge; being put back", ""
		return out
	}
	os.UID = live.GetUID()
	out.live = live
	if !statusless[d.ref.GVR.Resource] {
		out.status, _, _ = unstructured.NestedMap(live.Object, "status")
	}
	if rule != nil {
		os.State, os.Reason = rule.Decide(live.Object)
		return out
	}
	res, err := kstatus.Compute(live)
	switch {
	case err != nil:
		os.Reason = "its status cannot be read: " + err.Error()
	case res.Status == kstatus.CurrentStatus:
		os.State, os.Reason = edgev1alpha1.ObjectReady, ""
	case res.Status == kstatus.FailedStatus:
		os.State, os.Reason = edgev1alpha1.ObjectFailed, res.Message
	default:
		os.Reason = res.Message
	}
	return out
}

// buildStatus builds an assemblage's status (without reportTime) from what the syncer knows.
func buildStatus(in statusInputs) edgev1alpha1.AssemblageStatus {
	status := edgev1alpha1.AssemblageStatus{
		ObservedVersion: in.observedVersion,
		AppliedVersion:  in.appliedVersion,
	}
	var firstFailed, firstPending, firstNotReady *edgev1alpha1.ObjectState
	failedToApply := 0
	for i := range in.objects {
		o := &in.objects[i].state
		switch o.State {
		case edgev1alpha1.ObjectPending:
			status.Counts.Pending++
			if firstPending == nil {
				firstPending = o
			}
		case edgev1alpha1.ObjectApplied:
			status.Counts.Applied++
			if firstNotReady == nil {
				firstNotReady = o
			}
		case edgev1alpha1.ObjectReady:
			status.Counts.Ready++
		case edgev1alpha1.ObjectFailed:
			status.Counts.Failed++
			if firstFailed == nil {
				firstFailed = o
			}
		}
		if in.objects[i].failedToApply && i < in.total {
			failedToApply++
		}
	}
	status.Drift = in.drift
	status.Conditions = assemblageConditions(in, status.Counts, failedToApply, firstFailed, firstPending, firstNotReady)
	status.Collected = collect(in.collectors, in.objects)
	fitCollected(&status, in.budget)
	status.StatusOmitted = fitBudget(&status, in.objects, in.budget)
	return status
}

// assemblageConditions sets the conditions Refused, Applied and Ready on a copy of the previous
// ones, keeping the transition times of those that did not change.
func assemblageConditions(in statusInputs, counts edgev1alpha1.ObjectCounts, failedToApply int, firstFailed, firstPending, firstNotReady *edgev1alpha1.ObjectState) []metav1.Condition {
	conditions := make([]metav1.Condition, len(in.previous))
	copy(conditions, in.previous)
	set := func(typ string, ok bool, reason, message string) {
		status := metav1.ConditionFalse
		if ok {
			status = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&conditions, metav1.Condition{
			Type: typ, Status: status, Reason: reason, Message: message,
			ObservedGeneration: in.generation, LastTransitionTime: metav1.NewTime(in.now),
		})
	}
	kept := "nothing of it is applied at the edge yet"
	if in.observedVersion != "" {
		kept = "the edge keeps version " + in.observedVersion
	}
	total := len(in.objects)
	applied := in.appliedVersion != "" && in.appliedVersion == in.version

	if r := in.refusal; r != nil {
		set(edgev1alpha1.AssemblageRefused, true, r.Reason, r.Message+"; "+kept)
		set(edgev1alpha1.AssemblageApplied, false, r.Reason, fmt.Sprintf("version %s cannot be read; %s", in.version, kept))
	} else {
		set(edgev1alpha1.AssemblageRefused, false, edgev1alpha1.ReasonReadable, fmt.Sprintf("version %s is readable", in.version))
		switch {
		case applied:
			set(edgev1alpha1.AssemblageApplied, true, edgev1alpha1.ReasonVersionApplied,
				fmt.Sprintf("version %s is applied at the edge: %d objects", in.version, in.total))
		case failedToApply > 0 && counts.Pending == 0:
			set(edgev1alpha1.AssemblageApplied, false, edgev1alpha1.ReasonObjectsFailed,
				fmt.Sprintf("%d of the %d objects of version %s failed at the edge; first %s", failedToApply, in.total, in.version, describe(firstFailed)))
		default:
			msg := fmt.Sprintf("applying version %s at the edge: %d of %d objects pending", in.version, counts.Pending, total)
			if firstPending != nil {
				msg += "; first " + describe(firstPending)
			}
			set(edgev1alpha1.AssemblageApplied, false, edgev1alpha1.ReasonApplying, msg)
		}
	}

	switch {
	case in.refusal != nil:
		set(edgev1alpha1.AssemblageReady, false, in.refusal.Reason, fmt.Sprintf("version %s cannot be read; %s", in.version, kept))
	case counts.Failed > 0:
		set(edgev1alpha1.AssemblageReady, false, edgev1alpha1.ReasonObjectsFailed,
			fmt.Sprintf("%d of %d objects failed at the edge; first %s", counts.Failed, total, describe(firstFailed)))
	case !applied:
		set(edgev1alpha1.AssemblageReady, false, edgev1alpha1.ReasonApplying, fmt.Sprintf("version %s is being applied at the edge", in.version))
	case int(counts.Ready) == total:
		set(edgev1alpha1.AssemblageReady, true, edgev1alpha1.ReasonAllObjectsReady, fmt.Sprintf("all %d objects are ready at the edge", total))
	default:
		msg := fmt.Sprintf("%d of %d objects are not ready at the edge", total-int(counts.Ready), total)
		if o := firstOf(firstNotReady, firstPending); o != nil {
			msg += "; first " + describe(o)
		}
		set(edgev1alpha1.AssemblageReady, false, edgev1alpha1.ReasonObjectsNotReady, msg)
	}
	return conditions
}

func firstOf(states ...*edgev1alpha1.ObjectState) *edgev1alpha1.ObjectState {
	for _, s := range states {
		if s != nil {
			return s
		}
	}
	return nil
}

func describe(o *edgev1alpha1.ObjectState) string {
	if o == nil {
		return "none"
	}
	if o.Reason == "" {
		return o.Object
	}
	return o.Object + ": " + o.Reason
}

// fitBudget lists objects in status, with their .status while the whole status stays within
// budget bytes of JSON: failed objects first, then pending, then not ready, then ready, each in
// their order. It returns whether some status was left out.
func fitBudget(status *edgev1alpha1.AssemblageStatus, objects []reported, budget int) (omitted bool) {
	status.Objects = make([]edgev1alpha1.ObjectState, len(objects))
	for i := range objects {
		status.Objects[i] = objects[i].state
	}
	if len(objects) == 0 {
		status.Objects = nil
		return false
	}
	base, err := json.Marshal(status)
	if err != nil {
		return true
	}
	size := len(base) + len(`,"statusOmitted":true`)
	order := make([]int, 0, len(objects))
	for i := range objects {
		if len(objects[i].status) > 0 {
			order = append(order, i)
		}
	}
	rank := map[string]int{edgev1alpha1.ObjectFailed: 0, edgev1alpha1.ObjectPending: 1, edgev1alpha1.ObjectApplied: 2, edgev1alpha1.ObjectReady: 3}
	sort.SliceStable(order, func(a, b int) bool {
		return rank[objects[order[a]].state.State] < rank[objects[order[b]].state.State]
	})
	for _, i := range order {
		raw, err := json.Marshal(objects[i].status)
		if err != nil {
			omitted = true
			continue
		}
		cost := len(raw) + len(`,"status":`)
		if size+cost > budget {
			omitted = true
			continue
		}
		size += cost
		status.Objects[i].Status = &runtime.RawExtension{Raw: raw}
	}
	return omitted
}

// statusEqual says whether two statuses are equal but for reportTime, as JSON.
func statusEqual(a, b *edgev1alpha1.AssemblageStatus) bool {
	norm := func(s *edgev1alpha1.AssemblageStatus) any {
		c := s.DeepCopy()
		c.ReportTime = nil
		data, err := json.Marshal(c)
		if err != nil {
			return nil
		}
		var out any
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(&out); err != nil {
			return nil
		}
		return out
	}
	return reflect.DeepEqual(norm(a), norm(b))
}
