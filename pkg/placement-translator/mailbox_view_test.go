package placementtranslator

import (
	"encoding/base64"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
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
	a := &edgev1alpha1.Assemblage{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.(*unstructured.Unstructured).Object, a); err != nil {
		t.Fatalf("the slimmed assemblage does not decode: %v", err)
	}
	if len(a.Spec.Data) != 0 {
		t.Errorf("the cache keeps %d bytes of data", len(a.Spec.Data))
	}
	return a.Spec.Digest
}

// The view's transforms run twice on the objects of a relist in watch-list mode: the second run
// must not change what the first made of them. Before it was idempotent, a second run took every
// assemblage's digest for wrong, and the translator wrote them all again.
func TestMailboxViewTransformsAreIdempotent(t *testing.T) {
	for _, tc := range []struct {
		name    string
		corrupt bool
	}{{"data matching its digest", false}, {"data not matching its digest", true}} {
		t.Run(tc.name, func(t *testing.T) {
			u := assemblageWithData(t, tc.corrupt)
			want, _, _ := unstructured.NestedString(u.Object, "spec", "digest")
			if tc.corrupt {
				want = digestMismatch
			}
			once, err := slimAssemblage(u)
			if err != nil {
				t.Fatal(err)
			}
			if got := digestOf(t, once); got != want {
				t.Errorf("after one transform: digest %q, want %q", got, want)
			}
			twice, err := slimAssemblage(once)
			if err != nil {
				t.Fatal(err)
			}
			if got := digestOf(t, twice); got != want {
				t.Errorf("after a second transform: digest %q, want %q", got, want)
			}
		})
	}
}

// What client-go does on a relist in watch-list mode, with the view's transform: the reflector's
// temporary store transforms each object, and the queue's Replace transforms it again.
func TestMailboxViewSurvivesAWatchListRelist(t *testing.T) {
	temporary := cache.NewStore(cache.MetaNamespaceKeyFunc, cache.WithTransformer(slimAssemblage))
	if err := temporary.Add(assemblageWithData(t, false)); err != nil {
		t.Fatal(err)
	}
	known := cache.NewStore(cache.MetaNamespaceKeyFunc)
	fifo := cache.NewRealFIFOWithOptions(cache.RealFIFOOptions{KeyFunction: cache.MetaNamespaceKeyFunc, KnownObjects: known, Transformer: slimAssemblage})
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
