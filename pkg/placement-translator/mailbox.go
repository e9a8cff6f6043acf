package placementtranslator

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
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
	"github.com/kcp-dev/edge-mc/pkg/placement-translator/projection"
)

// copyRecord is what the controller knows of a copy in a mailbox.
type copyRecord struct {
	// gvr is the resource, at the version the copy was written or read at.
	gvr    schema.GroupVersionResource
	hash   string
	source string
}

// reconcileMailbox makes the mailbox hold what its destinations' placements select, and its
// SyncerConfig say so.
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
	if path == "" || !mailboxReady(st) {
		var res mailboxResult
		for pk := range c.destinationsOf(name) {
			res.placements = append(res.placements, pk)
			res.problems = append(res.problems, problem{pk, problemMailbox, fmt.Sprintf("the mailbox of SyncTarget %s|%s is not ready yet", logicalcluster.From(st), st.GetName())})
		}
		c.report(name, res)
		return 0, nil // a change of the SyncTarget's status queues the mailbox again
	}
	mb := logicalcluster.NewPath(path)
	state := c.mailboxState(name)
	if !state.loaded {
		if err := c.loadMailbox(ctx, mb, state); err != nil {
			return 0, err
		}
	}
	d, ok := c.computeDesired(name, state.copies)
	if !ok {
		logger.V(4).Info("waiting for the custom kinds of a workload workspace to be known")
		return 2 * time.Second, nil
	}
	res := mailboxResult{placements: d.placements, problems: d.problems}
	defer func() { c.report(name, res) }()

	// While the mailbox does not serve the workload kinds yet, the copies of every other kind
	// are written (and the SyncerConfig names only theirs), so that kcp binding the export,
	// which takes it seconds when many mailboxes are new, does not hold them up.
	writable := d
	var recheck time.Duration
	if (needsWorkloadsBinding(d) || upsyncNeedsWorkloads(d.upsync, c.workload.resources)) && !state.workloadsBound {
		bound, created, err := c.ensureWorkloadsBinding(ctx, mb)
		if err != nil {
			return 0, err
		}
		if created {
			// Come back once the other mailboxes waiting have their bindings made too, so that
			// kcp binds them all while the copies are written.
			res.pending = true
			return time.Millisecond, nil
		}
		if bound {
			state.workloadsBound = true
		} else {
			res.pending = true
			recheck = time.Second
			writable = withoutWorkloadKinds(d)
		}
	}

	// The SyncerConfig names every resource the mailbox may hold copies of before any is
	// written, so that after a restart the controller finds (and can delete) them all.
	if err := c.writeSyncerConfig(ctx, mb, name, state, syncerConfigSpec(writable, state.copies, true)); err != nil {
		return 0, err
	}
	var failed []error
	for _, key := range applyOrder(writable.copies) {
		dc := d.copies[key]
		hash, err := c.writeCopy(ctx, mb, key, dc, state.copies[key].hash)
		if err != nil {
			failed = append(failed, err)
			for _, p := range dc.placements {
				res.problems = append(res.problems, problem{placementKey{dc.source, p}, problemWrite, err.Error()})
			}
			continue
		}
		state.copies[key] = copyRecord{gvr: dc.resource.gvr, hash: hash, source: dc.source}
	}
	for _, key := range deleteOrder(state.copies) {
		rec := state.copies[key]
		if _, wanted := d.copies[key]; wanted || d.keep[key] || d.keepSources[rec.source] || d.keepResources[key.gr] {
			continue
		}
		err := c.cfg.Admin.Cluster(mb).Resource(rec.gvr).Namespace(key.namespace).Delete(ctx, key.name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			failed = append(failed, fmt.Errorf("deleting %s from mailbox %s: %w", key, mb, err))
			continue
		}
		logger.V(2).Info("deleted a copy nothing selects any more", "copy", key.String())
		delete(state.copies, key)
	}
	if err := c.writeSyncerConfig(ctx, mb, name, state, syncerConfigSpec(writable, state.copies, false)); err != nil {
		return 0, err
	}
	return recheck, errors.Join(failed...)
}

// withoutWorkloadKinds is d without the copies of kinds that kcp serves only through the
// workloads export (and without the upsync rules, which the SyncerConfig gets with them).
// Deletions still follow d: nothing of those kinds is in a mailbox that does not bind the
// export.
func withoutWorkloadKinds(d *desiredState) *desiredState {
	w := *d
	w.copies = map[copyKey]*desiredCopy{}
	for k, dc := range d.copies {
		if !needsWorkloads(k, dc) {
			w.copies[k] = dc
		}
	}
	w.upsync = nil
	return &w
}

func (c *Controller) syncTargetOfMailbox(name string) *unstructured.Unstructured {
	items, _ := c.syncTargets.GetIndexer().ByIndex(syncTargetsByMailbox, name)
	for _, item := range items {
		if u := asUnstructured(item); u != nil {
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

// loadMailbox reads, once after a start, the copies the mailbox holds: of every resource its
// SyncerConfig names, those labelled as projected.
func (c *Controller) loadMailbox(ctx context.Context, mb logicalcluster.Path, state *mailboxState) error {
	u, err := c.cfg.Admin.Cluster(mb).Resource(syncerConfigGVR).Get(ctx, edgev1alpha1.SyncerConfigName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		state.loaded = true
		return nil
	case err != nil:
		return fmt.Errorf("reading the SyncerConfig of mailbox %s: %w", mb, err)
	}
	cfg := &edgev1alpha1.SyncerConfig{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, cfg); err != nil {
		return fmt.Errorf("decoding the SyncerConfig of mailbox %s: %w", mb, err)
	}
	var gvrs []schema.GroupVersionResource
	for _, r := range cfg.Spec.NamespaceScope.Resources {
		gvrs = append(gvrs, gvrOf(r.GroupResource, r.APIVersion))
	}
	for _, r := range cfg.Spec.ClusterScope {
		gvrs = append(gvrs, gvrOf(r.GroupResource, r.APIVersion))
	}
	for _, gvr := range gvrs {
		list, err := c.cfg.Admin.Cluster(mb).Resource(gvr).List(ctx, metav1.ListOptions{LabelSelector: LabelProjected + "=true"})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("listing %s in mailbox %s: %w", gvr.Resource, mb, err)
		}
		for _, item := range list.Items {
			key := copyKey{gr: gvr.GroupResource(), namespace: item.GetNamespace(), name: item.GetName()}
			state.copies[key] = copyRecord{gvr: gvr, hash: item.GetAnnotations()[AnnotationProjectionHash], source: item.GetLabels()[LabelSourceCluster]}
		}
	}
	state.configHash = u.GetAnnotations()[AnnotationProjectionHash]
	if gvrsNeedWorkloads(gvrs) {
		state.workloadsBound = true
	}
	state.loaded = true
	klog.FromContext(ctx).V(2).Info("read the copies in the mailbox", "copies", len(state.copies))
	return nil
}

func gvrOf(gr metav1.GroupResource, apiVersion string) schema.GroupVersionResource {
	gv, _ := schema.ParseGroupVersion(apiVersion)
	return schema.GroupVersionResource{Group: gr.Group, Version: gv.Version, Resource: gr.Resource}
}

// writeCopy writes one copy with server-side apply, unless the mailbox already holds this
// content (the hash of what was last written), and returns the hash.
func (c *Controller) writeCopy(ctx context.Context, mb logicalcluster.Path, key copyKey, dc *desiredCopy, lastHash string) (string, error) {
	obj := dc.obj.DeepCopy()
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[LabelProjected] = "true"
	labels[LabelSourceCluster] = dc.source
	obj.SetLabels(labels)
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	sort.Strings(dc.placements)
	annotations[AnnotationPlacements] = strings.Join(dc.placements, ",")
	obj.SetAnnotations(annotations)
	hash := projection.Hash(obj.Object)
	if hash == lastHash {
		return hash, nil
	}
	annotations[AnnotationProjectionHash] = hash
	obj.SetAnnotations(annotations)
	_, err := c.cfg.Admin.Cluster(mb).Resource(dc.resource.gvr).Namespace(key.namespace).Apply(ctx, key.name, obj,
		metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if err != nil {
		return "", fmt.Errorf("writing %s into mailbox %s: %w", key, mb, err)
	}
	klog.FromContext(ctx).V(3).Info("wrote a copy", "copy", key.String())
	return hash, nil
}

// applyRank orders writes: CRDs, then namespaces, then the rest.
func applyRank(k copyKey) int {
	switch k.gr {
	case crdsGVR.GroupResource():
		return 0
	case namespacesGVR.GroupResource():
		return 1
	}
	return 2
}

// applyOrder puts CRDs first, then namespaces, then the rest, each sorted.
func applyOrder(copies map[copyKey]*desiredCopy) []copyKey {
	keys := make([]copyKey, 0, len(copies))
	for k := range copies {
		keys = append(keys, k)
	}
	sortKeys(keys, applyRank)
	return keys
}

// deleteOrder is the reverse: namespaced objects, then namespaces, then CRDs.
func deleteOrder(copies map[copyKey]copyRecord) []copyKey {
	keys := make([]copyKey, 0, len(copies))
	for k := range copies {
		keys = append(keys, k)
	}
	sortKeys(keys, func(k copyKey) int { return -applyRank(k) })
	return keys
}

func sortKeys(keys []copyKey, rank func(copyKey) int) {
	sort.Slice(keys, func(i, j int) bool {
		if ri, rj := rank(keys[i]), rank(keys[j]); ri != rj {
			return ri < rj
		}
		return keys[i].String() < keys[j].String()
	})
}

// needsWorkloadsBinding: some copy is of a kind that kcp serves only through the workloads
// export.
func needsWorkloadsBinding(d *desiredState) bool {
	for k, dc := range d.copies {
		if needsWorkloads(k, dc) {
			return true
		}
	}
	return false
}

// needsWorkloads: the copy is of a kind that kcp serves only through the workloads export (not
// one of kcp's built-in kinds, nor a custom kind of the workload workspace).
func needsWorkloads(k copyKey, dc *desiredCopy) bool {
	return !isKCPBuiltIn(k.gr) && !dc.resource.custom
}

// upsyncNeedsWorkloads: an upsync rule names a kind that kcp serves only through the workloads
// export, so the mailbox must serve it for the syncer to up-sync objects of it there.
func upsyncNeedsWorkloads(rules []edgev1alpha1.UpsyncSet, resources []resource) bool {
	for _, r := range resources {
		gr := r.gvr.GroupResource()
		if r.custom || isKCPBuiltIn(gr) {
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

func gvrsNeedWorkloads(gvrs []schema.GroupVersionResource) bool {
	for _, gvr := range gvrs {
		if !isKCPBuiltIn(gvr.GroupResource()) {
			return true
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
		klog.FromContext(ctx).V(2).Info("binding the workloads export in the mailbox")
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
