package centerview

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	kcpdynamic "github.com/kcp-dev/client-go/dynamic"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// SharedInformer is what edge-mc's controllers use of an informer. A cache.SharedIndexInformer
// is one; so is an *Informer, which shows the informers of every virtual workspace of an export
// as one.
type SharedInformer interface {
	AddEventHandler(handler cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error)
	SetTransform(transform cache.TransformFunc) error
	SetWatchErrorHandler(handler cache.WatchErrorHandler) error
	GetStore() cache.Store
	GetIndexer() cache.Indexer
	HasSynced() bool
	Run(stop <-chan struct{})
}

var _ SharedInformer = cache.SharedIndexInformer(nil)
var _ SharedInformer = &Informer{}

// Informer is an informer across every virtual workspace that Endpoints follows: one
// cache.SharedIndexInformer per URL (a shard), started when the URL appears (once Run was
// called) and stopped when it goes. A logical cluster lives on one shard, so the shards' caches
// are disjoint and the cluster-aware keys (<cluster>|<namespace>/<name>) stay unique.
//
// Event handlers, the transform and the watch error handler apply to every shard, present and
// future. When a URL goes (its shard holds no binding of the export any more), each object its
// cache held is delivered to the handlers as deleted, in a cache.DeletedFinalStateUnknown.
type Informer struct {
	endpoints *Endpoints
	what      string
	indexers  cache.Indexers
	build     func(url string, client kcpdynamic.ClusterInterface) cache.SharedIndexInformer

	mu sync.RWMutex
	// added are the indexers given to AddIndexers, which shards built later get too.
	added      cache.Indexers
	transform  cache.TransformFunc
	watchError cache.WatchErrorHandler
	handlers   []cache.ResourceEventHandler
	// stop is Run's, nil until Run is called.
	stop   <-chan struct{}
	shards map[string]*shard
}

// shard is the informer on one URL.
type shard struct {
	informer cache.SharedIndexInformer
	// stop ends it; done is closed once it stopped (or at once if it never ran).
	stop    chan struct{}
	done    chan struct{}
	started bool
	// unserved: the last list or watch failed because the virtual workspace does not serve the
	// resource (404): the shard holds none of it, and counts as synced.
	unserved atomic.Bool
	// regs are the registrations of the Informer's handlers on this shard's informer, by the
	// handler's index.
	regs []cache.ResourceEventHandlerRegistration
}

// addShard starts following url; Endpoints calls it with its lock held.
func (i *Informer) addShard(url string, client kcpdynamic.ClusterInterface) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if _, ok := i.shards[url]; ok {
		return
	}
	s := &shard{informer: i.build(url, client), stop: make(chan struct{}), done: make(chan struct{})}
	if len(i.added) > 0 {
		_ = s.informer.AddIndexers(maps.Clone(i.added))
	}
	if i.transform != nil {
		_ = s.informer.SetTransform(i.transform)
	}
	_ = s.informer.SetWatchErrorHandler(func(r *cache.Reflector, err error) {
		// A virtual workspace serves a kind claimed from another export only on a shard where
		// some binding accepted the claim: elsewhere it answers 404, and holds none of it.
		s.unserved.Store(apierrors.IsNotFound(err))
		i.mu.RLock()
		handler := i.watchError
		i.mu.RUnlock()
		switch {
		case handler != nil:
			handler(r, err)
		case apierrors.IsNotFound(err):
			klog.V(4).InfoS("a virtual workspace does not serve a resource; it counts as holding none", "informer", i.what, "url", url)
		case apierrors.IsResourceExpired(err) || apierrors.IsGone(err) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			klog.V(4).InfoS("a watch through a virtual workspace ended; listing again", "informer", i.what, "url", url, "reason", err.Error())
		default:
			klog.ErrorS(err, "watching through a virtual workspace; will retry", "informer", i.what, "url", url)
		}
	})
	for _, h := range i.handlers {
		reg, _ := s.informer.AddEventHandler(h)
		s.regs = append(s.regs, reg)
	}
	i.shards[url] = s
	if i.stop != nil {
		i.startLocked(s)
	}
}

func (i *Informer) startLocked(s *shard) {
	if s.started {
		return
	}
	s.started = true
	stop := i.stop
	go func() {
		defer close(s.done)
		merged := make(chan struct{})
		go func() {
			select {
			case <-stop:
			case <-s.stop:
			}
			close(merged)
		}()
		s.informer.Run(merged)
	}()
}

// removeShard stops following url; Endpoints calls it with its lock held. Once the shard's
// informer has stopped, every object it held is delivered to the handlers as deleted.
func (i *Informer) removeShard(url string) {
	i.mu.Lock()
	s, ok := i.shards[url]
	delete(i.shards, url)
	handlers := slices.Clone(i.handlers)
	i.mu.Unlock()
	if !ok {
		return
	}
	close(s.stop)
	if !s.started {
		close(s.done)
	}
	go func() {
		<-s.done
		store := s.informer.GetStore()
		for _, key := range store.ListKeys() {
			obj, exists, _ := store.GetByKey(key)
			if !exists {
				continue
			}
			for _, h := range handlers {
				h.OnDelete(cache.DeletedFinalStateUnknown{Key: key, Obj: obj})
			}
		}
	}()
}

// shardHolds: the shard on url holds an object of the logical cluster whose cluster index key
// is given.
func (i *Informer) shardHolds(url, clusterKey string) bool {
	i.mu.RLock()
	s, ok := i.shards[url]
	i.mu.RUnlock()
	if !ok {
		return false
	}
	keys, err := s.informer.GetIndexer().IndexKeys(kcpcache.ClusterIndexName, clusterKey)
	return err == nil && len(keys) > 0
}

// AddIndexers adds indexers to every shard, present and future. A name that the informer has
// already is refused: two controllers sharing an informer must name their indexes apart.
func (i *Informer) AddIndexers(indexers cache.Indexers) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	for name := range indexers {
		_, had := i.indexers[name]
		_, added := i.added[name]
		if had || added {
			return fmt.Errorf("the informer on %s has an index %q already", i.what, name)
		}
	}
	if i.added == nil {
		i.added = cache.Indexers{}
	}
	for name, f := range indexers {
		i.added[name] = f
	}
	for _, s := range i.shards {
		if err := s.informer.AddIndexers(maps.Clone(indexers)); err != nil {
			return fmt.Errorf("adding indexes to the informer on %s: %w", i.what, err)
		}
	}
	return nil
}

// Run starts the shards, present and future, and blocks until stop is closed. The informer then
// stops following the slice: a stopped informer cannot be run again.
func (i *Informer) Run(stop <-chan struct{}) {
	i.mu.Lock()
	if i.stop != nil {
		i.mu.Unlock()
		return
	}
	i.stop = stop
	for _, s := range i.shards {
		i.startLocked(s)
	}
	i.mu.Unlock()
	<-stop
	i.endpoints.forget(i)
}

// HasSynced says whether the slice has been read and every shard's informer has synced, or found
// that its virtual workspace does not serve the resource. A new URL makes it false until its
// shard has synced. If the Endpoints tolerate unreachable shards, a shard that was never listed
// counts as synced while requests to it fail in transport: it holds nothing as far as the
// controllers know, until it answers and is listed.
func (i *Informer) HasSynced() bool {
	return i.synced(-1)
}

// synced is HasSynced, or, for handler >= 0, whether that handler has also been given every
// object of each shard's first list (a shard's informer syncs its store before its handlers have
// seen all of it).
func (i *Informer) synced(handler int) bool {
	if !i.endpoints.hasSynced() {
		return false
	}
	for url, listed := range i.listedShards(handler) {
		if !listed && !(i.endpoints.tolerateUnreachable && i.endpoints.unreachable(url)) {
			return false
		}
	}
	return true
}

// Complete says whether the slice has been read and every shard has been listed (or does not
// serve the resource): what the informer does not hold does not exist. Unlike HasSynced, it is
// false while an unreachable shard has never been listed. A controller that would delete or
// replace something because an object is absent must ask this.
func (i *Informer) Complete() bool {
	if !i.endpoints.hasSynced() {
		return false
	}
	for _, listed := range i.listedShards(-1) {
		if !listed {
			return false
		}
	}
	return true
}

// listedShards says, for each URL followed, whether its shard's informer has synced (and, for
// handler >= 0, delivered its first list to that handler) or found the resource not served. It
// holds the informer's lock only while it reads.
func (i *Informer) listedShards(handler int) map[string]bool {
	i.mu.RLock()
	defer i.mu.RUnlock()
	out := make(map[string]bool, len(i.shards))
	for u, s := range i.shards {
		synced := s.informer.HasSynced()
		if handler >= 0 && synced {
			synced = handler < len(s.regs) && s.regs[handler] != nil && s.regs[handler].HasSynced()
		}
		out[u] = synced || s.unserved.Load()
	}
	return out
}

// shardListed says whether the shard on url has been listed (see listedShards); a URL that the
// informer does not follow counts as listed.
func (i *Informer) shardListed(url string) bool {
	i.mu.RLock()
	defer i.mu.RUnlock()
	s, ok := i.shards[url]
	return !ok || s.informer.HasSynced() || s.unserved.Load()
}

// AddEventHandler adds the handler to every shard, present and future. Each shard replays its
// cache to it as additions, as a cache.SharedIndexInformer does.
func (i *Informer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.handlers = append(i.handlers, h)
	for _, s := range i.shards {
		reg, err := s.informer.AddEventHandler(h)
		if err != nil {
			return nil, err
		}
		s.regs = append(s.regs, reg)
	}
	return registration{i, len(i.handlers) - 1}, nil
}

// registration is what AddEventHandler returns: its HasSynced says that the informer has synced
// and that the handler has been given every shard's first list, as a cache.SharedIndexInformer's
// registration does. A controller that builds state from its handlers' events (the scheduler's
// engine) must wait for it, not for the informer's HasSynced.
type registration struct {
	i       *Informer
	handler int
}

func (r registration) HasSynced() bool { return r.i.synced(r.handler) }

// SetTransform sets the transform of every shard, present and future; call it before Run.
func (i *Informer) SetTransform(transform cache.TransformFunc) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.transform = transform
	var errs []error
	for _, s := range i.shards {
		errs = append(errs, s.informer.SetTransform(transform))
	}
	return errors.Join(errs...)
}

// SetWatchErrorHandler sets the watch error handler of every shard, present and future. Without
// one, errors are logged with the informer and URL they concern.
func (i *Informer) SetWatchErrorHandler(handler cache.WatchErrorHandler) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.watchError = handler
	return nil
}

// GetStore returns the read-only view of every shard's cache.
func (i *Informer) GetStore() cache.Store { return view{i} }

// GetIndexer returns the read-only view of every shard's cache.
func (i *Informer) GetIndexer() cache.Indexer { return view{i} }

// shardIndexers returns the shards' indexers, in the order of their URLs.
func (i *Informer) shardIndexers() []cache.Indexer {
	i.mu.RLock()
	defer i.mu.RUnlock()
	urls := make([]string, 0, len(i.shards))
	for u := range i.shards {
		urls = append(urls, u)
	}
	sort.Strings(urls)
	out := make([]cache.Indexer, 0, len(urls))
	for _, u := range urls {
		out = append(out, i.shards[u].informer.GetIndexer())
	}
	return out
}

// view is the cache.Indexer of an Informer: reads go to every shard's cache; writes are refused,
// as only the informers write their caches.
type view struct{ i *Informer }

var errReadOnly = errors.New("the cache of an informer across virtual workspaces is read-only")

func (v view) Add(any) error                    { return errReadOnly }
func (v view) Update(any) error                 { return errReadOnly }
func (v view) Delete(any) error                 { return errReadOnly }
func (v view) Replace([]any, string) error      { return errReadOnly }
func (v view) Resync() error                    { return nil }
func (v view) AddIndexers(cache.Indexers) error { return errReadOnly }
func (v view) GetIndexers() cache.Indexers {
	v.i.mu.RLock()
	defer v.i.mu.RUnlock()
	all := maps.Clone(v.i.indexers)
	maps.Copy(all, v.i.added)
	return all
}

func (v view) List() []any {
	var out []any
	for _, s := range v.i.shardIndexers() {
		out = append(out, s.List()...)
	}
	return out
}

func (v view) ListKeys() []string {
	var out []string
	for _, s := range v.i.shardIndexers() {
		out = append(out, s.ListKeys()...)
	}
	return out
}

func (v view) Get(obj any) (any, bool, error) {
	for _, s := range v.i.shardIndexers() {
		if item, exists, err := s.Get(obj); err != nil || exists {
			return item, exists, err
		}
	}
	return nil, false, nil
}

func (v view) GetByKey(key string) (any, bool, error) {
	for _, s := range v.i.shardIndexers() {
		if item, exists, err := s.GetByKey(key); err != nil || exists {
			return item, exists, err
		}
	}
	return nil, false, nil
}

func (v view) Index(indexName string, obj any) ([]any, error) {
	var out []any
	for _, s := range v.i.shardIndexers() {
		items, err := s.Index(indexName, obj)
		if err != nil {
			return nil, err
		}
		out = append(out, items...)
	}
	return out, nil
}

func (v view) IndexKeys(indexName, indexedValue string) ([]string, error) {
	var out []string
	for _, s := range v.i.shardIndexers() {
		keys, err := s.IndexKeys(indexName, indexedValue)
		if err != nil {
			return nil, err
		}
		out = append(out, keys...)
	}
	return out, nil
}

func (v view) ListIndexFuncValues(indexName string) []string {
	values := sets.New[string]()
	for _, s := range v.i.shardIndexers() {
		values.Insert(s.ListIndexFuncValues(indexName)...)
	}
	return sets.List(values)
}

func (v view) ByIndex(indexName, indexedValue string) ([]any, error) {
	var out []any
	for _, s := range v.i.shardIndexers() {
		items, err := s.ByIndex(indexName, indexedValue)
		if err != nil {
			return nil, err
		}
		out = append(out, items...)
	}
	return out, nil
}

// Complete says whether what the informer holds is all there is (see Informer.Complete); for a
// plain informer, whether it has synced.
func Complete(inf SharedInformer) bool {
	if i, ok := inf.(*Informer); ok {
		return i.Complete()
	}
	return inf.HasSynced()
}

// AsUnstructured is the object an event handler of these informers is given, deletions whose
// final state is unknown included; nil for anything else.
func AsUnstructured(obj any) *unstructured.Unstructured {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	u, _ := obj.(*unstructured.Unstructured)
	return u
}
