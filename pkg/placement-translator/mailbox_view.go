package placementtranslator

import (
	"context"
	"encoding/base64"
	"slices"
	"sort"
	"strings"
	"sync"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/centerview"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

var (
	assemblagesGVR     = edgev1alpha1.SchemeGroupVersion.WithResource("assemblages")
	assemblagePartsGVR = edgev1alpha1.SchemeGroupVersion.WithResource("assemblageparts")
)

// mailboxView watches, across all mailboxes at once, what the translator writes there and what
// the syncers report: Assemblages, AssemblageParts and SyncerConfigs, through the virtual
// workspace of mailbox.edge.kcp.io, which every mailbox binds. It is the translator's record of
// what each mailbox holds: after a restart nothing needs reading again, and an assemblage edited
// or deleted by hand shows as a difference to put back. The cache keeps no document data: each
// object's data is checked against its digest on arrival and dropped (see slimAssemblage).
type mailboxView struct {
	mu          sync.Mutex
	started     bool
	assemblages centerview.SharedInformer
	parts       centerview.SharedInformer
	configs     centerview.SharedInformer
}

// start runs the informers, on the virtual workspace of every shard that holds a mailbox (kcp
// publishes a shard's once a mailbox there binds the export); each change queues the mailbox it
// is in.
func (v *mailboxView) start(ctx context.Context, c *Controller) {
	logger := klog.FromContext(ctx).WithValues("export", edgev1alpha1.MailboxAPIExportName)
	logger.Info("watching the assemblages and SyncerConfigs of all mailboxes through the virtual workspaces")
	newInformer := func(gvr schema.GroupVersionResource, transform cache.TransformFunc) centerview.SharedInformer {
		inf := c.cfg.Mailbox.NewInformer(gvr, resyncPeriod, cache.Indexers{}, nil)
		_ = inf.SetTransform(transform)
		_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { c.mailboxObjectChanged(centerview.AsUnstructured(obj)) },
			UpdateFunc: func(_, obj any) { c.mailboxObjectChanged(centerview.AsUnstructured(obj)) },
			DeleteFunc: func(obj any) { c.mailboxObjectChanged(centerview.AsUnstructured(obj)) },
		})
		return inf
	}
	assemblages := c.cfg.Assemblages
	if assemblages == nil {
		assemblages = centerview.NewAssemblages(c.cfg.Mailbox)
	}
	_, _ = assemblages.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.assemblageChanged(centerview.AsAssemblage(obj)) },
		UpdateFunc: func(_, obj any) { c.assemblageChanged(centerview.AsAssemblage(obj)) },
		DeleteFunc: func(obj any) {
			a := centerview.AsAssemblage(obj)
			if a == nil {
				return
			}
			// An assemblage deleted (by hand, say) is not taken for present on the strength of
			// a write the view has not shown yet.
			c.written.forget(logicalcluster.From(a), a.Name)
			c.assemblageChanged(a)
		},
	})
	if len(c.namespacesChanged) > 0 {
		_, _ = assemblages.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) { c.assemblageNamespacesChanged(nil, centerview.AsAssemblage(obj)) },
			UpdateFunc: func(old, obj any) {
				c.assemblageNamespacesChanged(centerview.AsAssemblage(old), centerview.AsAssemblage(obj))
			},
			DeleteFunc: func(obj any) { c.assemblageNamespacesChanged(centerview.AsAssemblage(obj), nil) },
		})
	}
	parts := newInformer(assemblagePartsGVR, slimPart)
	configs := newInformer(syncerConfigGVR, slimSyncerConfig)
	for _, inf := range []centerview.SharedInformer{assemblages, parts, configs} {
		go inf.Run(ctx.Done())
	}
	v.mu.Lock()
	v.assemblages, v.parts, v.configs, v.started = assemblages, parts, configs, true
	v.mu.Unlock()
}

// assemblageNamespacesChanged tells the namespacesChanged handlers the mailbox of an assemblage
// that came, went or changed which namespaces it carries for which workspace; a change of
// anything else (its status, mostly) tells nothing.
func (c *Controller) assemblageNamespacesChanged(old, obj *edgev1alpha1.Assemblage) {
	cur := obj
	if cur == nil {
		cur = old
	}
	if cur == nil {
		return
	}
	if old != nil && obj != nil && slices.Equal(deliveredNamespaces(old), deliveredNamespaces(obj)) {
		return
	}
	if old == nil && len(deliveredNamespaces(obj)) == 0 || obj == nil && len(deliveredNamespaces(old)) == 0 {
		return
	}
	mailbox := logicalcluster.From(cur)
	for _, handler := range c.namespacesChanged {
		handler(mailbox)
	}
}

// deliveredNamespaces returns, of an assemblage, the workspace it delivers from and the namespaces
// it carries, sorted: what decides whose an up-synced object's namespace is (see
// deliveredByOthersOnly).
func deliveredNamespaces(a *edgev1alpha1.Assemblage) []string {
	var out []string
	for _, o := range a.Spec.Objects {
		if ns, ok := strings.CutPrefix(o, "namespaces/"); ok && !strings.Contains(ns, "/") {
			out = append(out, ns)
		}
	}
	if len(out) == 0 {
		return nil
	}
	sort.Strings(out)
	return append([]string{a.Labels[transport.LabelPlacementCluster]}, out...)
}

// assemblagesOfPlacement returns a placement's assemblages, without the objects they carry, by
// the logical cluster of their mailbox.
func (v *mailboxView) assemblagesOfPlacement(pk placementKey) map[string]*edgev1alpha1.Assemblage {
	out := map[string]*edgev1alpha1.Assemblage{}
	v.mu.Lock()
	inf := v.assemblages
	v.mu.Unlock()
	if inf == nil {
		return out
	}
	items, _ := inf.GetIndexer().ByIndex(centerview.ByPlacement, centerview.ByPlacementKey(pk.cluster, pk.name))
	for _, item := range items {
		a := centerview.AsAssemblage(item)
		if a == nil {
			continue
		}
		// The rollout planner reads the metadata, the version and the status, of every
		// destination at each plan: the objects named stay out of the copy.
		brief := &edgev1alpha1.Assemblage{ObjectMeta: *a.ObjectMeta.DeepCopy(), Spec: edgev1alpha1.AssemblageSpec{Version: a.Spec.Version}}
		brief.Status = *a.Status.DeepCopy()
		brief.Status.Objects = nil
		out[logicalcluster.From(a).String()] = brief
	}
	return out
}

// hasSynced says whether the informers run and have synced.
func (v *mailboxView) hasSynced() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.started && v.assemblages.HasSynced() && v.parts.HasSynced() && v.configs.HasSynced()
}

// inMailbox returns the cached objects of an informer in one mailbox.
func inMailbox(inf centerview.SharedInformer, cluster logicalcluster.Name) []*unstructured.Unstructured {
	items, _ := inf.GetIndexer().ByIndex(kcpcache.ClusterIndexName, kcpcache.ClusterIndexKey(cluster))
	out := make([]*unstructured.Unstructured, 0, len(items))
	for _, item := range items {
		if u := centerview.AsUnstructured(item); u != nil {
			out = append(out, u)
		}
	}
	return out
}

// assemblagesOf returns the assemblages of a mailbox, without data or the objects' edge status,
// by name: copies, the caller's to change.
func (v *mailboxView) assemblagesOf(cluster logicalcluster.Name) map[string]*edgev1alpha1.Assemblage {
	out := map[string]*edgev1alpha1.Assemblage{}
	items, _ := v.assemblages.GetIndexer().ByIndex(kcpcache.ClusterIndexName, kcpcache.ClusterIndexKey(cluster))
	for _, item := range items {
		if a := centerview.AsAssemblage(item); a != nil && a.Spec.Placement.Name != "" {
			// One that does not read as an assemblage (edited by hand into something else) is
			// taken for absent, and written again.
			out[a.Name] = a.DeepCopy()
		}
	}
	return out
}

// partsOf returns the parts of a mailbox, decoded (without data), by name.
func (v *mailboxView) partsOf(cluster logicalcluster.Name) map[string]*edgev1alpha1.AssemblagePart {
	out := map[string]*edgev1alpha1.AssemblagePart{}
	for _, u := range inMailbox(v.parts, cluster) {
		p := &edgev1alpha1.AssemblagePart{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
			continue
		}
		out[p.Name] = p
	}
	return out
}

// syncerConfigOf returns the mailbox's SyncerConfig, or nil.
func (v *mailboxView) syncerConfigOf(cluster logicalcluster.Name) *edgev1alpha1.SyncerConfig {
	for _, u := range inMailbox(v.configs, cluster) {
		if u.GetName() != edgev1alpha1.SyncerConfigName {
			continue
		}
		cfg := &edgev1alpha1.SyncerConfig{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, cfg); err == nil {
			return cfg
		}
	}
	return nil
}

// dataChecked marks a cached object whose data slimData has checked and dropped. A transform
// must be idempotent: client-go applies it twice to the objects of a relist in watch-list mode
// (once in the reflector's temporary store, once more in the informer's queue), and a second
// check, with the data gone, would find every digest wrong and have every assemblage written
// again, and again at each reconcile, since a write that changes nothing brings no event.
const dataChecked = "edge-mc.dataChecked"

// slimData drops the data at path of a cached object after checking it against the digest next
// to it: a mismatch replaces the digest by centerview.DigestMismatch.
func slimData(u *unstructured.Unstructured, path ...string) {
	if _, done := u.Object[dataChecked]; done {
		return
	}
	u.Object[dataChecked] = true
	parent := path[:len(path)-1]
	data, _, _ := unstructured.NestedString(u.Object, path...)
	digest, _, _ := unstructured.NestedString(u.Object, append(append([]string{}, parent...), "digest")...)
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil || transport.Digest(raw) != digest {
		_ = unstructured.SetNestedField(u.Object, centerview.DigestMismatch, append(append([]string{}, parent...), "digest")...)
	}
	unstructured.RemoveNestedField(u.Object, path...)
}

// slimPart keeps of an AssemblagePart its spec without data.
func slimPart(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	slimData(u, "spec", "data")
	unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
	return u, nil
}

// slimSyncerConfig drops what the translator does not read: the legacy applied report.
func slimSyncerConfig(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
	unstructured.RemoveNestedField(u.Object, "status", "applied")
	return u, nil
}
