package placementtranslator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	apisv1alpha2 "github.com/kcp-dev/sdk/apis/apis/v1alpha2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/centerview"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// copyRecord is what the controller knows of an object delivered into a mailbox: the workload
// workspace it comes from and the assemblage that carries it.
type copyRecord struct {
	source     string
	assemblage string
}

// reconcileMailbox makes the mailbox hold, for each placement that has it as a destination, one
// assemblage of the objects the placement selects, customised; deletes the assemblages of
// placements that no longer have it; and makes its SyncerConfig say what else the syncer needs.
// It writes only what differs from what the mailbox holds (the mailbox view), so an assemblage
// edited or deleted by hand is put back, and nothing is written after a restart that did not
// change.
func (c *Controller) reconcileMailbox(ctx context.Context, name string) (time.Duration, error) {
	logger := klog.FromContext(ctx)
	st := c.syncTargetOfMailbox(name)
	if st == nil {
		// The SyncTarget is gone, and the mailbox controller deletes its mailbox.
		c.forgetMailbox(name)
		c.report(name, mailboxResult{})
		return 0, nil
	}
	path, _, _ := unstructured.NestedString(st.Object, "status", "mailboxWorkspace")
	cluster, _, _ := unstructured.NestedString(st.Object, "status", "mailboxCluster")
	if path == "" || cluster == "" || !mailboxReady(st) {
		var res mailboxResult
		for pk := range c.destinationsOf(name) {
			res.placements = append(res.placements, pk)
			res.problems = append(res.problems, problem{pk, problemMailbox, fmt.Sprintf("the mailbox of SyncTarget %s|%s is not ready yet", logicalcluster.From(st), st.GetName())})
		}
		c.report(name, res)
		return 0, nil // a change of the SyncTarget's status queues the mailbox again
	}
	if !c.view.hasSynced() {
		logger.V(4).Info("waiting for the view of the mailboxes to sync")
		return time.Second, nil
	}
	mb, mbc := logicalcluster.NewPath(path), logicalcluster.Name(cluster)
	current := c.written.overlay(mbc, c.view.assemblagesOf(mbc))
	d, ok := c.computeDesired(name, heldObjects(current))
	if !ok {
		logger.V(4).Info("waiting for the custom kinds of a workload workspace to be known, or the objects of a kind whose permission claim it accepted again")
		return 2 * time.Second, nil
	}
	res := mailboxResult{placements: d.placements, problems: d.problems}
	defer func() { c.report(name, res) }()
	if len(d.keepResources) > 0 {
		// Some objects of a workload resource are not known yet: writing now could drop them.
		logger.V(4).Info("waiting for the informers of workload resources to sync", "resources", fmt.Sprint(d.keepResources))
		res.pending = true
		return 2 * time.Second, nil
	}

	withdrawn, err := c.unseenWithdrawals(ctx, heldObjects(current), d)
	if err != nil {
		res.pending = true
		return 0, err
	}
	if len(withdrawn) > 0 {
		// Out of sight is not deleted: the binding's change reaches the cache in a moment, and
		// then those copies are kept as last delivered.
		logger.V(2).Info("objects left sight because their workspace's owner withdrew a claim that the cache of bindings does not show yet; waiting for it before writing", "kinds", fmt.Sprint(withdrawn))
		res.pending = true
		return time.Second, nil
	}
	dests := c.destinationsOf(name)
	state := c.mailboxState(name)
	seal := newSealer(destinationKeyOf(c.view.syncerConfigOf(mbc)), c.cfg.SealingSecret, state.sealed, func(pk placementKey) string {
		if dest, ok := dests[pk]; ok {
			return dest.Cluster + ":" + dest.SyncTargetName
		}
		return ""
	})
	plans := c.planAssemblages(ctx, mb, d, current, seal)
	state.sealed = seal.keep(d.copies)
	res.problems = append(res.problems, seal.problems()...)
	placed := map[placementKey]bool{}
	for _, pk := range d.placements {
		placed[pk] = true
	}
	var failed []error
	for _, p := range plans {
		res.problems = append(res.problems, p.problems...)
		if p.hold {
			continue
		}
		cur := current[p.name]
		if cur != nil && cur.Spec.Version == p.encoded.Version {
			p.deliveredAt = cur.Annotations[AnnotationDeliveredAt]
			// The rollout learns that this destination has its newest version (after a
			// restart it knows nothing of it, and the destinations after it would wait).
			if placement := c.placementOf(p.placement); placement != nil {
				c.noteCurrent(p.placement, placement, name, p.encoded.Version, d.revisions[p.placement])
			}
		} else {
			// A new version: it goes only when the placement's dependencies are ready here and
			// its rollout permits.
			placement := c.placementOf(p.placement)
			if placement == nil {
				continue
			}
			dest := dests[p.placement]
			if reason, msg := c.dependencyProblem(p.placement, placement, mbc, placed, dest.Cluster+":"+dest.SyncTargetName); reason != "" {
				res.problems = append(res.problems, problem{p.placement, reason, msg})
				res.hold(p.placement)
				continue
			}
			if !c.permit(p.placement, placement, name, p.encoded.Version, d.revisions[p.placement]) {
				res.hold(p.placement)
				continue
			}
			p.deliveredAt = c.now().UTC().Format(time.RFC3339)
		}
		if err := c.writeAssemblage(ctx, mb, mbc, p, cur); err != nil {
			failed = append(failed, err)
			res.problems = append(res.problems, problem{p.placement, problemWrite, err.Error()})
		}
	}
	planned := map[string]bool{}
	for _, p := range plans {
		planned[p.name] = true
	}
	for aName, a := range current {
		if planned[aName] || d.keepSources[a.Spec.Placement.Cluster] {
			continue
		}
		if err := c.deleteAssemblage(ctx, mb, mbc, aName); err != nil {
			failed = append(failed, err)
			continue
		}
		logger.V(2).Info("deleted the assemblage of a placement that no longer has this destination", "assemblage", aName)
	}
	recheck, err := c.reconcileSyncerConfig(ctx, mb, mbc, name, d)
	if err != nil {
		failed = append(failed, err)
	}
	if recheck > 0 {
		res.pending = true
	}
	return recheck, errors.Join(failed...)
}

// heldObjects says, for each object the mailbox's assemblages carry, which workload workspace
// it comes from and which assemblage carries it.
func heldObjects(current map[string]*edgev1alpha1.Assemblage) map[copyKey]copyRecord {
	held := map[copyKey]copyRecord{}
	for name, a := range current {
		for _, o := range a.Spec.Objects {
			k, ok := transport.ParseKey(o)
			if !ok {
				continue
			}
			held[copyKeyOf(k)] = copyRecord{source: a.Spec.Placement.Cluster, assemblage: name}
		}
	}
	return held
}

func copyKeyOf(k transport.Key) copyKey {
	return copyKey{gr: k.GroupResource(), namespace: k.Namespace, name: k.Name}
}

func (k copyKey) transportKey() transport.Key {
	return transport.KeyOf(k.gr, k.namespace, k.name)
}

// assemblagePlan is what one placement's assemblage in the mailbox should be.
type assemblagePlan struct {
	placement placementKey
	name      string
	// hold: leave the assemblage as it is (the placement's selection is invalid, or the
	// document could not be made).
	hold     bool
	encoded  *transport.Encoded
	shared   []edgev1alpha1.SharedObject
	problems []problem
	// gains: the assemblage is to carry an object it does not carry now (written first, so that
	// an object moving between assemblages of the mailbox is never absent from all of them).
	gains bool
	// deliveredAt is the annotation AnnotationDeliveredAt to write: when this version was first
	// written.
	deliveredAt string
	// revision is the placement's revision.
	revision string
}

// planAssemblages works out each placement's assemblage. An object selected by several
// placements of its workspace travels in the assemblage of the first of them by name; the others
// list it as shared.
//
// Secrets and objects annotated edge.kcp.io/sealed: "true" travel sealed for the destination's
// key (seal); without a key they are not delivered, and the last version the assemblage carried
// stays, as for an object that fails to customise.
func (c *Controller) planAssemblages(ctx context.Context, mb logicalcluster.Path, d *desiredState, current map[string]*edgev1alpha1.Assemblage, seal *sealer) []*assemblagePlan {
	held := heldObjects(current)
	var plans []*assemblagePlan
	for _, pk := range d.placements {
		p := &assemblagePlan{placement: pk, name: transport.AssemblageName(pk.cluster, pk.name), revision: d.revisions[pk]}
		plans = append(plans, p)
		if d.keepSources[pk.cluster] {
			p.hold = true
			continue
		}
		var entries []transport.Entry
		carried := map[copyKey]bool{}
		for key, dc := range d.copies {
			if dc.source != pk.cluster || !slices.Contains(dc.placements, pk.name) {
				continue
			}
			owner := slices.Min(dc.placements)
			if owner != pk.name {
				p.shared = append(p.shared, edgev1alpha1.SharedObject{Object: key.String(), Assemblage: transport.AssemblageName(pk.cluster, owner)})
				continue
			}
			e := transport.Entry{Group: dc.resource.gvr.Group, Version: dc.resource.gvr.Version, Resource: dc.resource.gvr.Resource,
				Namespaced: dc.resource.namespaced, Object: dc.obj.Object}
			if err := transport.CheckSize(&e); err != nil {
				p.problems = append(p.problems, problem{pk, problemTooLarge, err.Error()})
				d.keep[key] = true
				continue
			}
			e, ok, err := seal.seal(pk, e)
			if err != nil || !ok {
				if err != nil {
					p.problems = append(p.problems, problem{pk, problemNotSealed, err.Error()})
				}
				d.keep[key] = true
				continue
			}
			entries = append(entries, e)
			carried[key] = true
		}
		// Objects that failed (customisation, size, a collision) keep their last good version,
		// if this assemblage carried one.
		var keptKeys []copyKey
		for key := range d.keep {
			if rec, ok := held[key]; ok && rec.assemblage == p.name && !carried[key] {
				keptKeys = append(keptKeys, key)
			}
		}
		if len(keptKeys) > 0 {
			kept, err := c.previousEntries(ctx, mb, p.name, keptKeys)
			if err != nil {
				p.hold = true
				p.problems = append(p.problems, problem{pk, problemWrite, fmt.Sprintf("keeping the last good version of %d objects: %v", len(keptKeys), err)})
				continue
			}
			entries = append(entries, kept...)
		}
		sort.Slice(p.shared, func(i, j int) bool { return p.shared[i].Object < p.shared[j].Object })
		enc, err := transport.Encode(entries)
		if err != nil {
			p.hold = true
			p.problems = append(p.problems, problem{pk, problemTooLarge, err.Error()})
			continue
		}
		p.encoded = enc
		if cur := current[p.name]; cur == nil {
			p.gains = len(enc.Objects) > 0
		} else {
			for _, o := range enc.Objects {
				if !slices.Contains(cur.Spec.Objects, o) {
					p.gains = true
					break
				}
			}
		}
	}
	sort.SliceStable(plans, func(i, j int) bool { return plans[i].gains && !plans[j].gains })
	return plans
}

// previousEntries reads, from the mailbox, the named objects of the version of an assemblage
// that is there.
func (c *Controller) previousEntries(ctx context.Context, mb logicalcluster.Path, name string, keys []copyKey) ([]transport.Entry, error) {
	u, err := c.cfg.Admin.Cluster(mb).Resource(assemblagesGVR).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading assemblage %s of mailbox %s: %w", name, mb, err)
	}
	a := &edgev1alpha1.Assemblage{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, a); err != nil {
		return nil, err
	}
	var parts []*edgev1alpha1.AssemblagePart
	if a.Spec.Parts > 1 {
		list, err := c.cfg.Admin.Cluster(mb).Resource(assemblagePartsGVR).List(ctx, metav1.ListOptions{LabelSelector: transport.LabelAssemblage + "=" + transport.LabelValue(name)})
		if err != nil {
			return nil, fmt.Errorf("reading the parts of assemblage %s of mailbox %s: %w", name, mb, err)
		}
		parts = transport.PartsOf(list.Items)
	}
	doc, err := transport.DecodeAssemblage(a, parts)
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, k := range keys {
		want[k.String()] = true
	}
	var out []transport.Entry
	for _, e := range doc.Objects {
		if want[e.Key().String()] {
			out = append(out, e)
		}
	}
	return out, nil
}

// writeAssemblage writes what differs between the plan and what the mailbox holds: the parts
// first, then the Assemblage, then it deletes the parts no longer needed.
func (c *Controller) writeAssemblage(ctx context.Context, mb logicalcluster.Path, mbc logicalcluster.Name, p *assemblagePlan, cur *edgev1alpha1.Assemblage) error {
	enc := p.encoded
	parts := c.view.partsOf(mbc)
	for i := 1; i < len(enc.Pieces); i++ {
		partName := transport.PartName(p.name, i)
		if have := parts[partName]; have != nil && have.Spec.Assemblage == p.name && have.Spec.Version == enc.Version &&
			int(have.Spec.Index) == i && have.Spec.Digest == enc.Digests[i] {
			continue
		}
		part := &edgev1alpha1.AssemblagePart{
			TypeMeta:   metav1.TypeMeta{APIVersion: edgev1alpha1.SchemeGroupVersion.String(), Kind: "AssemblagePart"},
			ObjectMeta: metav1.ObjectMeta{Name: partName, Labels: map[string]string{transport.LabelAssemblage: transport.LabelValue(p.name)}},
			Spec: edgev1alpha1.AssemblagePartSpec{Assemblage: p.name, Version: enc.Version, Index: int32(i),
				Data: enc.Pieces[i], Digest: enc.Digests[i]},
		}
		if err := c.apply(ctx, mb, assemblagePartsGVR, partName, part); err != nil {
			return err
		}
	}
	want := edgev1alpha1.AssemblageSpec{
		Placement:   edgev1alpha1.PlacementReference{Cluster: p.placement.cluster, Name: p.placement.name},
		Version:     enc.Version,
		Revision:    p.revision,
		Format:      transport.FormatV1,
		Objects:     enc.Objects,
		ObjectCount: int32(len(enc.Objects)),
		Shared:      p.shared,
		Parts:       int32(len(enc.Pieces)),
		Data:        enc.Pieces[0],
		Digest:      enc.Digests[0],
	}
	labels := map[string]string{
		transport.LabelPlacementCluster: p.placement.cluster,
		transport.LabelPlacementName:    transport.LabelValue(p.placement.name),
	}
	annotations := map[string]string{}
	if p.deliveredAt != "" {
		annotations[AnnotationDeliveredAt] = p.deliveredAt
	}
	if cur == nil || !sameSpec(&cur.Spec, &want) || !hasLabels(cur.Labels, labels) || !hasLabels(cur.Annotations, annotations) {
		a := &edgev1alpha1.Assemblage{
			TypeMeta:   metav1.TypeMeta{APIVersion: edgev1alpha1.SchemeGroupVersion.String(), Kind: "Assemblage"},
			ObjectMeta: metav1.ObjectMeta{Name: p.name, Labels: labels, Annotations: annotations},
			Spec:       want,
		}
		written, err := c.applyObject(ctx, mb, assemblagesGVR, p.name, a)
		if err != nil {
			return err
		}
		c.written.record(mbc, a, written.GetResourceVersion())
		klog.FromContext(ctx).V(3).Info("wrote an assemblage", "assemblage", p.name, "version", enc.Version, "objects", len(enc.Objects), "parts", len(enc.Pieces), "bytes", enc.CompressedBytes)
	}
	for partName, part := range parts {
		if part.Spec.Assemblage == p.name && int(part.Spec.Index) >= len(enc.Pieces) {
			if err := c.deletePart(ctx, mb, partName); err != nil {
				return err
			}
		}
	}
	return nil
}

// sameSpec compares what the translator writes of an assemblage with what the mailbox view holds
// (whose data is dropped, and whose digest says whether the data matched it).
func sameSpec(have, want *edgev1alpha1.AssemblageSpec) bool {
	return have.Placement == want.Placement && have.Version == want.Version && have.Format == want.Format &&
		have.Parts == want.Parts && have.Digest == want.Digest && have.ObjectCount == want.ObjectCount &&
		have.Revision == want.Revision && slices.Equal(have.Objects, want.Objects) && slices.Equal(have.Shared, want.Shared)
}

func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// apply writes obj with server-side apply, as the translator's field manager.
func (c *Controller) apply(ctx context.Context, mb logicalcluster.Path, gvr schema.GroupVersionResource, name string, obj any) error {
	_, err := c.applyObject(ctx, mb, gvr, name, obj)
	return err
}

// applyObject is apply, returning what the server holds after the write.
func (c *Controller) applyObject(ctx context.Context, mb logicalcluster.Path, gvr schema.GroupVersionResource, name string, obj any) (*unstructured.Unstructured, error) {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: content}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "status")
	client := c.cfg.Admin.Cluster(mb).Resource(gvr)
	out, err := client.Apply(ctx, name, u, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if err != nil {
		return nil, fmt.Errorf("writing %s %s into mailbox %s: %w", gvr.Resource, name, mb, err)
	}
	// The translator alone decides the spec of what it writes into mailboxes. Server-side apply
	// takes over every field the translator gives, but leaves alone those that someone else set
	// and the translator omits (an upsync rule added by hand to a SyncerConfig, a shared entry
	// added to an assemblage): if any is left, the spec is replaced as a whole.
	if !sameJSON(out.Object["spec"], u.Object["spec"]) {
		out.Object["spec"] = u.Object["spec"]
		if out, err = client.Update(ctx, out, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
			return nil, fmt.Errorf("putting back the spec of %s %s in mailbox %s, which holds fields the translator did not write: %w", gvr.Resource, name, mb, err)
		}
		klog.FromContext(ctx).Info("put back the spec of an object in a mailbox that held fields the translator did not write", "mailbox", mb, "resource", gvr.Resource, "name", name)
	}
	return out, nil
}

// sameJSON says whether a and b encode to the same JSON (maps encode with sorted keys).
func sameJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

// writtenAssemblages remembers the assemblages the translator wrote until the mailbox view shows
// them: a reconcile that runs before the view has caught up with the translator's own write must
// not take the assemblage for missing or old and write it again.
type writtenAssemblages struct {
	mu sync.Mutex
	// byMailbox holds, per mailbox's logical cluster, the assemblages written, by name, with
	// the resourceVersion the write gave them.
	byMailbox map[logicalcluster.Name]map[string]writtenAssemblage
}

type writtenAssemblage struct {
	assemblage      *edgev1alpha1.Assemblage
	resourceVersion uint64
}

func (w *writtenAssemblages) record(mbc logicalcluster.Name, a *edgev1alpha1.Assemblage, resourceVersion string) {
	rv, err := strconv.ParseUint(resourceVersion, 10, 64)
	if err != nil {
		return
	}
	kept := a.DeepCopy()
	kept.Spec.Data = nil
	kept.ResourceVersion = resourceVersion
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.byMailbox == nil {
		w.byMailbox = map[logicalcluster.Name]map[string]writtenAssemblage{}
	}
	if w.byMailbox[mbc] == nil {
		w.byMailbox[mbc] = map[string]writtenAssemblage{}
	}
	w.byMailbox[mbc][a.Name] = writtenAssemblage{assemblage: kept, resourceVersion: rv}
}

// overlay puts, into what the view shows of a mailbox, the assemblages written since, and forgets
// those the view has caught up with.
func (w *writtenAssemblages) overlay(mbc logicalcluster.Name, current map[string]*edgev1alpha1.Assemblage) map[string]*edgev1alpha1.Assemblage {
	w.mu.Lock()
	defer w.mu.Unlock()
	for name, wa := range w.byMailbox[mbc] {
		if have := current[name]; have != nil {
			if rv, err := strconv.ParseUint(have.ResourceVersion, 10, 64); err != nil || rv >= wa.resourceVersion {
				delete(w.byMailbox[mbc], name)
				continue
			}
			kept := wa.assemblage.DeepCopy()
			kept.Status = have.Status
			current[name] = kept
			continue
		}
		current[name] = wa.assemblage.DeepCopy()
	}
	if len(w.byMailbox[mbc]) == 0 {
		delete(w.byMailbox, mbc)
	}
	return current
}

// forget drops what was written into a mailbox (its assemblage was deleted, or the mailbox).
func (w *writtenAssemblages) forget(mbc logicalcluster.Name, name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.byMailbox[mbc], name)
}

// deleteAssemblage deletes an assemblage and its parts.
func (c *Controller) deleteAssemblage(ctx context.Context, mb logicalcluster.Path, mbc logicalcluster.Name, name string) error {
	err := c.cfg.Admin.Cluster(mb).Resource(assemblagesGVR).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !transport.Gone(err, assemblagesGVR.GroupResource(), name) {
		return fmt.Errorf("deleting assemblage %s from mailbox %s: %w", name, mb, err)
	}
	c.written.forget(mbc, name)
	for partName, part := range c.view.partsOf(mbc) {
		if part.Spec.Assemblage == name {
			if err := c.deletePart(ctx, mb, partName); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *Controller) deletePart(ctx context.Context, mb logicalcluster.Path, name string) error {
	err := c.cfg.Admin.Cluster(mb).Resource(assemblagePartsGVR).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !transport.Gone(err, assemblagePartsGVR.GroupResource(), name) {
		return fmt.Errorf("deleting assemblage part %s from mailbox %s: %w", name, mb, err)
	}
	return nil
}

func (c *Controller) syncTargetOfMailbox(name string) *unstructured.Unstructured {
	items, _ := c.syncTargets.GetIndexer().ByIndex(syncTargetsByMailbox, name)
	for _, item := range items {
		if u := centerview.AsUnstructured(item); u != nil {
			return u
		}
	}
	return nil
}

func mailboxReady(st *unstructured.Unstructured) bool {
	s := &edgev1alpha1.SyncTarget{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(st.Object, s); err != nil {
		return false
	}
	return meta.IsStatusConditionTrue(s.Status.Conditions, edgev1alpha1.SyncTargetMailboxReady)
}

// upsyncNeedsWorkloads: an upsync rule names a kind that kcp serves only through the workloads
// export, so the mailbox must serve it for the syncer to up-sync objects of it there.
func upsyncNeedsWorkloads(rules []edgev1alpha1.UpsyncSet, resources []resource) bool {
	for _, r := range resources {
		gr := r.gvr.GroupResource()
		if r.custom || transport.IsKCPBuiltIn(gr) {
			continue
		}
		for i := range rules {
			if rules[i].MatchesResource(gr.Group, gr.Resource) {
				return true
			}
		}
	}
	return false
}

// ensureWorkloadsBinding makes the mailbox bind the workloads export, and says whether it is
// bound and whether it created the binding just now.
func (c *Controller) ensureWorkloadsBinding(ctx context.Context, mb logicalcluster.Path) (bound, created bool, err error) {
	bindings := c.cfg.KCP.Cluster(mb).ApisV1alpha2().APIBindings()
	b, err := bindings.Get(ctx, edgev1alpha1.WorkloadsAPIExportName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		klog.FromContext(ctx).V(2).Info("binding the workloads export in the mailbox, for up-sync")
		b, err = bindings.Create(ctx, &apisv1alpha2.APIBinding{
			ObjectMeta: metav1.ObjectMeta{Name: edgev1alpha1.WorkloadsAPIExportName},
			Spec: apisv1alpha2.APIBindingSpec{Reference: apisv1alpha2.BindingReference{Export: &apisv1alpha2.ExportBindingReference{
				Path: c.cfg.ESPW.String(), Name: edgev1alpha1.WorkloadsAPIExportName,
			}}},
		}, metav1.CreateOptions{})
		created = err == nil
	}
	if err != nil {
		return false, false, fmt.Errorf("binding %s in mailbox %s: %w", edgev1alpha1.WorkloadsAPIExportName, mb, err)
	}
	return b.Status.Phase == apisv1alpha2.APIBindingPhaseBound, created, nil
}
