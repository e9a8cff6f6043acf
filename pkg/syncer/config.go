package syncer

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

// downsyncWatch watches the copies of one mailbox resource that the SyncerConfig names.
type downsyncWatch struct {
	gvr        schema.GroupVersionResource
	namespaced bool
	// names are the cluster-scoped objects to down-sync; nil means all.
	names map[string]bool
	// hasStatus: the mailbox serves the resource's status subresource; statusChecked is when
	// that was last found out (a kind bound into the mailbox a moment ago may not be in its
	// discovery yet).
	hasStatus     bool
	statusChecked time.Time
	run           *informerRun
}

// inScope says whether the SyncerConfig spec currently covers the copy; the caller holds s.mu.
func (s *Syncer) inScope(w *downsyncWatch, namespace, name string) bool {
	if w.namespaced {
		return s.namespaces[namespace]
	}
	return w.names == nil || w.names[name]
}

// watchConfig acts on each change of the SyncerConfig.
func (s *Syncer) watchConfig(ctx context.Context) {
	logger := klog.FromContext(ctx)
	select { // act on what was listed
	case s.configSignal <- struct{}{}:
	default:
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.configSignal:
		}
		for {
			err := s.applyConfig(ctx)
			if err == nil {
				break
			}
			logger.Error(err, "acting on the SyncerConfig; retrying")
			select {
			case <-ctx.Done():
				return
			case <-time.After(jitter(5 * time.Second)):
			}
		}
	}
}

// applyConfig starts and stops the watches so that they match the SyncerConfig, and sweeps the
// edge for objects that fell out of its scope.
func (s *Syncer) applyConfig(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	obj, exists, err := s.config.GetStore().GetByKey(edgev1alpha1.SyncerConfigName)
	if err != nil {
		return err
	}
	if !exists {
		// A mailbox without a SyncerConfig has had nothing placed in it yet; nothing at the edge
		// is deleted on that account.
		logger.Info("the mailbox has no SyncerConfig yet: nothing to sync")
		return nil
	}
	cfg := &edgev1alpha1.SyncerConfig{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(asUnstructured(obj).Object, cfg); err != nil {
		return fmt.Errorf("reading the SyncerConfig: %w", err)
	}
	statusResources, err := subresourcesServed(s.mailboxDiscovery, "status")
	if err != nil {
		return fmt.Errorf("discovering the mailbox's resources: %w", err)
	}

	type want struct {
		gvr        schema.GroupVersionResource
		namespaced bool
		names      map[string]bool
	}
	wanted := map[schema.GroupResource]want{}
	var configErrors []string
	for _, r := range cfg.Spec.NamespaceScope.Resources {
		gv, err := schema.ParseGroupVersion(r.APIVersion)
		if err != nil {
			configErrors = append(configErrors, fmt.Sprintf("namespaceScope resource %s: apiVersion %q: %v", r.GroupResource.String(), r.APIVersion, err))
			continue
		}
		wanted[schema.GroupResource{Group: r.Group, Resource: r.Resource}] = want{gvr: gv.WithResource(r.Resource), namespaced: true}
	}
	for _, r := range cfg.Spec.ClusterScope {
		gv, err := schema.ParseGroupVersion(r.APIVersion)
		if err != nil {
			configErrors = append(configErrors, fmt.Sprintf("clusterScope resource %s: apiVersion %q: %v", r.GroupResource.String(), r.APIVersion, err))
			continue
		}
		var names map[string]bool
		if !slices.Contains(r.Objects, "*") {
			names = map[string]bool{}
			for _, n := range r.Objects {
				names[n] = true
			}
		}
		wanted[schema.GroupResource{Group: r.Group, Resource: r.Resource}] = want{gvr: gv.WithResource(r.Resource), names: names}
	}
	namespaces := map[string]bool{}
	for _, ns := range cfg.Spec.NamespaceScope.Namespaces {
		namespaces[ns] = true
	}

	s.mu.Lock()
	first := !s.configSeen
	narrowed := first
	for ns := range s.namespaces {
		if !namespaces[ns] {
			narrowed = true
		}
	}
	s.namespaces = namespaces
	var started []*downsyncWatch
	for gr, w := range s.downsync {
		nw, ok := wanted[gr]
		if !ok || nw.gvr != w.gvr || nw.namespaced != w.namespaced {
			w.run.stop()
			delete(s.downsync, gr)
			narrowed = true
			continue
		}
		for n := range w.names {
			if nw.names != nil && !nw.names[n] {
				narrowed = true
			}
		}
		w.names = nw.names
		w.hasStatus, w.statusChecked = statusResources[gr], time.Now()
	}
	for gr, nw := range wanted {
		if _, ok := s.downsync[gr]; ok {
			continue
		}
		w := &downsyncWatch{gvr: nw.gvr, namespaced: nw.namespaced, names: nw.names, hasStatus: statusResources[gr], statusChecked: time.Now()}
		w.run = s.startMailboxWatch(ctx, w)
		s.downsync[gr] = w
		started = append(started, w)
	}
	if first {
		// What the last run reported applied stays reported until each copy is looked at
		// again, so that a restart does not show the fleet's copies pending for a while.
		for key, hash := range cfg.Status.Applied {
			if gr, ns, name, ok := edgev1alpha1.ParseCopyKey(key); ok {
				src := sourceKey{Group: gr.Group, Resource: gr.Resource, Namespace: ns, Name: name}
				if _, known := s.appliedCopies[src]; !known {
					s.appliedCopies[src] = hash
				}
			}
		}
	}
	s.configSeen = true
	s.observedGeneration = cfg.Generation
	s.configErrors = configErrors
	// A change of scope can bring copies into it or take them out: look at every copy again.
	for _, w := range s.downsync {
		for _, key := range w.run.informer.GetStore().ListKeys() {
			ns, name, _ := cache.SplitMetaNamespaceKey(key)
			s.downsyncQueue.Add(sourceKey{Group: w.gvr.Group, Resource: w.gvr.Resource, Namespace: ns, Name: name})
		}
	}
	for src := range s.targets {
		s.downsyncQueue.Add(src)
	}
	s.mu.Unlock()

	upsyncErrors := s.applyUpsyncRules(ctx, cfg.Spec.Upsync, statusResources)
	s.mu.Lock()
	s.configErrors = append(s.configErrors, upsyncErrors...)
	s.mu.Unlock()
	s.reportQueue.AddAfter("report", reportCoalesce)
	logger.Info("acting on the SyncerConfig", "generation", cfg.Generation, "resources", len(wanted),
		"namespaces", len(namespaces), "upsyncRules", len(cfg.Spec.Upsync))

	if narrowed {
		// Objects at the edge whose copies are out of scope now, or that were applied before a
		// restart, are found by their ownership label once the new watches have listed.
		for _, w := range started {
			if !cache.WaitForCacheSync(ctx.Done(), w.run.informer.HasSynced) {
				return ctx.Err()
			}
		}
		if err := s.sweepEdge(ctx); err != nil {
			return err
		}
	}
	return nil
}

// startMailboxWatch watches the projected copies of w's resource in the mailbox.
func (s *Syncer) startMailboxWatch(ctx context.Context, w *downsyncWatch) *informerRun {
	selector := edgev1alpha1.LabelProjected + "=true"
	inf := dynamicinformer.NewFilteredDynamicInformer(s.mailbox, w.gvr, "", 0, cache.Indexers{},
		func(o *metav1.ListOptions) { o.LabelSelector = selector }).Informer()
	enqueue := func(obj any) {
		if u := asUnstructured(obj); u != nil {
			s.downsyncQueue.Add(sourceKey{Group: w.gvr.Group, Resource: w.gvr.Resource, Namespace: u.GetNamespace(), Name: u.GetName()})
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue,
		UpdateFunc: func(old, obj any) {
			o, n := asUnstructured(old), asUnstructured(obj)
			if o != nil && n != nil && o.GetResourceVersion() == n.GetResourceVersion() {
				return // a resync
			}
			enqueue(obj)
		},
		DeleteFunc: enqueue,
	})
	return runInformer(ctx, inf)
}

// runInformer runs inf until ctx ends or the returned run is stopped.
func runInformer(ctx context.Context, inf cache.SharedIndexInformer) *informerRun {
	ctx, cancel := context.WithCancel(ctx)
	go inf.Run(ctx.Done())
	return &informerRun{informer: inf, stop: cancel}
}

// ensureEdgeWatch watches the objects of gvr at the edge that this syncer manages, for drift
// and status. It is started when the first such object is applied and runs from then on; for
// a kind the edge does not serve yet, it keeps trying until the kind is served.
func (s *Syncer) ensureEdgeWatch(ctx context.Context, gvr schema.GroupVersionResource) *informerRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	if run, ok := s.edgeWatches[gvr]; ok {
		return run
	}
	selector := labels.NewSelector()
	req, _ := labels.NewRequirement(s.own.label, selection.Exists, nil)
	selector = selector.Add(*req)
	inf := dynamicinformer.NewFilteredDynamicInformer(s.edge, gvr, "", 0, cache.Indexers{},
		func(o *metav1.ListOptions) { o.LabelSelector = selector.String() }).Informer()
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { s.edgeChanged(nil, asUnstructured(obj)) },
		UpdateFunc: func(old, obj any) {
			s.edgeChanged(asUnstructured(old), asUnstructured(obj))
		},
		DeleteFunc: func(obj any) { s.edgeChanged(asUnstructured(obj), nil) },
	})
	run := runInformer(ctx, inf)
	s.edgeWatches[gvr] = run
	return run
}

// edgeChanged queues what a change of a managed edge object calls for: a drift check when
// anything but its status changed, a status write when its status changed.
func (s *Syncer) edgeChanged(old, obj *unstructured.Unstructured) {
	cur := obj
	if cur == nil {
		cur = old
	}
	if cur == nil {
		return
	}
	src, ok := parseSourceKey(cur.GetAnnotations()[s.own.sourceAnnotation])
	if !ok {
		return
	}
	if old == nil || obj == nil {
		s.downsyncQueue.Add(src)
		s.queueStatus(src)
		return
	}
	if old.GetResourceVersion() == obj.GetResourceVersion() {
		return // a resync
	}
	if !equalIgnoring(old.Object, obj.Object, "status") {
		s.downsyncQueue.Add(src)
	}
	if !equalIgnoring(old.Object, obj.Object, "metadata", "spec", "data", "stringData") {
		s.queueStatus(src)
	}
}

// sweepEdge finds every edge object this syncer manages, of every resource the edge serves, and
// queues its copy, so that those whose copy is gone or out of scope are deleted. It runs after
// the first SyncerConfig is read and when the config's scope narrows.
func (s *Syncer) sweepEdge(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	lists, err := s.edgeDiscovery.ServerPreferredResources()
	if err != nil && len(lists) == 0 {
		return fmt.Errorf("discovering the edge cluster's resources: %w", err)
	}
	selector := s.own.label
	found := 0
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
			items, err := s.edge.Resource(gvr).List(ctx, metav1.ListOptions{LabelSelector: selector})
			if err != nil {
				if apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) {
					continue
				}
				return fmt.Errorf("listing %s at the edge: %w", gvr.GroupResource(), err)
			}
			for i := range items.Items {
				item := &items.Items[i]
				src, ok := parseSourceKey(item.GetAnnotations()[s.own.sourceAnnotation])
				if !ok {
					continue
				}
				found++
				s.mu.Lock()
				if _, known := s.targets[src]; !known {
					s.targets[src] = objectRef{GVR: gvr, Namespace: item.GetNamespace(), Name: item.GetName()}
				}
				s.mu.Unlock()
				s.ensureEdgeWatch(ctx, gvr)
				s.downsyncQueue.Add(src)
			}
		}
	}
	logger.V(1).Info("swept the edge for managed objects", "found", found)
	return nil
}

// subresourcesServed returns the resources that serve the named subresource, of any version.
// (ServerPreferredResources leaves subresources out.)
func subresourcesServed(d discovery.DiscoveryInterface, sub string) (map[schema.GroupResource]bool, error) {
	_, lists, err := d.ServerGroupsAndResources()
	if err != nil && len(lists) == 0 {
		return nil, err
	}
	out := map[schema.GroupResource]bool{}
	for _, list := range lists {
		gv, _ := schema.ParseGroupVersion(list.GroupVersion)
		for _, r := range list.APIResources {
			if base, s, ok := strings.Cut(r.Name, "/"); ok && s == sub {
				out[schema.GroupResource{Group: gv.Group, Resource: base}] = true
			}
		}
	}
	return out, nil
}

// sortedErrors returns at most max of errs, sorted, without changing errs.
func sortedErrors(errs []string, max int) []string {
	errs = slices.Clone(errs)
	sort.Strings(errs)
	if len(errs) > max {
		errs = append(errs[:max-1], fmt.Sprintf("... and %d more", len(errs)-max+1))
	}
	return errs
}
