package upsync

import (
	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/centerview"
)

// Key is an object identity in a workload workspace, whose up-synced copy to reconcile.
type Key struct {
	Cluster         string // the workload workspace's logical cluster
	GR              schema.GroupResource
	Namespace, Name string
}

// id is the identity as placement messages name it: resource[.group]/[namespace/]name.
func (k Key) id() string {
	s := k.GR.String() + "/"
	if k.Namespace != "" {
		s += k.Namespace + "/"
	}
	return s + k.Name
}

func (k Key) String() string { return k.id() + " in workspace " + k.Cluster }

// rulesOf decodes a placement's spec.upsync.
func rulesOf(u *unstructured.Unstructured) []edgev1alpha1.UpsyncSet {
	if u == nil {
		return nil
	}
	raw, found, _ := unstructured.NestedSlice(u.Object, "spec", "upsync")
	if !found {
		return nil
	}
	spec := struct {
		Upsync []edgev1alpha1.UpsyncSet `json:"upsync"`
	}{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(map[string]any{"upsync": raw}, &spec); err != nil {
		return nil
	}
	return spec.Upsync
}

// placement returns a placement from the cache, nil if there is none.
func (c *Controller) placement(pk PlacementKey) *unstructured.Unstructured {
	item, exists, _ := c.caches.Placements.GetIndexer().GetByKey(kcpcache.ToClusterAwareKey(pk.Cluster, "", pk.Name))
	if !exists {
		return nil
	}
	return centerview.AsUnstructured(item)
}

// rules returns the spec.upsync of a placement in the cache.
func (c *Controller) rules(pk PlacementKey) []edgev1alpha1.UpsyncSet {
	return rulesOf(c.placement(pk))
}

// placementsIn lists the placements of a workload workspace.
func (c *Controller) placementsIn(cluster logicalcluster.Name) []*unstructured.Unstructured {
	items, _ := c.caches.Placements.GetIndexer().ByIndex(kcpcache.ClusterIndexName, kcpcache.ClusterIndexKey(cluster))
	out := make([]*unstructured.Unstructured, 0, len(items))
	for _, item := range items {
		if u := centerview.AsUnstructured(item); u != nil {
			out = append(out, u)
		}
	}
	return out
}

// Event handlers.

// placementChanged records a placement's rules (its informers are started or stopped
// accordingly) and, when they changed, queues every identity they can affect; and queues its
// conditions, which depend on its generation and rules.
func (c *Controller) placementChanged(_, obj *unstructured.Unstructured) {
	if obj == nil {
		return
	}
	pk := PlacementKey{Cluster: logicalcluster.From(obj).String(), Name: obj.GetName()}
	rules := c.rules(pk) // nil once the placement is gone
	if c.sources.setRules(pk, rules) {
		c.enqueueScan(pk, rules)
	}
	c.queue.Add(queueKey{placement: pk})
}

// sliceChanged: destinations that come or go change what comes back, and from where.
func (c *Controller) sliceChanged(_, obj *unstructured.Unstructured) {
	if obj == nil {
		return
	}
	if pk, ok := c.caches.PlacementOfSlice(obj); ok {
		if rules := c.rules(pk); len(rules) > 0 {
			c.enqueueScan(pk, rules)
		}
	}
}

// syncTargetChanged: up-synced objects seen before the SyncTarget recorded its mailbox can now be
// traced.
func (c *Controller) syncTargetChanged(old, obj *unstructured.Unstructured) {
	if obj == nil {
		return
	}
	now := c.caches.MailboxClusterOf(obj)
	if now != "" && (old == nil || c.caches.MailboxClusterOf(old) != now) {
		c.enqueueMailbox(now)
	}
}

// bindingChanged: a change of a workspace's consent changes what may come back there.
func (c *Controller) bindingChanged(_, obj *unstructured.Unstructured) {
	if obj == nil {
		return
	}
	for _, p := range c.placementsIn(logicalcluster.From(obj)) {
		pk := PlacementKey{Cluster: logicalcluster.From(p).String(), Name: p.GetName()}
		c.enqueueScan(pk, rulesOf(p))
	}
}

// upsyncedHandler queues, on any change of an up-synced object in a mailbox, its identity in the
// workload workspaces it goes back to.
func (c *Controller) upsyncedHandler(gr schema.GroupResource) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { c.upsyncedChanged(gr, centerview.AsUnstructured(obj)) },
		UpdateFunc: func(old, obj any) {
			if o, n := centerview.AsUnstructured(old), centerview.AsUnstructured(obj); o != nil && n != nil && o.GetResourceVersion() != n.GetResourceVersion() {
				c.upsyncedChanged(gr, n)
			}
		},
		DeleteFunc: func(obj any) { c.upsyncedChanged(gr, centerview.AsUnstructured(obj)) },
	}
}

func (c *Controller) upsyncedChanged(gr schema.GroupResource, u *unstructured.Unstructured) {
	if !isUpsyncedInMailbox(u) {
		return
	}
	// None until the SyncTarget records this mailbox; queued then (syncTargetChanged).
	for pk := range c.caches.PlacementsAt(logicalcluster.From(u)) {
		if edgev1alpha1.UpsyncCovers(c.rules(pk), gr.Group, gr.Resource, u.GetNamespace(), u.GetName()) {
			c.queue.Add(queueKey{object: Key{Cluster: pk.Cluster, GR: gr, Namespace: u.GetNamespace(), Name: u.GetName()}})
		}
	}
}

// workloadChanged queues the identity of a changed object of a workload workspace when the
// return path made it, or may make it: an object of the workspace's own there is a conflict, and
// its deletion lets the up-synced one in.
func (c *Controller) workloadChanged(gr schema.GroupResource, u *unstructured.Unstructured) {
	if u == nil {
		return
	}
	key := Key{Cluster: logicalcluster.From(u).String(), GR: gr, Namespace: u.GetNamespace(), Name: u.GetName()}
	if centerview.IsReturned(u) {
		c.queue.Add(queueKey{object: key})
		return
	}
	if inf, ready := c.sources.watch(gr); ready && inf != nil {
		if items, _ := inf.GetIndexer().ByIndex(byIdentity, key.Namespace+"/"+key.Name); len(items) > 0 {
			c.queue.Add(queueKey{object: key})
		}
	}
}

// enqueueScan queues every identity that a placement's up-sync can affect: the objects that the
// return path made in its workspace, those it reported problems of, and the up-synced objects in
// its destinations' mailboxes that its rules cover.
func (c *Controller) enqueueScan(pk PlacementKey, rules []edgev1alpha1.UpsyncSet) {
	c.enqueueReturned(pk.Cluster)
	// Identities with problems of the placement, such as a conflict with an object of the
	// workspace's own, which may no longer concern it.
	_, keys := c.results.of(pk)
	for _, key := range keys {
		c.queue.Add(queueKey{object: key})
	}
	if len(rules) == 0 {
		return
	}
	watching := c.sources.watching(rules)
	for _, d := range c.caches.DestinationsOf(pk) {
		mbCluster := c.caches.MailboxClusterAt(d)
		if mbCluster == "" {
			continue
		}
		for gr, inf := range watching {
			items, _ := inf.GetIndexer().ByIndex(kcpcache.ClusterIndexName, kcpcache.ClusterIndexKey(mbCluster))
			for _, item := range items {
				u := centerview.AsUnstructured(item)
				if isUpsyncedInMailbox(u) && edgev1alpha1.UpsyncCovers(rules, gr.Group, gr.Resource, u.GetNamespace(), u.GetName()) {
					c.queue.Add(queueKey{object: Key{Cluster: pk.Cluster, GR: gr, Namespace: u.GetNamespace(), Name: u.GetName()}})
				}
			}
		}
	}
}

// enqueueReturned queues the identity of every object that the return path made in a workload
// workspace ("" for all of them).
func (c *Controller) enqueueReturned(cluster string) {
	for _, r := range c.caches.WorkloadResources {
		indexer := c.caches.WorkloadInformer(r.GVR).GetIndexer()
		var items []any
		if cluster == "" {
			for _, k := range indexer.ListIndexFuncValues(centerview.ReturnedByCluster) {
				more, _ := indexer.ByIndex(centerview.ReturnedByCluster, k)
				items = append(items, more...)
			}
		} else {
			items, _ = indexer.ByIndex(centerview.ReturnedByCluster, kcpcache.ClusterIndexKey(logicalcluster.Name(cluster)))
		}
		for _, item := range items {
			if u := centerview.AsUnstructured(item); u != nil {
				c.queue.Add(queueKey{object: Key{Cluster: logicalcluster.From(u).String(), GR: r.GVR.GroupResource(), Namespace: u.GetNamespace(), Name: u.GetName()}})
			}
		}
	}
}

// enqueueMailbox queues the identities of the up-synced objects in a mailbox, in the workload
// workspaces they go back to: once its SyncTarget records the mailbox, they can be traced to
// their placements.
func (c *Controller) enqueueMailbox(mbCluster logicalcluster.Name) {
	for gr, inf := range c.sources.watchingAll() {
		items, _ := inf.GetIndexer().ByIndex(kcpcache.ClusterIndexName, kcpcache.ClusterIndexKey(mbCluster))
		for _, item := range items {
			c.upsyncedChanged(gr, centerview.AsUnstructured(item))
		}
	}
}
