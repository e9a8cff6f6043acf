package syncer

import (
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// objectRef names one object of one resource on one server.
type objectRef struct {
	GVR       schema.GroupVersionResource
	Namespace string
	Name      string
}

func (r objectRef) String() string {
	gr := r.GVR.Resource
	if r.GVR.Group != "" {
		gr += "." + r.GVR.Group
	}
	if r.Namespace == "" {
		return gr + " " + r.Name
	}
	return gr + " " + r.Namespace + "/" + r.Name
}

// sourceKey names a mailbox copy independently of the version it is read at: the syncer's unit
// of work.
type sourceKey struct {
	Group, Resource, Namespace, Name string
}

func (k sourceKey) String() string {
	return k.Group + "/" + k.Resource + "/" + k.Namespace + "/" + k.Name
}

// parseSourceKey is the inverse of sourceKey.String.
func parseSourceKey(s string) (sourceKey, bool) {
	parts := strings.Split(s, "/")
	if len(parts) != 4 || parts[1] == "" || parts[3] == "" {
		return sourceKey{}, false
	}
	return sourceKey{Group: parts[0], Resource: parts[1], Namespace: parts[2], Name: parts[3]}, true
}

func (r objectRef) sourceKey() sourceKey {
	return sourceKey{Group: r.GVR.Group, Resource: r.GVR.Resource, Namespace: r.Namespace, Name: r.Name}
}

// ownership are the label and annotation keys by which one syncer marks the edge objects it
// manages. They carry the SyncTarget's UID, so that the syncers of several SyncTargets can share
// an edge cluster, and even an object such as a Namespace, without fighting over the marks.
type ownership struct {
	// label is "created" for an object the syncer created, "adopted" for one that existed
	// before it first applied it; the syncer deletes only the created ones.
	label string
	// sourceAnnotation is the sourceKey of the mailbox copy the object comes from.
	sourceAnnotation string
	// hashAnnotation is the hash of what the syncer last applied.
	hashAnnotation string
	// fieldManager is the syncer's server-side apply field manager at the edge.
	fieldManager string
}

const (
	ownerCreated = "created"
	ownerAdopted = "adopted"
)

func newOwnership(syncTargetUID string) ownership {
	prefix := syncTargetUID + ".syncer.edge.kcp.io/"
	return ownership{
		label:            prefix + "owner",
		sourceAnnotation: prefix + "source",
		hashAnnotation:   prefix + "hash",
		fieldManager:     "edge-syncer-" + syncTargetUID,
	}
}

// managedBy reports whether live carries this syncer's marks, and whether the syncer created
// it (and so may delete it).
func (o ownership) managedBy(live *unstructured.Unstructured) (managed, created bool) {
	if live == nil {
		return false, false
	}
	switch live.GetLabels()[o.label] {
	case ownerCreated:
		return true, true
	case ownerAdopted:
		return true, false
	}
	// Someone removed the label, but the source annotation is the syncer's own. Whether the
	// syncer created the object is no longer known: it is kept as adopted, never deleted.
	return live.GetAnnotations()[o.sourceAnnotation] != "", false
}

// mailboxOnlyAnnotations are edge-mc annotations that describe a copy's life in the mailbox and
// do not travel to the edge.
var mailboxOnlyAnnotations = []string{
	edgev1alpha1.AnnotationPlacements, edgev1alpha1.AnnotationProjectionHash,
	edgev1alpha1.AnnotationSyncError, edgev1alpha1.AnnotationCreatedAtEdge,
}

// mailboxOnlyLabels are edge-mc labels that describe a copy's life in the mailbox.
var mailboxOnlyLabels = []string{edgev1alpha1.LabelProjected, edgev1alpha1.LabelSourceCluster}

// edgeForm returns what the syncer applies at the edge for the mailbox copy mb: mb without what
// the mailbox server set (uid, resourceVersion, status, kcp's annotations, ...) and without the
// mailbox's bookkeeping, re-natured if it is a denatured object, marked with the syncer's
// ownership (state created; the caller switches it to adopted for an object that existed
// before) and the hash of its content. ref is where it goes.
func edgeForm(mb *unstructured.Unstructured, src sourceKey, own ownership) (obj *unstructured.Unstructured, ref objectRef, err error) {
	if transport.IsDenatured(mb) {
		natural, err := transport.ParseDenatured(mb)
		if err != nil {
			return nil, objectRef{}, err
		}
		gv, _ := schema.ParseGroupVersion(natural.GetAPIVersion())
		resource, _ := transport.ActiveResource(gv.WithKind(natural.GetKind()).GroupKind())
		obj = transport.Sanitize(natural)
		ref = objectRef{GVR: gv.WithResource(resource), Name: obj.GetName()}
	} else {
		obj = transport.Sanitize(mb)
		gv, err := schema.ParseGroupVersion(mb.GetAPIVersion())
		if err != nil {
			return nil, objectRef{}, fmt.Errorf("apiVersion %q: %w", mb.GetAPIVersion(), err)
		}
		ref = objectRef{GVR: gv.WithResource(src.Resource), Namespace: mb.GetNamespace(), Name: mb.GetName()}
	}
	labels := obj.GetLabels()
	for _, k := range mailboxOnlyLabels {
		delete(labels, k)
	}
	annotations := obj.GetAnnotations()
	for _, k := range mailboxOnlyAnnotations {
		delete(annotations, k)
	}
	if labels == nil {
		labels = map[string]string{}
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[own.sourceAnnotation] = src.String()
	obj.SetAnnotations(annotations)
	obj.SetLabels(labels)
	// The hash covers the content and the source, not the ownership state or the hash itself.
	annotations[own.hashAnnotation] = transport.Hash(obj.Object)
	labels[own.label] = ownerCreated
	obj.SetAnnotations(annotations)
	obj.SetLabels(labels)
	return obj, ref, nil
}

// isCreateOnly reports whether the workload author marked the object create-only.
func isCreateOnly(mb *unstructured.Unstructured) bool {
	return mb.GetAnnotations()[edgev1alpha1.AnnotationCreateOnly] == "true"
}

// containsAll reports whether every field of want is in have with the same value: maps are
// compared key by key (have may hold more keys, e.g. defaults the server filled in), lists
// element by element (equal lengths; each element of want contained in have's), and scalars by
// value, numbers of any Go numeric type compared as numbers. It tells whether someone changed,
// at the edge, a field the syncer applied.
func containsAll(have, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return len(w) == 0 && have == nil
		}
		for k, wv := range w {
			hv, found := h[k]
			if !found {
				if isEmpty(wv) {
					continue
				}
				return false
			}
			if !containsAll(hv, wv) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok {
			return len(w) == 0 && have == nil
		}
		if len(h) != len(w) {
			return false
		}
		for i := range w {
			if !containsAll(h[i], w[i]) {
				return false
			}
		}
		return true
	case nil:
		return isEmpty(have)
	}
	if wi, ok := want.(int64); ok {
		if hi, ok := have.(int64); ok {
			return hi == wi // exactly: large integers do not survive a float64
		}
	}
	if wn, ok := asFloat(want); ok {
		hn, ok := asFloat(have)
		return ok && hn == wn
	}
	return reflect.DeepEqual(have, want)
}

// isEmpty reports whether v is what a server drops or omits: nil, an empty map or an empty list.
func isEmpty(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	}
	return false
}

func asFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case float64:
		return n, true
	case float32:
		return float64(n), true
	}
	return 0, false
}
