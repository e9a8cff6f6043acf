// Package centerview is what the center's controllers read of kcp, and share:
//
//   - Endpoints follows the APIExportEndpointSlice of one of the ESPW's exports (one virtual
//     workspace per shard that holds a binding of it), and Informer runs a cluster-aware
//     informer on every one of those URLs, adding a shard's as it appears;
//   - NewAssemblages is one watch of the Assemblages of every mailbox, read by the placement
//     translator (what each mailbox holds, the rollouts' progress) and by the status summarizer
//     (what the edges report): two watches of every assemblage cost edge-controller-manager the
//     decoding of every event twice, and kcp the encoding of it for two watchers;
//   - UpsyncCaches is what the up-sync return path reads of the translator's caches, so that
//     neither controller imports the other.
package centerview

import (
	"encoding/base64"
	"fmt"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// Index names of the assemblage cache, besides kcp's cluster index.
const (
	// ByPlacement indexes assemblages by <placement cluster>|<placement name>.
	ByPlacement = "assemblagesByPlacement"
	// ByObject indexes assemblages by <placement cluster>|<object key>, for every object they
	// name (carried and shared).
	ByObject = "assemblagesByObject"
)

// DigestMismatch replaces, in the cache, the digest of an assemblage whose data does not match
// it, so that it differs from anything the translator would write and is written again.
const DigestMismatch = "mismatch"

// resyncPeriod is how often the informer replays its cache; nothing depends on it.
const resyncPeriod = 10 * time.Minute

var assemblagesGVR = edgev1alpha1.SchemeGroupVersion.WithResource("assemblages")

// NewAssemblages makes the informer of the assemblages of every mailbox, on the virtual
// workspaces that mailbox follows. Its cache holds slim typed assemblages (Slim); run it with
// Run, as many times as there are readers: it starts once.
func NewAssemblages(mailbox *Endpoints) SharedInformer {
	inf := mailbox.NewInformer(assemblagesGVR, resyncPeriod, Indexers(), nil)
	_ = inf.SetTransform(Slim)
	return inf
}

// Indexers are the assemblage cache's indexes.
func Indexers() cache.Indexers {
	return cache.Indexers{
		ByPlacement: func(obj any) ([]string, error) {
			a := AsAssemblage(obj)
			if a == nil || a.Spec.Placement.Name == "" {
				return nil, nil
			}
			return []string{ByPlacementKey(a.Spec.Placement.Cluster, a.Spec.Placement.Name)}, nil
		},
		ByObject: func(obj any) ([]string, error) {
			a := AsAssemblage(obj)
			if a == nil {
				return nil, nil
			}
			objects := transport.ObjectsOf(a)
			keys := make([]string, 0, len(objects))
			for _, o := range objects {
				keys = append(keys, a.Spec.Placement.Cluster+"|"+o)
			}
			return keys, nil
		},
	}
}

// ByPlacementKey is the ByPlacement key of a placement.
func ByPlacementKey(cluster, name string) string { return cluster + "|" + name }

// AsAssemblage returns the assemblage an event or a cache entry holds, deletions whose final
// state is unknown included; nil for anything else.
func AsAssemblage(obj any) *edgev1alpha1.Assemblage {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	switch a := obj.(type) {
	case *edgev1alpha1.Assemblage:
		return a
	case *unstructured.Unstructured:
		slim, _ := slim(a)
		return slim
	}
	return nil
}

// Slim is the cache's transform: it turns an assemblage read from the server into what the
// cache keeps, a typed Assemblage without what is most of one, the carried objects (spec.data,
// checked against spec.digest first: a mismatch sets the digest to DigestMismatch) and each
// object's .status as the edge reported it (read from the server by the few that need it), nor
// managed fields. An assemblage that does not read as one is kept with its name and logical
// cluster only, naming no placement. It is idempotent: client-go runs it twice on the objects of
// a relist in watch-list mode.
func Slim(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	a, _ := slim(u)
	return a, nil
}

func slim(u *unstructured.Unstructured) (*edgev1alpha1.Assemblage, error) {
	bare := &edgev1alpha1.Assemblage{ObjectMeta: metav1.ObjectMeta{
		Name:            u.GetName(),
		ResourceVersion: u.GetResourceVersion(),
		Annotations:     map[string]string{logicalcluster.AnnotationKey: logicalcluster.From(u).String()},
	}}
	content := u.Object
	if spec, ok := content["spec"].(map[string]any); ok {
		data, _ := spec["data"].(string)
		digest, _ := spec["digest"].(string)
		if raw, err := base64.StdEncoding.DecodeString(data); err != nil || transport.Digest(raw) != digest {
			digest = DigestMismatch
		}
		trimmed := make(map[string]any, len(spec))
		for k, v := range spec {
			trimmed[k] = v
		}
		delete(trimmed, "data")
		trimmed["digest"] = digest
		content = shallowWith(content, "spec", trimmed)
	}
	if status, ok := content["status"].(map[string]any); ok {
		if objects, ok := status["objects"].([]any); ok {
			kept := make([]any, 0, len(objects))
			for _, raw := range objects {
				m, ok := raw.(map[string]any)
				if !ok {
					continue
				}
				entry := make(map[string]any, len(m))
				for k, v := range m {
					switch k {
					case "status", "uid", "createdAt":
					default:
						entry[k] = v
					}
				}
				kept = append(kept, entry)
			}
			trimmedStatus := make(map[string]any, len(status))
			for k, v := range status {
				trimmedStatus[k] = v
			}
			trimmedStatus["objects"] = kept
			content = shallowWith(content, "status", trimmedStatus)
		}
	}
	if md, ok := content["metadata"].(map[string]any); ok {
		if _, ok := md["managedFields"]; ok {
			trimmed := make(map[string]any, len(md))
			for k, v := range md {
				if k != "managedFields" {
					trimmed[k] = v
				}
			}
			content = shallowWith(content, "metadata", trimmed)
		}
	}
	a := &edgev1alpha1.Assemblage{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(content, a); err != nil {
		return bare, fmt.Errorf("reading assemblage %s of mailbox %s: %w", u.GetName(), logicalcluster.From(u), err)
	}
	if a.Annotations == nil {
		a.Annotations = map[string]string{}
	}
	a.Annotations[logicalcluster.AnnotationKey] = logicalcluster.From(u).String()
	return a, nil
}

// shallowWith is a shallow copy of m with key set to v: the object the informer was given is
// left as it was.
func shallowWith(m map[string]any, key string, v any) map[string]any {
	out := make(map[string]any, len(m))
	for k, val := range m {
		out[k] = val
	}
	out[key] = v
	return out
}
