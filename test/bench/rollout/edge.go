package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	kcpdynamic "github.com/kcp-dev/client-go/dynamic"
	kcpdynamicinformer "github.com/kcp-dev/client-go/dynamic/dynamicinformer"
	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/centerview"
	placementtranslator "github.com/kcp-dev/edge-mc/pkg/placement-translator"
	"github.com/kcp-dev/edge-mc/pkg/syncer"
	"github.com/kcp-dev/edge-mc/test/framework"
)

var assemblagesGVR = edgev1alpha1.SchemeGroupVersion.WithResource("assemblages")

// edgePlayer plays the syncers of every destination, with no edge cluster behind them. It watches
// the assemblages of all mailboxes through one watch of the virtual workspace of
// mailbox.edge.kcp.io, as the placement translator does, and for each new version it sees writes
// the assemblage status that a syncer writes (server-side apply of the status subresource, as
// the syncer's field manager): at appliedAfter the version observed and applied with its objects
// applied but not ready yet, at readyAfter every object ready. A version superseded before a
// write is due is not reported; the newer one is. It renews no heartbeat (see the benchmark's
// doc).
type edgePlayer struct {
	writer                   kcpdynamic.ClusterInterface
	informer                 cache.SharedIndexInformer
	appliedAfter, readyAfter time.Duration
	queue                    workqueue.TypedDelayingInterface[report]

	mu sync.Mutex
	// deliveries are the versions seen, by mailbox cluster, assemblage and version.
	deliveries map[deliveryKey]*delivery
	// conditions are the conditions last written on each assemblage, for their transition
	// times, by mailbox cluster and assemblage.
	conditions map[assemblageKey][]metav1.Condition
	// writing serialises the writes of each assemblage, so that a slow applied report never
	// lands after the ready one.
	writing map[assemblageKey]*sync.Mutex
	waiters waiters

	writes, writeErrors atomic.Int64
}

type assemblageKey struct {
	cluster logicalcluster.Name
	name    string
}

type deliveryKey struct {
	assemblageKey
	version string
}

// delivery is one version of one assemblage, as the edge player saw and reported it.
type delivery struct {
	mailbox   logicalcluster.Name
	placement string
	version   string
	// seen is when the player's watch first saw the version: its delivery, to within the
	// watch's latency. deliveredAt is the translator's edge.kcp.io/delivered-at (whole seconds).
	seen, deliveredAt time.Time
	// applied and ready are when the player's status writes of it succeeded (zero: not yet);
	// readySince is the Ready condition's transition time that the ready write carried;
	// superseded, that a newer version came before they were due.
	applied, ready, readySince time.Time
	superseded                 bool
}

// doneAt is when the placement translator counts the destination done with the version, given
// the soak minReady: minReady after it was ready, or after its delivery if later, both as kcp
// stores them, in whole seconds (pkg/placement-translator's classify). Zero if not reported
// ready.
func (d *delivery) doneAt(minReady time.Duration) time.Time {
	if d.ready.IsZero() {
		return time.Time{}
	}
	since := d.readySince.Truncate(time.Second)
	delivered := d.deliveredAt
	if delivered.IsZero() {
		delivered = d.seen.Truncate(time.Second)
	}
	if since.Before(delivered) {
		since = delivered
	}
	return since.Add(minReady)
}

// report is a status write due: the version applied, or ready.
type report struct {
	key   deliveryKey
	ready bool
}

// startEdgePlayer starts watching the assemblages of every mailbox and playing their syncers,
// with parallel writers, until ctx ends; it returns once the watch has listed.
func startEdgePlayer(ctx context.Context, s *framework.Server, espwPath logicalcluster.Path, appliedAfter, readyAfter time.Duration, parallel int) (*edgePlayer, error) {
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	url, ok := centerview.WaitForEndpoint(wctx, s.KCP, espwPath, edgev1alpha1.MailboxAPIExportName)
	if !ok {
		return nil, fmt.Errorf("the virtual workspace of %s is not published after 2m (is any mailbox ready?)", edgev1alpha1.MailboxAPIExportName)
	}
	vw := rest.CopyConfig(s.Base)
	vw.Host = url
	reader, err := kcpdynamic.NewForConfig(vw)
	if err != nil {
		return nil, err
	}
	writer, err := kcpdynamic.NewForConfig(s.Base)
	if err != nil {
		return nil, err
	}
	p := &edgePlayer{
		writer: writer, appliedAfter: appliedAfter, readyAfter: readyAfter,
		queue:      workqueue.NewTypedDelayingQueue[report](),
		deliveries: map[deliveryKey]*delivery{}, conditions: map[assemblageKey][]metav1.Condition{},
		writing: map[assemblageKey]*sync.Mutex{},
	}
	p.informer = kcpdynamicinformer.NewFilteredDynamicInformer(reader, assemblagesGVR, 0,
		cache.Indexers{kcpcache.ClusterIndexName: kcpcache.ClusterIndexFunc}, nil).Informer()
	_ = p.informer.SetTransform(dropData)
	if _, err := p.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { p.observe(obj) },
		UpdateFunc: func(_, obj any) { p.observe(obj) },
	}); err != nil {
		return nil, err
	}
	go p.informer.Run(ctx.Done())
	go func() { <-ctx.Done(); p.queue.ShutDown() }()
	for range parallel {
		go p.work(ctx)
	}
	if !cache.WaitForCacheSync(wctx.Done(), p.informer.HasSynced) {
		return nil, fmt.Errorf("the watch of the assemblages through %s has not listed after 2m", url)
	}
	return p, nil
}

// dropData keeps the cache small: the player needs no document data.
func dropData(obj any) (any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		unstructured.RemoveNestedField(u.Object, "spec", "data")
	}
	return obj, nil
}

// observe records a version not seen before and schedules its reports.
func (p *edgePlayer) observe(obj any) {
	at := time.Now()
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	version, _, _ := unstructured.NestedString(u.Object, "spec", "version")
	placement, _, _ := unstructured.NestedString(u.Object, "spec", "placement", "name")
	if version == "" {
		return
	}
	key := deliveryKey{assemblageKey{logicalcluster.From(u), u.GetName()}, version}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.deliveries[key] != nil {
		return
	}
	d := &delivery{mailbox: key.cluster, placement: placement, version: version, seen: at}
	if t, err := time.Parse(time.RFC3339, u.GetAnnotations()[placementtranslator.AnnotationDeliveredAt]); err == nil {
		d.deliveredAt = t
	}
	p.deliveries[key] = d
	if p.appliedAfter > 0 {
		p.queue.AddAfter(report{key: key}, p.appliedAfter)
	}
	p.queue.AddAfter(report{key: key, ready: true}, p.readyAfter)
	p.waiters.changed(at)
}

func (p *edgePlayer) work(ctx context.Context) {
	for {
		r, shutdown := p.queue.Get()
		if shutdown {
			return
		}
		if err := p.write(ctx, r); err != nil && ctx.Err() == nil {
			p.writeErrors.Add(1)
			say("edge player: %v; again in 1s", err)
			p.queue.AddAfter(r, time.Second)
		}
		p.queue.Done(r)
	}
}

// write writes the status a syncer writes once the version of r is applied at its edge, with
// its objects not ready yet, or ready. An applied report due after the ready one was written is
// not written.
func (p *edgePlayer) write(ctx context.Context, r report) error {
	p.mu.Lock()
	lock := p.writing[r.key.assemblageKey]
	if lock == nil {
		lock = &sync.Mutex{}
		p.writing[r.key.assemblageKey] = lock
	}
	p.mu.Unlock()
	lock.Lock()
	defer lock.Unlock()
	p.mu.Lock()
	late := !r.ready && !p.deliveries[r.key].ready.IsZero()
	p.mu.Unlock()
	if late {
		return nil
	}
	item, exists, err := p.informer.GetIndexer().GetByKey(kcpcache.ToClusterAwareKey(r.key.cluster.String(), "", r.key.name))
	if err != nil {
		return err
	}
	a := &edgev1alpha1.Assemblage{}
	if exists {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.(*unstructured.Unstructured).Object, a); err != nil {
			return fmt.Errorf("decoding assemblage %s in mailbox %s: %w", r.key.name, r.key.cluster, err)
		}
	}
	if !exists || a.Spec.Version != r.key.version {
		// Gone, or superseded: a syncer reports the version it has now, whose own reports
		// are scheduled.
		p.mu.Lock()
		p.deliveries[r.key].superseded = true
		p.mu.Unlock()
		return nil
	}
	now := metav1.Now()
	p.mu.Lock()
	previous := p.conditions[r.key.assemblageKey]
	p.mu.Unlock()
	status := playedStatus(a, r.ready, previous, now)
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&status)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": edgev1alpha1.SchemeGroupVersion.String(), "kind": "Assemblage",
		"metadata": map[string]any{"name": a.Name}, "status": raw,
	}}
	if _, err := p.writer.Cluster(r.key.cluster.Path()).Resource(assemblagesGVR).ApplyStatus(ctx, a.Name, u,
		metav1.ApplyOptions{FieldManager: syncer.FieldManager, Force: true}); err != nil {
		return fmt.Errorf("writing the status of assemblage %s in mailbox %s: %w", a.Name, r.key.cluster, err)
	}
	p.writes.Add(1)
	at := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conditions[r.key.assemblageKey] = status.Conditions
	d := p.deliveries[r.key]
	if r.ready {
		d.ready = at
		if c := meta.FindStatusCondition(status.Conditions, edgev1alpha1.AssemblageReady); c != nil {
			d.readySince = c.LastTransitionTime.Time
		}
	} else {
		d.applied = at
	}
	p.waiters.changed(at)
	return nil
}

// playedStatus is the status the syncer writes for assemblage a once its version is applied at
// the edge, with every object ready or none yet (pkg/syncer's buildStatus and
// assemblageConditions): the version observed and applied, the conditions Refused (False),
// Applied (True) and Ready, counts, and each object's state. previous are the conditions last
// written, whose transition times are kept when they do not change.
func playedStatus(a *edgev1alpha1.Assemblage, ready bool, previous []metav1.Condition, now metav1.Time) edgev1alpha1.AssemblageStatus {
	v, total := a.Spec.Version, len(a.Spec.Objects)
	status := edgev1alpha1.AssemblageStatus{ObservedVersion: v, AppliedVersion: v, ReportTime: &now,
		Conditions: append([]metav1.Condition(nil), previous...)}
	set := func(typ string, ok bool, reason, message string) {
		s := metav1.ConditionFalse
		if ok {
			s = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: typ, Status: s, Reason: reason, Message: message,
			ObservedGeneration: a.Generation, LastTransitionTime: now})
	}
	set(edgev1alpha1.AssemblageRefused, false, edgev1alpha1.ReasonReadable, fmt.Sprintf("version %s is readable", v))
	set(edgev1alpha1.AssemblageApplied, true, edgev1alpha1.ReasonVersionApplied, fmt.Sprintf("version %s is applied at the edge: %d objects", v, total))
	state, reason := edgev1alpha1.ObjectReady, ""
	if ready {
		status.Counts.Ready = int32(total)
		set(edgev1alpha1.AssemblageReady, true, edgev1alpha1.ReasonAllObjectsReady, fmt.Sprintf("all %d objects are ready at the edge", total))
	} else {
		state, reason = edgev1alpha1.ObjectApplied, "played by the benchmark: not ready yet"
		status.Counts.Applied = int32(total)
		msg := fmt.Sprintf("%d of %d objects are not ready at the edge", total, total)
		if total > 0 {
			msg += "; first " + a.Spec.Objects[0] + ": " + reason
		}
		set(edgev1alpha1.AssemblageReady, false, edgev1alpha1.ReasonObjectsNotReady, msg)
	}
	for _, o := range a.Spec.Objects {
		status.Objects = append(status.Objects, edgev1alpha1.ObjectState{Object: o, State: state, Reason: reason})
	}
	return status
}

// await returns a channel that receives the time of the change that makes cond true; cond runs
// with the player's lock held, over every delivery seen.
func (p *edgePlayer) await(cond func(deliveries map[deliveryKey]*delivery) bool) <-chan time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waiters.add(func() bool { return cond(p.deliveries) }, time.Now())
}

// of returns copies of the deliveries of a placement seen at or after since.
func (p *edgePlayer) of(placement string, since time.Time) []delivery {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []delivery
	for _, d := range p.deliveries {
		if d.placement == placement && !d.seen.Before(since) {
			out = append(out, *d)
		}
	}
	return out
}

// readyCount counts the destinations (mailboxes) to which a version of the placement came at or
// after since and which the player has reported ready with it.
func readyCount(deliveries map[deliveryKey]*delivery, placement string, since time.Time) int {
	ready := map[logicalcluster.Name]bool{}
	for _, d := range deliveries {
		if d.placement == placement && !d.seen.Before(since) && !d.ready.IsZero() {
			ready[d.mailbox] = true
		}
	}
	return len(ready)
}

// waiters are conditions that goroutines wait for, checked after every change of the state they
// look at; the owner's lock guards both.
type waiters []*waiter

type waiter struct {
	cond func() bool
	done chan time.Time
}

// add returns a channel that receives the time of the change that makes cond true, or now if it
// is true already.
func (ws *waiters) add(cond func() bool, now time.Time) <-chan time.Time {
	w := &waiter{cond: cond, done: make(chan time.Time, 1)}
	if cond() {
		w.done <- now
	} else {
		*ws = append(*ws, w)
	}
	return w.done
}

// changed tells the waiters whose condition became true that it did, at at.
func (ws *waiters) changed(at time.Time) {
	kept := (*ws)[:0]
	for _, w := range *ws {
		if w.cond() {
			w.done <- at
		} else {
			kept = append(kept, w)
		}
	}
	*ws = kept
}
