package syncer

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// ensureEdgeWatch watches the objects of gvr at the edge that carry this syncer's owner label,
// for drift and status. It is started when the first such object is applied or found, and
// stopped when the syncer manages none any more; for a kind the edge does not serve yet, it
// keeps trying until the kind is served.
func (s *Syncer) ensureEdgeWatch(ctx context.Context, gvr schema.GroupVersionResource) *informerRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	if run, ok := s.edgeWatches[gvr]; ok {
		return run
	}
	selector := labels.NewSelector()
	req, _ := labels.NewRequirement(s.marks.Label, selection.Exists, nil)
	selector = selector.Add(*req)
	inf := dynamicinformer.NewFilteredDynamicInformer(s.edge, gvr, "", 0, cache.Indexers{},
		func(o *metav1.ListOptions) { o.LabelSelector = selector.String() }).Informer()
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { s.edgeChanged(gvr, nil, asUnstructured(obj)) },
		UpdateFunc: func(old, obj any) {
			s.edgeChanged(gvr, asUnstructured(old), asUnstructured(obj))
		},
		DeleteFunc: func(obj any) { s.edgeChanged(gvr, asUnstructured(obj), nil) },
	})
	run := runInformer(ctx, inf)
	s.edgeWatches[gvr] = run
	return run
}

// edgeChanged queues what a change of a managed edge object calls for: its assemblage, when it
// is no longer as the assemblage has it (drift) or, for a CRD, when it may have been
// established; a status write, when its status changed or it came or went.
func (s *Syncer) edgeChanged(gvr schema.GroupVersionResource, old, obj *unstructured.Unstructured) {
	cur := obj
	if cur == nil {
		cur = old
	}
	if cur == nil {
		return
	}
	asm, key, ok := s.marks.Origin(cur)
	if !ok {
		return
	}
	if old != nil && obj != nil && old.GetResourceVersion() == obj.GetResourceVersion() {
		return // a resync
	}
	s.mu.Lock()
	st := s.states[asm]
	var d *desired
	if st != nil && st.plan != nil {
		d = st.plan.byKey[key]
	}
	if st != nil && obj == nil {
		st.goneAtEdge[key] = cur.GetUID()
	}
	s.mu.Unlock()
	if st == nil {
		return
	}
	statusChanged := old == nil || obj == nil || !equalIgnoring(old.Object, obj.Object, "metadata", "spec", "data", "stringData")
	resync := false
	switch {
	case obj == nil:
		resync = d != nil // repaired, or for a create-only object, reported
	case d != nil && d.obj != nil && d.createOnly && d.ref.sameObject(objectRefOf(gvr, obj)):
		resync = s.createOnlyDriftChanged(st, d, obj)
	case d != nil && d.obj != nil && d.ref.sameObject(objectRefOf(gvr, obj)):
		resync = !s.inSync(obj, d)
	}
	if gvr.GroupResource() == crdResource && statusChanged {
		resync = true // it may be established now
	}
	if resync {
		s.assemblageQueue.Add(asm)
	}
	if statusChanged {
		s.queueStatus(asm)
	}
}

// createOnlyDriftChanged says whether the create-only object d, now obj at the edge, drifted in
// a way not reported yet, or is back as created after drift that was: its assemblage's pass
// reports (or forgets) it. A change of its status alone calls for nothing.
func (s *Syncer) createOnlyDriftChanged(st *assemblageState, d *desired, obj *unstructured.Unstructured) bool {
	edited := createOnlyEdited(obj, d, s.marks)
	s.mu.Lock()
	reported := st.leftDrift[d.key]
	s.mu.Unlock()
	if !edited {
		return reported != ""
	}
	return driftFingerprint(obj.Object, d.obj.Object) != reported
}

func objectRefOf(gvr schema.GroupVersionResource, u *unstructured.Unstructured) objectRef {
	return objectRef{GVR: gvr, Namespace: u.GetNamespace(), Name: u.GetName()}
}

// sweepEdge finds every object at the edge that this syncer applied from an assemblage, by its
// marks, of every resource the edge serves: what the syncer knows before it acts, after a
// restart. Each is noted as its assemblage's, watched, and its assemblage queued, so that what
// left an assemblage meanwhile, or whose assemblage is gone, is deleted. Objects applied by
// syncers before assemblages are left alone.
func (s *Syncer) sweepEdge(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	lists, err := s.edgeDiscovery.ServerPreferredResources()
	if err != nil && len(lists) == 0 {
		return fmt.Errorf("discovering the edge cluster's resources: %w", err)
	}
	if err != nil {
		logger.Info("some of the edge cluster's resources could not be discovered; searching the others", "err", err.Error())
	}
	found, legacy := 0, 0
	queued := map[string]bool{}
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") || !slices.Contains(r.Verbs, "delete") {
				continue
			}
			gvr := gv.WithResource(r.Name)
			items, err := s.edge.Resource(gvr).List(ctx, metav1.ListOptions{LabelSelector: s.marks.Label})
			if err != nil {
				if apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) || apierrors.IsForbidden(err) {
					continue
				}
				return fmt.Errorf("listing %s at the edge: %w", gvr.GroupResource(), err)
			}
			watch := false
			for i := range items.Items {
				item := &items.Items[i]
				asm, key, ok := s.marks.Origin(item)
				if !ok {
					legacy++
					continue
				}
				found++
				watch = true
				s.mu.Lock()
				st := s.states[asm]
				if st == nil {
					st = newAssemblageState(asm)
					s.states[asm] = st
				}
				if _, known := st.owned[key]; !known {
					st.owned[key] = objectRefOf(gvr, item)
					st.appliedHash[key] = item.GetAnnotations()[s.marks.HashAnnotation]
				}
				s.mu.Unlock()
				queued[asm] = true
			}
			if watch {
				s.ensureEdgeWatch(ctx, gvr)
			}
		}
	}
	for asm := range queued {
		s.assemblageQueue.Add(asm)
	}
	logger.Info("searched the edge cluster for the objects this syncer applied", "fromAssemblages", found,
		"assemblages", len(queued), "fromCopiesBeforeAssemblages", legacy)
	return nil
}

// stopUnneededEdgeWatchesLocked stops the edge watches of resources of which the syncer manages
// no object any more, e.g. after their CRD left; the caller holds s.mu.
func (s *Syncer) stopUnneededEdgeWatchesLocked() {
	used := map[schema.GroupVersionResource]bool{}
	for _, st := range s.states {
		for _, ref := range st.owned {
			used[ref.GVR] = true
		}
		for _, o := range st.orphans {
			used[o.ref.GVR] = true
		}
		if st.plan != nil {
			for _, d := range st.plan.objects {
				if d.obj != nil {
					used[d.ref.GVR] = true
				}
			}
		}
	}
	for gvr, run := range s.edgeWatches {
		if !used[gvr] {
			run.stop()
			delete(s.edgeWatches, gvr)
		}
	}
}
