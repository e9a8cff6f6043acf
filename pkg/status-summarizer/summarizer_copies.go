package statussummarizer

import (
	"context"
	"sync"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	kcpdynamic "github.com/kcp-dev/client-go/dynamic"
	kcpdynamicinformer "github.com/kcp-dev/client-go/dynamic/dynamicinformer"
	"github.com/kcp-dev/logicalcluster/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/espw"
)

// copyWatches watches the mailbox copies, across all mailboxes, one informer per resource:
// kcp's built-in kinds through the virtual workspace of mailbox.edge.kcp.io, the workloads
// export's kinds through that export's. kcp publishes an export's virtual workspace once some
// workspace binds it, so each group of watches starts when its virtual workspace appears.
type copyWatches struct {
	c         *Controller
	workloads []schema.GroupVersionResource

	mu        sync.RWMutex
	informers map[schema.GroupVersionResource]cache.SharedIndexInformer
	// configs watches the mailboxes' SyncerConfigs, whose status.applied says which version of
	// each copy is at the edge.
	configs cache.SharedIndexInformer
	pending int // groups of watches not started yet
}

// copyRef is a copy and the resource it is of.
type copyRef struct {
	obj *unstructured.Unstructured
	gvr schema.GroupVersionResource
}

func newCopyWatches(c *Controller, workloads []schema.GroupVersionResource) *copyWatches {
	return &copyWatches{c: c, workloads: workloads, informers: map[schema.GroupVersionResource]cache.SharedIndexInformer{}, pending: 2}
}

func (w *copyWatches) start(ctx context.Context) {
	go w.startGroup(ctx, edgev1alpha1.MailboxAPIExportName, mailboxClaimed())
	w.startGroup(ctx, edgev1alpha1.WorkloadsAPIExportName, w.workloads)
}

// startGroup waits for the virtual workspace of an export and starts the watches of the given
// resources through it.
func (w *copyWatches) startGroup(ctx context.Context, export string, gvrs []schema.GroupVersionResource) {
	logger := klog.FromContext(ctx).WithValues("export", export)
	url, ok := espw.WaitForEndpoint(ctx, w.c.cfg.KCP, w.c.cfg.ESPW, export)
	if !ok {
		return
	}
	cfg := rest.CopyConfig(w.c.cfg.Base)
	cfg.Host = url
	client, err := kcpdynamic.NewForConfig(cfg)
	if err != nil {
		logger.Error(err, "building the client of the virtual workspace; its copies are not summarized")
		return
	}
	projected := labels.SelectorFromSet(labels.Set{edgev1alpha1.LabelProjected: "true"}).String()
	var started []cache.SharedIndexInformer
	w.mu.Lock()
	for _, gvr := range gvrs {
		gvr := gvr
		informer := kcpdynamicinformer.NewFilteredDynamicInformer(client, gvr, resyncPeriod, cache.Indexers{
			kcpcache.ClusterIndexName: kcpcache.ClusterIndexFunc,
			copiesByPlacement: func(obj any) ([]string, error) {
				u := asUnstructured(obj)
				src := u.GetLabels()[edgev1alpha1.LabelSourceCluster]
				var keys []string
				for _, p := range placementsOf(u) {
					keys = append(keys, src+"|"+p)
				}
				return keys, nil
			},
			copiesByOriginal: func(obj any) ([]string, error) {
				if k, ok := originalOf(asUnstructured(obj), gvr); ok {
					return []string{k.String()}, nil
				}
				return nil, nil
			},
		}, func(o *metav1.ListOptions) { o.LabelSelector = projected }).Informer()
		if err := informer.SetTransform(slimCopy); err != nil {
			logger.Error(err, "setting the transform of a copy watch")
		}
		if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { w.c.copyChanged(gvr, obj) },
			UpdateFunc: func(_, obj any) { w.c.copyChanged(gvr, obj) },
			DeleteFunc: func(obj any) { w.c.copyChanged(gvr, obj) },
		}); err != nil {
			logger.Error(err, "watching copies", "resource", gvr.String())
			continue
		}
		w.informers[gvr] = informer
		started = append(started, informer)
	}
	if export == edgev1alpha1.MailboxAPIExportName {
		informer := kcpdynamicinformer.NewFilteredDynamicInformer(client, syncerConfigsGVR, resyncPeriod, cache.Indexers{
			kcpcache.ClusterIndexName: kcpcache.ClusterIndexFunc,
		}, nil).Informer()
		if err := informer.SetTransform(slimSyncerConfig); err != nil {
			logger.Error(err, "setting the transform of the SyncerConfig watch")
		}
		if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { w.appliedChanged(nil, asUnstructured(obj)) },
			UpdateFunc: func(old, obj any) { w.appliedChanged(asUnstructured(old), asUnstructured(obj)) },
			DeleteFunc: func(obj any) { w.appliedChanged(asUnstructured(obj), nil) },
		}); err != nil {
			logger.Error(err, "watching SyncerConfigs")
		} else {
			w.configs = informer
			started = append(started, informer)
		}
	}
	w.pending--
	w.mu.Unlock()
	logger.Info("watching the copies in all mailboxes through the virtual workspace", "url", url, "resources", len(started))
	for _, inf := range started {
		go inf.Run(ctx.Done())
	}
}

// hasSynced reports whether every started watch has synced. Watches not started yet (no
// workspace binds their export) hold nothing, so they do not count.
func (w *copyWatches) hasSynced() bool {
	w.mu.RLock()
	defer w.mu.RUnlock()
	for _, inf := range w.informers {
		if !inf.HasSynced() {
			return false
		}
	}
	return w.configs == nil || w.configs.HasSynced()
}

// appliedHash returns the projection hash of the version of a copy that its syncer reports
// applied at the edge ("" if none), from the mailbox's SyncerConfig status.applied.
func (w *copyWatches) appliedHash(cp copyRef) string {
	w.mu.RLock()
	configs := w.configs
	w.mu.RUnlock()
	if configs == nil {
		return ""
	}
	obj, exists, _ := configs.GetIndexer().GetByKey(kcpcache.ToClusterAwareKey(logicalcluster.From(cp.obj).String(), "", edgev1alpha1.SyncerConfigName))
	if !exists {
		return ""
	}
	applied, _, _ := unstructured.NestedStringMap(asUnstructured(obj).Object, "status", "applied")
	return applied[edgev1alpha1.CopyKey(cp.gvr.GroupResource(), cp.obj.GetNamespace(), cp.obj.GetName())]
}

// appliedChanged queues what a change of a SyncerConfig's status.applied affects: each copy
// whose entry changed, as if the copy itself had changed.
func (w *copyWatches) appliedChanged(old, obj *unstructured.Unstructured) {
	var before, after map[string]string
	var mb logicalcluster.Name
	if old != nil {
		before, _, _ = unstructured.NestedStringMap(old.Object, "status", "applied")
		mb = logicalcluster.From(old)
	}
	if obj != nil {
		after, _, _ = unstructured.NestedStringMap(obj.Object, "status", "applied")
		mb = logicalcluster.From(obj)
	}
	changed := map[string]bool{}
	for k, v := range after {
		if before[k] != v {
			changed[k] = true
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			changed[k] = true
		}
	}
	if len(changed) == 0 {
		return
	}
	w.mu.RLock()
	byGR := make(map[schema.GroupResource]schema.GroupVersionResource, len(w.informers))
	for gvr := range w.informers {
		byGR[gvr.GroupResource()] = gvr
	}
	w.mu.RUnlock()
	for key := range changed {
		gr, ns, name, ok := edgev1alpha1.ParseCopyKey(key)
		if !ok {
			continue
		}
		gvr, ok := byGR[gr]
		if !ok {
			continue
		}
		if cp := w.get(gvr, mb, ns, name); cp != nil {
			w.c.copyChanged(gvr, cp)
		}
	}
}

// slimSyncerConfig keeps of a cached SyncerConfig only what summarizing reads: its identity and
// status.applied.
func slimSyncerConfig(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	u.SetManagedFields(nil)
	delete(u.Object, "spec")
	if status, ok := u.Object["status"].(map[string]any); ok {
		u.Object["status"] = map[string]any{"applied": status["applied"]}
	}
	return u, nil
}

// byIndex returns the copies of every resource under key of index.
func (w *copyWatches) byIndex(index, key string) []copyRef {
	w.mu.RLock()
	defer w.mu.RUnlock()
	var out []copyRef
	for gvr, inf := range w.informers {
		items, _ := inf.GetIndexer().ByIndex(index, key)
		for _, item := range items {
			if u := asUnstructured(item); u != nil {
				out = append(out, copyRef{obj: u, gvr: gvr})
			}
		}
	}
	return out
}

// get returns the copy of gvr with the given name in the given mailbox, if it is known.
func (w *copyWatches) get(gvr schema.GroupVersionResource, mb logicalcluster.Name, namespace, name string) *unstructured.Unstructured {
	w.mu.RLock()
	inf := w.informers[gvr]
	w.mu.RUnlock()
	if inf == nil {
		return nil
	}
	obj, exists, _ := inf.GetIndexer().GetByKey(kcpcache.ToClusterAwareKey(mb.String(), namespace, name))
	if !exists {
		return nil
	}
	return asUnstructured(obj)
}

// slimCopy drops from a cached copy what summarizing never reads: managed fields and the
// payload of ConfigMaps and Secrets.
func slimCopy(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	u.SetManagedFields(nil)
	for _, f := range []string{"data", "binaryData", "stringData"} {
		delete(u.Object, f)
	}
	return u, nil
}
