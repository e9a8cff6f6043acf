package framework

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

var (
	// AssemblagesGVR and AssemblagePartsGVR are the resources of assemblages in a mailbox.
	AssemblagesGVR     = edgev1alpha1.SchemeGroupVersion.WithResource("assemblages")
	AssemblagePartsGVR = edgev1alpha1.SchemeGroupVersion.WithResource("assemblageparts")
)

// irregularPlurals are the resources of kinds whose resource is not their lower-cased name and
// an "s".
var irregularPlurals = map[string]string{
	"Ingress": "ingresses", "NetworkPolicy": "networkpolicies", "PodSecurityPolicy": "podsecuritypolicies",
	"Endpoints": "endpoints", "StorageClass": "storageclasses", "PriorityClass": "priorityclasses",
	"IngressClass": "ingressclasses", "RuntimeClass": "runtimeclasses",
}

// Entries reads a YAML manifest of objects into assemblage entries, as the placement translator
// makes them. The resource of each object is its kind lower-cased with an "s" (or the plural of
// a few irregular kinds); an object is namespaced if it names a namespace.
func Entries(t testing.TB, manifest string) []transport.Entry {
	t.Helper()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(manifest)))
	var out []transport.Entry
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("reading the manifest: %v", err)
		}
		obj := map[string]any{}
		if err := utilyaml.Unmarshal(doc, &obj); err != nil {
			t.Fatalf("reading the manifest: %v", err)
		}
		if len(obj) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		gv, err := schema.ParseGroupVersion(u.GetAPIVersion())
		if err != nil {
			t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
		}
		resource, ok := irregularPlurals[u.GetKind()]
		if !ok {
			resource = strings.ToLower(u.GetKind()) + "s"
		}
		out = append(out, transport.Entry{Group: gv.Group, Version: gv.Version, Resource: resource,
			Namespaced: u.GetNamespace() != "", Object: obj})
	}
	return out
}

// EncodeAssemblage encodes entries (with transport.Encode) into the Assemblage of the placement
// name of the workload workspace with the logical cluster cluster, and its AssemblageParts, as the
// placement translator writes them.
func EncodeAssemblage(t testing.TB, cluster, placement string, entries []transport.Entry, shared ...edgev1alpha1.SharedObject) (*edgev1alpha1.Assemblage, []*edgev1alpha1.AssemblagePart) {
	t.Helper()
	enc, err := transport.Encode(entries)
	if err != nil {
		t.Fatal(err)
	}
	name := transport.AssemblageName(cluster, placement)
	labels := map[string]string{
		transport.LabelPlacementCluster: transport.LabelValue(cluster),
		transport.LabelPlacementName:    transport.LabelValue(placement),
	}
	a := &edgev1alpha1.Assemblage{
		TypeMeta:   metav1.TypeMeta{APIVersion: edgev1alpha1.SchemeGroupVersion.String(), Kind: "Assemblage"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: edgev1alpha1.AssemblageSpec{
			Placement: edgev1alpha1.PlacementReference{Cluster: cluster, Name: placement},
			Version:   enc.Version, Format: transport.FormatV1,
			Objects: enc.Objects, ObjectCount: int32(len(enc.Objects)), Shared: shared,
			Parts: int32(len(enc.Pieces)), Data: enc.Pieces[0], Digest: enc.Digests[0],
		},
	}
	var parts []*edgev1alpha1.AssemblagePart
	for i := 1; i < len(enc.Pieces); i++ {
		partLabels := map[string]string{transport.LabelAssemblage: transport.LabelValue(name)}
		parts = append(parts, &edgev1alpha1.AssemblagePart{
			TypeMeta:   metav1.TypeMeta{APIVersion: edgev1alpha1.SchemeGroupVersion.String(), Kind: "AssemblagePart"},
			ObjectMeta: metav1.ObjectMeta{Name: transport.PartName(name, i), Labels: partLabels},
			Spec: edgev1alpha1.AssemblagePartSpec{Assemblage: name, Version: enc.Version, Index: int32(i),
				Data: enc.Pieces[i], Digest: enc.Digests[i]},
		})
	}
	return a, parts
}

// WriteAssemblage writes an assemblage and its parts into the mailbox (client), as the placement
// translator does: the parts first, then the Assemblage, created or updated; then it deletes the
// parts of the assemblage that no longer belong to its version. It returns the Assemblage as
// written.
func WriteAssemblage(t testing.TB, client dynamic.Interface, a *edgev1alpha1.Assemblage, parts []*edgev1alpha1.AssemblagePart) *edgev1alpha1.Assemblage {
	t.Helper()
	for _, p := range parts {
		writeObject(t, client, AssemblagePartsGVR, p)
	}
	written := &edgev1alpha1.Assemblage{}
	fromUnstructured(t, writeObject(t, client, AssemblagesGVR, a), written)
	list, err := client.Resource(AssemblagePartsGVR).List(Context(t, 30*time.Second), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing the assemblage parts: %v", err)
	}
	for _, item := range list.Items {
		spec, _, _ := unstructured.NestedMap(item.Object, "spec")
		if spec["assemblage"] == a.Name && spec["version"] != a.Spec.Version {
			if err := client.Resource(AssemblagePartsGVR).Delete(Context(t, 30*time.Second), item.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Fatalf("deleting the stale part %s: %v", item.GetName(), err)
			}
		}
	}
	t.Logf("wrote assemblage %s version %s: %d objects in %d pieces", a.Name, a.Spec.Version, a.Spec.ObjectCount, a.Spec.Parts)
	return written
}

// DeleteAssemblage deletes an assemblage and its parts from the mailbox.
func DeleteAssemblage(t testing.TB, client dynamic.Interface, name string) {
	t.Helper()
	ctx := Context(t, 30*time.Second)
	if err := client.Resource(AssemblagesGVR).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("deleting assemblage %s: %v", name, err)
	}
	list, err := client.Resource(AssemblagePartsGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing the assemblage parts: %v", err)
	}
	for _, item := range list.Items {
		if owner, _, _ := unstructured.NestedString(item.Object, "spec", "assemblage"); owner == name {
			if err := client.Resource(AssemblagePartsGVR).Delete(ctx, item.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Fatalf("deleting part %s: %v", item.GetName(), err)
			}
		}
	}
}

// GetAssemblage reads an assemblage from the mailbox, or returns nil if it does not exist.
func GetAssemblage(t testing.TB, client dynamic.Interface, name string) *edgev1alpha1.Assemblage {
	t.Helper()
	u := GetObject(t, client, AssemblagesGVR, "", name)
	if u == nil {
		return nil
	}
	a := &edgev1alpha1.Assemblage{}
	fromUnstructured(t, u, a)
	return a
}

// EventuallyAssemblage waits until check, given the assemblage (nil if absent), says nothing is
// wrong, and returns it.
func EventuallyAssemblage(t testing.TB, client dynamic.Interface, name string, check func(a *edgev1alpha1.Assemblage) string) *edgev1alpha1.Assemblage {
	t.Helper()
	var last *edgev1alpha1.Assemblage
	Eventually(t, Converge, func() (bool, string) {
		last = GetAssemblage(t, client, name)
		if why := check(last); why != "" {
			return false, fmt.Sprintf("assemblage %s: %s", name, why)
		}
		return true, ""
	})
	return last
}

// AssemblageCondition returns the condition of the given type of an assemblage's status, or nil.
func AssemblageCondition(a *edgev1alpha1.Assemblage, condType string) *metav1.Condition {
	if a == nil {
		return nil
	}
	for i := range a.Status.Conditions {
		if a.Status.Conditions[i].Type == condType {
			return &a.Status.Conditions[i]
		}
	}
	return nil
}

// ObjectStateOf returns the state an assemblage's status reports for the object with the given
// key, or nil.
func ObjectStateOf(a *edgev1alpha1.Assemblage, key string) *edgev1alpha1.ObjectState {
	if a == nil {
		return nil
	}
	for i := range a.Status.Objects {
		if a.Status.Objects[i].Object == key {
			return &a.Status.Objects[i]
		}
	}
	return nil
}

// writeObject creates obj, or updates it over what is there, and returns it as written.
func writeObject(t testing.TB, client dynamic.Interface, gvr schema.GroupVersionResource, obj runtime.Object) *unstructured.Unstructured {
	t.Helper()
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: content}
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	var written *unstructured.Unstructured
	Eventually(t, 30*time.Second, func() (bool, string) {
		ctx := Context(t, 30*time.Second)
		existing, err := client.Resource(gvr).Get(ctx, u.GetName(), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			written, err = client.Resource(gvr).Create(ctx, u, metav1.CreateOptions{})
		case err == nil:
			u.SetResourceVersion(existing.GetResourceVersion())
			written, err = client.Resource(gvr).Update(ctx, u, metav1.UpdateOptions{})
		}
		if err != nil {
			return false, fmt.Sprintf("writing %s %s: %v", gvr.Resource, u.GetName(), err)
		}
		return true, ""
	})
	return written
}

func fromUnstructured(t testing.TB, u *unstructured.Unstructured, into any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
		t.Fatalf("reading %s %s: %v", u.GetKind(), u.GetName(), err)
	}
}
