package projection

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/placement-translator/customize"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// Candidate is a workload object offered to a placement's selection: the placement translator's
// cached objects, or, in `kubectl edge diff`, a workspace's objects read by the CLI with the
// file's objects in their place.
type Candidate struct {
	Object
	// Custom is whether the object's kind is defined by a CRD of the workload workspace; its CRD
	// goes along with it.
	Custom bool
	// Source is the object as the workload workspace holds it.
	Source *unstructured.Unstructured
	// Index is the caller's: where the candidate came from, say in its own list.
	Index int
}

// KeyOf is the key of a candidate.
func KeyOf(c Candidate) transport.Key {
	return transport.Key{Group: c.Group, Resource: c.Resource, Namespace: c.Namespace, Name: c.Name}
}

// Select returns what a placement's downsync tests select among cands, with what each selected
// object needs at the edge going along: its namespace, and the CRD of a custom kind (when the
// workspace has them). Objects that never travel (transport.IsSystemObject) and objects that came
// back from edges (edgev1alpha1.IsUpsynced: sending them out again would loop) are never
// selected. nsLabels returns the labels of a namespace of the workspace. An invalid selector is
// returned as a *SelectorError, and then nothing is selected.
func Select(tests []edgev1alpha1.DownsyncObjectTest, cands []Candidate, nsLabels func(namespace string) map[string]string) (map[transport.Key]Candidate, error) {
	byKey := make(map[transport.Key]Candidate, len(cands))
	for _, c := range cands {
		byKey[KeyOf(c)] = c
	}
	selected := map[transport.Key]Candidate{}
	for _, c := range cands {
		if transport.IsSystemObject(c.Group, c.Resource, c.Source) || edgev1alpha1.IsUpsynced(c.Source.GetLabels()) {
			continue
		}
		var labels map[string]string
		if c.Namespaced {
			labels = nsLabels(c.Namespace)
		}
		ok, err := Selects(tests, c.Object, labels)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		selected[KeyOf(c)] = c
		if c.Namespaced {
			nsKey := transport.Key{Resource: "namespaces", Name: c.Namespace}
			if ns, ok := byKey[nsKey]; ok {
				selected[nsKey] = ns
			}
		}
		if c.Custom {
			crdKey := transport.Key{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Name: c.Resource + "." + c.Group}
			if crd, ok := byKey[crdKey]; ok {
				selected[crdKey] = crd
			}
		}
	}
	return selected, nil
}

// CopyError is a selected object that cannot be copied for a destination; Reason is the
// placement condition's reason that reports it (InvalidDenaturedObject, CustomizationError).
type CopyError struct {
	Reason  string
	Message string
}

func (e *CopyError) Error() string { return e.Message }

// The reasons of a CopyError.
const (
	ReasonDenatured     = "InvalidDenaturedObject"
	ReasonCustomization = "CustomizationError"
)

// CustomizerLookup returns a Customizer of the workload workspace by namespace and name.
type CustomizerLookup func(namespace, name string) (*unstructured.Unstructured, bool)

// Copy is what one destination gets of a selected object: sanitised (transport.Sanitize), and
// customised with the Customizer it names (annotation edge.kcp.io/customizer, "name" in its own
// namespace or "namespace/name") and %(key) expansion with params. A denatured object must parse.
func Copy(src *unstructured.Unstructured, id string, customizers CustomizerLookup, params customize.Parameters) (*unstructured.Unstructured, *CopyError) {
	if transport.IsDenatured(src) {
		if _, err := transport.ParseDenatured(src); err != nil {
			return nil, &CopyError{ReasonDenatured, err.Error()}
		}
	}
	out := transport.Sanitize(src)
	var customizer *edgev1alpha1.Customizer
	if ns, name, ok := CustomizerOf(src); ok {
		item, exists := customizers(ns, name)
		if !exists {
			return nil, &CopyError{ReasonCustomization, fmt.Sprintf("%s names Customizer %s/%s (annotation %s), which does not exist", id, ns, name, edgev1alpha1.AnnotationCustomizer)}
		}
		customizer = &edgev1alpha1.Customizer{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, customizer); err != nil {
			return nil, &CopyError{ReasonCustomization, fmt.Sprintf("decoding Customizer %s/%s: %v", ns, name, err)}
		}
	}
	if err := customize.Apply(out.Object, customizer, params); err != nil {
		return nil, &CopyError{ReasonCustomization, customizationMessage(id, customizer, err)}
	}
	return out, nil
}

// CustomizerOf returns the namespace and name of the Customizer that an object names, if any.
func CustomizerOf(u *unstructured.Unstructured) (namespace, name string, ok bool) {
	name = u.GetAnnotations()[edgev1alpha1.AnnotationCustomizer]
	if name == "" {
		return "", "", false
	}
	namespace = u.GetNamespace()
	if i := strings.Index(name, "/"); i >= 0 {
		namespace, name = name[:i], name[i+1:]
	}
	return namespace, name, true
}

// customizationMessage says what failed in customising the object id, where (the Customizer, if
// the failure is in one of its replacements) and how to fix it.
func customizationMessage(id string, customizer *edgev1alpha1.Customizer, err error) string {
	msg := "customising " + id
	var ce *customize.Error
	if !errors.As(err, &ce) {
		return fmt.Sprintf("%s: %v", msg, err)
	}
	if ce.Replacement > 0 && customizer != nil {
		msg += fmt.Sprintf(" with Customizer %s/%s", customizer.Namespace, customizer.Name)
	}
	msg += fmt.Sprintf(": %v", err)
	switch {
	case ce.Key != "":
		msg += fmt.Sprintf("; label or annotate the destination's SyncTarget or Location with %q, or change %%(%s)", ce.Key, ce.Key)
	case ce.Replacement > 0:
		msg += "; fix that replacement of the Customizer"
	}
	return msg + " (a copy delivered before keeps its last good version)"
}
