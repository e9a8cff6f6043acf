package centerview

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"sync"
	"time"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	kcpdynamic "github.com/kcp-dev/client-go/dynamic"
	kcpdynamicinformer "github.com/kcp-dev/client-go/dynamic/dynamicinformer"
	"github.com/kcp-dev/logicalcluster/v3"
	apisv1alpha1 "github.com/kcp-dev/sdk/apis/apis/v1alpha1"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Endpoints follows the APIExportEndpointSlice of one APIExport of the ESPW. kcp lists there one
// virtual workspace URL per shard on which some workspace binds the export: a shard's URL
// appears with the first binding on it and goes with the last, so URLs come and go while the
// controllers run. Informers made by NewInformer run one cluster-aware informer per listed URL,
// added and stopped as the slice changes, and show the controllers one view of all of them;
// Cluster writes to a workspace through the URL whose informers show that workspace, the one
// virtual workspace that serves it.
//
// A single-shard kcp lists one URL: everything then goes through it, as before sharding.
type Endpoints struct {
	export string
	espw   logicalcluster.Path
	kcp    kcpclientset.ClusterInterface
	// config is the rest config of the controllers' credential, its Host kcp's base URL (the
	// front-proxy's, on a sharded center); each URL gets a copy with Host replaced.
	config *rest.Config
	// base writes to workspaces that no informer shows, through config's Host, which routes by
	// logical cluster.
	base kcpdynamic.ClusterInterface

	mu sync.Mutex
	// synced: the slice has been read once (found or not).
	synced bool
	// urls are the URLs the slice lists, sorted; clients their clients.
	urls    []string
	clients map[string]kcpdynamic.ClusterInterface
	// informers are the informers made by NewInformer, until they stop.
	informers []*Informer
	// sharedMu guards shared: the informers that Shared hands out, by resource.
	sharedMu sync.Mutex
	shared   map[schema.GroupVersionResource]*Informer
	// shardOf remembers the URL found for each logical cluster written to.
	shardOf map[logicalcluster.Name]string
	// changed is closed, and replaced, whenever urls or synced change.
	changed chan struct{}
	// health records, per URL, whether requests through it reach its shard; shardNames the
	// shard names found for URLs (see Outage).
	health     map[string]*reachability
	shardNames map[string]string
	// tolerateUnreachable: see TolerateUnreachableShards.
	tolerateUnreachable bool
}

// NewEndpoints returns a follower of the APIExportEndpointSlice named export in the ESPW; Start
// starts following. config reaches kcp (its Host the base URL) with the controllers' credential;
// the virtual workspaces are reached with the same credential.
func NewEndpoints(kcp kcpclientset.ClusterInterface, espw logicalcluster.Path, export string, config *rest.Config) (*Endpoints, error) {
	base, err := kcpdynamic.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	return &Endpoints{export: export, espw: espw, kcp: kcp, config: rest.CopyConfig(config), base: base,
		clients: map[string]kcpdynamic.ClusterInterface{}, shardOf: map[logicalcluster.Name]string{}, changed: make(chan struct{}),
		health: map[string]*reachability{}, shardNames: map[string]string{}}, nil
}

// TolerateUnreachableShards makes the informers of this export count a shard that they have
// never listed as synced while requests to it fail in transport (the shard is down), so that
// the controllers start, and serve the other shards, without it. Only an export whose objects
// of one workspace decide nothing about another may do so: mailbox.edge.kcp.io, whose objects
// are each one mailbox's own. What the informers of edge.kcp.io or the workload kinds do not
// show is taken as absent (a placement, a SyncTarget), so those wait for every shard. Informer
// Complete still says whether every shard has been listed. Call it before Start.
func (e *Endpoints) TolerateUnreachableShards() { e.tolerateUnreachable = true }

// Export is the name of the APIExport followed.
func (e *Endpoints) Export() string { return e.export }

// Start watches the APIExportEndpointSlice until ctx ends: one watch on the ESPW, on the slice
// by name. A slice deleted stops every informer's shards; made again, it starts them again.
func (e *Endpoints) Start(ctx context.Context) {
	logger := klog.FromContext(ctx).WithValues("export", e.export, "espw", e.espw)
	endpointSlices := e.kcp.Cluster(e.espw).ApisV1alpha1().APIExportEndpointSlices()
	byName := fields.OneTermEqualSelector("metadata.name", e.export).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = byName
			return endpointSlices.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = byName
			return endpointSlices.Watch(ctx, o)
		},
	}
	inf := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, e.kcp), &apisv1alpha1.APIExportEndpointSlice{}, 0, cache.Indexers{})
	_ = inf.SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
		if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) || errors.Is(err, io.EOF) {
			logger.V(2).Info("the watch of the APIExportEndpointSlice ended; listing again", "reason", err.Error())
			return
		}
		logger.Error(err, "watching the APIExportEndpointSlice "+e.export+" (is kcp reachable, and has 'kubectl edge init' run with this version?); will retry")
	})
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { e.setURLs(ctx, urlsOf(obj)) },
		UpdateFunc: func(_, obj any) { e.setURLs(ctx, urlsOf(obj)) },
		DeleteFunc: func(any) { e.setURLs(ctx, nil) },
	})
	if err != nil {
		logger.Error(err, "following the APIExportEndpointSlice")
		return
	}
	go inf.Run(ctx.Done())
	go func() {
		if cache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
			e.mu.Lock()
			e.synced = true
			e.notifyLocked()
			e.mu.Unlock()
		}
	}()
}

func urlsOf(obj any) []string {
	slice, ok := obj.(*apisv1alpha1.APIExportEndpointSlice)
	if !ok {
		return nil
	}
	var urls []string
	for _, ep := range slice.Status.APIExportEndpoints {
		if ep.URL != "" && !slices.Contains(urls, ep.URL) {
			urls = append(urls, ep.URL)
		}
	}
	return urls
}

// setURLs makes the URLs followed those given: every informer gets a shard on each new URL and
// loses those of URLs gone.
func (e *Endpoints) setURLs(ctx context.Context, urls []string) {
	logger := klog.FromContext(ctx).WithValues("export", e.export)
	urls = slices.Clone(urls)
	sort.Strings(urls)
	e.mu.Lock()
	defer e.mu.Unlock()
	if slices.Equal(urls, e.urls) {
		return
	}
	for _, u := range e.urls {
		if !slices.Contains(urls, u) {
			logger.Info("a virtual workspace of the export is gone: its shard holds no binding any more", "url", u)
			delete(e.clients, u)
			delete(e.health, u)
			for cluster, of := range e.shardOf {
				if of == u {
					delete(e.shardOf, cluster)
				}
			}
			for _, i := range e.informers {
				i.removeShard(u)
			}
		}
	}
	var kept []string
	for _, u := range urls {
		if slices.Contains(e.urls, u) {
			kept = append(kept, u)
			continue
		}
		cfg := rest.CopyConfig(e.config)
		cfg.Host = u
		health := &reachability{now: time.Now}
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &roundTripper{next: rt, r: health} })
		client, err := kcpdynamic.NewForConfig(cfg)
		if err != nil {
			logger.Error(err, "building the client of a virtual workspace; it is not followed", "url", u)
			continue
		}
		logger.Info("following a virtual workspace of the export", "url", u)
		e.clients[u] = client
		e.health[u] = health
		for _, i := range e.informers {
			i.addShard(u, client)
		}
		kept = append(kept, u)
	}
	sort.Strings(kept)
	e.urls = kept
	e.notifyLocked()
}

func (e *Endpoints) notifyLocked() {
	close(e.changed)
	e.changed = make(chan struct{})
}

// URLs returns the virtual workspace URLs followed now, sorted.
func (e *Endpoints) URLs() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.urls)
}

// Config returns a copy of the rest config that reaches the virtual workspace at url.
func (e *Endpoints) Config(url string) *rest.Config {
	cfg := rest.CopyConfig(e.config)
	cfg.Host = url
	return cfg
}

// hasSynced: the slice has been read once.
func (e *Endpoints) hasSynced() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.synced
}

// WaitForURL waits until the slice lists a URL and returns the first; false if ctx ends first.
// notYet, if not nil, is called once if the slice, when first read, lists none (kcp lists one
// only once some workspace binds the export).
func (e *Endpoints) WaitForURL(ctx context.Context, notYet func()) (string, bool) {
	said := false
	for {
		e.mu.Lock()
		synced, urls, changed := e.synced, e.urls, e.changed
		e.mu.Unlock()
		if len(urls) > 0 {
			return urls[0], true
		}
		if synced && !said && notYet != nil {
			notYet()
			said = true
		}
		select {
		case <-ctx.Done():
			return "", false
		case <-changed:
		}
	}
}

// ClusterClient reaches a workspace by path: a kcpdynamic.ClusterInterface is one, and so is an
// *Endpoints.
type ClusterClient interface {
	Cluster(path logicalcluster.Path) dynamic.Interface
}

var _ ClusterClient = &Endpoints{}

// Cluster returns a client of the workspace: through the virtual workspace whose informers show
// objects of it (kcp refuses a workspace that the shard of the URL does not hold), or, if none
// does yet, through kcp's base URL with the controllers' credential, which the front-proxy
// routes to the right shard. A workspace is found by its logical cluster name.
func (e *Endpoints) Cluster(path logicalcluster.Path) dynamic.Interface {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.urls) == 1 {
		return e.clients[e.urls[0]].Cluster(path)
	}
	if name, ok := path.Name(); ok {
		if u, found := e.urlOfLocked(name); found {
			return e.clients[u].Cluster(path)
		}
	}
	return e.base.Cluster(path)
}

// urlOfLocked finds the URL whose informers hold an object of the logical cluster, and
// remembers it: a logical cluster never moves to another shard.
func (e *Endpoints) urlOfLocked(cluster logicalcluster.Name) (string, bool) {
	if u, ok := e.shardOf[cluster]; ok {
		return u, true
	}
	key := kcpcache.ClusterIndexKey(cluster)
	for _, u := range e.urls {
		for _, i := range e.informers {
			if i.shardHolds(u, key) {
				e.shardOf[cluster] = u
				return u, true
			}
		}
	}
	return "", false
}

// NewInformer returns an informer on the resource across every workspace of every virtual
// workspace of the export, as kcpdynamicinformer.NewFilteredDynamicInformer builds on one, with
// the cluster index added to indexers.
func (e *Endpoints) NewInformer(gvr schema.GroupVersionResource, resync time.Duration, indexers cache.Indexers, tweak dynamicinformer.TweakListOptionsFunc) *Informer {
	all := cache.Indexers{kcpcache.ClusterIndexName: kcpcache.ClusterIndexFunc}
	for name, f := range indexers {
		all[name] = f
	}
	return e.newInformer(fmt.Sprintf("%s of %s", gvr, e.export), all, func(_ string, client kcpdynamic.ClusterInterface) cache.SharedIndexInformer {
		// Each shard's indexer gets a map of its own, as an indexer may add to it.
		return kcpdynamicinformer.NewFilteredDynamicInformer(client, gvr, resync, maps.Clone(all), tweak).Informer()
	})
}

// Shared returns the informer on the resource that every caller of Shared on these Endpoints
// gets: one list and one watch per shard however many controllers read the resource, and one
// copy of each object in memory. It has the union of the callers' indexers (their names must
// differ: a second index of the same name is an error), and the resync period resync. A
// controller of edge-controller-manager reads placements, their slices, SyncTargets and
// Locations this way; running it again (Run) is harmless.
func (e *Endpoints) Shared(gvr schema.GroupVersionResource, indexers cache.Indexers) (*Informer, error) {
	e.sharedMu.Lock()
	defer e.sharedMu.Unlock()
	if i, ok := e.shared[gvr]; ok {
		return i, i.AddIndexers(indexers)
	}
	i := e.NewInformer(gvr, sharedResync, indexers, nil)
	if e.shared == nil {
		e.shared = map[schema.GroupVersionResource]*Informer{}
	}
	e.shared[gvr] = i
	return i, nil
}

// sharedResync is the resync period of shared informers, every controller's.
const sharedResync = 10 * time.Minute

// forget stops following the slice for the informer, once it has stopped.
func (e *Endpoints) forget(i *Informer) {
	e.sharedMu.Lock()
	for gvr, si := range e.shared {
		if si == i {
			delete(e.shared, gvr)
		}
	}
	e.sharedMu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.informers = slices.DeleteFunc(e.informers, func(o *Informer) bool { return o == i })
}

// newInformer registers an informer whose shard on each URL build makes.
func (e *Endpoints) newInformer(what string, indexers cache.Indexers, build func(url string, client kcpdynamic.ClusterInterface) cache.SharedIndexInformer) *Informer {
	i := &Informer{endpoints: e, what: what, indexers: indexers, build: build, shards: map[string]*shard{}}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.informers = append(e.informers, i)
	for _, u := range e.urls {
		i.addShard(u, e.clients[u])
	}
	return i
}

// WaitForEndpoint waits until the APIExportEndpointSlice of the named APIExport in the ESPW lists
// a URL, the export's virtual workspace, and returns it; false if ctx ends first. kcp lists it
// only once some workspace binds the export. It reads the slice with jittered backoff, from 1 s
// up to 30 s, logging why a read failed. It returns the first URL only, one shard's virtual
// workspace: the controllers follow every URL with Endpoints; tools that need one use this.
func WaitForEndpoint(ctx context.Context, kcp kcpclientset.ClusterInterface, espw logicalcluster.Path, export string) (string, bool) {
	logger := klog.FromContext(ctx)
	delay := time.Second
	for {
		slice, err := kcp.Cluster(espw).ApisV1alpha1().APIExportEndpointSlices().Get(ctx, export, metav1.GetOptions{})
		switch {
		case err != nil && ctx.Err() == nil:
			logger.Error(err, "reading the APIExportEndpointSlice of "+export+" (has 'kubectl edge init' run with this version?)", "espw", espw)
		case err == nil && len(slice.Status.APIExportEndpoints) > 0:
			return slice.Status.APIExportEndpoints[0].URL, true
		}
		select {
		case <-ctx.Done():
			return "", false
		case <-time.After(delay + rand.N(delay/2)):
		}
		delay = min(2*delay, 30*time.Second)
	}
}

// DiscoverVirtualWorkspace lists the resources that a virtual workspace serves across all its
// workspaces.
func DiscoverVirtualWorkspace(vw *rest.Config) ([]*metav1.APIResourceList, error) {
	cfg := rest.CopyConfig(vw)
	cfg.Host += "/clusters/*"
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	_, lists, err := dc.ServerGroupsAndResources()
	return lists, err
}
