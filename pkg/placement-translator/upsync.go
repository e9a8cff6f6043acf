package placementtranslator

import (
	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/mailbox"
)

// The up-sync return path. Syncers up-sync edge objects that the placements' spec.upsync covers
// into their mailboxes (labelled edge.kcp.io/upsynced, annotated with their SyncTarget). Each such
// object goes back to the workload workspace of every EdgePlacement that has the mailbox as a
// destination and whose spec.upsync covers it, written through edge.kcp.io's virtual workspace
// (the permission claims the workspace's owner accepted). The unit of work is one object identity
// (group, resource, namespace, name) in one workload workspace: an upsyncKey. Its reconcile
// (upsync_reconcile.go) gathers the up-synced objects of that identity in the mailboxes of the
// workspace's covering placements, keeps one (the one already there, else the oldest), and writes,
// updates or deletes the workspace's copy; two destinations, or an object of the workspace's
// own, at one identity are an UpsyncConflict.

// upsyncKey is an object identity in a workload workspace, whose up-synced copy to reconcile.
type upsyncKey struct {
	cluster         string // the workload workspace's logical cluster
	gr              schema.GroupResource
	namespace, name string
}

func (k upsyncKey) copyKey() copyKey {
	return copyKey{gr: k.gr, namespace: k.namespace, name: k.name}
}

func (k upsyncKey) String() string { return k.copyKey().String() + " in workspace " + k.cluster }

// isUpsynced: the object bears LabelUpsynced. In a workload workspace these are never selected
// for down-sync, so that what came from the edge is never projected back to mailboxes.
func isUpsynced(u *unstructured.Unstructured) bool {
	return u != nil && u.GetLabels()[edgev1alpha1.LabelUpsynced] == "true"
}

// upsyncRules decodes a placement's spec.upsync.
func upsyncRules(u *unstructured.Unstructured) []edgev1alpha1.UpsyncSet {
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

// placementRules returns the spec.upsync of a placement in the cache.
func (c *Controller) placementRules(pk placementKey) []edgev1alpha1.UpsyncSet {
	item, exists, _ := c.placements.GetIndexer().GetByKey(kcpcache.ToClusterAwareKey(pk.cluster, "", pk.name))
	if !exists {
		return nil
	}
	return upsyncRules(asUnstructured(item))
}

// Event handlers of the return path.

// upsyncPlacementChanged records a placement's rules (its informers are started or stopped
// accordingly) and, when they changed, queues every identity they can affect.
func (c *Controller) upsyncPlacementChanged(pk placementKey) {
	rules := c.placementRules(pk) // nil once the placement is gone
	if c.upsync.setRules(pk, rules) {
		c.enqueueUpsyncScan(pk, rules)
	}
}

// upsyncedHandler queues, on any change of an up-synced object in a mailbox, its identity in the
// workload workspaces it goes back to.
func (c *Controller) upsyncedHandler(gr schema.GroupResource) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { c.upsyncedChanged(gr, asUnstructured(obj)) },
		UpdateFunc: func(old, obj any) {
			if o, n := asUnstructured(old), asUnstructured(obj); o != nil && n != nil && o.GetResourceVersion() != n.GetResourceVersion() {
				c.upsyncedChanged(gr, n)
			}
		},
		DeleteFunc: func(obj any) { c.upsyncedChanged(gr, asUnstructured(obj)) },
	}
}

func (c *Controller) upsyncedChanged(gr schema.GroupResource, u *unstructured.Unstructured) {
	if !isUpsyncedInMailbox(u) {
		return
	}
	st := c.syncTargetOfMailboxCluster(logicalcluster.From(u))
	if st == nil {
		return // queued when the SyncTarget records this mailbox (syncTargetChanged)
	}
	name := mailbox.WorkspaceName(logicalcluster.From(st), st.GetUID())
	for pk := range c.destinationsOf(name) {
		if edgev1alpha1.UpsyncCovers(c.placementRules(pk), gr.Group, gr.Resource, u.GetNamespace(), u.GetName()) {
			c.queue.Add(queueKey{upsync: upsyncKey{cluster: pk.cluster, gr: gr, namespace: u.GetNamespace(), name: u.GetName()}})
		}
	}
}

// workloadChangedForUpsync queues the identity of a changed object of a workload workspace when
// the return path made it, or may make it: an object of the workspace's own there is a conflict,
// and its deletion lets the up-synced one in.
func (c *Controller) workloadChangedForUpsync(gr schema.GroupResource, u *unstructured.Unstructured) {
	if u == nil {
		return
	}
	key := upsyncKey{cluster: logicalcluster.From(u).String(), gr: gr, namespace: u.GetNamespace(), name: u.GetName()}
	if isReturned(u) {
		c.queue.Add(queueKey{upsync: key})
		return
	}
	if inf, ready := c.upsync.watch(gr); ready && inf != nil {
		if items, _ := inf.GetIndexer().ByIndex(byIdentity, key.namespace+"/"+key.name); len(items) > 0 {
			c.queue.Add(queueKey{upsync: key})
		}
	}
}

// enqueueUpsyncScan queues every identity that a placement's up-sync can affect: the objects
// that the return path made in its workspace, those it reported problems of, and the up-synced
// objects in its destinations' mailboxes that its rules cover.
func (c *Controller) enqueueUpsyncScan(pk placementKey, rules []edgev1alpha1.UpsyncSet) {
	c.enqueueReturned(pk.cluster)
	// Identities with problems of the placement, such as a conflict with an object of the
	// workspace's own, which may no longer concern it.
	_, keys := c.upsyncResults.of(pk)
	for _, key := range keys {
		c.queue.Add(queueKey{upsync: key})
	}
	if len(rules) == 0 {
		return
	}
	watching := c.upsync.watching(rules)
	slices, _ := c.slices.GetIndexer().ByIndex(byPlacement, pk.String())
	for _, s := range slices {
		for _, d := range edgev1alpha1.SliceDestinations(asUnstructured(s)) {
			item, ok, _ := c.syncTargets.GetIndexer().GetByKey(kcpcache.ToClusterAwareKey(d.Cluster, "", d.SyncTargetName))
			if !ok {
				continue
			}
			mbCluster, _, _ := unstructured.NestedString(asUnstructured(item).Object, "status", "mailboxCluster")
			if mbCluster == "" {
				continue
			}
			for gr, inf := range watching {
				items, _ := inf.GetIndexer().ByIndex(kcpcache.ClusterIndexName, kcpcache.ClusterIndexKey(logicalcluster.Name(mbCluster)))
				for _, item := range items {
					u := asUnstructured(item)
					if isUpsyncedInMailbox(u) && edgev1alpha1.UpsyncCovers(rules, gr.Group, gr.Resource, u.GetNamespace(), u.GetName()) {
						c.queue.Add(queueKey{upsync: upsyncKey{cluster: pk.cluster, gr: gr, namespace: u.GetNamespace(), name: u.GetName()}})
					}
				}
			}
		}
	}
}

// enqueueReturned queues the identity of every object that the return path made in a workload
// workspace ("" for all of them).
func (c *Controller) enqueueReturned(cluster string) {
	for _, r := range c.workload.resources {
		indexer := c.workload.informers[r.gvr].GetIndexer()
		var items []any
		if cluster == "" {
			keys := indexer.ListIndexFuncValues(returnedByCluster)
			for _, k := range keys {
				more, _ := indexer.ByIndex(returnedByCluster, k)
				items = append(items, more...)
			}
		} else {
			items, _ = indexer.ByIndex(returnedByCluster, kcpcache.ClusterIndexKey(logicalcluster.Name(cluster)))
		}
		for _, item := range items {
			if u := asUnstructured(item); u != nil {
				c.queue.Add(queueKey{upsync: upsyncKey{cluster: logicalcluster.From(u).String(), gr: r.gvr.GroupResource(), namespace: u.GetNamespace(), name: u.GetName()}})
			}
		}
	}
}

// enqueueMailboxUpsynced queues the identities of the up-synced objects in a mailbox, in the
// workload workspaces they go back to: once its SyncTarget records the mailbox, they can be
// traced to their placements.
func (c *Controller) enqueueMailboxUpsynced(mbCluster logicalcluster.Name) {
	for gr, inf := range c.upsync.watchingAll() {
		items, _ := inf.GetIndexer().ByIndex(kcpcache.ClusterIndexName, kcpcache.ClusterIndexKey(mbCluster))
		for _, item := range items {
			c.upsyncedChanged(gr, asUnstructured(item))
		}
	}
}

// syncTargetOfMailboxCluster is the SyncTarget whose mailbox has the given logical cluster.
func (c *Controller) syncTargetOfMailboxCluster(cluster logicalcluster.Name) *unstructured.Unstructured {
	items, _ := c.syncTargets.GetIndexer().ByIndex(syncTargetsByMailboxCluster, cluster.String())
	for _, item := range items {
		if u := asUnstructured(item); u != nil {
			return u
		}
	}
	return nil
}

// syncTargetMailboxCluster is the syncTargetsByMailboxCluster index function.
func syncTargetMailboxCluster(obj any) ([]string, error) {
	u := asUnstructured(obj)
	if u == nil {
		return nil, nil
	}
	if cluster, _, _ := unstructured.NestedString(u.Object, "status", "mailboxCluster"); cluster != "" {
		return []string{cluster}, nil
	}
	return nil, nil
}
