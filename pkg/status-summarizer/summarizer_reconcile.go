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
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/centerview"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// FieldManager names the summarizer's writes.
const FieldManager = "edge-status-summarizer"

// destination is one destination of a placement, resolved to its mailbox.
type destination struct {
	edgev1alpha1.SinglePlacement
	// mailbox is the mailbox's logical cluster, as its SyncTarget's status says; empty while
	// there is none.
	mailbox logicalcluster.Name
	// stale says the syncer has been silent past the grace period, since staleSince;
	// staleReason, if set, says why (its mailbox's shard does not answer).
	stale       bool
	staleSince  time.Time
	staleReason string
}

// name is the destination as summaries show it.
func (d destination) name() string { return d.Cluster + ":" + d.SyncTargetName }

// destinationsOf returns the placement's destinations, from its slices, in a stable order, each
// with what its SyncTarget says of its mailbox and syncer.
func (c *Controller) destinationsOf(pk placementKey) []destination {
	slices, _ := c.slices.GetIndexer().ByIndex(slicesByPlacement, pk.String())
	var out []destination
	for _, s := range slices {
		for _, d := range edgev1alpha1.SliceDestinations(centerview.AsUnstructured(s)) {
			dst := destination{SinglePlacement: d}
			if st, exists, _ := c.syncTargets.GetIndexer().GetByKey(kcpcache.ToClusterAwareKey(d.Cluster, "", d.SyncTargetName)); exists {
				if u := centerview.AsUnstructured(st); u != nil && u.GetUID() == d.SyncTargetUID {
					dst.mailbox = mailboxClusterOf(u)
					dst.stale, dst.staleSince, dst.staleReason = syncerStaleness(u)
				}
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
	u := centerview.AsUnstructured(item)
	p := &edgev1alpha1.EdgePlacement{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
		return nil // not for this version to summarize
	}

	dests := c.destinationsOf(pk)
	if !c.assemblages.ready() && anyMailbox(dests) {
		// What is in the mailboxes is not known yet; the assemblages' sync queues every
		// placement again.
		return nil
	}
	// In whole seconds, as the server keeps it: a broken entry's since, compared with what the
	// status holds, must not differ by a fraction.
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	views := c.viewsOf(pk, dests)
	summary := transport.Summarize(views, c.previousBrokenSince(pk, p), now)
	c.rememberBroken(pk, summary.Broken)

	status := p.Status.DeepCopy()
	status.Summary = &summary.Counts
	status.Broken = summary.Broken
	status.BrokenCount = int32(summary.BrokenCount)
	status.Objects = summary.Objects
	status.ObjectCount = int32(summary.ObjectCount)
	status.Collected = c.collected(pk, p, views)
	setCondition(&status.Conditions, transport.ReadyCondition(summary.Counts, len(dests), p.Generation), false)
	setCondition(&status.Conditions, transport.SingletonCondition(len(dests), p.Generation), !p.Spec.WantSingletonReportedState)
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
	err = c.writePlacementStatus(ctx, pk.cluster, updated)
	switch {
	case transport.Gone(err, placementsGVR.GroupResource(), pk.name):
		return nil
	case apierrors.IsConflict(err):
		return err // the newer version is on its way; retried
	case err != nil:
		return fmt.Errorf("writing the status of EdgePlacement %s: %w", pk, err)
	}
	logger.V(2).Info("wrote the placement's summary", "ready", summary.Counts.Ready, "destinations", len(dests))
	return nil
}

func anyMailbox(dests []destination) bool {
	for _, d := range dests {
		if d.mailbox != "" {
			return true
		}
	}
	return false
}

// viewsOf gathers, for each destination, its staleness and the placement's assemblage in its
// mailbox.
func (c *Controller) viewsOf(pk placementKey, dests []destination) []transport.DestinationView {
	byMailbox := map[logicalcluster.Name]*edgev1alpha1.Assemblage{}
	for _, a := range c.assemblages.ofPlacement(pk) {
		byMailbox[logicalcluster.From(a)] = a
	}
	views := make([]transport.DestinationView, 0, len(dests))
	for _, d := range dests {
		v := transport.DestinationView{Name: d.name(), Stale: d.stale, StaleSince: d.staleSince, StaleReason: d.staleReason}
		if d.mailbox != "" {
			v.Assemblage = byMailbox[d.mailbox]
		}
		views = append(views, v)
	}
	return views
}

// assemblageAt returns the placement's assemblage in a mailbox (nil if none).
func (c *Controller) assemblageAt(pk placementKey, mailbox logicalcluster.Name) *edgev1alpha1.Assemblage {
	for _, a := range c.assemblages.ofPlacement(pk) {
		if logicalcluster.From(a) == mailbox {
			return a
		}
	}
	return nil
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
			out[transport.BrokenKey(b.Destination, b.Object)] = *b.Since
		}
	}
	return out
}

func (c *Controller) rememberBroken(pk placementKey, broken []edgev1alpha1.BrokenEntry) {
	known := map[string]metav1.Time{}
	for _, b := range broken {
		if b.Since != nil {
			known[transport.BrokenKey(b.Destination, b.Object)] = *b.Since
		}
	}
	c.brokenMu.Lock()
	defer c.brokenMu.Unlock()
	c.brokenSince[pk] = known
}

// syncObject writes, on one workload object, the number of edge clusters where a version of it
// is applied and, when a placement that wants singleton reported state has exactly one
// destination, the status at that destination.
func (c *Controller) syncObject(ctx context.Context, k objectKey) error {
	logger := klog.FromContext(ctx).WithValues("object", k.String())
	if !c.assemblages.ready() {
		return nil // queued again once the assemblages are known
	}
	object := k.key.String()
	assemblages := c.assemblages.naming(k)
	executing := map[logicalcluster.Name]bool{}
	placements := map[string]bool{}
	for _, a := range assemblages {
		if transport.IsExecuting(a, object) {
			executing[logicalcluster.From(a)] = true
		}
		placements[a.Spec.Placement.Name] = true
	}
	single, err := c.singletonStatus(ctx, k, placements)
	if err != nil {
		return err
	}
	wantCount := ""
	if len(assemblages) > 0 {
		wantCount = strconv.Itoa(len(executing))
	}

	client, err := c.objectClient(ctx, k)
	if apierrors.IsNotFound(err) {
		c.setReport(k, nil) // a custom kind whose CRD is gone: so is the object
		return nil
	}
	if err != nil {
		return err
	}
	// With no singleton status involved, and the object's annotations written by this process
	// lately, the object need not be read: write the count if it changed.
	if last, ok := c.lastReport(k); ok && single.from == "" && last.singletonFrom == "" {
		if last.count == wantCount {
			return nil
		}
		_, err := annotate(ctx, client, k, map[string]any{edgev1alpha1.AnnotationExecutingCount: nullIfEmpty(wantCount)})
		if k.gone(err) {
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

	obj, err := client.Get(ctx, k.key.Name, metav1.GetOptions{})
	if k.gone(err) {
		c.setReport(k, nil)
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", k, err)
	}

	// The annotations: the executing count while assemblages name it, and where the status
	// comes from.
	annotations := obj.GetAnnotations()
	patch := map[string]any{}
	if annotations[edgev1alpha1.AnnotationExecutingCount] != wantCount {
		patch[edgev1alpha1.AnnotationExecutingCount] = nullIfEmpty(wantCount)
	}
	hadSingleton := annotations[edgev1alpha1.AnnotationSingletonStatusFrom]
	if hadSingleton != single.from {
		patch[edgev1alpha1.AnnotationSingletonStatusFrom] = nullIfEmpty(single.from)
	}
	if len(patch) > 0 {
		obj, err = annotate(ctx, client, k, patch)
		if k.gone(err) {
			return nil
		}
		if err != nil {
			return err
		}
		logger.V(2).Info("annotated", "executingCount", wantCount, "singletonStatusFrom", single.from)
	}
	c.setReport(k, &objectReport{count: wantCount, singletonFrom: single.from})

	if single.from == "" && hadSingleton == "" {
		return nil
	}
	return c.copyStatus(ctx, client, k, obj, single)
}

// copyStatus writes on the workload object the status reported from its one destination, or
// withdraws the status when there is none.
func (c *Controller) copyStatus(ctx context.Context, client dynamic.ResourceInterface, k objectKey, obj *unstructured.Unstructured, single singleton) error {
	if single.keep {
		return nil
	}
	have, _, _ := unstructured.NestedMap(obj.Object, "status")
	want := single.status
	if single.from != "" && want != nil {
		translateObservedGeneration(want, obj.GetGeneration(), single.observed)
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
	if _, err := client.UpdateStatus(ctx, updated, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil && !k.gone(err) {
		return fmt.Errorf("writing the status of %s: %w", k, err)
	}
	klog.FromContext(ctx).V(2).Info("wrote the status reported by the one destination", "object", k.String(), "from", single.from)
	return nil
}

// gone says whether err is the answer that the workload object does not exist (transport.Gone),
// not any other 404 such as kcp's while it starts serving the workspace again.
func (k objectKey) gone(err error) bool {
	return transport.Gone(err, schema.GroupResource{Group: k.key.Group, Resource: k.key.Resource}, k.key.Name)
}

// annotate sets (or, with nil values, removes) annotations of a workload object with a merge
// patch. NotFound is returned as it is; other errors say which object.
func annotate(ctx context.Context, client dynamic.ResourceInterface, k objectKey, annotations map[string]any) (*unstructured.Unstructured, error) {
	body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	obj, err := client.Patch(ctx, k.key.Name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: FieldManager})
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

// setReport records what was written on the object; nil forgets it. An object that no assemblage
// names any more is forgotten too, so that the memory holds only placed objects.
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

// singleton is the status to copy back onto a workload object from its one destination.
type singleton struct {
	// from is the destination ("" for none: no placement that selects the object wants its
	// status reported and has exactly one destination where the object is delivered).
	from string
	// status is the object's status there (nil: it reports none), a copy of its own.
	status map[string]any
	// observed says the status is of the current version: the syncer took in the version of
	// the object's assemblage, and the object is Ready or Failed there (kstatus saw its current
	// spec observed).
	observed bool
	// keep says the syncer left the status out of its report, to stay within its size budget:
	// what the object holds stays as it is.
	keep bool
}

// singletonStatus finds a placement among those selecting the object that wants singleton
// reported state and has exactly one destination, and returns that destination and the status
// its syncer reports for the object there, read from the assemblage.
func (c *Controller) singletonStatus(ctx context.Context, k objectKey, placements map[string]bool) (singleton, error) {
	object := k.key.String()
	for _, name := range sortedKeys(placements) {
		pk := placementKey{cluster: k.cluster, name: name}
		if !c.wantsSingletonStatus(pk) {
			continue
		}
		dests := c.destinationsOf(pk)
		if len(dests) != 1 || dests[0].mailbox == "" {
			continue
		}
		a := c.assemblageAt(pk, dests[0].mailbox)
		if a == nil || !names(a, object) {
			continue
		}
		status, omitted, err := c.assemblages.reportedStatus(ctx, dests[0].mailbox, a, object)
		if err != nil {
			return singleton{}, err
		}
		if omitted {
			return singleton{from: dests[0].name(), keep: true}, nil
		}
		state := transport.ObjectStates(a)[object].State
		return singleton{
			from:     dests[0].name(),
			status:   runtime.DeepCopyJSON(status),
			observed: state == transport.StateReady || state == transport.StateFailed,
		}, nil
	}
	return singleton{}, nil
}

// translateObservedGeneration puts status.observedGeneration, which counts the edge object's
// generations, into the workload object's: its own generation when the status is of the current
// version, one less if not, so that kstatus reads the same on the workload object as at the
// edge.
func translateObservedGeneration(status map[string]any, generation int64, observed bool) {
	if _, ok, _ := unstructured.NestedFieldNoCopy(status, "observedGeneration"); !ok {
		return
	}
	if observed {
		status["observedGeneration"] = generation
		return
	}
	status["observedGeneration"] = generation - 1
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

// setCondition sets or, when remove is true, removes a condition; it reports whether the list
// changed.
func setCondition(conditions *[]metav1.Condition, cond metav1.Condition, remove bool) bool {
	if remove {
		return meta.RemoveStatusCondition(conditions, cond.Type)
	}
	return meta.SetStatusCondition(conditions, cond)
}
