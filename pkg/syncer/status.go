package syncer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// ConditionEdgeApplied is the condition the syncer adds to a mailbox copy's status.conditions
// while the edge cluster refuses the object; its message says why.
const ConditionEdgeApplied = "EdgeApplied"

// statusless are the resources whose status the syncer does not copy back: a Namespace's or a
// CRD's status at the edge says nothing about the workload.
var statusless = map[string]bool{"namespaces": true, "customresourcedefinitions": true}

// syncStatus writes the status of a copy's edge object into the copy's status, when the mailbox
// serves the copy's status subresource and the two differ. Calls are coalesced by the status
// queue (one write per object per StatusCoalesce at most) and rate-limited by the mailbox
// client.
func (s *Syncer) syncStatus(ctx context.Context, src sourceKey) (time.Duration, error) {
	s.refreshHasStatus(src.groupResource())
	s.mu.Lock()
	w := s.downsync[src.groupResource()]
	ref, hasTarget := s.targets[src]
	errMsg := s.objectErrors[src]
	var copyObj *unstructured.Unstructured
	if w != nil && w.hasStatus && !statusless[src.Resource] {
		if obj, exists, _ := w.run.informer.GetStore().GetByKey(cacheKey(src.Namespace, src.Name)); exists {
			copyObj = asUnstructured(obj)
		}
	}
	var run *informerRun
	if hasTarget {
		run = s.edgeWatches[ref.GVR]
	}
	s.mu.Unlock()
	if copyObj == nil {
		return 0, nil
	}
	var edgeStatus map[string]any
	if run != nil {
		if !run.informer.HasSynced() {
			return time.Second, nil
		}
		if obj, exists, _ := run.informer.GetStore().GetByKey(cacheKey(ref.Namespace, ref.Name)); exists {
			edgeObj := asUnstructured(obj)
			edgeStatus, _, _ = unstructured.NestedMap(edgeObj.Object, "status")
			s.translateObservedGeneration(edgeStatus, edgeObj, copyObj, src)
		}
	}
	want := mailboxStatus(edgeStatus, errMsg)
	have, _, _ := unstructured.NestedMap(copyObj.Object, "status")
	if reflect.DeepEqual(normalizeJSON(have), normalizeJSON(want)) {
		return 0, nil
	}
	err := s.applyStatus(ctx, w.gvr, copyObj.GetKind(), src.Namespace, src.Name, want)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		metricStatusWrites.WithLabelValues("error").Inc()
		return 0, fmt.Errorf("writing the status of %s into the mailbox: %w", src, err)
	}
	metricStatusWrites.WithLabelValues("written").Inc()
	s.mu.Lock()
	s.statusWritten[src] = time.Now()
	s.mu.Unlock()
	klog.FromContext(ctx).V(2).Info("wrote status into the mailbox", "copy", src.String())
	return 0, nil
}

// queueStatus queues a status write of the copy src: at once when its status was not written
// within the last StatusCoalesce, else when that much time has passed since the last write.
func (s *Syncer) queueStatus(src sourceKey) {
	s.mu.Lock()
	last, ok := s.statusWritten[src]
	s.mu.Unlock()
	if wait := s.cfg.StatusCoalesce - time.Since(last); ok && wait > 0 {
		s.statusQueue.AddAfter(src, wait)
		return
	}
	s.statusQueue.Add(src)
}

// translateObservedGeneration rewrites status.observedGeneration, which counts the edge object's
// generations, into the copy's: the copy's generation when the edge object holds what the copy
// says and its controller has observed that, else one less. Readiness computed on the copy
// (kstatus compares observedGeneration with metadata.generation) then means what it means at the
// edge.
func (s *Syncer) translateObservedGeneration(status map[string]any, edgeObj, copyObj *unstructured.Unstructured, src sourceKey) {
	observed, found, err := unstructured.NestedInt64(status, "observedGeneration")
	if !found || err != nil {
		return
	}
	current := observed >= edgeObj.GetGeneration()
	if current && !isCreateOnly(copyObj) {
		desired, _, err := edgeForm(copyObj, src, s.own)
		current = err == nil && desired.GetAnnotations()[s.own.hashAnnotation] == edgeObj.GetAnnotations()[s.own.hashAnnotation]
	}
	generation := copyObj.GetGeneration()
	if !current {
		generation--
	}
	status["observedGeneration"] = generation
}

// statusRecheck is how often the syncer looks again whether the mailbox serves the status of a
// resource whose status it found not served.
const statusRecheck = 10 * time.Second

// refreshHasStatus finds out again, at most every statusRecheck, whether the mailbox serves the
// status subresource of a resource that it did not serve when last looked at.
func (s *Syncer) refreshHasStatus(gr schema.GroupResource) {
	s.mu.Lock()
	w := s.downsync[gr]
	if w == nil || w.hasStatus || time.Since(w.statusChecked) < statusRecheck {
		s.mu.Unlock()
		return
	}
	w.statusChecked = time.Now()
	gv := w.gvr.GroupVersion()
	s.mu.Unlock()
	list, err := s.mailboxDiscovery.ServerResourcesForGroupVersion(gv.String())
	if err != nil {
		return
	}
	for _, r := range list.APIResources {
		if r.Name == gr.Resource+"/status" {
			s.mu.Lock()
			w.hasStatus = true
			s.mu.Unlock()
		}
	}
}

// applyStatus server-side-applies status to the status subresource of a mailbox object.
func (s *Syncer) applyStatus(ctx context.Context, gvr schema.GroupVersionResource, kind, namespace, name string, status map[string]any) error {
	metadata := map[string]any{"name": name}
	if namespace != "" {
		metadata["namespace"] = namespace
	}
	data, err := json.Marshal(map[string]any{
		"apiVersion": gvr.GroupVersion().String(),
		"kind":       kind,
		"metadata":   metadata,
		"status":     status,
	})
	if err != nil {
		return err
	}
	force := true
	_, err = s.mailbox.Resource(gvr).Namespace(namespace).Patch(ctx, name, types.ApplyPatchType, data,
		metav1.PatchOptions{FieldManager: FieldManager, Force: &force}, "status")
	return err
}

// mailboxStatus is the status a mailbox copy should have: that of its edge object, plus, while the
// edge refuses the object, an EdgeApplied condition saying why.
func mailboxStatus(edgeStatus map[string]any, errMsg string) map[string]any {
	out := map[string]any{}
	for k, v := range edgeStatus {
		out[k] = v
	}
	if errMsg == "" {
		return out
	}
	var conditions []any
	if list, ok := out["conditions"].([]any); ok {
		for _, c := range list {
			if m, ok := c.(map[string]any); ok && m["type"] == ConditionEdgeApplied {
				continue
			}
			conditions = append(conditions, c)
		}
	}
	conditions = append(conditions, map[string]any{
		"type":    ConditionEdgeApplied,
		"status":  "False",
		"reason":  "EdgeRefused",
		"message": errMsg,
	})
	out["conditions"] = conditions
	return out
}

// normalizeJSON returns v after a JSON round trip, numbers kept as their text, so that numbers of
// different Go types but equal value compare equal, and large integers stay exact.
func normalizeJSON(v map[string]any) any {
	if len(v) == 0 {
		return nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	_ = dec.Decode(&out)
	return out
}
