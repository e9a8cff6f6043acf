package placementtranslator

import (
	"context"
	"sort"
	"strings"
	"sync"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/centerview"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// resource is a kind of workload object.
type resource struct {
	gvr        schema.GroupVersionResource
	kind       string
	namespaced bool
	// custom: defined by a CRD of the workload workspace, rather than served through the
	// virtual workspace.
	custom bool
	// hasStatus: the resource has a status subresource.
	hasStatus bool
}

// workloadResources picks, from the discovery of the virtual workspace, the resources that
// hold workload objects: all but edge.kcp.io's own, kcp's, and subresources.
func workloadResources(lists []*metav1.APIResourceList) []resource {
	var out []resource
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil || gv.Group == edgev1alpha1.GroupName || strings.HasSuffix(gv.Group, ".kcp.io") {
			continue
		}
		withStatus := map[string]bool{}
		for _, r := range l.APIResources {
			if name, sub, ok := strings.Cut(r.Name, "/"); ok && sub == "status" {
				withStatus[name] = true
			}
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !hasVerbs(r.Verbs, "list", "watch") {
				continue
			}
			out = append(out, resource{gvr: gv.WithResource(r.Name), kind: r.Kind, namespaced: r.Namespaced, hasStatus: withStatus[r.Name]})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].gvr.String() < out[j].gvr.String() })
	return out
}

func hasVerbs(have []string, want ...string) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			found = found || h == w
		}
		if !found {
			return false
		}
	}
	return true
}

// sources holds the informers on workload objects: one per resource of the virtual workspace,
// across all workload workspaces; and one per custom kind and workspace, started when a CRD of
// a workload workspace appears (custom kinds cannot be claimed, so these read the workspace
// with the controller's own credential).
type sources struct {
	c         *Controller
	resources []resource
	informers map[schema.GroupVersionResource]centerview.SharedInformer

	// unservedMu guards unserved: resources whose last list failed because the virtual
	// workspace does not serve them (yet): kcp serves a claimed kind of another export only
	// once some workspace binds that export.
	unservedMu sync.Mutex
	unserved   map[schema.GroupVersionResource]bool

	ctx      context.Context
	customMu sync.Mutex
	custom   map[customKey]*customSource
}

type customKey struct {
	cluster string
	gvr     schema.GroupVersionResource
}

type customSource struct {
	resource resource
	informer centerview.SharedInformer
	stop     context.CancelFunc
}

func newSources(c *Controller, resources []resource) *sources {
	s := &sources{c: c, resources: resources, informers: map[schema.GroupVersionResource]centerview.SharedInformer{},
		unserved: map[schema.GroupVersionResource]bool{}, custom: map[customKey]*customSource{}}
	for _, r := range resources {
		inf := c.cfg.Edge.NewInformer(r.gvr, resyncPeriod, centerview.WorkloadIndexers(), nil)
		gvr := r.gvr
		_ = inf.SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
			s.unservedMu.Lock()
			s.unserved[gvr] = apierrors.IsNotFound(err)
			s.unservedMu.Unlock()
		})
		_, _ = inf.AddEventHandler(c.workloadHandler())
		if r.gvr.GroupResource() == crdsGVR.GroupResource() {
			_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
				AddFunc:    func(obj any) { s.crdChanged(centerview.AsUnstructured(obj), false) },
				UpdateFunc: func(_, obj any) { s.crdChanged(centerview.AsUnstructured(obj), false) },
				DeleteFunc: func(obj any) { s.crdChanged(centerview.AsUnstructured(obj), true) },
			})
		}
		s.informers[r.gvr] = inf
	}
	return s
}

func (s *sources) start(ctx context.Context) {
	s.customMu.Lock()
	s.ctx = ctx
	s.customMu.Unlock()
	for _, inf := range s.informers {
		go inf.Run(ctx.Done())
	}
}

// hasSynced says whether every informer has synced, or found its resource not served.
func (s *sources) hasSynced() bool {
	s.unservedMu.Lock()
	defer s.unservedMu.Unlock()
	for gvr, inf := range s.informers {
		if !inf.HasSynced() && !s.unserved[gvr] {
			return false
		}
	}
	return true
}

// notSynced lists the resources whose informers have not synced: what is known of them is
// incomplete, so their copies must not be deleted.
func (s *sources) notSynced() map[schema.GroupResource]bool {
	out := map[schema.GroupResource]bool{}
	for gvr, inf := range s.informers {
		if !inf.HasSynced() {
			out[gvr.GroupResource()] = true
		}
	}
	return out
}

// crdChanged starts or stops the informer on the custom kind that a CRD of a workload
// workspace defines, at its storage version.
func (s *sources) crdChanged(crd *unstructured.Unstructured, deleted bool) {
	if crd == nil {
		return
	}
	cluster := logicalcluster.From(crd)
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
	kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
	scope, _, _ := unstructured.NestedString(crd.Object, "spec", "scope")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	version := ""
	for _, v := range versions {
		m, _ := v.(map[string]any)
		if storage, _ := m["storage"].(bool); storage {
			version, _ = m["name"].(string)
		}
	}
	s.customMu.Lock()
	defer s.customMu.Unlock()
	stopped := false
	for key, src := range s.custom {
		if key.cluster == cluster.String() && key.gvr.GroupResource() == (schema.GroupResource{Group: group, Resource: plural}) &&
			(deleted || key.gvr.Version != version) {
			src.stop()
			delete(s.custom, key)
			stopped = true
		}
	}
	if deleted || version == "" || s.ctx == nil {
		if stopped {
			// The workspace's placements that name the kind learn that it is gone (an
			// UnknownResource problem), whichever of this handler and the workload handler of
			// the CRD ran first.
			s.c.workloadChanged(crd)
		}
		return
	}
	key := customKey{cluster.String(), schema.GroupVersionResource{Group: group, Version: version, Resource: plural}}
	if _, ok := s.custom[key]; ok {
		return
	}
	ctx, stop := context.WithCancel(s.ctx)
	client := s.c.cfg.Admin.Cluster(cluster.Path())
	inf := dynamicinformer.NewFilteredDynamicInformer(client, key.gvr, "", resyncPeriod, cache.Indexers{}, nil).Informer()
	_, _ = inf.AddEventHandler(s.c.workloadHandler())
	s.custom[key] = &customSource{
		resource: resource{gvr: key.gvr, kind: kind, namespaced: scope == "Namespaced", custom: true},
		informer: inf,
		stop:     stop,
	}
	klog.FromContext(ctx).V(2).Info("watching a custom kind of a workload workspace", "cluster", cluster, "resource", key.gvr)
	go inf.Run(ctx.Done())
	// The workspace's placements that name the kind learn that it is there now, as above.
	s.c.workloadChanged(crd)
}

// workloadHandler queues, on any change of a workload object, the mailboxes it can affect.
// Objects labelled as up-synced are never selected for down-sync, so their changes concern no
// mailbox.
func (c *Controller) workloadHandler() cache.ResourceEventHandler {
	changed := func(old, obj *unstructured.Unstructured) {
		if (!edgev1alpha1.IsUpsynced(obj.GetLabels()) || (old != nil && !edgev1alpha1.IsUpsynced(old.GetLabels()))) && !sameProjection(old, obj) {
			c.workloadChanged(obj)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { changed(nil, centerview.AsUnstructured(obj)) },
		UpdateFunc: func(old, obj any) { changed(centerview.AsUnstructured(old), centerview.AsUnstructured(obj)) },
		DeleteFunc: func(obj any) { changed(nil, centerview.AsUnstructured(obj)) },
	}
}

// sameProjection says that an update changed nothing a copy is made of: only the status, or
// what the server or the status summarizer keeps on the object (its resourceVersion, the
// executing-count annotation...). Such updates, which the status summarizer makes on every
// placed object while a placement rolls out, queue no mailbox.
func sameProjection(old, obj *unstructured.Unstructured) bool {
	if old == nil || obj == nil || old.GetDeletionTimestamp().IsZero() != obj.GetDeletionTimestamp().IsZero() {
		return false
	}
	return equality.Semantic.DeepEqual(transport.Sanitize(old).Object, transport.Sanitize(obj).Object)
}

// workloadObject is one object of a workload workspace, with its kind.
type workloadObject struct {
	resource resource
	obj      *unstructured.Unstructured
}

// objectsOf lists the workload objects of a workspace. ok is false while an informer on one of
// its custom kinds has not synced yet: what is known is incomplete, and acting on it could
// delete copies that should stay.
func (s *sources) objectsOf(cluster logicalcluster.Name) (objs []workloadObject, ok bool) {
	for _, r := range s.resources {
		items, _ := s.informers[r.gvr].GetIndexer().ByIndex(kcpcache.ClusterIndexName, kcpcache.ClusterIndexKey(cluster))
		for _, item := range items {
			if u := centerview.AsUnstructured(item); u != nil {
				objs = append(objs, workloadObject{r, u})
			}
		}
	}
	s.customMu.Lock()
	defer s.customMu.Unlock()
	for key, src := range s.custom {
		if key.cluster != cluster.String() {
			continue
		}
		if !src.informer.HasSynced() {
			return nil, false
		}
		for _, item := range src.informer.GetStore().List() {
			if u := centerview.AsUnstructured(item); u != nil {
				objs = append(objs, workloadObject{src.resource, u})
			}
		}
	}
	return objs, true
}

// namespaceLabels returns the labels of a namespace of a workload workspace (nil if unknown).
func (s *sources) namespaceLabels(cluster logicalcluster.Name, name string) map[string]string {
	inf, ok := s.informers[namespacesGVR]
	if !ok {
		return nil
	}
	item, exists, _ := inf.GetIndexer().GetByKey(kcpcache.ToClusterAwareKey(cluster.String(), "", name))
	if !exists {
		return nil
	}
	u := centerview.AsUnstructured(item)
	if u == nil {
		return nil
	}
	if l := u.GetLabels(); l != nil {
		return l
	}
	return map[string]string{}
}

// placeable says whether a workload workspace has a resource that can be placed of the given
// name, in the given API group (any group if group is nil): one that the virtual workspace
// serves, or a custom kind of one of the workspace's CRDs.
func (s *sources) placeable(cluster logicalcluster.Name, group *string, name string) bool {
	matches := func(gvr schema.GroupVersionResource) bool {
		return gvr.Resource == name && (group == nil || gvr.Group == *group)
	}
	for _, r := range s.resources {
		if matches(r.gvr) {
			return true
		}
	}
	s.customMu.Lock()
	defer s.customMu.Unlock()
	for key := range s.custom {
		if key.cluster == cluster.String() && matches(key.gvr) {
			return true
		}
	}
	return false
}

// resourceOf returns the resource, served through the virtual workspace, of a group and
// resource.
func (s *sources) resourceOf(gr schema.GroupResource) (resource, bool) {
	for _, r := range s.resources {
		if r.gvr.GroupResource() == gr {
			return r, true
		}
	}
	return resource{}, false
}

// get returns the object of a workload workspace at an identity (nil if there is none). known is
// false while the resource's informer has not synced.
func (s *sources) get(gvr schema.GroupVersionResource, cluster, namespace, name string) (obj *unstructured.Unstructured, known bool) {
	inf, ok := s.informers[gvr]
	if !ok {
		return nil, true
	}
	if !inf.HasSynced() {
		s.unservedMu.Lock()
		unserved := s.unserved[gvr]
		s.unservedMu.Unlock()
		return nil, unserved
	}
	item, exists, _ := inf.GetIndexer().GetByKey(kcpcache.ToClusterAwareKey(cluster, namespace, name))
	if !exists {
		return nil, true
	}
	return centerview.AsUnstructured(item), true
}
