package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/centerview"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

var (
	assemblagesGVR     = edgev1alpha1.SchemeGroupVersion.WithResource("assemblages")
	assemblagePartsGVR = edgev1alpha1.SchemeGroupVersion.WithResource("assemblageparts")
)

// assemblageFeed feeds what the mailboxes' assemblages carry into a view: for each destination
// it decodes (package transport, with the AssemblageParts) the assemblage of its placement and
// tells the view which workload objects it holds, and with what content. A destination's
// mailbox is complete when its assemblage carries all K objects: the syncer can apply it.
type assemblageFeed struct {
	v         *view
	byCluster map[logicalcluster.Name]*destination
	// name and namespace give the assemblage a destination should have, and the namespace of
	// its workload objects.
	name, namespace func(d *destination) string

	// mu makes each destination's decode and report one step, so that the view never goes back
	// to an older version than one it was told of.
	mu          sync.Mutex
	assemblages cache.Indexer
	parts       cache.Indexer
	// decoded is the version of each destination's assemblage last decoded (by mailbox cluster).
	decoded map[logicalcluster.Name]string
	// refused is the latest reason an assemblage could not be read, by mailbox cluster.
	refused map[logicalcluster.Name]string
}

func newAssemblageFeed(v *view, dests []*destination, name, namespace func(d *destination) string) *assemblageFeed {
	a := &assemblageFeed{v: v, byCluster: map[logicalcluster.Name]*destination{}, name: name, namespace: namespace,
		decoded: map[logicalcluster.Name]string{}, refused: map[logicalcluster.Name]string{}}
	for _, d := range dests {
		a.byCluster[d.mailboxCluster] = d
	}
	return a
}

// changed is called for every event of an assemblage or a part, seen at at.
func (a *assemblageFeed) changed(obj any, at time.Time) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	if d, ok := a.byCluster[logicalcluster.From(u)]; ok {
		a.refresh(d, at)
	}
}

// refresh decodes the destination's assemblage as the caches hold it now, and reports its
// workload objects to the view. An assemblage that cannot be read yet (a part not seen yet) or
// at all (refused) changes nothing in the view.
func (a *assemblageFeed) refresh(d *destination, at time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	name := a.name(d)
	item, exists, err := a.assemblages.GetByKey(kcpcache.ToClusterAwareKey(d.mailboxCluster.String(), "", name))
	if err != nil {
		return
	}
	if !exists {
		if _, had := a.decoded[d.mailboxCluster]; had {
			delete(a.decoded, d.mailboxCluster)
			feedDocument(a.v, d.index, nil, a.namespace(d), at)
		}
		return
	}
	asm := &edgev1alpha1.Assemblage{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.(*unstructured.Unstructured).Object, asm); err != nil {
		a.refused[d.mailboxCluster] = fmt.Sprintf("assemblage %s in the mailbox of %s: %v", name, d.name, err)
		return
	}
	if v, ok := a.decoded[d.mailboxCluster]; ok && v == asm.Spec.Version {
		return // a status write, or a part of a version already read
	}
	var parts []*edgev1alpha1.AssemblagePart
	if asm.Spec.Parts > 1 {
		items, _ := a.parts.ByIndex(kcpcache.ClusterIndexName, kcpcache.ClusterIndexKey(d.mailboxCluster))
		for _, item := range items {
			p := &edgev1alpha1.AssemblagePart{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.(*unstructured.Unstructured).Object, p); err == nil && p.Spec.Assemblage == name {
				parts = append(parts, p)
			}
		}
	}
	doc, err := transport.DecodeAssemblage(asm, parts)
	if err != nil {
		var r *transport.RefusedError
		if errors.As(err, &r) && r.Reason == transport.RefusedPartsMissing {
			return // the parts are on their way: their events refresh again
		}
		a.refused[d.mailboxCluster] = fmt.Sprintf("mailbox of %s: %v", d.name, err)
		return
	}
	delete(a.refused, d.mailboxCluster)
	a.decoded[d.mailboxCluster] = asm.Spec.Version
	feedDocument(a.v, d.index, doc, a.namespace(d), at)
}

// bytes is the JSON size of the assemblages and parts the caches hold now.
func (a *assemblageFeed) bytes() int {
	n := 0
	for _, store := range []cache.Indexer{a.assemblages, a.parts} {
		for _, item := range store.List() {
			if u, ok := item.(*unstructured.Unstructured); ok {
				raw, _ := u.MarshalJSON()
				n += len(raw)
			}
		}
	}
	return n
}

// refusals returns how many destinations' assemblages could not be read, and one reason.
func (a *assemblageFeed) refusals() (int, string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, why := range a.refused {
		return len(a.refused), why
	}
	return 0, ""
}

// feedDocument tells the view which of its objects the destination's document (nil: none)
// carries in namespace, and their content.
func feedDocument(v *view, dest int, doc *transport.Document, namespace string, at time.Time) {
	carried := map[string]*unstructured.Unstructured{}
	if doc != nil {
		for i := range doc.Objects {
			e := &doc.Objects[i]
			if k := e.Key(); e.Namespaced && k.Namespace == namespace {
				carried[objectKey(e.GVR(), k.Name)] = &unstructured.Unstructured{Object: e.Object}
			}
		}
	}
	for key := range v.want {
		v.observe(dest, key, carried[key], at)
	}
}

// watchAssemblages feeds the assemblages of every mailbox into v, through one watch of
// assemblages and one of their parts in each virtual workspace of the mailbox export, which
// serves them across all mailboxes of its shard (package espw's Endpoints follows the export's
// virtual workspaces, one per shard that holds mailboxes, as edge-controller-manager does). It
// returns the feed, to say why a mailbox is not complete.
func (f *fleet) watchAssemblages(ctx context.Context, v *view) (*assemblageFeed, []cache.InformerSynced, error) {
	endpoints, err := centerview.NewEndpoints(f.center.KCP, f.espw, edgev1alpha1.MailboxAPIExportName, f.center.Base)
	if err != nil {
		return nil, nil, err
	}
	endpoints.Start(ctx)
	wait, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, ok := endpoints.WaitForURL(wait, nil); !ok {
		return nil, nil, fmt.Errorf("the APIExportEndpointSlice %s in %s listed no virtual workspace within a minute", edgev1alpha1.MailboxAPIExportName, f.espw)
	}
	wmw := f.wmwCluster.String()
	feed := newAssemblageFeed(v, f.dests,
		func(d *destination) string { return transport.AssemblageName(wmw, placementName(d.group)) },
		func(d *destination) string { return groupNamespace(d.group) })
	assemblages := endpoints.NewInformer(assemblagesGVR, 0, nil, nil)
	parts := endpoints.NewInformer(assemblagePartsGVR, 0, nil, nil)
	feed.assemblages, feed.parts = assemblages.GetIndexer(), parts.GetIndexer()
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { feed.changed(obj, time.Now()) },
		UpdateFunc: func(_, obj any) { feed.changed(obj, time.Now()) },
		DeleteFunc: func(obj any) { feed.changed(obj, time.Now()) },
	}
	var synced []cache.InformerSynced
	for _, inf := range []*centerview.Informer{assemblages, parts} {
		reg, err := inf.AddEventHandler(handler)
		if err != nil {
			return nil, nil, err
		}
		synced = append(synced, reg.HasSynced)
		go inf.Run(ctx.Done())
	}
	return feed, synced, nil
}
