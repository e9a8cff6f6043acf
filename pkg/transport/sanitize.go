package transport

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

// serverMetadata are the metadata fields that the server holding an object sets or owns.
var serverMetadata = []string{
	"uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp",
	"deletionGracePeriodSeconds", "managedFields", "ownerReferences", "selfLink", "finalizers",
	"generateName",
}

// droppedAnnotations are annotations that describe the object's life on its source server,
// including what the status summarizer reports on a workload object: copying those to the
// mailboxes and the edges would make every report a change to re-project everywhere.
var droppedAnnotations = []string{
	"kcp.io/cluster", "kubectl.kubernetes.io/last-applied-configuration",
	edgev1alpha1.AnnotationExecutingCount, edgev1alpha1.AnnotationSingletonStatusFrom,
}

// Sanitize returns a deep copy of u fit to be written to another server: without the
// server-owned metadata (uid, resourceVersion, generation, creationTimestamp, deletionTimestamp,
// deletionGracePeriodSeconds, managedFields, ownerReferences, selfLink, finalizers,
// generateName), without status, without the annotation
// kubectl.kubernetes.io/last-applied-configuration and the status summarizer's annotations
// (edge.kcp.io/executing-count, edge.kcp.io/singleton-status-from), and without the labels and annotations of
// kcp, such as kcp.io/cluster: those whose key's prefix (the part before '/') is kcp.io or ends
// in ".kcp.io", except edge.kcp.io, which belongs to edge-mc. Labels or annotations left empty are removed.
// Sanitize does not modify u.
func Sanitize(u *unstructured.Unstructured) *unstructured.Unstructured {
	if u == nil {
		return nil
	}
	out := u.DeepCopy()
	for _, f := range serverMetadata {
		unstructured.RemoveNestedField(out.Object, "metadata", f)
	}
	unstructured.RemoveNestedField(out.Object, "status")
	out.SetLabels(filterKeys(out.GetLabels(), nil))
	out.SetAnnotations(filterKeys(out.GetAnnotations(), droppedAnnotations))
	return out
}

// isKCPKey reports whether a label or annotation key belongs to kcp: its prefix (the part before
// '/') is kcp.io or ends in ".kcp.io", but is not edge.kcp.io, which belongs to edge-mc.
func isKCPKey(key string) bool {
	prefix, _, found := strings.Cut(key, "/")
	if !found || prefix == "edge.kcp.io" {
		return false
	}
	return prefix == "kcp.io" || strings.HasSuffix(prefix, ".kcp.io")
}

// filterKeys removes from m the keys of kcp and those in drop, and returns m, or nil if it is
// left empty.
func filterKeys(m map[string]string, drop []string) map[string]string {
	for k := range m {
		if isKCPKey(k) || slices.Contains(drop, k) {
			delete(m, k)
		}
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// Hash returns a short, stable hex digest of obj's content: the first 16 hex digits of the
// SHA-256 of its canonical JSON (map keys sorted, as encoding/json writes them). Equal content
// gives an equal hash whatever the order in which the maps were filled; nil is hashed as empty.
func Hash(obj map[string]any) string {
	if obj == nil {
		obj = map[string]any{}
	}
	data, err := json.Marshal(obj)
	if err != nil { // e.g. a NaN, which JSON cannot carry; fmt also sorts map keys
		data = []byte(fmt.Sprintf("%#v", obj))
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}
