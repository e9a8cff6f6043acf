package framework

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// TestEncodeAssemblage checks that what the helpers write reads back as the syncer reads it: the
// entries' resources, and the data through the unstructured form that the dynamic client sends.
func TestEncodeAssemblage(t *testing.T) {
	entries := Entries(t, `apiVersion: v1
kind: Namespace
metadata: {name: app}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, namespace: app}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w1, namespace: app}
spec: {size: 3}
---
# an empty document
`)
	var got []string
	for _, e := range entries {
		got = append(got, e.GVR().String()+" "+e.Key().String())
	}
	want := []string{
		"/v1, Resource=namespaces namespaces/app",
		"networking.k8s.io/v1, Resource=ingresses ingresses.networking.k8s.io/app/web",
		"example.com/v1, Resource=widgets widgets.example.com/app/w1",
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("entries:\n got %v\nwant %v", got, want)
	}

	a, parts := EncodeAssemblage(t, "2abc", "web", entries)
	if a.Name != "2abc.web" || a.Spec.Parts != 1 || len(parts) != 0 || a.Spec.ObjectCount != 3 {
		t.Errorf("assemblage %s of %d parts, %d objects; %d parts written", a.Name, a.Spec.Parts, a.Spec.ObjectCount, len(parts))
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(a)
	if err != nil {
		t.Fatal(err)
	}
	if data, _, _ := unstructured.NestedString(content, "spec", "data"); data == "" {
		t.Fatalf("spec.data is not a base64 string in the unstructured form: %T", content["spec"].(map[string]any)["data"])
	}
	back := &edgev1alpha1.Assemblage{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(content, back); err != nil {
		t.Fatal(err)
	}
	doc, err := transport.DecodeAssemblage(back, nil)
	if err != nil {
		t.Fatalf("the written assemblage does not decode: %v", err)
	}
	if len(doc.Objects) != 3 || doc.Objects[0].Key().String() != "namespaces/app" {
		t.Errorf("decoded %d objects, first %s", len(doc.Objects), doc.Objects[0].Key())
	}
}
