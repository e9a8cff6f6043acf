package statussummarizer

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"time"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/mailbox"
)

// FieldManager names the summarizer's writes.
const FieldManager = "edge-status-summarizer"

// destination is one destination of a placement, resolved to its mailbox.
type destination struct {
	edgev1alpha1.SinglePlacement
	// mailbox is the mailbox's logical cluster; empty while the mailbox does not exist.
	mailbox logicalcluster.Name
}

// name is the destination as summaries show it.
func (d destination) name() string { return d.Cluster + ":" + d.SyncTargetName }

// destinationsOf returns the placement's destinations, from its slices, in a stable order.
func (c *Controller) destinationsOf(pk placementKey) []destination {
	slices, _ := c.slices.GetIndexer().ByIndex(slicesByPlacement, pk.String())
	var out []destination
	for _, s := range slices {
		for _, d := range edgev1alpha1.SliceDestinations(asUnstructured(s)) {
			dst := destination{SinglePlacement: d}
			ws, exists, _ := c.mailboxes.GetIndexer().GetByKey(mailbox.WorkspaceName(logicalcluster.Name(d.Cluster), d.SyncTargetUID))
			if w, ok := ws.(*tenancyv1alpha1.Workspace); exists && ok {
				dst.mailbox = logicalcluster.Name(w.Spec.Cluster)
			}
			out = append(out, dst)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name() < out[j].name() })
	return out
}

// syncPlacement writes the summary of one placement into its status.
func (c *Controller) syncPlacement(ctx context.Context, pk placementKey) error {
	logger := klog.FromContext(ctx).WithValues("placement", pk.String())
	item, exists, _ := c.placements.GetIndexer().GetByKey(kcpcache.ToClusterAwareKey(pk.cluster, "", pk.name))
	if !exists {
		c.brokenMu.Lock()
		delete(c.brokenSince, pk)
		c.brokenMu.Unlock()
		return nil
	}
	u := asUnstructured(item)
	p := &edgev1alpha1.EdgePlacement{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
		return nil // not for this version to summarize
	}

	dests := c.destinationsOf(pk)
	views, objects := c.viewsOf(pk, dests)
	now := metav1.Now()
	summary := Summarize(objects, views, c.previousBrokenSince(pk, p), now)
	c.rememberBroken(pk, summary.Broken)

	status := p.Status.DeepCopy()
	status.Summary = &summary.Counts
	status.Broken = summary.Broken
	status.BrokenCount = int32(summary.BrokenCount)
	status.Objects = summary.Objects
	status.ObjectCount = int32(summary.ObjectCount)
	setCondition(&status.Conditions, ReadyCondition(summary.Counts, len(dests), p.Generation), false)
	setCondition(&status.Conditions, SingletonCondition(len(dests), p.Generation), !p.Spec.WantSingletonReportedState)
	status.SummaryTime = p.Status.SummaryTime
	if equality.Semantic.DeepEqual(status, &p.Status) {
		return nil
	}
	status.SummaryTime = &now
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(status)
	if err != nil {
		return err
	}
	updated := u.DeepCopy()
	updated.Object["status"] = raw
	_, err = c.edgeVW.Cluster(logicalcluster.NewPath(pk.cluster)).Resource(placementsGVR).UpdateStatus(ctx, updated, metav1.UpdateOptions{FieldManager: FieldManager})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err):
		return err // the newer version is on its way; retried
	case err != nil:
		return fmt.Errorf("writing the status of EdgePlacement %s: %w", pk, err)
	}
	logger.V(2).Info("wrote the placement's summary", "ready", summary.Counts.Ready, "destinations", len(dests))
	return nil
}

// viewsOf gathers, for each destination, the states of the placement's objects there, and the
// names of all the placement's objects (the union over the destinations' copies).
func (c *Controller) viewsOf(pk placementKey, dests []destination) ([]DestinationView, []string) {
	byMailbox := map[logicalcluster.Name]map[string]ObjectState{}
	objects := map[string]bool{}
	for _, cp := range c.copies.byIndex(copiesByPlacement, pk.String()) {
		name := ObjectName(cp.gvr.GroupResource(), cp.obj.GetNamespace(), cp.obj.GetName())
		objects[name] = true
		mb := logicalcluster.From(cp.obj)
		if byMailbox[mb] == nil {
			byMailbox[mb] = map[string]ObjectState{}
		}
		state, reason := CopyState(cp.obj, c.copies.appliedHash(cp))
		byMailbox[mb][name] = ObjectState{State: state, Reason: reason}
	}
	views := make([]DestinationView, 0, len(dests))
	for _, d := range dests {
		v := DestinationView{Name: d.name(), Objects: byMailbox[d.mailbox]}
		if st, exists, _ := c.syncTargets.GetIndexer().GetByKey(kcpcache.ToClusterAwareKey(d.Cluster, "", d.SyncTargetName)); exists {
			if u := asUnstructured(st); u != nil && u.GetUID() == d.SyncTargetUID {
				v.Stale, v.StaleSince = syncerStaleness(u)
			}
		}
		views = append(views, v)
	}
	names := make([]string, 0, len(objects))
	for o := range objects {
		names = append(names, o)
	}
	sort.Strings(names)
	return views, names
}

// previousBrokenSince returns when each currently known broken entry was first seen: from this
// process's memory, or after a restart from the placement's status.
func (c *Controller) previousBrokenSince(pk placementKey, p *edgev1alpha1.EdgePlacement) map[string]metav1.Time {
	c.brokenMu.Lock()
	defer c.brokenMu.Unlock()
	if known, ok := c.brokenSince[pk]; ok {
		return known
	}
	out := map[string]metav1.Time{}
	for _, b := range p.Status.Broken {
		if b.Since != nil {
			out[brokenKey(b.Destination, b.Object)] = *b.Since
		}
	}
	return out
}

func (c *Controller) rememberBroken(pk placementKey, broken []edgev1alpha1.BrokenEntry) {
	known := map[string]metav1.Time{}
	for _, b := range broken {
		if b.Since != nil {
			known[brokenKey(b.Destination, b.Object)] = *b.Since
		}
	}
	c.brokenMu.Lock()
	defer c.brokenMu.Unlock()
	c.brokenSince[pk] = known
}

// syncObject writes, on one workload object, the number of edge clusters where it is applied and,
// when a placement that wants singleton reported state has exactly one destination, the status
// at that destination.
func (c *Controller) syncObject(ctx context.Context, k objectKey) error {
	logger := klog.FromContext(ctx).WithValues("object", k.String())
	copies := c.copies.byIndex(copiesByOriginal, k.String())
	executing := 0
	placements := map[string]bool{}
	for _, cp := range copies {
		if c.copies.appliedHash(cp) != "" {
			executing++
		}
		for _, p := range placementsOf(cp.obj) {
			placements[p] = true
		}
	}
	singleFrom, singleStatus := c.singletonStatus(k, placements)
	wantCount := ""
	if len(copies) > 0 {
		wantCount = strconv.Itoa(executing)
	}

	client := c.edgeVW.Cluster(logicalcluster.NewPath(k.cluster)).Resource(k.gvr).Namespace(k.namespace)
	// With no singleton status involved, and the object's annotations written by this process
	// lately, the object need not be read: write the count if it changed.
	if last, ok := c.lastReport(k); ok && singleFrom == "" && last.singletonFrom == "" {
		if last.count == wantCount {
			return nil
		}
		_, err := annotate(ctx, client, k, map[string]any{edgev1alpha1.AnnotationExecutingCount: nullIfEmpty(wantCount)})
		if apierrors.IsNotFound(err) {
			c.setReport(k, nil)
			return nil
		}
		if err != nil {
			c.setReport(k, nil)
			return err
		}
		c.setReport(k, &objectReport{count: wantCount})
		logger.V(2).Info("annotated", "executingCount", wantCount)
		return nil
	}

	obj, err := client.Get(ctx, k.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		c.setReport(k, nil)
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", k, err)
	}

	// The annotations: the executing count while copies exist, and where the status comes from.
	annotations := obj.GetAnnotations()
	patch := map[string]any{}
	if annotations[edgev1alpha1.AnnotationExecutingCount] != wantCount {
		patch[edgev1alpha1.AnnotationExecutingCount] = nullIfEmpty(wantCount)
	}
	hadSingleton := annotations[edgev1alpha1.AnnotationSingletonStatusFrom]
	if hadSingleton != singleFrom {
		patch[edgev1alpha1.AnnotationSingletonStatusFrom] = nullIfEmpty(singleFrom)
	}
	if len(patch) > 0 {
		obj, err = annotate(ctx, client, k, patch)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		logger.V(2).Info("annotated", "executingCount", wantCount, "singletonStatusFrom", singleFrom)
	}
	c.setReport(k, &objectReport{count: wantCount, singletonFrom: singleFrom})

	// The status: copied from the one destination, or withdrawn.
	if singleFrom == "" && hadSingleton == "" {
		return nil
	}
	have, _, _ := unstructured.NestedMap(obj.Object, "status")
	want := singleStatus
	if singleFrom != "" && want != nil {
		translateObservedGeneration(want, obj.GetGeneration())
	}
	if reflect.DeepEqual(normalize(have), normalize(want)) {
		return nil
	}
	updated := obj.DeepCopy()
	if want == nil {
		delete(updated.Object, "status")
	} else {
		updated.Object["status"] = want
	}
	if _, err := client.UpdateStatus(ctx, updated, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("writing the status of %s: %w", k, err)
	}
	logger.V(2).Info("wrote the status reported by the one destination", "from", singleFrom)
	return nil
}

// annotate sets (or, with nil values, removes) annotations of a workload object with a merge
// patch. NotFound is returned as it is; other errors say which object.
func annotate(ctx context.Context, client dynamic.ResourceInterface, k objectKey, annotations map[string]any) (*unstructured.Unstructured, error) {
	body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	obj, err := client.Patch(ctx, k.name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: FieldManager})
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("annotating %s: %w", k, err)
	}
	return obj, err
}

// reportMemory is how long what was written on an object is trusted without reading it: an
// annotation someone else changed or removed is put right within this long.
const reportMemory = 10 * time.Minute

// lastReport returns what this process last wrote on the object, if it did so within
// reportMemory.
func (c *Controller) lastReport(k objectKey) (objectReport, bool) {
	c.reportedMu.Lock()
	defer c.reportedMu.Unlock()
	r, ok := c.reported[k]
	return r, ok && time.Since(r.at) < reportMemory
}

// setReport records what was written on the object; nil forgets it. An object whose copies are
// all gone is forgotten too, so that the memory holds only placed objects.
func (c *Controller) setReport(k objectKey, r *objectReport) {
	c.reportedMu.Lock()
	defer c.reportedMu.Unlock()
	if r == nil || (r.count == "" && r.singletonFrom == "") {
		delete(c.reported, k)
		return
	}
	r.at = time.Now()
	c.reported[k] = *r
}

// singletonStatus finds a placement among those selecting the object that wants singleton
// reported state and has exactly one destination, and returns that destination's name and the
// status of the object's copy there (nil if the copy has none yet).
func (c *Controller) singletonStatus(k objectKey, placements map[string]bool) (string, map[string]any) {
	names := make([]string, 0, len(placements))
	for p := range placements {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, name := range names {
		item, exists, _ := c.placements.GetIndexer().GetByKey(kcpcache.ToClusterAwareKey(k.cluster, "", name))
		if !exists {
			continue
		}
		u := asUnstructured(item)
		if want, _, _ := unstructured.NestedBool(u.Object, "spec", "wantSingletonReportedState"); !want {
			continue
		}
		dests := c.destinationsOf(placementKey{cluster: k.cluster, name: name})
		if len(dests) != 1 || dests[0].mailbox == "" {
			continue
		}
		cp := c.copies.get(k.gvr, dests[0].mailbox, k.namespace, k.name)
		if cp == nil {
			continue
		}
		status, found, _ := unstructured.NestedMap(cp.Object, "status")
		if !found || len(status) == 0 {
			status = nil
		}
		if status != nil {
			// Whether the copy's status is of its current version, in the copy's generations.
			if state, _ := CopyState(cp, c.copies.appliedHash(copyRef{obj: cp, gvr: k.gvr})); state == StatePending {
				status["observedGeneration"] = int64(-1)
			} else if og, ok, _ := unstructured.NestedInt64(status, "observedGeneration"); ok && og < cp.GetGeneration() {
				status["observedGeneration"] = int64(-1)
			}
		}
		return dests[0].name(), status
	}
	return "", nil
}

// translateObservedGeneration puts status.observedGeneration into the workload object's
// generations: its own generation when the status is of the current version (singletonStatus
// marked it -1 otherwise), one less if not.
func translateObservedGeneration(status map[string]any, generation int64) {
	og, ok, _ := unstructured.NestedInt64(status, "observedGeneration")
	if !ok {
		return
	}
	if og < 0 {
		status["observedGeneration"] = generation - 1
		return
	}
	status["observedGeneration"] = generation
}

func nullIfEmpty(v string) any {
	if v == "" {
		return nil
	}
	return v
}

// normalize returns v after a JSON round trip, so that numbers of different Go types compare
// equal.
func normalize(v map[string]any) any {
	if len(v) == 0 {
		return nil
	}
	raw, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(raw, &out)
	return out
}
