package placementtranslator

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/centerview"
	"github.com/kcp-dev/edge-mc/pkg/placement-translator/customize"
	"github.com/kcp-dev/edge-mc/pkg/placement-translator/projection"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// Labels and annotations on the copies in mailboxes.
const (
	// LabelProjected marks a copy made by the placement translator; it deletes only these.
	LabelProjected = edgev1alpha1.LabelProjected
	// LabelSourceCluster is the logical cluster of the workload workspace the copy comes from.
	LabelSourceCluster = edgev1alpha1.LabelSourceCluster
	// AnnotationPlacements lists the EdgePlacements that select the copy's original.
	AnnotationPlacements = edgev1alpha1.AnnotationPlacements
	// AnnotationProjectionHash is the hash of what the translator last wrote.
	AnnotationProjectionHash = edgev1alpha1.AnnotationProjectionHash
	// LabelMailbox on a SyncerConfig is the name of its mailbox workspace.
	LabelMailbox = "edge.kcp.io/mailbox"
)

// Problem reasons, per placement and destination.
const (
	problemConflict        = "Conflict"
	problemCustomization   = projection.ReasonCustomization
	problemSelection       = "InvalidDownsync"
	problemUnknownResource = "UnknownResource"
	problemDenatured       = projection.ReasonDenatured
	problemMailbox         = "MailboxNotReady"
	problemWrite           = "WriteError"
	problemTooLarge        = edgev1alpha1.PlacementTooLarge
)

// copyKey identifies a copy in a mailbox, whatever version it is read at.
type copyKey struct {
	gr              schema.GroupResource
	namespace, name string
}

func (k copyKey) String() string {
	id := k.gr.Resource
	if k.gr.Group != "" {
		id += "." + k.gr.Group
	}
	if k.namespace != "" {
		return id + "/" + k.namespace + "/" + k.name
	}
	return id + "/" + k.name
}

// desiredCopy is what one copy in a mailbox should be.
type desiredCopy struct {
	resource   resource
	obj        *unstructured.Unstructured
	source     string
	placements []string
}

// problem is something a placement's owner must know about one destination.
type problem struct {
	placement placementKey
	reason    string
	message   string
}

// desiredState is everything that should be in one mailbox.
type desiredState struct {
	copies map[copyKey]*desiredCopy
	// keep are copies to leave as they are: their originals fail to customise, or they conflict,
	// and the last good copy stays.
	keep map[copyKey]bool
	// keepSources are workload workspaces whose copies all stay: a placement from there has an
	// invalid downsync test.
	keepSources map[string]bool
	// keepResources are resources whose copies all stay: their objects are not all known yet.
	keepResources map[schema.GroupResource]bool
	problems      []problem
	placements    []placementKey
	upsync        []edgev1alpha1.UpsyncSet
	// revisions are the placements' revisions: a hash of what each selects before
	// customisation.
	revisions map[placementKey]string
}

// computeDesired works out what should be in the mailbox from the placements whose slices name
// it as a destination. ok is false while the objects of some workload workspace are not all
// known yet. current is what the mailbox holds, by identity, with each copy's source.
func (c *Controller) computeDesired(mailbox string, current map[copyKey]copyRecord) (d *desiredState, ok bool) {
	d = &desiredState{copies: map[copyKey]*desiredCopy{}, keep: map[copyKey]bool{}, keepSources: map[string]bool{},
		keepResources: c.workload.notSynced(), revisions: map[placementKey]string{}}
	dests := c.destinationsOf(mailbox)
	keys := make([]placementKey, 0, len(dests))
	for k := range dests {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })

	objectsByCluster := map[string][]workloadObject{}
	unacceptedByCluster := map[string]map[schema.GroupResource]string{}
	conflicts := map[copyKey][]placementKey{}
	for _, pk := range keys {
		item, exists, _ := c.placements.GetIndexer().GetByKey(kcpcache.ToClusterAwareKey(pk.cluster, "", pk.name))
		if !exists {
			continue
		}
		placement := &edgev1alpha1.EdgePlacement{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(centerview.AsUnstructured(item).Object, placement); err != nil {
			continue
		}
		d.placements = append(d.placements, pk)
		d.upsync = append(d.upsync, placement.Spec.Upsync...)
		objs, found := objectsByCluster[pk.cluster]
		if !found {
			// Once per workspace: its owner's consent, then its objects.
			unacceptedByCluster[pk.cluster] = c.notConsented(pk.cluster)
			if wait := c.consent.settling(pk.cluster, unacceptedByCluster[pk.cluster], time.Now()); wait > 0 {
				return nil, false // the objects of a kind whose claim is accepted again are on their way
			}
			var synced bool
			if objs, synced = c.workload.objectsOf(logicalcluster.Name(pk.cluster)); !synced {
				return nil, false
			}
			objectsByCluster[pk.cluster] = objs
		}
		params := c.parameters(dests[pk])
		first := len(d.problems)
		projected := c.projectPlacement(pk, placement, objs, params, d)
		if msg := keepWithoutConsent(pk, unacceptedByCluster[pk.cluster], current, d); msg != "" {
			d.problems = append(d.problems, problem{pk, problemNoConsent, msg})
		}
		for i := first; i < len(d.problems); i++ {
			d.problems[i].message = fmt.Sprintf("destination %s:%s: %s", dests[pk].Cluster, dests[pk].SyncTargetName, d.problems[i].message)
		}
		for key, dc := range projected {
			prev, taken := d.copies[key]
			switch {
			case !taken:
				d.copies[key] = dc
			case prev.source == dc.source:
				prev.placements = append(prev.placements, pk.name)
			case key.gr == namespacesGVR.GroupResource():
				// A namespace of the same name in two workload workspaces is one namespace at
				// the edge; the first source's labels and annotations win.
			default:
				if len(conflicts[key]) == 0 {
					for _, n := range prev.placements {
						conflicts[key] = append(conflicts[key], placementKey{prev.source, n})
					}
				}
				conflicts[key] = append(conflicts[key], pk)
			}
		}
	}
	// Colliding objects from two workload workspaces: neither overwrites the other. Whatever
	// copy is there stays; with none, none is made.
	for key, pks := range conflicts {
		delete(d.copies, key)
		d.keep[key] = true
		var who []string
		for _, pk := range pks {
			who = append(who, fmt.Sprintf("EdgePlacement %s of workspace %s", pk.name, pk.cluster))
		}
		holder := "neither is projected"
		if rec, ok := current[key]; ok {
			holder = "the copy from workspace " + rec.source + " stays"
		}
		dest := dests[pks[len(pks)-1]]
		msg := fmt.Sprintf("destination %s:%s: %s is selected from more than one workload workspace (%s); %s", dest.Cluster, dest.SyncTargetName, key, strings.Join(who, ", "), holder)
		for _, pk := range pks {
			d.problems = append(d.problems, problem{pk, problemConflict, msg})
		}
	}
	return d, true
}

// destinationsOf returns the placements that have the mailbox as a destination, each with
// that destination.
func (c *Controller) destinationsOf(mailbox string) map[placementKey]edgev1alpha1.SinglePlacement {
	out := map[placementKey]edgev1alpha1.SinglePlacement{}
	items, _ := c.slices.GetIndexer().ByIndex(byMailbox, mailbox)
	for _, item := range items {
		u := centerview.AsUnstructured(item)
		pk, ok := sliceOwner(u)
		if !ok {
			continue
		}
		if dest, ok := c.decodedSlices.forMailbox(u, mailbox); ok {
			out[pk] = dest
		}
	}
	return out
}

// parameters are the customisation parameters of a destination.
func (c *Controller) parameters(dest edgev1alpha1.SinglePlacement) customize.Parameters {
	var p customize.Parameters
	if item, ok, _ := c.syncTargets.GetIndexer().GetByKey(kcpcache.ToClusterAwareKey(dest.Cluster, "", dest.SyncTargetName)); ok {
		u := centerview.AsUnstructured(item)
		p.SyncTargetLabels, p.SyncTargetAnnotations = u.GetLabels(), u.GetAnnotations()
	}
	if item, ok, _ := c.locations.GetIndexer().GetByKey(kcpcache.ToClusterAwareKey(dest.Cluster, "", dest.LocationName)); ok {
		u := centerview.AsUnstructured(item)
		p.LocationLabels, p.LocationAnnotations = u.GetLabels(), u.GetAnnotations()
	}
	return p
}

// projectPlacement returns the copies one placement wants at one destination, customised.
// Problems go into d; an object that fails keeps its last good copy.
func (c *Controller) projectPlacement(pk placementKey, p *edgev1alpha1.EdgePlacement, objs []workloadObject, params customize.Parameters, d *desiredState) map[copyKey]*desiredCopy {
	out := map[copyKey]*desiredCopy{}
	cluster := logicalcluster.Name(pk.cluster)
	cands := make([]projection.Candidate, 0, len(objs))
	for i, wo := range objs {
		u, r := wo.obj, wo.resource
		cands = append(cands, projection.Candidate{Object: projection.Object{Group: r.gvr.Group, Resource: r.gvr.Resource, Namespaced: r.namespaced,
			Namespace: u.GetNamespace(), Name: u.GetName(), Labels: u.GetLabels()}, Custom: r.custom, Source: u, Index: i})
	}
	chosen, err := projection.Select(p.Spec.Downsync, cands, func(ns string) map[string]string { return c.workload.namespaceLabels(cluster, ns) })
	if err != nil {
		d.problems = append(d.problems, problem{pk, problemSelection, "spec." + err.Error()})
		d.keepSources[pk.cluster] = true
		return nil
	}
	selected := make(map[copyKey]workloadObject, len(chosen))
	for key, cand := range chosen {
		selected[copyKey{gr: key.GroupResource(), namespace: key.Namespace, name: key.Name}] = objs[cand.Index]
	}
	// A resource name that the workspace does not have selects nothing, silently: most likely a
	// typo, or a custom kind whose CRD is not there (yet). The rest of the placement goes on.
	for i, test := range p.Spec.Downsync {
		for _, name := range test.Resources {
			if name == "*" || c.workload.placeable(cluster, test.APIGroup, name) {
				continue
			}
			where := "in any API group"
			if test.APIGroup != nil {
				where = fmt.Sprintf("in API group %q", *test.APIGroup)
			}
			d.problems = append(d.problems, problem{pk, problemUnknownResource, fmt.Sprintf(
				"spec.downsync[%d].resources names %q, which is no resource of this workspace %s, so it selects nothing; "+
					"give the lower-case plural that kubectl api-resources lists (and its apiGroup), or, for a custom kind, create its CRD in the workspace",
				i, name, where)})
		}
	}
	d.revisions[pk] = c.revisionOf(p, selected)
	for key, wo := range selected {
		copyObj, err := c.makeCopy(wo, params)
		if err != nil {
			d.problems = append(d.problems, problem{pk, err.reason, err.Error()})
			d.keep[key] = true
			continue
		}
		out[key] = &desiredCopy{resource: wo.resource, obj: copyObj, source: pk.cluster, placements: []string{pk.name}}
	}
	return out
}

// revisionOf is a placement's revision: a hash of its selection and of the selected objects as
// they are in the workload workspace (sanitised, before customisation, with the names of their
// Customizers); the same at every destination.
func (c *Controller) revisionOf(p *edgev1alpha1.EdgePlacement, selected map[copyKey]workloadObject) string {
	downsync, _ := json.Marshal(p.Spec.Downsync)
	content := map[string]any{"downsync": string(downsync)}
	for key, wo := range selected {
		entry := c.sanitizedHash(wo.obj)
		if ns, name, ok := projection.CustomizerOf(wo.obj); ok {
			if item, ok, _ := c.customizers.GetIndexer().GetByKey(kcpcache.ToClusterAwareKey(logicalcluster.From(wo.obj).String(), ns, name)); ok {
				entry += "/" + c.sanitizedHash(centerview.AsUnstructured(item))
			}
		}
		content[key.String()] = entry
	}
	return transport.Hash(content)
}

// sanitizedHash is the hash of an object as it travels before customisation, computed once per
// version of the object.
func (c *Controller) sanitizedHash(u *unstructured.Unstructured) string {
	return c.hashes.get(u, func() string { return transport.Hash(transport.Sanitize(u).Object) })
}

// projectionError is a problem with one object.
type projectionError struct {
	reason string
	msg    string
}

func (e *projectionError) Error() string { return e.msg }

// makeCopy sanitises and customises one object for one destination, with the code that
// `kubectl edge diff` runs too (projection.Copy).
func (c *Controller) makeCopy(wo workloadObject, params customize.Parameters) (*unstructured.Unstructured, *projectionError) {
	cluster := logicalcluster.From(wo.obj).String()
	out, err := projection.Copy(wo.obj, keyOf(wo).String(), func(ns, name string) (*unstructured.Unstructured, bool) {
		item, exists, _ := c.customizers.GetIndexer().GetByKey(kcpcache.ToClusterAwareKey(cluster, ns, name))
		if !exists {
			return nil, false
		}
		return centerview.AsUnstructured(item), true
	}, params)
	if err != nil {
		return nil, &projectionError{err.Reason, err.Message}
	}
	return out, nil
}

func keyOf(wo workloadObject) copyKey {
	return copyKey{gr: wo.resource.gvr.GroupResource(), namespace: wo.obj.GetNamespace(), name: wo.obj.GetName()}
}
