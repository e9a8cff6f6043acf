package centerview

import (
	"encoding/base64"
	"testing"

	"github.com/kcp-dev/logicalcluster/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// assemblageWithData is an Assemblage as a mailbox holds it, its data matching its digest
// unless corrupt.
func assemblageWithData(t *testing.T, corrupt bool) *unstructured.Unstructured {
	t.Helper()
	enc, err := transport.Encode([]transport.Entry{{Version: "v1", Resource: "configmaps", Namespaced: true,
		Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "n"}}}})
	if err != nil {
		t.Fatal(err)
	}
	data := enc.Pieces[0]
	if corrupt {
		data = append([]byte("x"), data...)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": edgev1alpha1.SchemeGroupVersion.String(), "kind": "Assemblage",
		"metadata": map[string]any{"name": "a", "resourceVersion": "7"},
		"spec":     map[string]any{"version": enc.Version, "digest": enc.Digests[0], "parts": int64(1), "data": base64.StdEncoding.EncodeToString(data)},
	}}
}

func digestOf(t *testing.T, obj any) string {
	t.Helper()
	a, ok := obj.(*edgev1alpha1.Assemblage)
	if !ok {
		t.Fatalf("the cache holds a %T, want an *Assemblage", obj)
	}
	if len(a.Spec.Data) != 0 {
		t.Errorf("the cache keeps %d bytes of data", len(a.Spec.Data))
	}
	return a.Spec.Digest
}

// The cache's transform runs twice on the objects of a relist in watch-list mode: the second run
// must not change what the first made of them. Before it was idempotent, a second run took every
// assemblage's digest for wrong, and the translator wrote them all again.
func TestSlimIsIdempotent(t *testing.T) {
	for _, tc := range []struct {
		name    string
		corrupt bool
	}{{"data matching its digest", false}, {"data not matching its digest", true}} {
		t.Run(tc.name, func(t *testing.T) {
			u := assemblageWithData(t, tc.corrupt)
			want, _, _ := unstructured.NestedString(u.Object, "spec", "digest")
			if tc.corrupt {
				want = DigestMismatch
			}
			once, err := Slim(u)
			if err != nil {
				t.Fatal(err)
			}
			if got := digestOf(t, once); got != want {
				t.Errorf("after one transform: digest %q, want %q", got, want)
			}
			twice, err := Slim(once)
			if err != nil {
				t.Fatal(err)
			}
			if got := digestOf(t, twice); got != want {
				t.Errorf("after a second transform: digest %q, want %q", got, want)
			}
		})
	}
}

// What client-go does on a relist in watch-list mode, with the cache's transform: the reflector's
// temporary store transforms each object, and the queue's Replace transforms it again.
func TestSlimSurvivesAWatchListRelist(t *testing.T) {
	temporary := cache.NewStore(cache.MetaNamespaceKeyFunc, cache.WithTransformer(Slim))
	if err := temporary.Add(assemblageWithData(t, false)); err != nil {
		t.Fatal(err)
	}
	known := cache.NewStore(cache.MetaNamespaceKeyFunc)
	fifo := cache.NewRealFIFOWithOptions(cache.RealFIFOOptions{KeyFunction: cache.MetaNamespaceKeyFunc, KnownObjects: known, Transformer: Slim})
	if err := fifo.Replace(temporary.List(), "7"); err != nil {
		t.Fatal(err)
	}
	want, _, _ := unstructured.NestedString(assemblageWithData(t, false).Object, "spec", "digest")
	_, err := fifo.Pop(func(obj any, _ bool) error {
		for _, d := range obj.(cache.Deltas) {
			if got := digestOf(t, d.Object); got != want {
				t.Errorf("%s delta: digest %q, want %q: the translator would take the assemblage for changed by hand", d.Type, got, want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestSlimKeepsWhatBothReadersRead: the translator compares the spec (without data) and reads
// the status's versions, counts and conditions; the summarizer reads the objects' states. The
// objects' edge status, uid and creation time, and managed fields, are left out.
func TestSlimKeepsWhatBothReadersRead(t *testing.T) {
	u := assemblageWithData(t, false)
	u.SetAnnotations(map[string]string{"kcp.io/cluster": "mb1", "edge.kcp.io/delivered-at": "2026-11-28T00:00:00Z"})
	u.SetLabels(map[string]string{transport.LabelPlacementCluster: "ws1"})
	u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "x"}})
	_ = unstructured.SetNestedField(u.Object, map[string]any{"cluster": "ws1", "name": "p1"}, "spec", "placement")
	_ = unstructured.SetNestedStringSlice(u.Object, []string{"configmaps/n/c"}, "spec", "objects")
	u.Object["status"] = map[string]any{
		"observedVersion": "v9", "appliedVersion": "v9",
		"counts":     map[string]any{"failed": int64(1)},
		"conditions": []any{map[string]any{"type": "Refused", "status": "False", "reason": "R", "message": "", "lastTransitionTime": "2026-11-28T00:00:00Z"}},
		"objects":    []any{map[string]any{"object": "configmaps/n/c", "state": "Ready", "uid": "u1", "status": map[string]any{"big": "x"}}},
	}
	out, err := Slim(u)
	if err != nil {
		t.Fatal(err)
	}
	a := out.(*edgev1alpha1.Assemblage)
	switch {
	case logicalcluster.From(a) != "mb1" || a.Annotations["edge.kcp.io/delivered-at"] == "" || a.Labels[transport.LabelPlacementCluster] != "ws1":
		t.Errorf("metadata lost: %+v", a.ObjectMeta)
	case len(a.ManagedFields) != 0:
		t.Error("managed fields kept")
	case a.Spec.Placement.Name != "p1" || len(a.Spec.Objects) != 1 || a.Spec.Digest == "" || len(a.Spec.Data) != 0:
		t.Errorf("spec: %+v", a.Spec)
	case a.Status.ObservedVersion != "v9" || a.Status.Counts.Failed != 1 || len(a.Status.Conditions) != 1:
		t.Errorf("status: %+v", a.Status)
	case len(a.Status.Objects) != 1 || a.Status.Objects[0].State != "Ready" || a.Status.Objects[0].Status != nil || a.Status.Objects[0].UID != "":
		t.Errorf("status.objects: %+v", a.Status.Objects)
	}
	if _, ok := u.Object["spec"].(map[string]any)["data"]; !ok {
		t.Error("the transform changed the object it was given")
	}
	idx, _ := Indexers()[ByPlacement](a)
	if len(idx) != 1 || idx[0] != ByPlacementKey("ws1", "p1") {
		t.Errorf("ByPlacement = %v", idx)
	}
}
