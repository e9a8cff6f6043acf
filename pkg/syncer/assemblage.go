package syncer

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

const (
	// crdWait is how long the objects of a version wait for its CRDs to be established at the
	// edge before they are applied anyway (and wait for their kinds one by one).
	crdWait = 30 * time.Second
	// crdRecheck is how soon the syncer looks again at CRDs being established.
	crdRecheck = time.Second
)

// syncAssemblage brings the edge in step with one assemblage of the mailbox: its version applied
// as a unit, staged, and what left it deleted; or, when it is gone from the mailbox, what it
// carried deleted once the center confirms.
func (s *Syncer) syncAssemblage(ctx context.Context, name string) (time.Duration, error) {
	logger := klog.FromContext(ctx).WithValues("assemblage", name)
	ctx = klog.NewContext(ctx, logger)
	a := s.cachedAssemblage(name)
	if a == nil {
		return s.removeAssemblage(ctx, name)
	}
	st := s.stateFor(a)
	p, err := s.planOf(a, st)
	if err != nil {
		var r *transport.RefusedError
		if !errors.As(err, &r) {
			r = &transport.RefusedError{Reason: transport.RefusedCorrupt, Message: err.Error()}
		}
		s.refuse(ctx, st, a, r)
		s.mu.Lock()
		p = st.plan
		s.mu.Unlock()
		if p == nil {
			return 0, nil
		}
		// The edge keeps the last good version, repaired if it drifts.
	} else {
		s.mu.Lock()
		fresh := st.plan == nil || st.plan.version != p.version
		wasRefused := st.refusal != nil
		st.refusal, st.refusedVersion = nil, ""
		st.beginVersion(p, time.Now())
		s.mu.Unlock()
		if fresh {
			logger.Info("applying a version", "version", p.version, "objects", len(p.objects), "shared", len(p.shared))
		}
		if wasRefused {
			s.queueStatus(name)
		}
	}

	s.mu.Lock()
	pendingBefore, _ := st.tally()
	s.mu.Unlock()
	retry, err := s.applyStages(ctx, st, p)
	if err == nil && retry == 0 && p.version == a.Spec.Version {
		err = s.prune(ctx, st, p)
	}
	s.mu.Lock()
	completed := false
	if err == nil && retry == 0 {
		if pending, failed := st.tally(); pending == 0 && failed == 0 && st.appliedVersion != p.version {
			st.appliedVersion, completed = p.version, true
		}
	}
	if st.passed != p.version {
		st.passed, st.passedAt = p.version, time.Now()
	}
	pendingAfter, _ := st.tally()
	s.mu.Unlock()
	if completed {
		logger.Info("applied a version", "version", p.version, "objects", len(p.objects))
	}
	s.queueStatus(name)
	if err != nil && pendingAfter < pendingBefore {
		err = progressed{err}
	}
	return retry, err
}

// progressed is an error of an attempt that nevertheless brought objects to the edge: the
// retry comes after the shortest backoff, not a longer one. A busy edge (429, timeouts) turns
// some requests away in every round; the backoff grows only while rounds bring nothing.
type progressed struct{ error }

func (p progressed) Unwrap() error { return p.error }

// stateFor returns the syncer's state of the assemblage a, made on first sight from what a's
// status says.
func (s *Syncer) stateFor(a *edgev1alpha1.Assemblage) *assemblageState {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.states[a.Name]
	if st == nil {
		st = newAssemblageState(a.Name)
		s.states[a.Name] = st
	}
	switch {
	case st.uid == "":
		st.restore(a)
	case st.uid != a.UID:
		// A new object of the same name: its status starts empty. What the syncer applied from
		// the old one stays known, as the candidates for deletion.
		st.uid = a.UID
		st.written = a.Status.DeepCopy()
		st.writtenAt = time.Time{}
		st.leftDrift = map[transport.Key]string{}
		st.restoreDrift(a.Status.Drift)
	}
	return st
}

// planOf returns the plan of a's current version, decoded and made anew only when the version
// or the shared objects changed.
func (s *Syncer) planOf(a *edgev1alpha1.Assemblage, st *assemblageState) (*plan, error) {
	s.mu.Lock()
	cached := st.plan
	s.mu.Unlock()
	if cached != nil && cached.version == a.Spec.Version && sameShared(cached, a.Spec.Shared) {
		return cached, nil
	}
	doc, err := transport.DecodeAssemblage(a, s.partsOf(a.Name))
	if err != nil {
		return nil, err
	}
	unopened := openSealed(doc, s.keyPairs()...)
	p := newPlan(a.Name, a.Spec.Version, doc, a.Spec.Shared, s.marks)
	p.refuse(unopened)
	return p, nil
}

// sameShared says whether p was made with the shared objects given.
func sameShared(p *plan, shared []edgev1alpha1.SharedObject) bool {
	want := map[transport.Key]string{}
	for _, sh := range shared {
		if key, ok := transport.ParseKey(sh.Object); ok {
			if _, dup := want[key]; !dup {
				want[key] = sh.Assemblage
			}
		}
	}
	return reflect.DeepEqual(want, p.shared)
}

// refuse records that the assemblage's current version cannot be read.
func (s *Syncer) refuse(ctx context.Context, st *assemblageState, a *edgev1alpha1.Assemblage, r *transport.RefusedError) {
	s.mu.Lock()
	changed := st.refusal == nil || st.refusedVersion != a.Spec.Version || st.refusal.Message != r.Message
	st.refusal, st.refusedVersion = r, a.Spec.Version
	kept := st.appliedVersion
	s.mu.Unlock()
	if changed {
		klog.FromContext(ctx).Info("refused a version of the assemblage; the edge keeps the last good one",
			"version", a.Spec.Version, "reason", r.Reason, "message", r.Message, "kept", kept)
		metricRefusals.WithLabelValues(r.Reason).Inc()
		s.queueStatus(st.name)
	}
}

// applyStages applies the plan's objects stage by stage: CRDs, then, once they are established
// (or crdWait has passed), Namespaces, then the rest. It returns an error, to retry with
// backoff, while objects wait for their namespace or kind or the edge does not answer, or a
// duration after which to look again at CRDs being established.
func (s *Syncer) applyStages(ctx context.Context, st *assemblageState, p *plan) (time.Duration, error) {
	var waiting []string
	var errs []error
	for _, stg := range stages {
		objs := p.inStage(stg)
		if len(objs) == 0 {
			continue
		}
		w, e := s.applyAll(ctx, st, objs)
		waiting = append(waiting, w...)
		errs = append(errs, e...)
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		if stg != stageCRDs {
			continue
		}
		establishing := s.crdsEstablishing(ctx, st, objs)
		s.mu.Lock()
		since := st.since
		s.mu.Unlock()
		if len(establishing) > 0 && time.Since(since) < crdWait {
			s.markWaiting(st, p, "waiting for the CRDs "+strings.Join(establishing, ", ")+" to be established at the edge")
			if len(errs) > 0 {
				return 0, utilerrors.NewAggregate(errs)
			}
			return crdRecheck, nil
		}
	}
	if len(errs) > 0 {
		return 0, utilerrors.NewAggregate(errs)
	}
	if len(waiting) > 0 {
		sort.Strings(waiting)
		return 0, fmt.Errorf("waiting at the edge for %s", strings.Join(waiting, "; "))
	}
	return 0, nil
}

// markWaiting gives the pending objects after the CRD stage a reason.
func (s *Syncer) markWaiting(st *assemblageState, p *plan, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st.plan != p {
		return
	}
	for _, d := range p.objects {
		if d.stage == stageCRDs {
			continue
		}
		if r := st.results[d.key]; r == nil || r.outcome == outcomePending {
			st.setResult(d.key, result{outcome: outcomePending, reason: reason})
		}
	}
}

// applyAll applies objs, at most Config.Workers at once over the whole syncer, and records their
// outcomes. Objects that cannot be applied as they are, or that the edge refused at this version
// already, are not tried again. It returns what objects wait for and the errors to retry.
func (s *Syncer) applyAll(ctx context.Context, st *assemblageState, objs []*desired) (waiting []string, errs []error) {
	type outcomeOf struct {
		r       result
		waiting string
		err     error
		done    bool
	}
	out := make([]outcomeOf, len(objs))
	finished := make(chan struct{}, len(objs))
	started := 0
	for i, d := range objs {
		s.mu.Lock()
		cur := st.results[d.key]
		s.mu.Unlock()
		if d.invalid != "" {
			out[i] = outcomeOf{r: result{outcome: outcomeFailed, reason: "it cannot be applied: " + d.invalid}, done: true}
			continue
		}
		if cur != nil && cur.outcome == outcomeFailed {
			continue
		}
		select {
		case s.applySlots <- struct{}{}:
		case <-ctx.Done():
			errs = append(errs, ctx.Err())
			for ; started > 0; started-- {
				<-finished
			}
			return nil, errs
		}
		started++
		go func(i int, d *desired) {
			defer func() {
				<-s.applySlots
				finished <- struct{}{}
			}()
			r, w, err := s.applyOne(ctx, st, d)
			out[i] = outcomeOf{r: r, waiting: w, err: err, done: true}
		}(i, d)
	}
	for ; started > 0; started-- {
		<-finished
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, o := range out {
		if !o.done {
			continue
		}
		if st.plan != nil && st.plan.byKey[objs[i].key] == objs[i] {
			st.setResult(objs[i].key, o.r)
		}
		if o.waiting != "" {
			waiting = append(waiting, o.waiting)
		}
		if o.err != nil {
			errs = append(errs, o.err)
		}
	}
	return waiting, errs
}

// crdsEstablishing returns the names of the CRDs among objs, applied at this version, that the
// edge has not established yet. A CRD whose names the edge did not accept is Failed.
func (s *Syncer) crdsEstablishing(ctx context.Context, st *assemblageState, objs []*desired) []string {
	var out []string
	for _, d := range objs {
		s.mu.Lock()
		r := st.results[d.key]
		s.mu.Unlock()
		if r == nil || r.outcome != outcomeApplied {
			continue
		}
		run := s.ensureEdgeWatch(ctx, d.ref.GVR)
		live, err := s.getEdge(ctx, run, d.ref)
		if err != nil || live == nil {
			out = append(out, d.ref.Name)
			continue
		}
		established, failure := crdEstablished(live)
		switch {
		case failure != "":
			s.mu.Lock()
			st.setResult(d.key, result{outcome: outcomeFailed, reason: failure, uid: live.GetUID()})
			s.mu.Unlock()
		case !established:
			out = append(out, d.ref.Name)
		}
	}
	return out
}

// removeAssemblage deletes at the edge what a removed assemblage carried, once the center
// confirms that it is gone: what this syncer created and no other assemblage of the mailbox
// carries. Objects it adopted only lose its marks.
func (s *Syncer) removeAssemblage(ctx context.Context, name string) (time.Duration, error) {
	logger := klog.FromContext(ctx)
	s.mu.Lock()
	st := s.states[name]
	var owned map[transport.Key]objectRef
	if st != nil {
		owned = make(map[transport.Key]objectRef, len(st.owned))
		for k, v := range st.owned {
			owned[k] = v
		}
	}
	s.mu.Unlock()
	if st == nil {
		return 0, nil
	}
	if len(owned) > 0 {
		_, err := s.mailboxEdge.getAssemblage(ctx, name)
		switch {
		case err == nil:
			return 0, fmt.Errorf("the center still has assemblage %s; the cache is behind", name)
		case !transport.Gone(err, assemblagesGR, name):
			return 0, fmt.Errorf("confirming with the center that assemblage %s is gone, before deleting what it carried: %w", name, err)
		}
		logger.Info("the assemblage left the mailbox: deleting at the edge what it carried", "objects", len(owned))
		var errs []error
		for key, ref := range owned {
			if !s.carriedElsewhere(key, name) {
				if err := s.deleteIfCreated(ctx, name, key, ref); err != nil {
					errs = append(errs, err)
					continue
				}
			}
			s.mu.Lock()
			delete(st.owned, key)
			s.mu.Unlock()
		}
		if len(errs) > 0 {
			return 0, utilerrors.NewAggregate(errs)
		}
	}
	s.mu.Lock()
	if s.states[name] == st && s.cachedAssemblage(name) == nil {
		delete(s.states, name)
	}
	s.stopUnneededEdgeWatchesLocked()
	s.mu.Unlock()
	for _, sharer := range s.sharingFrom(name) {
		s.queueStatus(sharer)
	}
	return 0, nil
}
