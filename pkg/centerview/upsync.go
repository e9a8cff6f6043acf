package centerview

import (
	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

// PlacementKey names an EdgePlacement.
type PlacementRef struct {
	Cluster, Name string
}

func (k PlacementRef) String() string { return k.Cluster + "|" + k.Name }

// WorkloadResource is a kind of workload object served through edge.kcp.io's virtual workspace.
type WorkloadResource struct {
	GVR schema.GroupVersionResource
	// HasStatus: the resource has a status subresource.
	HasStatus bool
}

// UpsyncCaches is what the up-sync return path reads from the placement translator's caches. Each is a
// function (or an informer, to which the controller adds its own event handlers), so that unit
// tests give only what they use.
type UpsyncCaches struct {
	// HasSynced says whether the caches below have synced.
	HasSynced func() bool
	// Placements are the EdgePlacements of every workload workspace, indexed by logical cluster.
	// Slices, SyncTargets and Bindings (the workspaces' APIBindings of edge.kcp.io) are only
	// watched: their changes change where objects come back from, and whether they may.
	Placements, Slices, SyncTargets, Bindings SharedInformer
	// PlacementOfSlice is the EdgePlacement that controls a SinglePlacementSlice.
	PlacementOfSlice func(slice *unstructured.Unstructured) (PlacementRef, bool)
	// DestinationsOf returns the destinations of a placement.
	DestinationsOf func(PlacementRef) []edgev1alpha1.SinglePlacement
	// PlacementsAt returns the placements that have the mailbox with the given logical cluster
	// as a destination, with that destination; nil while the mailbox's SyncTarget has not
	// recorded it.
	PlacementsAt func(mailbox logicalcluster.Name) map[PlacementRef]edgev1alpha1.SinglePlacement
	// MailboxClusterOf is the logical cluster of the SyncTarget's mailbox, "" until recorded.
	MailboxClusterOf func(syncTarget *unstructured.Unstructured) logicalcluster.Name
	// MailboxClusterAt is the logical cluster of a destination's mailbox, "" until recorded.
	MailboxClusterAt func(edgev1alpha1.SinglePlacement) logicalcluster.Name
	// NotConsented returns the kinds whose permission claims the workspace's binding of
	// edge.kcp.io does not accept, each with why; nil while the binding is not known.
	NotConsented func(cluster string) map[schema.GroupResource]string
	// DeliveredByOthersOnly says whether, in the mailbox with the given logical cluster, an
	// assemblage of a workspace other than cluster carries the namespace, and none of
	// cluster's does; known is false while the assemblages are not all known.
	DeliveredByOthersOnly func(mailbox logicalcluster.Name, cluster, namespace string) (others, known bool)
	// OnDeliveredNamespacesChange registers, before the translator starts, a function told the
	// logical cluster of a mailbox whose assemblages changed which namespaces they carry for
	// which workspace: what DeliveredByOthersOnly answers there may have changed.
	OnDeliveredNamespacesChange func(func(mailbox logicalcluster.Name))
	// WorkloadResources are the workload resources served through edge.kcp.io's virtual
	// workspace; WorkloadInformer the translator's informer on one of them (indexed with
	// WorkloadIndexers), across workload workspaces.
	WorkloadResources []WorkloadResource
	WorkloadInformer  func(schema.GroupVersionResource) SharedInformer
	// WorkloadObject returns the object of a workload workspace at an identity (nil if there is
	// none); known is false while the resource's informer has not synced.
	WorkloadObject func(gvr schema.GroupVersionResource, cluster, namespace, name string) (obj *unstructured.Unstructured, known bool)
	// NamespaceLabels returns the labels of a namespace of a workload workspace, nil if unknown.
	NamespaceLabels func(cluster logicalcluster.Name, name string) map[string]string
}

// ReturnedByCluster indexes the workload objects that the return path made, by their workspace.
const ReturnedByCluster = "returnedByCluster"

// WorkloadIndexers are the indexes the return path needs on the translator's informers of
// workload objects; the translator adds them when it makes them.
func WorkloadIndexers() cache.Indexers {
	return cache.Indexers{ReturnedByCluster: func(obj any) ([]string, error) {
		u := AsUnstructured(obj)
		if u == nil || !IsReturned(u) {
			return nil, nil
		}
		return []string{kcpcache.ClusterIndexKey(logicalcluster.From(u))}, nil
	}}
}

// IsReturned says whether a workload object is one that the return path made (labelled
// LabelReturned).
func IsReturned(u *unstructured.Unstructured) bool {
	return u != nil && u.GetLabels()[edgev1alpha1.LabelReturned] == "true"
}
