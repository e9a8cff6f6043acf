package syncer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// upsyncWatch watches one edge resource for objects to up-sync, and the objects of that resource
// already up-synced into the mailbox.
type upsyncWatch struct {
	gvr        schema.GroupVersionResource // at the edge
	mailboxGVR schema.GroupVersionResource
	namespaced bool
	rules      []edgev1alpha1.UpsyncSet
	hasStatus  bool
	edge       *informerRun
	mailbox    *informerRun
}

func (w *upsyncWatch) stopAll() {
	w.edge.stop()
	w.mailbox.stop()
}

// covers says whether one of w's rules covers the object.
func (w *upsyncWatch) covers(namespace, name string) bool {
	for i := range w.rules {
		if w.rules[i].MatchesObject(namespace, name) {
			return true
		}
	}
	return false
}

// applyUpsyncRules starts and stops the up-sync watches so that they match rules, and returns
// what is wrong with the rules. statusResources are the mailbox resources that serve status.
func (s *Syncer) applyUpsyncRules(ctx context.Context, rules []edgev1alpha1.UpsyncSet, statusResources map[schema.GroupResource]bool) []string {
	var problems []string
	wanted := map[schema.GroupVersionResource]*upsyncWatch{}
	if len(rules) > 0 {
		edgeLists, err := s.edgeDiscovery.ServerPreferredResources()
		if err != nil && len(edgeLists) == 0 {
			return []string{fmt.Sprintf("upsync: discovering the edge cluster's resources: %v", err)}
		}
		mailboxLists, err := s.mailboxDiscovery.ServerPreferredResources()
		if err != nil && len(mailboxLists) == 0 {
			return []string{fmt.Sprintf("upsync: discovering the mailbox's resources: %v", err)}
		}
		inMailbox := map[schema.GroupResource]schema.GroupVersionResource{}
		for _, list := range mailboxLists {
			gv, _ := schema.ParseGroupVersion(list.GroupVersion)
			for _, r := range list.APIResources {
				if !strings.Contains(r.Name, "/") {
					inMailbox[schema.GroupResource{Group: gv.Group, Resource: r.Name}] = gv.WithResource(r.Name)
				}
			}
		}
		for _, rule := range rules {
			matched := 0
			for _, list := range edgeLists {
				gv, _ := schema.ParseGroupVersion(list.GroupVersion)
				if gv.Group != rule.APIGroup {
					continue
				}
				for _, r := range list.APIResources {
					if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "watch") || !rule.MatchesResource(gv.Group, r.Name) {
						continue
					}
					gr := schema.GroupResource{Group: gv.Group, Resource: r.Name}
					mgvr, ok := inMailbox[gr]
					if !ok {
						if !slices.Contains(rule.Resources, "*") {
							problems = append(problems, fmt.Sprintf("upsync: the mailbox does not serve %s, so objects of it cannot come back; place an object of that kind there, or bind its API into the mailbox", gr))
						}
						continue
					}
					matched++
					gvr := gv.WithResource(r.Name)
					w := wanted[gvr]
					if w == nil {
						w = &upsyncWatch{gvr: gvr, mailboxGVR: mgvr, namespaced: r.Namespaced}
						wanted[gvr] = w
					}
					w.rules = append(w.rules, rule)
				}
			}
			if matched == 0 {
				problems = append(problems, fmt.Sprintf("upsync: the rule for group %q, resources %v matches no resource that both the edge cluster and the mailbox serve", rule.APIGroup, rule.Resources))
			}
		}
		for _, w := range wanted {
			w.hasStatus = statusResources[w.mailboxGVR.GroupResource()]
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	for gvr, w := range s.upsync {
		nw, ok := wanted[gvr]
		if !ok || nw.mailboxGVR != w.mailboxGVR {
			w.stopAll()
			delete(s.upsync, gvr)
			continue
		}
		if !reflect.DeepEqual(w.rules, nw.rules) {
			w.rules = nw.rules
			for _, key := range w.edge.informer.GetStore().ListKeys() {
				ns, name, _ := cache.SplitMetaNamespaceKey(key)
				s.upsyncQueue.Add(objectRef{GVR: gvr, Namespace: ns, Name: name})
			}
		}
		w.hasStatus = nw.hasStatus
	}
	for gvr, w := range wanted {
		if _, ok := s.upsync[gvr]; ok {
			continue
		}
		s.startUpsyncWatch(ctx, w)
		s.upsync[gvr] = w
	}
	return problems
}

// startUpsyncWatch watches the edge objects of w's resource that this syncer does not manage, and
// the objects of it up-synced into the mailbox.
func (s *Syncer) startUpsyncWatch(ctx context.Context, w *upsyncWatch) {
	notManaged := labels.NewSelector()
	req, _ := labels.NewRequirement(s.marks.Label, selection.DoesNotExist, nil)
	notManaged = notManaged.Add(*req)
	edgeInf := dynamicinformer.NewFilteredDynamicInformer(s.edge, w.gvr, "", 0, cache.Indexers{},
		func(o *metav1.ListOptions) { o.LabelSelector = notManaged.String() }).Informer()
	enqueue := func(obj any, after time.Duration) {
		u := asUnstructured(obj)
		if u == nil {
			return
		}
		ref := objectRef{GVR: w.gvr, Namespace: u.GetNamespace(), Name: u.GetName()}
		if after > 0 {
			s.upsyncQueue.AddAfter(ref, after)
		} else {
			s.upsyncQueue.Add(ref)
		}
	}
	_, _ = edgeInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { enqueue(obj, 0) },
		UpdateFunc: func(old, obj any) {
			if o, n := asUnstructured(old), asUnstructured(obj); o != nil && n != nil && o.GetResourceVersion() == n.GetResourceVersion() {
				return
			}
			enqueue(obj, s.cfg.StatusCoalesce) // updates, status churn especially, are coalesced
		},
		DeleteFunc: func(obj any) { enqueue(obj, 0) },
	})
	mailboxInf := dynamicinformer.NewFilteredDynamicInformer(s.mailbox, w.mailboxGVR, "", 0, cache.Indexers{},
		func(o *metav1.ListOptions) { o.LabelSelector = edgev1alpha1.LabelUpsynced + "=true" }).Informer()
	_, _ = mailboxInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { enqueue(obj, 0) },
		DeleteFunc: func(obj any) { enqueue(obj, 0) },
	})
	w.edge = runInformer(ctx, edgeInf)
	w.mailbox = runInformer(ctx, mailboxInf)
}

// syncUpsync writes one edge object that an upsync rule covers into the mailbox, or deletes its
// up-synced copy from the mailbox once the edge confirms the original is gone.
func (s *Syncer) syncUpsync(ctx context.Context, ref objectRef) (time.Duration, error) {
	logger := klog.FromContext(ctx).WithValues("upsync", ref.String())
	s.mu.Lock()
	w := s.upsync[ref.GVR]
	s.mu.Unlock()
	if w == nil {
		return 0, nil // no rule covers the resource any more; what came up stays
	}
	if !w.edge.informer.HasSynced() || !w.mailbox.informer.HasSynced() {
		return time.Second, nil
	}
	key := cacheKey(ref.Namespace, ref.Name)
	var original, upsynced *unstructured.Unstructured
	if obj, exists, _ := w.edge.informer.GetStore().GetByKey(key); exists {
		original = asUnstructured(obj)
	}
	if obj, exists, _ := w.mailbox.informer.GetStore().GetByKey(key); exists {
		upsynced = asUnstructured(obj)
	}
	mailbox := s.mailbox.Resource(w.mailboxGVR).Namespace(ref.Namespace)
	if original != nil && w.covers(ref.Namespace, ref.Name) && !transport.IsSystemObject(ref.GVR.Group, ref.GVR.Resource, original) &&
		original.GetDeletionTimestamp() == nil {
		return 0, s.writeUpsynced(klog.NewContext(ctx, logger), w, ref, original, upsynced)
	}
	if upsynced == nil {
		return 0, nil
	}
	// Confirm at the edge before deleting from the mailbox.
	live, err := s.edge.Resource(ref.GVR).Namespace(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case err == nil && w.covers(ref.Namespace, ref.Name) && live.GetLabels()[s.marks.Label] == "":
		return 0, fmt.Errorf("the edge still has %s; the cache is behind", ref)
	case err != nil && !apierrors.IsNotFound(err):
		return 0, fmt.Errorf("confirming that %s left the edge: %w", ref, err)
	}
	uid := upsynced.GetUID()
	if err := mailbox.Delete(ctx, ref.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil &&
		!transport.Gone(err, w.mailboxGVR.GroupResource(), ref.Name) && !apierrors.IsConflict(err) {
		return 0, fmt.Errorf("deleting the up-synced %s from the mailbox: %w", ref, err)
	}
	metricUpsyncWrites.WithLabelValues("delete").Inc()
	logger.Info("deleted from the mailbox: the original left the edge")
	return 0, nil
}

// writeUpsynced writes the up-synced form of original into the mailbox, unless it is there.
func (s *Syncer) writeUpsynced(ctx context.Context, w *upsyncWatch, ref objectRef, original, upsynced *unstructured.Unstructured) error {
	desired := transport.Sanitize(original)
	desired.SetAPIVersion(w.mailboxGVR.GroupVersion().String())
	desired = withLabel(desired, edgev1alpha1.LabelUpsynced, "true")
	annotations := desired.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[edgev1alpha1.AnnotationUpsyncedFrom] = s.cfg.SyncTargetName
	desired.SetAnnotations(annotations)
	hash := transport.Hash(desired.Object)
	annotations[edgev1alpha1.AnnotationUpsyncHash] = hash
	desired.SetAnnotations(annotations)
	status, _, _ := unstructured.NestedMap(original.Object, "status")
	mailbox := s.mailbox.Resource(w.mailboxGVR).Namespace(ref.Namespace)

	if upsynced == nil {
		// Never take over an object of the mailbox that did not come from the edge.
		existing, err := mailbox.Get(ctx, ref.Name, metav1.GetOptions{})
		switch {
		case err == nil && existing.GetLabels()[edgev1alpha1.LabelUpsynced] != "true":
			klog.FromContext(ctx).Info("not up-synced: the mailbox has an object of that name that did not come from the edge")
			return nil
		case err != nil && !apierrors.IsNotFound(err):
			return fmt.Errorf("reading %s in the mailbox: %w", ref, err)
		}
		if ref.Namespace != "" {
			if err := s.ensureMailboxNamespace(ctx, ref.Namespace); err != nil {
				return err
			}
		}
	} else if upsynced.GetAnnotations()[edgev1alpha1.AnnotationUpsyncHash] == hash {
		have, _, _ := unstructured.NestedMap(upsynced.Object, "status")
		if !w.hasStatus || reflect.DeepEqual(normalizeJSON(have), normalizeJSON(status)) {
			return nil
		}
		return s.applyUpsyncedStatus(ctx, w.mailboxGVR, original.GetKind(), ref.Namespace, ref.Name, status)
	}
	if !w.hasStatus && len(status) > 0 {
		desired.Object["status"] = status // status is part of the object itself
	}
	if _, err := mailbox.Apply(ctx, ref.Name, desired, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
		metricUpsyncWrites.WithLabelValues("error").Inc()
		return fmt.Errorf("up-syncing %s into the mailbox: %w", ref, err)
	}
	metricUpsyncWrites.WithLabelValues("write").Inc()
	klog.FromContext(ctx).V(1).Info("up-synced into the mailbox")
	if w.hasStatus && len(status) > 0 {
		return s.applyUpsyncedStatus(ctx, w.mailboxGVR, original.GetKind(), ref.Namespace, ref.Name, status)
	}
	return nil
}

// ensureMailboxNamespace creates a namespace in the mailbox for up-synced objects, if missing.
func (s *Syncer) ensureMailboxNamespace(ctx context.Context, name string) error {
	namespaces := s.mailboxKube.CoreV1().Namespaces()
	if _, err := namespaces.Get(ctx, name, metav1.GetOptions{}); err == nil {
		return nil
	} else if !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading namespace %s in the mailbox: %w", name, err)
	}
	_, err := namespaces.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: name, Labels: map[string]string{edgev1alpha1.LabelUpsynced: "true"},
	}}, metav1.CreateOptions{FieldManager: FieldManager})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s in the mailbox for up-synced objects: %w", name, err)
	}
	return nil
}

// applyUpsyncedStatus server-side-applies status to the status subresource of an up-synced
// object in the mailbox.
func (s *Syncer) applyUpsyncedStatus(ctx context.Context, gvr schema.GroupVersionResource, kind, namespace, name string, status map[string]any) error {
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
