package upsync

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/kcp-dev/logicalcluster/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/centerview"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// Problem reasons of the return path, per placement.
const (
	problemUpsyncConflict = "UpsyncConflict"
	problemUpsyncWrite    = "UpsyncWriteError"
)

// errNotKnownYet: what the reconcile needs is not all known yet (an informer has not synced, a
// virtual workspace is not published yet); the key is retried with backoff.
var errNotKnownYet = errors.New("waiting for the caches of the up-sync return path")

// errCacheBehind: a write met a newer state than the cache holds; retried once the cache
// catches up, and not reported.
var errCacheBehind = errors.New("the cache is behind the server")

// upsyncCandidate is an up-synced object in the mailbox of one destination, which placements of
// the workload workspace cover.
type upsyncCandidate struct {
	dest       edgev1alpha1.SinglePlacement
	obj        *unstructured.Unstructured
	placements []PlacementKey
}

// destination names the candidate's destination as placement messages do.
func (cand upsyncCandidate) destination() string {
	return cand.dest.Cluster + ":" + cand.dest.SyncTargetName
}

// reconcile makes the workload workspace's copy of an up-synced object what the
// destinations' mailboxes hold.
func (c *Controller) reconcile(ctx context.Context, key Key) error {
	logger := klog.FromContext(ctx)
	wl, ok := c.workloadResource(key.GR)
	if !ok {
		c.report(key, nil)
		return nil
	}
	existing, known := c.caches.WorkloadObject(wl.GVR, key.Cluster, key.Namespace, key.Name)
	if !known {
		return errNotKnownYet
	}
	cands, known := c.upsyncCandidates(key)
	if !known {
		return errNotKnownYet
	}
	cands, refused, known := c.withoutOthersNamespaces(key, cands)
	if !known {
		return errNotKnownYet
	}
	if noConsent, ok := c.withoutConsent(key, cands); !ok {
		c.report(key, append(refused, noConsent...))
		return nil
	}
	winner := chooseUpsyncSource(cands, existing)
	problems := append(refused, upsyncConflicts(key, cands, existing, winner)...)
	var err error
	switch {
	case winner >= 0:
		err = c.writeReturned(ctx, key, wl, cands[winner], existing)
		if err != nil && !errors.Is(err, errCacheBehind) {
			for _, pk := range cands[winner].placements {
				problems = append(problems, problem{pk, problemUpsyncWrite, err.Error()})
			}
		}
	case centerview.IsReturned(existing):
		err = c.deleteReturned(ctx, key, wl, existing)
		if err == nil {
			logger.V(2).Info("deleted an up-synced object that no destination up-syncs any more", "object", key.String())
		}
	}
	c.report(key, problems)
	return err
}

// upsyncCandidates gathers the up-synced objects of the key's identity in the mailboxes of the
// destinations of the workspace's placements that cover it. known is false while the up-synced
// objects of the resource are not all known.
func (c *Controller) upsyncCandidates(key Key) (cands []upsyncCandidate, known bool) {
	covers := false
	for _, p := range c.placementsIn(logicalcluster.Name(key.Cluster)) {
		rules := rulesOf(p)
		for i := range rules {
			covers = covers || rules[i].MatchesResource(key.GR.Group, key.GR.Resource)
		}
	}
	if !covers {
		return nil, true
	}
	inf, ready := c.sources.watch(key.GR)
	if !ready {
		return nil, false
	}
	if inf == nil {
		return nil, true
	}
	items, _ := inf.GetIndexer().ByIndex(byIdentity, key.Namespace+"/"+key.Name)
	for _, item := range items {
		u := centerview.AsUnstructured(item)
		if !isUpsyncedInMailbox(u) || u.GetDeletionTimestamp() != nil {
			continue
		}
		cand := upsyncCandidate{obj: u}
		for pk, dest := range c.caches.PlacementsAt(logicalcluster.From(u)) {
			if pk.Cluster == key.Cluster && edgev1alpha1.UpsyncCovers(c.rules(pk), key.GR.Group, key.GR.Resource, key.Namespace, key.Name) {
				cand.dest = dest
				cand.placements = append(cand.placements, pk)
			}
		}
		if len(cand.placements) > 0 {
			sort.Slice(cand.placements, func(i, j int) bool { return cand.placements[i].String() < cand.placements[j].String() })
			cands = append(cands, cand)
		}
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].destination() < cands[j].destination() })
	return cands, true
}

// edgeOwnNamespaces are namespaces of the edge cluster itself, never of a workload: what is made
// there (the edge's own Secrets, the syncer's mailbox kubeconfig) is no author's to have back.
var edgeOwnNamespaces = map[string]bool{"kube-system": true, "kube-public": true, "kube-node-lease": true, "edge-syncer": true}

// withoutOthersNamespaces leaves out the candidates that are not the workspace's to have back: an
// object in a namespace of the edge cluster itself, or in a namespace that another workspace
// delivers to that destination and this one does not (another tenant's, at a shared edge). An
// upsync rule can name any namespace, so without this an author would read what other tenants'
// workloads, or the edge itself, made there. Each is reported to the placements that asked.
// Namespaces that only the edge has (made there by the workload) still come back. known is false
// while the mailboxes' assemblages are not all known.
func (c *Controller) withoutOthersNamespaces(key Key, cands []upsyncCandidate) (kept []upsyncCandidate, refused []problem, known bool) {
	if key.Namespace == "" {
		return cands, nil, true
	}
	for _, cand := range cands {
		why := ""
		if edgeOwnNamespaces[key.Namespace] {
			why = "it is a namespace of the edge cluster itself"
		} else if others, known := c.caches.DeliveredByOthersOnly(logicalcluster.From(cand.obj), key.Cluster, key.Namespace); !known {
			return nil, nil, false
		} else if others {
			why = "another workspace delivers that namespace there, and this one does not"
		}
		if why == "" {
			kept = append(kept, cand)
			continue
		}
		msg := fmt.Sprintf("%s is not returned from %s: %s; up-sync brings back objects of the namespaces this workspace delivers to a destination, or that only the edge has",
			key.id(), cand.destination(), why)
		for _, pk := range cand.placements {
			refused = append(refused, problem{pk, problemUpsyncConflict, msg})
		}
	}
	return kept, refused, true
}

// chooseUpsyncSource picks the candidate that the workspace's copy comes from, or -1 for none.
// An object of the workspace's own (not made by the return path) is never replaced: none. The
// copy already there stays while its destination still up-syncs it; otherwise the oldest
// up-synced object wins (by creation in its mailbox, then by destination name), so that the
// choice does not flip-flop, and a restart makes the same choice.
func chooseUpsyncSource(cands []upsyncCandidate, existing *unstructured.Unstructured) int {
	if len(cands) == 0 || (existing != nil && !centerview.IsReturned(existing)) {
		return -1
	}
	if existing != nil {
		a := existing.GetAnnotations()
		for i, cand := range cands {
			if cand.dest.Cluster == a[edgev1alpha1.AnnotationUpsyncedFromCluster] && cand.dest.SyncTargetName == a[edgev1alpha1.AnnotationUpsyncedFrom] {
				return i
			}
		}
	}
	best := 0
	for i := 1; i < len(cands); i++ {
		ti, tb := cands[i].obj.GetCreationTimestamp(), cands[best].obj.GetCreationTimestamp()
		if ti.Before(&tb) || (ti.Equal(&tb) && cands[i].destination() < cands[best].destination()) {
			best = i
		}
	}
	return best
}

// upsyncConflicts reports, to every placement that covers the identity at one of the
// candidates' destinations, an object of the workspace's own there, or more than one candidate.
func upsyncConflicts(key Key, cands []upsyncCandidate, existing *unstructured.Unstructured, winner int) []problem {
	own := existing != nil && !centerview.IsReturned(existing)
	if len(cands) == 0 || (len(cands) == 1 && !own) {
		return nil
	}
	var from []string
	placements := map[PlacementKey]bool{}
	for _, cand := range cands {
		from = append(from, cand.destination())
		for _, pk := range cand.placements {
			placements[pk] = true
		}
	}
	id := key.id()
	var msg string
	if own {
		msg = fmt.Sprintf("%s is up-synced from %s, but the workspace has an object of its own there, which up-sync never overwrites", id, strings.Join(from, ", "))
	} else {
		msg = fmt.Sprintf("%s is up-synced from more than one destination (%s); the one from %s is kept", id, strings.Join(from, ", "), cands[winner].destination())
	}
	out := make([]problem, 0, len(placements))
	for pk := range placements {
		out = append(out, problem{pk, problemUpsyncConflict, msg})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].placement.String() < out[j].placement.String() })
	return out
}

// returnedCopy is the workspace's copy of an up-synced object: without what the mailbox server
// set, labelled as up-synced and returned, annotated with the destination it came from and the
// hash of the rest. Its status goes along in the object when the resource has no status
// subresource.
func returnedCopy(upsynced *unstructured.Unstructured, wl WorkloadResource, dest edgev1alpha1.SinglePlacement) *unstructured.Unstructured {
	out := transport.Sanitize(upsynced)
	out.SetAPIVersion(wl.GVR.GroupVersion().String())
	if status, ok := upsynced.Object["status"]; ok && !wl.HasStatus {
		out.Object["status"] = status
	}
	labels := out.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[edgev1alpha1.LabelUpsynced] = "true"
	labels[edgev1alpha1.LabelReturned] = "true"
	out.SetLabels(labels)
	annotations := out.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	delete(annotations, edgev1alpha1.AnnotationUpsyncHash)
	annotations[edgev1alpha1.AnnotationUpsyncedFrom] = dest.SyncTargetName
	annotations[edgev1alpha1.AnnotationUpsyncedFromCluster] = dest.Cluster
	out.SetAnnotations(annotations)
	annotations[edgev1alpha1.AnnotationUpsyncHash] = transport.Hash(out.Object)
	out.SetAnnotations(annotations)
	return out
}

// writeReturned creates or updates the workspace's copy of the winning candidate, and its
// status, where they differ. It creates rather than applies, and updates with the cached
// resourceVersion, so that it never takes over an object that the workspace's author made
// meanwhile.
func (c *Controller) writeReturned(ctx context.Context, key Key, wl WorkloadResource, cand upsyncCandidate, existing *unstructured.Unstructured) error {
	logger := klog.FromContext(ctx)
	desired := returnedCopy(cand.obj, wl, cand.dest)
	client := c.cfg.Edge.Cluster(logicalcluster.NewPath(key.Cluster)).Resource(wl.GVR).Namespace(key.Namespace)
	var err error
	switch {
	case existing == nil:
		if key.Namespace != "" {
			if err := c.ensureWorkspaceNamespace(ctx, key.Cluster, key.Namespace); err != nil {
				return err
			}
		}
		existing, err = client.Create(ctx, desired, metav1.CreateOptions{FieldManager: FieldManager})
		if apierrors.IsAlreadyExists(err) {
			return errCacheBehind
		}
		if err != nil {
			return fmt.Errorf("creating the up-synced %s from %s: %w", key.id(), cand.destination(), err)
		}
		logger.V(2).Info("brought an up-synced object back into its workload workspace", "object", key.String(), "from", cand.destination())
	case existing.GetAnnotations()[edgev1alpha1.AnnotationUpsyncHash] != desired.GetAnnotations()[edgev1alpha1.AnnotationUpsyncHash]:
		desired.SetResourceVersion(existing.GetResourceVersion())
		existing, err = client.Update(ctx, desired, metav1.UpdateOptions{FieldManager: FieldManager})
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return errCacheBehind
		}
		if err != nil {
			return fmt.Errorf("updating the up-synced %s from %s: %w", key.id(), cand.destination(), err)
		}
		logger.V(3).Info("updated an up-synced object in its workload workspace", "object", key.String(), "from", cand.destination())
	}
	status, _, _ := unstructured.NestedMap(cand.obj.Object, "status")
	have, _, _ := unstructured.NestedMap(existing.Object, "status")
	if !wl.HasStatus || len(status) == 0 || reflect.DeepEqual(status, have) {
		return nil
	}
	withStatus := existing.DeepCopy()
	withStatus.Object["status"] = status
	_, err = client.UpdateStatus(ctx, withStatus, metav1.UpdateOptions{FieldManager: FieldManager})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return errCacheBehind
	}
	if err != nil {
		return fmt.Errorf("writing the status of the up-synced %s from %s: %w", key.id(), cand.destination(), err)
	}
	return nil
}

// deleteReturned deletes the workspace's copy, made by the return path, that no destination
// up-syncs any more.
func (c *Controller) deleteReturned(ctx context.Context, key Key, wl WorkloadResource, existing *unstructured.Unstructured) error {
	uid := existing.GetUID()
	err := c.cfg.Edge.Cluster(logicalcluster.NewPath(key.Cluster)).Resource(wl.GVR).Namespace(key.Namespace).
		Delete(ctx, key.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting the up-synced %s: %w", key, err)
	}
	return nil
}

// ensureWorkspaceNamespace creates a namespace for up-synced objects in a workload workspace,
// labelled as made for them, if it has none of that name.
func (c *Controller) ensureWorkspaceNamespace(ctx context.Context, cluster, name string) error {
	if c.caches.NamespaceLabels(logicalcluster.Name(cluster), name) != nil {
		return nil
	}
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace"}}
	ns.SetName(name)
	ns.SetLabels(map[string]string{edgev1alpha1.LabelUpsyncNamespace: "true"})
	_, err := c.cfg.Edge.Cluster(logicalcluster.NewPath(cluster)).Resource(namespacesGVR).Create(ctx, ns, metav1.CreateOptions{FieldManager: FieldManager})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s for up-synced objects: %w", name, err)
	}
	return nil
}

// withoutConsent refuses the candidates of an up-synced object of a kind the workspace's owner
// does not consent to edge-mc writing there: kcp would refuse the write, and the author is told
// why on the placements that asked.
func (c *Controller) withoutConsent(key Key, cands []upsyncCandidate) (refused []problem, ok bool) {
	why, no := c.caches.NotConsented(key.Cluster)[key.GR]
	if !no {
		return nil, true
	}
	msg := fmt.Sprintf("%s is not returned: the workspace's APIBinding %s does not accept the permission claim on %s (claim %s), by which edge-mc writes it there; accept the claim (kubectl edge ensure wmw <this workspace> accepts them all) to have it back",
		key.id(), edgev1alpha1.EdgeAPIExportName, key.GR, why)
	for _, cand := range cands {
		for _, pk := range cand.placements {
			refused = append(refused, problem{pk, problemUpsyncConflict, msg})
		}
	}
	return refused, false
}

// workloadResource returns the workload resource, served through edge.kcp.io's virtual
// workspace, of a group and resource.
func (c *Controller) workloadResource(gr schema.GroupResource) (WorkloadResource, bool) {
	for _, r := range c.caches.WorkloadResources {
		if r.GVR.GroupResource() == gr {
			return r, true
		}
	}
	return WorkloadResource{}, false
}
