package placementtranslator

import (
	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/lru"
)

// versionMemo remembers a value computed from one version of an object: the same object (by
// logical cluster and UID) at the same resourceVersion gives the same value, so it is computed
// once however many mailboxes a placement reaches, instead of once per mailbox. It holds at most
// size objects, the least recently used going first; an object without a UID or a
// resourceVersion (one not read from a server) is computed every time. Values must not be
// changed by callers.
//
// sliceDecoder (slices.go) memoises by version too, but forgets exactly the slices that are gone,
// which it can list cheaply from its informer; the objects and bindings here are read through
// many informers, so a bound on their number stands in for that.
type versionMemo[T any] struct {
	cache *lru.Cache
}

// memoObjects and memoBindings bound the memos of object hashes and of workload workspaces'
// bindings: a miss only costs the computation again.
const (
	memoObjects  = 16384
	memoBindings = 1024
)

type memoEntry[T any] struct {
	resourceVersion string
	value           T
}

func newVersionMemo[T any](size int) *versionMemo[T] {
	return &versionMemo[T]{cache: lru.New(size)}
}

// get returns compute's value for u's version, computing it only if u's version is not known. A
// nil memo computes every time.
func (m *versionMemo[T]) get(u *unstructured.Unstructured, compute func() T) T {
	uid, rv := u.GetUID(), u.GetResourceVersion()
	if m == nil || uid == "" || rv == "" {
		return compute()
	}
	key := logicalcluster.From(u).String() + "/" + string(uid)
	if e, ok := m.cache.Get(key); ok {
		if e := e.(memoEntry[T]); e.resourceVersion == rv {
			return e.value
		}
	}
	v := compute()
	m.cache.Add(key, memoEntry[T]{resourceVersion: rv, value: v})
	return v
}
