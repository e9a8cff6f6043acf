package main

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

// waiters are conditions that goroutines wait for, checked after every change of the state
// they look at; the owner's lock guards both.
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

// view is what the bench's watches have seen of the workload objects of every destination in
// one place: the objects its assemblage carries in its mailbox, or the objects at its edge. Each destination must
// hold the objects of want; the view records when it first held them all, and, for a probe,
// when one object of it first had a given value.
type view struct {
	want map[string]bool

	mu         sync.Mutex
	objects    []map[string]*unstructured.Unstructured
	completeAt []time.Time
	complete   int
	present    int
	waiters    waiters

	probeKey string
	probe    func(*unstructured.Unstructured) bool
	probing  []bool
	probeAt  []time.Time
	probed   int
}

func newView(destinations int, want map[string]bool) *view {
	v := &view{want: want, completeAt: make([]time.Time, destinations)}
	for range destinations {
		v.objects = append(v.objects, map[string]*unstructured.Unstructured{})
	}
	return v
}

// observe records an object of a destination (nil: it was deleted), seen at at.
func (v *view) observe(dest int, key string, obj *unstructured.Unstructured, at time.Time) {
	if !v.want[key] {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	objs := v.objects[dest]
	_, had := objs[key]
	switch {
	case obj == nil && had:
		if len(objs) == len(v.want) {
			v.complete--
		}
		delete(objs, key)
		v.present--
	case obj != nil:
		objs[key] = obj
		if !had {
			v.present++
			if len(objs) == len(v.want) {
				v.complete++
				if v.completeAt[dest].IsZero() {
					v.completeAt[dest] = at
				}
			}
		}
		if v.probing != nil && v.probing[dest] && key == v.probeKey && v.probeAt[dest].IsZero() && v.probe(obj) {
			v.probeAt[dest] = at
			v.probed++
		}
	}
	v.waiters.changed(at)
}

// await returns a channel that receives the time of the event that makes cond true. cond runs
// with the view's lock held.
func (v *view) await(cond func(v *view) bool) <-chan time.Time {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.waiters.add(func() bool { return cond(v) }, time.Now())
}

// startProbe starts timing, for each of dests, when its object key first satisfies pred.
func (v *view) startProbe(key string, dests []int, pred func(*unstructured.Unstructured) bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.probeKey, v.probe, v.probed = key, pred, 0
	v.probing, v.probeAt = make([]bool, len(v.objects)), make([]time.Time, len(v.objects))
	for _, d := range dests {
		v.probing[d] = true
	}
}

// counts returns the objects present, the destinations complete, and those probed true.
func (v *view) counts() (present, complete, probed int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.present, v.complete, v.probed
}

// completeTimes returns when each destination first held all its objects.
func (v *view) completeTimes() []time.Time {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]time.Time(nil), v.completeAt...)
}

// probeTimes returns when the probe first held at each of dests.
func (v *view) probeTimes(dests []int) []time.Time {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []time.Time
	for _, d := range dests {
		out = append(out, v.probeAt[d])
	}
	return out
}

// handler feeds a watch of resource gvr into the view; destOf says whose object it is.
func (v *view) handler(gvr schema.GroupVersionResource, destOf func(u *unstructured.Unstructured) (int, bool)) cache.ResourceEventHandler {
	record := func(obj any, deleted bool) {
		at := time.Now()
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		dest, ok := destOf(u)
		if !ok {
			return
		}
		if deleted {
			v.observe(dest, objectKey(gvr, u.GetName()), nil, at)
		} else {
			v.observe(dest, objectKey(gvr, u.GetName()), u, at)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { record(obj, false) },
		UpdateFunc: func(_, obj any) { record(obj, false) },
		DeleteFunc: func(obj any) { record(obj, true) },
	}
}

// watchEdges feeds the objects of every pcluster into v: one watch per resource and pcluster,
// in its placement's namespace.
func (f *fleet) watchEdges(ctx context.Context, v *view) ([]cache.InformerSynced, error) {
	var synced []cache.InformerSynced
	for _, d := range f.dests {
		client, err := dynamic.NewForConfig(d.pcluster.Config)
		if err != nil {
			return nil, err
		}
		factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(client, 0, groupNamespace(d.group), nil)
		others := configMapsGVR
		if f.cfg.Secrets {
			others = secretsGVR
		}
		for _, gvr := range []schema.GroupVersionResource{others, deploymentsGVR} {
			inf := factory.ForResource(gvr).Informer()
			if _, err := inf.AddEventHandler(v.handler(gvr, func(*unstructured.Unstructured) (int, bool) { return d.index, true })); err != nil {
				return nil, err
			}
			synced = append(synced, inf.HasSynced)
		}
		factory.Start(ctx.Done())
	}
	return synced, nil
}

// placementsView is what a watch of the workload workspace's EdgePlacements has seen of their
// status summaries.
type placementsView struct {
	mu        sync.Mutex
	summaries map[string]*edgev1alpha1.DestinationCounts
	// collected is each placement's status.collected.
	collected map[string][]edgev1alpha1.CollectedStatus
	waiters   waiters
}

func (f *fleet) watchPlacements(ctx context.Context) (*placementsView, []cache.InformerSynced, error) {
	pv := &placementsView{summaries: map[string]*edgev1alpha1.DestinationCounts{}, collected: map[string][]edgev1alpha1.CollectedStatus{}}
	client, err := dynamic.NewForConfig(f.center.ConfigFor(f.wmw))
	if err != nil {
		return nil, nil, err
	}
	inf := dynamicinformer.NewFilteredDynamicInformer(client, placementsGVR, "", 0, cache.Indexers{}, nil).Informer()
	set := func(obj any) {
		at := time.Now()
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		p := &edgev1alpha1.EdgePlacement{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
			say("cannot decode EdgePlacement %s: %v", u.GetName(), err)
			return
		}
		pv.mu.Lock()
		defer pv.mu.Unlock()
		pv.summaries[p.Name] = p.Status.Summary
		pv.collected[p.Name] = p.Status.Collected
		pv.waiters.changed(at)
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    set,
		UpdateFunc: func(_, obj any) { set(obj) },
	}); err != nil {
		return nil, nil, err
	}
	go inf.Run(ctx.Done())
	return pv, []cache.InformerSynced{inf.HasSynced}, nil
}

// await returns a channel that receives the time of the event that makes cond true, given the
// placement's summary (nil while it has none). cond runs with the view's lock held.
func (pv *placementsView) await(placement string, cond func(*edgev1alpha1.DestinationCounts) bool) <-chan time.Time {
	pv.mu.Lock()
	defer pv.mu.Unlock()
	return pv.waiters.add(func() bool { return cond(pv.summaries[placement]) }, time.Now())
}

// summary returns a copy of the placement's summary, nil while it has none.
func (pv *placementsView) summary(placement string) *edgev1alpha1.DestinationCounts {
	pv.mu.Lock()
	defer pv.mu.Unlock()
	return pv.summaries[placement].DeepCopy()
}

// collectedOf returns a copy of the placement's status.collected entry of the collector name,
// nil while it has none.
func (pv *placementsView) collectedOf(placement, name string) *edgev1alpha1.CollectedStatus {
	pv.mu.Lock()
	defer pv.mu.Unlock()
	for i := range pv.collected[placement] {
		if c := &pv.collected[placement][i]; c.Name == name {
			return c.DeepCopy()
		}
	}
	return nil
}
