package placementtranslator

import (
	"slices"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/centerview"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// UpsyncCaches gives the up-sync return path (package upsync) what it reads from the
// translator's caches: it runs beside the translator, on the same informers.
func (c *Controller) UpsyncCaches() centerview.UpsyncCaches {
	resources := make([]centerview.WorkloadResource, 0, len(c.workload.resources))
	for _, r := range c.workload.resources {
		resources = append(resources, centerview.WorkloadResource{GVR: r.gvr, HasStatus: r.hasStatus})
	}
	return centerview.UpsyncCaches{
		HasSynced:   c.HasSynced,
		Placements:  c.placements,
		Slices:      c.slices,
		SyncTargets: c.syncTargets,
		Bindings:    c.bindings,
		PlacementOfSlice: func(u *unstructured.Unstructured) (centerview.PlacementRef, bool) {
			pk, ok := sliceOwner(u)
			return centerview.PlacementRef{Cluster: pk.cluster, Name: pk.name}, ok
		},
		DestinationsOf: func(pk centerview.PlacementRef) []edgev1alpha1.SinglePlacement {
			var out []edgev1alpha1.SinglePlacement
			for _, d := range c.destinationsOfPlacement(placementKey{pk.Cluster, pk.Name}) {
				out = append(out, d)
			}
			return out
		},
		PlacementsAt: func(mb logicalcluster.Name) map[centerview.PlacementRef]edgev1alpha1.SinglePlacement {
			st := c.syncTargetOfMailboxCluster(mb)
			if st == nil {
				return nil
			}
			out := map[centerview.PlacementRef]edgev1alpha1.SinglePlacement{}
			for pk, d := range c.destinationsOf(transport.MailboxName(logicalcluster.From(st), st.GetUID())) {
				out[centerview.PlacementRef{Cluster: pk.cluster, Name: pk.name}] = d
			}
			return out
		},
		MailboxClusterOf: mailboxClusterOf,
		MailboxClusterAt: func(d edgev1alpha1.SinglePlacement) logicalcluster.Name {
			item, ok, _ := c.syncTargets.GetIndexer().GetByKey(kcpcache.ToClusterAwareKey(d.Cluster, "", d.SyncTargetName))
			if !ok {
				return ""
			}
			return mailboxClusterOf(centerview.AsUnstructured(item))
		},
		NotConsented:          c.notConsented,
		DeliveredByOthersOnly: c.deliveredByOthersOnly,
		OnDeliveredNamespacesChange: func(handler func(logicalcluster.Name)) {
			c.namespacesChanged = append(c.namespacesChanged, handler)
		},
		WorkloadResources: resources,
		WorkloadInformer: func(gvr schema.GroupVersionResource) centerview.SharedInformer {
			return c.workload.informers[gvr]
		},
		WorkloadObject:  c.workload.get,
		NamespaceLabels: c.workload.namespaceLabels,
	}
}

// deliveredByOthersOnly says whether, in the mailbox with the given logical cluster, an
// assemblage of a workspace other than cluster carries the namespace, and none of cluster's does.
// known is false until the view of the mailboxes' assemblages has synced.
func (c *Controller) deliveredByOthersOnly(mailbox logicalcluster.Name, cluster, namespace string) (others, known bool) {
	c.view.mu.Lock()
	assemblages := c.view.assemblages
	c.view.mu.Unlock()
	if assemblages == nil || !assemblages.HasSynced() {
		return false, false
	}
	own := false
	items, _ := assemblages.GetIndexer().ByIndex(kcpcache.ClusterIndexName, kcpcache.ClusterIndexKey(mailbox))
	for _, item := range items {
		a := centerview.AsAssemblage(item)
		if a == nil || !slices.Contains(a.Spec.Objects, "namespaces/"+namespace) {
			continue
		}
		if a.Labels[transport.LabelPlacementCluster] == cluster {
			own = true
		} else {
			others = true
		}
	}
	return others && !own, true
}

// syncTargetOfMailboxCluster is the SyncTarget whose mailbox has the given logical cluster.
func (c *Controller) syncTargetOfMailboxCluster(cluster logicalcluster.Name) *unstructured.Unstructured {
	items, _ := c.syncTargets.GetIndexer().ByIndex(syncTargetsByMailboxCluster, cluster.String())
	for _, item := range items {
		if u := centerview.AsUnstructured(item); u != nil {
			return u
		}
	}
	return nil
}

// mailboxClusterOf is the logical cluster of the SyncTarget's mailbox, "" until the mailbox
// controller records it.
func mailboxClusterOf(st *unstructured.Unstructured) logicalcluster.Name {
	if st == nil {
		return ""
	}
	cluster, _, _ := unstructured.NestedString(st.Object, "status", "mailboxCluster")
	return logicalcluster.Name(cluster)
}

// syncTargetMailboxCluster is the syncTargetsByMailboxCluster index function.
func syncTargetMailboxCluster(obj any) ([]string, error) {
	if cluster := mailboxClusterOf(centerview.AsUnstructured(obj)); cluster != "" {
		return []string{cluster.String()}, nil
	}
	return nil, nil
}
