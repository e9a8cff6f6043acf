package syncer

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// Resources of the mailbox.edge.kcp.io export that the syncer reads and writes.
const (
	assemblagesResource     = "assemblages"
	assemblagePartsResource = "assemblageparts"
	syncerConfigsResource   = "syncerconfigs"
)

// assemblagesGR names assemblages in the API's answers (see transport.Gone).
var assemblagesGR = edgev1alpha1.SchemeGroupVersion.WithResource(assemblagesResource).GroupResource()

// Indexes of the assemblage and part informers.
const (
	// indexCarried indexes assemblages by the keys of the objects they carry or share
	// (spec.objects and spec.shared), so that the syncer can tell whether an object that left
	// one assemblage is in another.
	indexCarried = "carried"
	// indexSharesFrom indexes assemblages by the assemblages that carry their shared objects.
	indexSharesFrom = "sharesFrom"
	// indexPartOf indexes AssemblageParts by their assemblage.
	indexPartOf = "partOf"
)

// mailboxAPI reads and writes the mailbox's edge.kcp.io objects as typed objects.
type mailboxAPI struct {
	client rest.Interface
}

func newMailboxAPI(cfg *rest.Config) (mailboxAPI, error) {
	s := runtime.NewScheme()
	if err := edgev1alpha1.AddToScheme(s); err != nil {
		return mailboxAPI{}, err
	}
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &edgev1alpha1.SchemeGroupVersion
	c.APIPath = "/apis"
	c.ContentType = runtime.ContentTypeJSON
	c.AcceptContentTypes = runtime.ContentTypeJSON
	c.NegotiatedSerializer = serializer.NewCodecFactory(s).WithoutConversion()
	client, err := rest.RESTClientFor(c)
	if err != nil {
		return mailboxAPI{}, fmt.Errorf("building the mailbox client: %w", err)
	}
	return mailboxAPI{client: client}, nil
}

// listWatch lists and watches resource, as newList makes lists, with opts tweaked by tweak. A
// list or watch waits for a center that cannot be reached (listPatiently).
func (m mailboxAPI) listWatch(resource string, newList func() runtime.Object, tweak func(*metav1.ListOptions)) *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			tweak(&opts)
			return listPatiently(ctx, resource, listRetryInterval, func(ctx context.Context) (runtime.Object, error) {
				out := newList()
				err := m.client.Get().Resource(resource).VersionedParams(&opts, metav1.ParameterCodec).Do(ctx).Into(out)
				return out, err
			})
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			tweak(&opts)
			opts.Watch = true
			// Patient too: with client-go's WatchListClient (on by default) the reflector's
			// first list is a watch, which it retries on its own backoff.
			return listPatiently(ctx, resource, listRetryInterval, func(ctx context.Context) (watch.Interface, error) {
				return m.client.Get().Resource(resource).VersionedParams(&opts, metav1.ParameterCodec).Watch(ctx)
			})
		},
	}
}

// getAssemblage reads an assemblage from the center itself, not from a cache.
func (m mailboxAPI) getAssemblage(ctx context.Context, name string) (*edgev1alpha1.Assemblage, error) {
	out := &edgev1alpha1.Assemblage{}
	err := m.client.Get().Resource(assemblagesResource).Name(name).Do(ctx).Into(out)
	return out, err
}

// applyStatus server-side-applies status to the status subresource of the named object of
// resource, as the syncer's field manager.
func (m mailboxAPI) applyStatus(ctx context.Context, resource, kind, name string, status any) error {
	body, err := json.Marshal(map[string]any{
		"apiVersion": edgev1alpha1.SchemeGroupVersion.String(),
		"kind":       kind,
		"metadata":   map[string]any{"name": name},
		"status":     status,
	})
	if err != nil {
		return err
	}
	return m.client.Patch(types.ApplyPatchType).Resource(resource).Name(name).SubResource("status").
		Param("fieldManager", FieldManager).Param("force", "true").Body(body).Do(ctx).Error()
}

// buildMailboxInformers makes the informers of the mailbox's assemblages, their parts and its
// SyncerConfig, and routes their events.
func (s *Syncer) buildMailboxInformers() error {
	all := func(*metav1.ListOptions) {}
	s.assemblages = cache.NewSharedIndexInformer(
		s.mailboxEdge.listWatch(assemblagesResource, func() runtime.Object { return &edgev1alpha1.AssemblageList{} }, all),
		&edgev1alpha1.Assemblage{}, 0, cache.Indexers{indexCarried: carriedIndex, indexSharesFrom: sharesFromIndex})
	s.parts = cache.NewSharedIndexInformer(
		s.mailboxEdge.listWatch(assemblagePartsResource, func() runtime.Object { return &edgev1alpha1.AssemblagePartList{} }, all),
		&edgev1alpha1.AssemblagePart{}, 0, cache.Indexers{indexPartOf: partOfIndex})
	s.config = cache.NewSharedIndexInformer(
		s.mailboxEdge.listWatch(syncerConfigsResource, func() runtime.Object { return &edgev1alpha1.SyncerConfigList{} },
			func(o *metav1.ListOptions) {
				o.FieldSelector = fields.OneTermEqualSelector("metadata.name", edgev1alpha1.SyncerConfigName).String()
			}),
		&edgev1alpha1.SyncerConfig{}, 0, cache.Indexers{})

	if _, err := s.assemblages.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { s.assemblageChanged(nil, obj) },
		UpdateFunc: func(old, obj any) {
			s.assemblageChanged(old, obj)
		},
		DeleteFunc: func(obj any) { s.assemblageChanged(obj, nil) },
	}); err != nil {
		return err
	}
	partEvent := func(obj any) {
		if p := asPart(obj); p != nil {
			s.assemblageQueue.Add(p.Spec.Assemblage)
		}
	}
	if _, err := s.parts.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    partEvent,
		UpdateFunc: func(_, obj any) { partEvent(obj) },
		DeleteFunc: partEvent,
	}); err != nil {
		return err
	}
	signal := func() {
		select {
		case s.configSignal <- struct{}{}:
		default:
		}
	}
	_, err := s.config.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { signal() },
		UpdateFunc: func(_, _ any) { signal() },
		DeleteFunc: func(any) { signal() },
	})
	return err
}

// assemblageChanged queues an assemblage whose spec changed, or that came or went. A change of
// its status alone (the syncer's own write, mostly) calls for nothing.
func (s *Syncer) assemblageChanged(oldObj, obj any) {
	old, cur := asAssemblage(oldObj), asAssemblage(obj)
	switch {
	case cur != nil && old != nil:
		if old.UID == cur.UID && old.Generation == cur.Generation && old.Generation != 0 {
			return
		}
		s.assemblageQueue.Add(cur.Name)
	case cur != nil:
		s.assemblageQueue.Add(cur.Name)
	case old != nil:
		s.assemblageQueue.Add(old.Name)
	}
}

func asAssemblage(obj any) *edgev1alpha1.Assemblage {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	a, _ := obj.(*edgev1alpha1.Assemblage)
	return a
}

func asPart(obj any) *edgev1alpha1.AssemblagePart {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	p, _ := obj.(*edgev1alpha1.AssemblagePart)
	return p
}

func carriedIndex(obj any) ([]string, error) {
	a := asAssemblage(obj)
	if a == nil {
		return nil, nil
	}
	out := make([]string, 0, len(a.Spec.Objects)+len(a.Spec.Shared))
	out = append(out, a.Spec.Objects...)
	for _, sh := range a.Spec.Shared {
		out = append(out, sh.Object)
	}
	return out, nil
}

func sharesFromIndex(obj any) ([]string, error) {
	a := asAssemblage(obj)
	if a == nil {
		return nil, nil
	}
	var out []string
	for _, sh := range a.Spec.Shared {
		out = append(out, sh.Assemblage)
	}
	return out, nil
}

func partOfIndex(obj any) ([]string, error) {
	if p := asPart(obj); p != nil {
		return []string{p.Spec.Assemblage}, nil
	}
	return nil, nil
}

// cachedAssemblage returns the assemblage from the informer's cache, or nil.
func (s *Syncer) cachedAssemblage(name string) *edgev1alpha1.Assemblage {
	obj, exists, err := s.assemblages.GetStore().GetByKey(name)
	if err != nil || !exists {
		return nil
	}
	return asAssemblage(obj)
}

// partsOf returns the cached parts of the named assemblage, of any version.
func (s *Syncer) partsOf(name string) []*edgev1alpha1.AssemblagePart {
	objs, _ := s.parts.GetIndexer().ByIndex(indexPartOf, name)
	out := make([]*edgev1alpha1.AssemblagePart, 0, len(objs))
	for _, obj := range objs {
		if p := asPart(obj); p != nil {
			out = append(out, p)
		}
	}
	return out
}

// carriedElsewhere says whether an assemblage of the mailbox other than except carries or
// shares the object with the given key, by the informer's cache.
func (s *Syncer) carriedElsewhere(key transport.Key, except string) bool {
	objs, _ := s.assemblages.GetIndexer().ByIndex(indexCarried, key.String())
	for _, obj := range objs {
		if a := asAssemblage(obj); a != nil && a.Name != except {
			return true
		}
	}
	return false
}

// sharingFrom returns the names of the assemblages that share objects carried by carrier.
func (s *Syncer) sharingFrom(carrier string) []string {
	objs, _ := s.assemblages.GetIndexer().ByIndex(indexSharesFrom, carrier)
	var out []string
	for _, obj := range objs {
		if a := asAssemblage(obj); a != nil {
			out = append(out, a.Name)
		}
	}
	return out
}
