package placementtranslator

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	"github.com/kcp-dev/logicalcluster/v3"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/centerview"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// Event handlers: each change queues the mailboxes it can affect.

// placementChanged queues the mailboxes of the placement's destinations, and its status. An
// update of the status alone (the translator's, the return path's or the summarizer's, which
// during a rollout write it up to once a second each) queues only the status: nothing a
// mailbox's reconcile reads changed, and queueing every destination's mailbox for it cost a pass
// over all of them per status write.
func (c *Controller) placementChanged(old, obj *unstructured.Unstructured) {
	if obj == nil {
		return
	}
	key := placementKey{logicalcluster.From(obj).String(), obj.GetName()}
	if !statusOnly(old, obj) {
		c.enqueuePlacementMailboxes(key)
	}
	c.queue.Add(queueKey{placement: key})
}

// statusOnly says that an update left a placement as its mailboxes see it: the same generation
// (kcp counts each change of the spec), labels, annotations, finalizers and deletion. A replayed
// object (an informer's resync) is one too; the mailboxes are visited again with their
// SyncTargets' resync.
func statusOnly(old, obj *unstructured.Unstructured) bool {
	return old != nil && obj != nil &&
		old.GetGeneration() == obj.GetGeneration() &&
		old.GetDeletionTimestamp().Equal(obj.GetDeletionTimestamp()) &&
		equality.Semantic.DeepEqual(old.GetLabels(), obj.GetLabels()) &&
		equality.Semantic.DeepEqual(old.GetAnnotations(), obj.GetAnnotations()) &&
		slices.Equal(old.GetFinalizers(), obj.GetFinalizers())
}

// sliceChanged queues the mailboxes of the old and the new destinations.
func (c *Controller) sliceChanged(old, obj *unstructured.Unstructured) {
	for _, u := range []*unstructured.Unstructured{old, obj} {
		if u == nil {
			continue
		}
		names, _ := sliceMailboxes(u)
		for _, n := range names {
			c.queue.Add(queueKey{mailbox: n})
		}
		if key, ok := sliceOwner(u); ok {
			c.queue.Add(queueKey{placement: key})
		}
	}
}

// workloadChanged queues the mailboxes of every placement of the object's workspace.
func (c *Controller) workloadChanged(obj *unstructured.Unstructured) {
	if obj == nil {
		return
	}
	cluster := logicalcluster.From(obj)
	placements, _ := c.placements.GetIndexer().ByIndex(kcpcache.ClusterIndexName, kcpcache.ClusterIndexKey(cluster))
	for _, p := range placements {
		if u := centerview.AsUnstructured(p); u != nil {
			c.enqueuePlacementMailboxes(placementKey{cluster.String(), u.GetName()})
		}
	}
}

// syncTargetChanged queues the SyncTarget's mailbox: its labels and annotations are
// customisation parameters, and its status says whether the mailbox is ready.
func (c *Controller) syncTargetChanged(_, obj *unstructured.Unstructured) {
	if obj == nil {
		return
	}
	c.queue.Add(queueKey{mailbox: transport.MailboxName(logicalcluster.From(obj), obj.GetUID())})
}

// locationChanged queues the mailboxes of the destinations reached through the Location, whose
// labels and annotations are customisation parameters.
func (c *Controller) locationChanged(_, obj *unstructured.Unstructured) {
	if obj == nil {
		return
	}
	cluster := logicalcluster.From(obj).String()
	slices, _ := c.slices.GetIndexer().ByIndex(byLocation, cluster+"|"+obj.GetName())
	for _, s := range slices {
		for _, d := range edgev1alpha1.SliceDestinations(centerview.AsUnstructured(s)) {
			if d.Cluster == cluster && d.LocationName == obj.GetName() {
				c.queue.Add(queueKey{mailbox: mailboxName(d)})
			}
		}
	}
}

func (c *Controller) enqueuePlacementMailboxes(key placementKey) {
	slices, _ := c.slices.GetIndexer().ByIndex(byPlacement, key.String())
	for _, s := range slices {
		for _, d := range edgev1alpha1.SliceDestinations(centerview.AsUnstructured(s)) {
			c.queue.Add(queueKey{mailbox: mailboxName(d)})
		}
	}
}

// sliceMailboxes is the byMailbox index function.
func sliceMailboxes(obj any) ([]string, error) {
	var names []string
	for _, d := range edgev1alpha1.SliceDestinations(centerview.AsUnstructured(obj)) {
		names = append(names, mailboxName(d))
	}
	return names, nil
}

// sliceLocations is the byLocation index function.
func sliceLocations(obj any) ([]string, error) {
	seen := map[string]bool{}
	var keys []string
	for _, d := range edgev1alpha1.SliceDestinations(centerview.AsUnstructured(obj)) {
		if k := d.Cluster + "|" + d.LocationName; !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	return keys, nil
}

// slicePlacement is the byPlacement index function.
func slicePlacement(obj any) ([]string, error) {
	if key, ok := sliceOwner(centerview.AsUnstructured(obj)); ok {
		return []string{key.String()}, nil
	}
	return nil, nil
}

// sliceOwner is the EdgePlacement that controls a slice.
func sliceOwner(u *unstructured.Unstructured) (placementKey, bool) {
	if u == nil {
		return placementKey{}, false
	}
	for _, ref := range u.GetOwnerReferences() {
		if ref.Kind == "EdgePlacement" && ref.Controller != nil && *ref.Controller {
			return placementKey{logicalcluster.From(u).String(), ref.Name}, true
		}
	}
	return placementKey{}, false
}

// syncTargetMailbox is the syncTargetsByMailbox index function: the mailbox workspace name of the
// SyncTarget.
func syncTargetMailbox(obj any) ([]string, error) {
	u := centerview.AsUnstructured(obj)
	if u == nil {
		return nil, nil
	}
	return []string{transport.MailboxName(logicalcluster.From(u), u.GetUID())}, nil
}

// mailboxOf is the name of the SyncTarget's mailbox workspace once the mailbox controller has
// recorded one.
func mailboxOf(u *unstructured.Unstructured) string {
	if u == nil {
		return ""
	}
	path, _, _ := unstructured.NestedString(u.Object, "status", "mailboxWorkspace")
	if path == "" {
		return ""
	}
	return logicalcluster.NewPath(path).Base()
}
