// Package informertest gives unit tests informers on unstructured objects that they fill by
// hand, across logical clusters (indexed by kcp's cluster index, as the controllers' are).
package informertest

import (
	"testing"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	kcpinformers "github.com/kcp-dev/apimachinery/v2/third_party/informers"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// Synced returns a running informer that has synced on an empty list, with the given indexers
// and the cluster index; the test fills its indexer. It stops when the test ends.
func Synced(t *testing.T, indexers cache.Indexers) cache.SharedIndexInformer {
	t.Helper()
	all := cache.Indexers{kcpcache.ClusterIndexName: kcpcache.ClusterIndexFunc}
	for name, f := range indexers {
		all[name] = f
	}
	lw := &cache.ListWatch{
		ListFunc:  func(metav1.ListOptions) (runtime.Object, error) { return &unstructured.UnstructuredList{}, nil },
		WatchFunc: func(metav1.ListOptions) (watch.Interface, error) { return watch.NewFake(), nil },
	}
	// The fake watch sends no initial-events bookmark, so the informer must list, not stream.
	inf := kcpinformers.NewSharedIndexInformer(listOnly{lw}, &unstructured.Unstructured{}, 0, all)
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go inf.Run(stop)
	if !cache.WaitForCacheSync(stop, inf.HasSynced) {
		t.Fatal("the test informer did not sync")
	}
	return inf
}

// listOnly is a ListWatch that says it cannot stream a watch list (client-go's WatchListClient).
type listOnly struct{ *cache.ListWatch }

func (listOnly) IsWatchListSemanticsUnSupported() bool { return true }

// Object is an object of the logical cluster, with a UID made of the cluster and name, and a
// resourceVersion, as a cache would hold it.
func Object(apiVersion, kind, cluster, namespace, name string, labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	u.SetLabels(labels)
	u.SetUID(types.UID("uid-" + cluster + "-" + name))
	u.SetResourceVersion("7")
	u.SetAnnotations(map[string]string{"kcp.io/cluster": cluster})
	return u
}
