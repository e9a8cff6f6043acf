package placementtranslator

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	"github.com/kcp-dev/logicalcluster/v3"
	apisv1alpha2 "github.com/kcp-dev/sdk/apis/apis/v1alpha2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/centerview"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// apiBindingsGVR: the virtual workspace of an APIExport always lets its owner read the APIBindings
// of the workspaces that bind it, and so the translator reads the consent of each workload
// workspace's owner, the permission claims of edge.kcp.io that its binding accepts.
var apiBindingsGVR = apisv1alpha2.SchemeGroupVersion.WithResource("apibindings")

// problemNoConsent: the workload workspace's owner does not accept a claim of edge.kcp.io on a
// kind whose objects the placement delivered.
const problemNoConsent = "ClaimNotAccepted"

// notConsented returns the kinds whose permission claims the workload workspace's binding of
// edge.kcp.io does not accept, each with why ("rejected", or "not answered" for a claim the
// export makes that the binding does not list). Through the export's virtual workspace the
// controllers see no object of such a kind there, and may write none: which says nothing about
// whether the objects exist. nil if the binding is not known.
func (c *Controller) notConsented(cluster string) map[schema.GroupResource]string {
	items, _ := c.bindings.GetIndexer().ByIndex(kcpcache.ClusterIndexName, kcpcache.ClusterIndexKey(logicalcluster.Name(cluster)))
	for _, item := range items {
		u := centerview.AsUnstructured(item)
		if u == nil {
			continue
		}
		if claims := c.claims.get(u, func() bindingClaims { return claimsOf(u) }); claims.ofEdge {
			return claims.unaccepted
		}
	}
	return nil
}

// bindingClaims is what notConsented needs of an APIBinding: whether it binds edge.kcp.io, and
// then the claims it does not accept. Every mailbox's reconcile asks it of its placements'
// workspaces, so it is decoded once per version of the binding (see versionMemo).
type bindingClaims struct {
	ofEdge     bool
	unaccepted map[schema.GroupResource]string
}

func claimsOf(u *unstructured.Unstructured) bindingClaims {
	b := &apisv1alpha2.APIBinding{}
	if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, b) != nil {
		return bindingClaims{}
	}
	if ref := b.Spec.Reference.Export; ref == nil || ref.Name != edgev1alpha1.EdgeAPIExportName {
		return bindingClaims{}
	}
	return bindingClaims{ofEdge: true, unaccepted: unacceptedClaims(b)}
}

// unacceptedClaims returns the kinds of the claims the binding's export makes that the binding
// does not accept, or that kcp has not applied yet (it labels the objects of an accepted claim
// before the virtual workspace shows them, and then lists the claim in the binding's
// status.appliedPermissionClaims).
func unacceptedClaims(b *apisv1alpha2.APIBinding) map[schema.GroupResource]string {
	out := map[schema.GroupResource]string{}
	same := func(a, b apisv1alpha2.PermissionClaim) bool {
		return a.Group == b.Group && a.Resource == b.Resource && a.IdentityHash == b.IdentityHash
	}
	for _, asked := range b.Status.ExportPermissionClaims {
		why := "not answered"
		for _, answer := range b.Spec.PermissionClaims {
			if same(answer.PermissionClaim, asked) {
				why = "rejected"
				if answer.State == apisv1alpha2.ClaimAccepted {
					why = "accepted, not applied by kcp yet"
					for _, applied := range b.Status.AppliedPermissionClaims {
						if same(applied.PermissionClaim, asked) {
							why = ""
						}
					}
				}
				break
			}
		}
		if why != "" {
			out[schema.GroupResource{Group: asked.Group, Resource: asked.Resource}] = why
		}
	}
	return out
}

// consentSettle is how long the translator waits, after a kind's claim is accepted and applied
// again, before it writes the mailboxes of the workspace's placements: the objects of that kind
// reach its informers through the virtual workspace's watch, which may follow the binding's by a
// moment, and a mailbox written before they arrive would drop them at the edges.
const consentSettle = 15 * time.Second

type consentKey struct {
	cluster string
	gr      schema.GroupResource
}

// consentTracker remembers the kinds of each workspace seen without consent, and when one was seen
// with consent again.
type consentTracker struct {
	mu   sync.Mutex
	lost map[consentKey]bool
	back map[consentKey]time.Time
}

// settling records the workspace's kinds without consent now, and returns how long its kinds
// whose consent came back lately still settle (0 if none does).
func (t *consentTracker) settling(cluster string, unaccepted map[schema.GroupResource]string, now time.Time) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.lost == nil {
		t.lost, t.back = map[consentKey]bool{}, map[consentKey]time.Time{}
	}
	for gr := range unaccepted {
		k := consentKey{cluster, gr}
		t.lost[k] = true
		delete(t.back, k)
	}
	var wait time.Duration
	for k := range t.lost {
		if _, still := unaccepted[k.gr]; k.cluster != cluster || still {
			continue
		}
		delete(t.lost, k)
		t.back[k] = now
	}
	for k, at := range t.back {
		if k.cluster != cluster {
			continue
		}
		if left := consentSettle - now.Sub(at); left > 0 {
			wait = max(wait, left)
		} else {
			delete(t.back, k)
		}
	}
	return wait
}

// keepWithoutConsent keeps, as last delivered, the copies that the placement pk's assemblage
// carries in the mailbox of kinds its workspace's owner does not (or no longer) consent to
// edge-mc reading: their objects are out of sight, not gone, and what is out of sight is never
// deleted at an edge. It returns the problem to report, or "" if there is none.
func keepWithoutConsent(pk placementKey, unaccepted map[schema.GroupResource]string, current map[copyKey]copyRecord, d *desiredState) string {
	if len(unaccepted) == 0 {
		return ""
	}
	assemblage := transport.AssemblageName(pk.cluster, pk.name)
	kept := map[schema.GroupResource]int{}
	for key, rec := range current {
		if rec.source != pk.cluster || rec.assemblage != assemblage {
			continue
		}
		if _, ok := unaccepted[key.gr]; ok {
			d.keep[key] = true
			kept[key.gr]++
			// Its namespace stays too: the namespace's own copy would otherwise leave with the
			// last object of it in sight, and deleting a namespace at the edge deletes what
			// is in it.
			nsKey := copyKey{gr: namespacesGVR.GroupResource(), name: key.namespace}
			if rec, held := current[nsKey]; key.namespace != "" && held && rec.assemblage == assemblage {
				d.keep[nsKey] = true
			}
		}
	}
	if len(kept) == 0 {
		return ""
	}
	var kinds []string
	for gr, n := range kept {
		kinds = append(kinds, fmt.Sprintf("%s (claim %s; %d object(s) kept)", gr, unaccepted[gr], n))
	}
	sort.Strings(kinds)
	return fmt.Sprintf("the workspace's APIBinding %s does not accept the permission claims on %s, so edge-mc can no longer read those objects: what it delivered of them stays as last delivered, and none of them comes back from the edge; accept the claims (kubectl edge ensure wmw <this workspace> accepts them all) to resume; deleting the placement removes what it delivered",
		edgev1alpha1.EdgeAPIExportName, strings.Join(kinds, ", "))
}

// unseenWithdrawals guards the removal of copies against a withdrawn consent that the cache of
// APIBindings has not shown yet. When a workspace's owner rejects a claim, the virtual workspace
// stops showing the objects of that kind at once, and its watch can tell the translator so before
// the watch of the binding does: the objects look deleted, and their copies, with their
// namespace, would be deleted at the edges (CI caught it under load, TestUpsyncNeedsConsent). So
// before a mailbox loses any copy from a workspace, the workspace's binding is read from kcp: the
// kinds of those copies whose claims kcp no longer accepts, while the cache still says they are,
// are returned, and the caller waits for the cache instead of writing.
func (c *Controller) unseenWithdrawals(ctx context.Context, current map[copyKey]copyRecord, d *desiredState) (map[string][]schema.GroupResource, error) {
	removed := map[string]map[schema.GroupResource]bool{}
	for key, rec := range current {
		if _, stays := d.copies[key]; stays || d.keep[key] || d.keepSources[rec.source] {
			continue
		}
		if removed[rec.source] == nil {
			removed[rec.source] = map[schema.GroupResource]bool{}
		}
		removed[rec.source][key.gr] = true
	}
	out := map[string][]schema.GroupResource{}
	for cluster, kinds := range removed {
		cached := c.notConsented(cluster)
		list, err := c.edgeVW.Cluster(logicalcluster.NewPath(cluster)).Resource(apiBindingsGVR).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("reading the APIBindings of workspace %s before removing copies of its objects: %w", cluster, err)
		}
		for i := range list.Items {
			claims := claimsOf(&list.Items[i])
			if !claims.ofEdge {
				continue
			}
			for gr := range kinds {
				_, liveUnaccepted := claims.unaccepted[gr]
				_, cachedUnaccepted := cached[gr]
				if liveUnaccepted && !cachedUnaccepted {
					out[cluster] = append(out[cluster], gr)
				}
			}
		}
	}
	return out, nil
}

// bindingChanged: a change of a workspace's consent changes what its placements may deliver.
func (c *Controller) bindingChanged(_, obj *unstructured.Unstructured) {
	c.workloadChanged(obj)
}
