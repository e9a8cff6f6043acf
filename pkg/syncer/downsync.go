package syncer

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

// waitingRetry is how soon an object waiting for its namespace or kind at the edge is tried again.
const waitingRetry = 2 * time.Second

// syncDownsync brings the edge object of one mailbox copy in step with the copy: applied while
// the copy is in the SyncerConfig's scope, deleted once it is confirmed gone.
func (s *Syncer) syncDownsync(ctx context.Context, src sourceKey) (time.Duration, error) {
	logger := klog.FromContext(ctx).WithValues("copy", src.String())
	ctx = klog.NewContext(ctx, logger)
	s.mu.Lock()
	w := s.downsync[src.groupResource()]
	var copyObj *unstructured.Unstructured
	inScope := false
	if w != nil {
		if !w.run.informer.HasSynced() {
			s.mu.Unlock()
			return time.Second, nil
		}
		inScope = s.inScope(w, src.Namespace, src.Name)
		if inScope {
			obj, exists, _ := w.run.informer.GetStore().GetByKey(cacheKey(src.Namespace, src.Name))
			if exists {
				copyObj = asUnstructured(obj).DeepCopy()
			}
		}
	}
	s.mu.Unlock()
	if copyObj == nil {
		return 0, s.removeAtEdge(ctx, src, w, inScope)
	}
	return s.applyAtEdge(ctx, src, w, copyObj)
}

func (k sourceKey) groupResource() schema.GroupResource {
	return schema.GroupResource{Group: k.Group, Resource: k.Resource}
}

func cacheKey(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// applyAtEdge applies the edge form of copyObj, unless the edge already has it.
func (s *Syncer) applyAtEdge(ctx context.Context, src sourceKey, w *downsyncWatch, copyObj *unstructured.Unstructured) (time.Duration, error) {
	logger := klog.FromContext(ctx)
	desired, ref, err := edgeForm(copyObj, src, s.own)
	if err != nil {
		// The copy itself is wrong (e.g. a malformed denatured object): retried when it changes.
		s.setObjectError(ctx, src, w, copyObj, err.Error())
		return 0, nil
	}
	run := s.ensureEdgeWatch(ctx, ref.GVR)
	s.mu.Lock()
	previous, hadTarget := s.targets[src]
	s.targets[src] = ref
	lastApplied := s.applied[src]
	s.mu.Unlock()
	if hadTarget && previous != ref {
		// A denatured object whose manifest now names another object: the old one goes.
		if err := s.deleteIfCreated(ctx, src, previous); err != nil {
			return 0, err
		}
	}

	live, err := s.getEdge(ctx, run, ref)
	if err != nil {
		return 0, fmt.Errorf("reading %s at the edge: %w", ref, err)
	}
	hash := desired.GetAnnotations()[s.own.hashAnnotation]
	createOnly := isCreateOnly(copyObj)
	drift := false
	if live != nil {
		managed, created := s.own.managedBy(live)
		if !managed || !created {
			setLabel(desired, s.own.label, ownerAdopted)
		}
		if createOnly && managed {
			s.clearObjectError(ctx, src, w, copyObj)
			s.markApplied(src, copyObj)
			s.queueStatus(src)
			return 0, nil
		}
		if managed && live.GetAnnotations()[s.own.hashAnnotation] == hash && containsAll(live.Object, desired.Object) {
			s.recordApplied(src, hash)
			s.clearObjectError(ctx, src, w, copyObj)
			s.markApplied(src, copyObj)
			return 0, nil
		}
		drift = managed && live.GetAnnotations()[s.own.hashAnnotation] == hash
	} else {
		if createOnly && copyObj.GetAnnotations()[edgev1alpha1.AnnotationCreatedAtEdge] != "" {
			return 0, nil // created once; deleted at the edge since, and left so
		}
		drift = lastApplied == hash
	}

	client := s.edge.Resource(ref.GVR).Namespace(ref.Namespace)
	applied, err := client.Apply(ctx, ref.Name, desired, metav1.ApplyOptions{FieldManager: s.own.fieldManager, Force: true})
	if err != nil {
		return s.applyFailed(ctx, src, w, copyObj, ref, err)
	}
	metricApplies.WithLabelValues("applied").Inc()
	s.recordApplied(src, hash)
	s.clearObjectError(ctx, src, w, copyObj)
	if createOnly {
		s.annotateCopy(ctx, src, w, copyObj, edgev1alpha1.AnnotationCreatedAtEdge, time.Now().UTC().Format(time.RFC3339))
	}
	s.markApplied(src, copyObj)
	switch {
	case drift && (live == nil || live.GetResourceVersion() != applied.GetResourceVersion()):
		what := "edited"
		if live == nil {
			what = "deleted"
		}
		logger.Info("repaired drift: the object was "+what+" at the edge and is put back as the mailbox has it", "object", ref.String())
		metricDriftRepairs.Inc()
		s.events.Eventf(applied, corev1.EventTypeWarning, "DriftRepaired",
			"%s was %s in this cluster; edge-syncer put it back as its mailbox copy has it (mark it %s: \"true\" in its workload workspace to allow local changes)",
			ref, what, edgev1alpha1.AnnotationCreateOnly)
	case live == nil:
		logger.V(1).Info("created", "object", ref.String())
	default:
		logger.V(1).Info("updated", "object", ref.String())
	}
	s.queueStatus(src)
	return 0, nil
}

// markApplied records that this version of the copy is at the edge: its projection hash goes
// into SyncerConfig status.applied with the next report, which the status summarizer compares
// with the copy's own. One report write covers every copy applied within reportCoalesce.
func (s *Syncer) markApplied(src sourceKey, copyObj *unstructured.Unstructured) {
	hash := copyObj.GetAnnotations()[edgev1alpha1.AnnotationProjectionHash]
	if hash == "" {
		return
	}
	s.setReported(s.appliedCopies, src, hash)
}

// setReported sets one entry of what the SyncerConfig's status reports (m is guarded by s.mu),
// and queues a report if it changed.
func (s *Syncer) setReported(m map[sourceKey]string, src sourceKey, value string) {
	s.mu.Lock()
	changed := m[src] != value
	m[src] = value
	s.mu.Unlock()
	if changed {
		s.reportQueue.AddAfter("report", reportCoalesce)
	}
}

// applyFailed sorts an apply error: an object waiting for its namespace or kind at the edge is
// tried again soon; one the edge refuses gets the reason on its copy and waits for the copy to
// change; anything else (the edge unreachable, a timeout) is retried with backoff.
func (s *Syncer) applyFailed(ctx context.Context, src sourceKey, w *downsyncWatch, copyObj *unstructured.Unstructured, ref objectRef, err error) (time.Duration, error) {
	if waitingFor := missingAtEdge(err, ref); waitingFor != "" {
		metricApplies.WithLabelValues("waiting").Inc()
		// Said on the copy only once it has waited a while: a namespace or CRD that comes with
		// it is normally there within seconds.
		if s.downsyncQueue.NumRequeues(src) > 5 {
			s.setObjectError(ctx, src, w, copyObj, fmt.Sprintf("waiting for %s at the edge", waitingFor))
		}
		return 0, fmt.Errorf("waiting for %s at the edge", waitingFor)
	}
	if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsForbidden(err) ||
		apierrors.IsRequestEntityTooLargeError(err) || apierrors.IsUnsupportedMediaType(err) || apierrors.IsMethodNotSupported(err) {
		metricApplies.WithLabelValues("refused").Inc()
		s.setObjectError(ctx, src, w, copyObj, fmt.Sprintf("the edge cluster refused %s: %v", ref, err))
		return 0, nil
	}
	metricApplies.WithLabelValues("error").Inc()
	return 0, fmt.Errorf("applying %s at the edge: %w", ref, err)
}

// missingAtEdge says what an apply error is waiting for: the object's namespace, or its kind.
func missingAtEdge(err error, ref objectRef) string {
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

// removeAtEdge deletes the edge object of a copy that is no longer in the mailbox or no longer in
// the SyncerConfig's scope. A copy that the scope still covers is deleted only once the mailbox
// confirms it is gone: a cache that missed events, or a center that is down, deletes nothing.
func (s *Syncer) removeAtEdge(ctx context.Context, src sourceKey, w *downsyncWatch, confirm bool) error {
	s.mu.Lock()
	ref, ok := s.targets[src]
	s.mu.Unlock()
	if !ok {
		s.forget(src)
		return nil
	}
	if confirm {
		_, err := s.mailbox.Resource(w.gvr).Namespace(src.Namespace).Get(ctx, src.Name, metav1.GetOptions{})
		switch {
		case err == nil:
			return fmt.Errorf("the mailbox still has %s; the cache is behind", src)
		case !apierrors.IsNotFound(err):
			return fmt.Errorf("confirming that %s left the mailbox: %w", src, err)
		}
	}
	if err := s.deleteIfCreated(ctx, src, ref); err != nil {
		return err
	}
	s.forget(src)
	return nil
}

// forget drops what the syncer remembers of a copy that is gone.
func (s *Syncer) forget(src sourceKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ref, ok := s.targets[src]; ok {
		delete(s.targets, src)
		s.stopUnneededEdgeWatch(ref.GVR)
	}
	delete(s.applied, src)
	delete(s.statusWritten, src)
	if _, ok := s.appliedCopies[src]; ok {
		delete(s.appliedCopies, src)
		s.reportQueue.AddAfter("report", reportCoalesce)
	}
	if _, ok := s.objectErrors[src]; ok {
		delete(s.objectErrors, src)
		s.reportQueue.AddAfter("report", reportCoalesce)
	}
}

// stopUnneededEdgeWatch stops the edge watch of gvr once no copy has an edge object of it, e.g.
// after its CRD left; the caller holds s.mu.
func (s *Syncer) stopUnneededEdgeWatch(gvr schema.GroupVersionResource) {
	for _, ref := range s.targets {
		if ref.GVR == gvr {
			return
		}
	}
	if run, ok := s.edgeWatches[gvr]; ok {
		run.stop()
		delete(s.edgeWatches, gvr)
	}
}

// deleteIfCreated deletes the edge object ref of the copy src if this syncer created it; an
// adopted object only loses the syncer's marks.
func (s *Syncer) deleteIfCreated(ctx context.Context, src sourceKey, ref objectRef) error {
	logger := klog.FromContext(ctx)
	client := s.edge.Resource(ref.GVR).Namespace(ref.Namespace)
	live, err := client.Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return fmt.Errorf("reading %s at the edge: %w", ref, err)
	}
	if live.GetAnnotations()[s.own.sourceAnnotation] != src.String() {
		return nil // not this copy's
	}
	managed, created := s.own.managedBy(live)
	if !managed {
		return nil
	}
	if !created {
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
			"labels":      map[string]any{s.own.label: nil},
			"annotations": map[string]any{s.own.sourceAnnotation: nil, s.own.hashAnnotation: nil},
		}})
		if _, err := client.Patch(ctx, ref.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("releasing %s at the edge: %w", ref, err)
		}
		logger.Info("released an object that existed before the syncer applied it", "object", ref.String())
		return nil
	}
	uid := live.GetUID()
	policy := metav1.DeletePropagationBackground
	err = client.Delete(ctx, ref.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}, PropagationPolicy: &policy})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting %s at the edge: %w", ref, err)
	}
	metricDeletes.Inc()
	logger.Info("deleted: its copy left the mailbox", "object", ref.String())
	return nil
}

// getEdge reads ref at the edge, from the watch's cache once it has listed.
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
	// Not managed (or not listed yet): it may still exist, e.g. created by someone else.
	live, err := s.edge.Resource(ref.GVR).Namespace(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return live, err
}

func (s *Syncer) recordApplied(src sourceKey, hash string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.applied[src] = hash
}

// setObjectError says on the copy, and in the SyncerConfig's status, why it is not at the edge.
func (s *Syncer) setObjectError(ctx context.Context, src sourceKey, w *downsyncWatch, copyObj *unstructured.Unstructured, msg string) {
	klog.FromContext(ctx).Info("cannot apply at the edge", "reason", msg)
	s.setReported(s.objectErrors, src, msg)
	s.annotateCopy(ctx, src, w, copyObj, edgev1alpha1.AnnotationSyncError, msg)
	s.statusQueue.Add(src)
}

// clearObjectError withdraws what setObjectError said.
func (s *Syncer) clearObjectError(ctx context.Context, src sourceKey, w *downsyncWatch, copyObj *unstructured.Unstructured) {
	s.mu.Lock()
	_, had := s.objectErrors[src]
	delete(s.objectErrors, src)
	s.mu.Unlock()
	if had {
		s.reportQueue.AddAfter("report", reportCoalesce)
		s.statusQueue.Add(src)
	}
	if copyObj.GetAnnotations()[edgev1alpha1.AnnotationSyncError] != "" {
		s.annotateCopy(ctx, src, w, copyObj, edgev1alpha1.AnnotationSyncError, "")
	}
}

// annotateCopy sets (or, with an empty value, removes) an annotation of the mailbox copy, unless
// it already has that value. A failure is logged: the annotation is a report, and the next
// change of the copy or the edge object tries again.
func (s *Syncer) annotateCopy(ctx context.Context, src sourceKey, w *downsyncWatch, copyObj *unstructured.Unstructured, key, value string) {
	if w == nil || copyObj.GetAnnotations()[key] == value {
		return
	}
	var v any = value
	if value == "" {
		v = nil
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: v}}})
	if _, err := s.mailbox.Resource(w.gvr).Namespace(src.Namespace).Patch(ctx, src.Name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: FieldManager}); err != nil && !apierrors.IsNotFound(err) {
		klog.FromContext(ctx).Info("could not annotate the mailbox copy", "annotation", key, "err", err.Error())
	}
}

func setLabel(u *unstructured.Unstructured, key, value string) {
	labels := u.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[key] = value
	u.SetLabels(labels)
}

// equalIgnoring reports whether a and b are equal apart from their top-level fields skip and the
// metadata that every write changes (resourceVersion, managedFields, generation).
func equalIgnoring(a, b map[string]any, skip ...string) bool {
	strip := func(m map[string]any) map[string]any {
		out := make(map[string]any, len(m))
		for k, v := range m {
			out[k] = v
		}
		for _, k := range skip {
			delete(out, k)
		}
		if md, ok := out["metadata"].(map[string]any); ok {
			c := make(map[string]any, len(md))
			for k, v := range md {
				c[k] = v
			}
			delete(c, "resourceVersion")
			delete(c, "managedFields")
			delete(c, "generation")
			out["metadata"] = c
		}
		return out
	}
	return reflect.DeepEqual(strip(a), strip(b))
}
