package syncer

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// applyOne brings one object of a version to the edge, unless the edge has it as desired
// already. It returns the object's outcome; what it waits for at the edge (its namespace or
// kind), if anything; and an error to retry with backoff when the edge did not answer.
func (s *Syncer) applyOne(ctx context.Context, st *assemblageState, d *desired) (result, string, error) {
	logger := klog.FromContext(ctx).WithValues("object", d.ref.String())
	run := s.ensureEdgeWatch(ctx, d.ref.GVR)
	live, err := s.getEdge(ctx, run, d.ref)
	if err != nil {
		metricApplies.WithLabelValues("error").Inc()
		return result{outcome: outcomePending, reason: "reading it at the edge: " + err.Error()}, "",
			fmt.Errorf("reading %s at the edge: %w", d.ref, err)
	}
	s.mu.Lock()
	createdAt, createdBefore := st.createdAt[d.key]
	appliedBefore := st.wasApplied(d.key, d.hash)
	s.mu.Unlock()

	dec := decideApply(live, d, s.marks, createdBefore, appliedBefore)
	switch dec.action {
	case actionNone:
		if dec.setCreated {
			createdAt = live.GetCreationTimestamp()
		}
		if d.createOnly {
			s.noteCreateOnlyDrift(ctx, st, d, live, dec.drift)
		}
		if dec.foreign {
			s.mu.Lock()
			if dec.setCreated {
				st.createdAt[d.key] = createdAt
			}
			s.mu.Unlock()
			return result{outcome: outcomeApplied, uid: live.GetUID(), reason: foreignCreateOnlyReason}, "", nil
		}
		s.noteApplied(st, d, createdAt, dec.setCreated)
		return result{outcome: outcomeApplied, uid: live.GetUID()}, "", nil
	case actionCreatedOnce:
		s.noteCreateOnlyDrift(ctx, st, d, nil, dec.drift)
		return result{outcome: outcomeCreatedOnce, reason: createdOnceReason(createdAt)}, "", nil
	}
	owner, drift := dec.owner, dec.drift

	body := withLabel(d.obj, s.marks.Label, owner)
	applied, err := s.edge.Resource(d.ref.GVR).Namespace(d.ref.Namespace).Apply(ctx, d.ref.Name, body,
		metav1.ApplyOptions{FieldManager: s.marks.FieldManager, Force: true})
	if err != nil {
		return s.applyFailed(ctx, st, d, err)
	}
	metricApplies.WithLabelValues("applied").Inc()
	if d.createOnly && live == nil {
		createdAt = metav1.NewTime(time.Now().UTC().Truncate(time.Second))
		createdBefore = false
	}
	s.mu.Lock()
	// An apply that changed nothing (the watch had not caught up with the syncer's own last
	// write) repaired nothing either.
	changed := live == nil || (live.GetResourceVersion() != applied.GetResourceVersion() && st.appliedRV[d.key] != applied.GetResourceVersion())
	st.appliedRV[d.key] = applied.GetResourceVersion()
	s.mu.Unlock()
	s.noteApplied(st, d, createdAt, d.createOnly && !createdBefore)
	switch {
	case drift != "" && changed:
		var paths []string
		if live != nil {
			paths = driftPaths(live.Object, body.Object)
		}
		s.mu.Lock()
		e := driftEntry(d, st.planVersion(), driftChange(drift), true, paths, time.Now())
		st.drift = recordDrift(st.drift, e)
		s.mu.Unlock()
		logger.Info("repaired drift: the object was "+drift+" at the edge and is put back as its assemblage has it",
			"assemblage", st.name, "paths", e.Paths, "pathCount", e.PathCount)
		metricDriftRepairs.WithLabelValues(drift).Inc()
		s.events.Eventf(applied, corev1.EventTypeWarning, "DriftRepaired",
			"%s was %s in this cluster%s; edge-syncer put it back as its assemblage %s has it (mark it %s: \"true\" in its workload workspace to allow local changes)",
			d.ref, drift, pathsText(e), st.name, edgev1alpha1.AnnotationCreateOnly)
	case live == nil:
		logger.V(1).Info("created")
	case owner == transport.OwnerAdopted && !hasOwnerLabel(live, s.marks):
		logger.Info("adopted an object that was at the edge before")
	default:
		logger.V(2).Info("updated")
	}
	return result{outcome: outcomeApplied, uid: applied.GetUID()}, "", nil
}

// action is what the syncer does about one object of a version.
type action int

const (
	// actionApply: apply it.
	actionApply action = iota
	// actionNone: the edge has it as wanted (or it is create-only and there).
	actionNone
	// actionCreatedOnce: it is create-only, was created once and deleted at the edge since:
	// it is not created again.
	actionCreatedOnce
)

// applyDecision is what decideApply decided.
type applyDecision struct {
	action action
	// owner is the owner label to apply: created, or adopted for an object that was at the
	// edge before the syncer first applied it (or whose creator is no longer known).
	owner string
	// drift says how the edge object left what the syncer applied: "edited" or "deleted"; ""
	// when it did not (a new object, or a new version of it). For a create-only object it goes
	// with actionNone (edited) or actionCreatedOnce (deleted): reported, not repaired.
	drift string
	// setCreated, with actionNone: a create-only object found at the edge whose creation the
	// syncer had not recorded; its creation time is recorded.
	setCreated bool
	// foreign, with actionNone: a create-only object that was at the edge without the syncer's
	// marks; it is left as it is, unmarked.
	foreign bool
}

// foreignCreateOnlyReason says why a create-only object is left as someone else made it.
const foreignCreateOnlyReason = "create-only: it was at the edge already, made by someone else; it is left as it is"

// decideApply decides what to do about the object d of a version, given the edge object live
// (nil if absent), whether a create-only object was created before (createdBefore) and whether
// the syncer applied d's content before (appliedBefore).
func decideApply(live *unstructured.Unstructured, d *desired, m transport.Marks, createdBefore, appliedBefore bool) applyDecision {
	dec := applyDecision{action: actionApply, owner: transport.OwnerCreated}
	if live == nil {
		switch {
		case d.createOnly && createdBefore:
			dec.action, dec.drift = actionCreatedOnce, "deleted"
		case appliedBefore:
			dec.drift = "deleted"
		}
		return dec
	}
	managed, created := m.ManagedBy(live)
	if !created {
		dec.owner = transport.OwnerAdopted
	}
	switch {
	case d.createOnly:
		dec.action, dec.setCreated, dec.foreign = actionNone, !createdBefore, !managed
		if createOnlyEdited(live, d, m) {
			dec.drift = "edited"
		}
	case managed && hasOwnerLabel(live, m) && live.GetAnnotations()[m.HashAnnotation] == d.hash && containsAll(live.Object, d.obj.Object):
		dec.action = actionNone
	case managed && live.GetAnnotations()[m.HashAnnotation] == d.hash:
		dec.drift = "edited"
	}
	return dec
}

// createOnlyEdited says whether the create-only object d, as the syncer created it, was edited
// at the edge since: the edge object carries the syncer's marks and the hash of d (the workload
// author has not changed it since), and a field d sets differs there.
func createOnlyEdited(live *unstructured.Unstructured, d *desired, m transport.Marks) bool {
	if live == nil || d.obj == nil {
		return false
	}
	managed, _ := m.ManagedBy(live)
	return managed && live.GetAnnotations()[m.HashAnnotation] == d.hash && !containsAll(live.Object, d.obj.Object)
}

// noteCreateOnlyDrift reports drift of the create-only object d ("edited" with the edge object
// live, or "deleted"), once per change of it, and leaves the object as the edge has it; with no
// drift, it forgets what it reported, so that the next change is reported again.
func (s *Syncer) noteCreateOnlyDrift(ctx context.Context, st *assemblageState, d *desired, live *unstructured.Unstructured, drift string) {
	if drift == "" {
		s.mu.Lock()
		st.clearLeftDriftLocked(d.key)
		s.mu.Unlock()
		return
	}
	var paths []string
	var have map[string]any
	if live != nil {
		paths, have = driftPaths(live.Object, d.obj.Object), live.Object
	}
	fingerprint := driftFingerprint(have, d.obj.Object)
	s.mu.Lock()
	e, isNew := st.noteLeftDriftLocked(d, driftChange(drift), paths, fingerprint, time.Now())
	s.mu.Unlock()
	if !isNew {
		return
	}
	metricDriftLeft.WithLabelValues(drift).Inc()
	klog.FromContext(ctx).Info("drift of a create-only object: it was "+drift+" at the edge and is left so",
		"object", d.ref.String(), "assemblage", st.name, "paths", e.Paths, "pathCount", e.PathCount)
}

// pathsText names an entry's paths for an Event: " (data.mode, ...)", or "" for none.
func pathsText(e edgev1alpha1.DriftEntry) string {
	if len(e.Paths) == 0 {
		return ""
	}
	text := " (" + strings.Join(e.Paths, ", ")
	if more := int(e.PathCount) - len(e.Paths); more > 0 {
		text += fmt.Sprintf(" and %d more", more)
	}
	return text + ")"
}

// noteApplied records that the object d is at the edge as its plan has it. For a create-only
// object, setCreated records createdAt as its creation.
func (s *Syncer) noteApplied(st *assemblageState, d *desired, createdAt metav1.Time, setCreated bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if prev, ok := st.owned[d.key]; ok && !prev.sameObject(d.ref) {
		st.orphans = append(st.orphans, orphan{key: d.key, ref: prev})
	}
	st.owned[d.key] = d.ref
	st.appliedHash[d.key] = d.hash
	if setCreated {
		st.createdAt[d.key] = createdAt
	}
}

// inSync says whether the edge object live is as d has it: the hash of what the syncer applied
// is d's, every field d sets has its value there, and the owner label is there.
func (s *Syncer) inSync(live *unstructured.Unstructured, d *desired) bool {
	return hasOwnerLabel(live, s.marks) && live.GetAnnotations()[s.marks.HashAnnotation] == d.hash && containsAll(live.Object, d.obj.Object)
}

func hasOwnerLabel(live *unstructured.Unstructured, m transport.Marks) bool {
	switch live.GetLabels()[m.Label] {
	case transport.OwnerCreated, transport.OwnerAdopted:
		return true
	}
	return false
}

// createdOnceReason says why a create-only object missing at the edge is not created.
func createdOnceReason(createdAt metav1.Time) string {
	return fmt.Sprintf("create-only: created at the edge at %s and deleted there since; it is not created again",
		createdAt.UTC().Format(time.RFC3339))
}

// applyFailed sorts an apply error: an object waiting for its namespace or kind at the edge is
// Pending and tried again with backoff; one the edge refuses is Failed and not tried again at
// this version; anything else (the edge unreachable, a timeout) is Pending and retried with
// backoff.
func (s *Syncer) applyFailed(ctx context.Context, st *assemblageState, d *desired, err error) (result, string, error) {
	if waitingFor := missingAtEdge(err, d.ref); waitingFor != "" {
		metricApplies.WithLabelValues("waiting").Inc()
		if reason := s.unservedKind(ctx, st, d); reason != "" {
			return result{outcome: outcomePending, reason: reason, unserved: true}, waitingFor, nil
		}
		return result{outcome: outcomePending, reason: "waiting for " + waitingFor + " at the edge"}, waitingFor, nil
	}
	if refusedByEdge(err) {
		metricApplies.WithLabelValues("refused").Inc()
		klog.FromContext(ctx).Info("the edge cluster refused an object", "object", d.ref.String(), "err", err.Error())
		return result{outcome: outcomeFailed, reason: "the edge cluster refused it: " + err.Error()}, "", nil
	}
	metricApplies.WithLabelValues("error").Inc()
	return result{outcome: outcomePending, reason: "applying it at the edge: " + err.Error()}, "",
		fmt.Errorf("applying %s at the edge: %w", d.ref, err)
}

// refusedByEdge says whether an apply error is the edge's verdict on the object, which trying
// again does not change. A field of the wrong type for the edge's schema is one, though the edge
// answers it as an internal error.
func refusedByEdge(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsForbidden(err) ||
		apierrors.IsRequestEntityTooLargeError(err) || apierrors.IsUnsupportedMediaType(err) ||
		apierrors.IsMethodNotSupported(err) ||
		(apierrors.IsInternalError(err) && strings.Contains(err.Error(), "failed to create typed patch object"))
}

// missingAtEdge says what an apply error is waiting for: the object's namespace (missing or
// being deleted), or its kind; "" for other errors.
func missingAtEdge(err error, ref objectRef) string {
	if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		return "namespace " + ref.Namespace + " to finish terminating"
	}
	if !apierrors.IsNotFound(err) {
		return ""
	}
	if status, ok := err.(apierrors.APIStatus); ok {
		if d := status.Status().Details; d != nil && d.Kind == "namespaces" {
			return "namespace " + d.Name
		}
	}
	if ref.Namespace != "" {
		return fmt.Sprintf("namespace %s or the kind %s", ref.Namespace, ref.GVR.GroupResource())
	}
	return "the kind " + ref.GVR.GroupResource().String()
}

// unservedKind says, for an object the edge answered 404, whether that is because the edge does
// not serve its kind while the assemblage carries no CRD that would define it: then nothing but
// a person will bring the kind, and the reason says what to do. "" when the kind is served (the
// namespace is what is missing), when the assemblage brings its CRD, or when discovery fails.
func (s *Syncer) unservedKind(ctx context.Context, st *assemblageState, d *desired) string {
	gr := d.ref.GVR.GroupResource()
	s.mu.Lock()
	var brought bool
	if st.plan != nil {
		for _, o := range st.plan.inStage(stageCRDs) {
			if o.obj != nil && o.ref.Name == gr.String() {
				brought = true
			}
		}
	}
	s.mu.Unlock()
	if brought || gr.Group == "" {
		return ""
	}
	list, err := s.edgeDiscovery.ServerResourcesForGroupVersion(d.ref.GVR.GroupVersion().String())
	switch {
	case err != nil && !apierrors.IsNotFound(err):
		klog.FromContext(ctx).V(2).Info("discovery of the edge failed; the kind may or may not be served", "groupVersion", d.ref.GVR.GroupVersion().String(), "err", err.Error())
		return ""
	case err == nil:
		for _, r := range list.APIResources {
			if r.Name == d.ref.GVR.Resource {
				return ""
			}
		}
	}
	return fmt.Sprintf("the edge cluster does not serve %s (version %s), and the placement delivers no CustomResourceDefinition for it: "+
		"add the CRD %s to the placement's downsync, or install it at the edge; the syncer tries again until the kind is served",
		gr, d.ref.GVR.Version, gr)
}

// crdEstablished reads a CRD's conditions at the edge: whether it is established, or, when the
// edge did not accept its names, why.
func crdEstablished(crd *unstructured.Unstructured) (established bool, failure string) {
	conditions, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conditions {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		switch m["type"] {
		case "Established":
			if m["status"] == "True" {
				established = true
			}
		case "NamesAccepted":
			if m["status"] == "False" {
				failure = fmt.Sprintf("the edge cluster did not accept the CRD's names: %v", m["message"])
			}
		}
	}
	return established, failure
}

// getEdge reads ref at the edge, from the watch's cache once it has listed, else from the edge.
func (s *Syncer) getEdge(ctx context.Context, run *informerRun, ref objectRef) (*unstructured.Unstructured, error) {
	if run.informer.HasSynced() {
		obj, exists, err := run.informer.GetStore().GetByKey(cacheKey(ref.Namespace, ref.Name))
		if err != nil {
			return nil, err
		}
		if exists {
			return asUnstructured(obj), nil
		}
	}
	// Not managed (or not listed yet): it may still exist, e.g. made by someone else.
	live, err := s.edge.Resource(ref.GVR).Namespace(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return live, err
}

func cacheKey(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}
