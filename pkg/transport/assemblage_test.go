package transport

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

func configMap(ns, name string, data map[string]any) Entry {
	return Entry{Version: "v1", Resource: "configmaps", Namespaced: true, Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"data":     data,
	}}
}

func namespace(name string) Entry {
	return Entry{Version: "v1", Resource: "namespaces", Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}}}
}

func crd(name string) Entry {
	return Entry{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions", Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": map[string]any{"name": name}}}
}

func deployment(ns, name string, replicas int64) Entry {
	return Entry{Group: "apps", Version: "v1", Resource: "deployments", Namespaced: true, Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"replicas": replicas, "ratio": 0.5},
	}}
}

// assemblageOf builds the Assemblage and AssemblageParts that the translator would write.
func assemblageOf(name string, enc *Encoded) (*edgev1alpha1.Assemblage, []*edgev1alpha1.AssemblagePart) {
	a := &edgev1alpha1.Assemblage{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: edgev1alpha1.AssemblageSpec{
		Version: enc.Version, Format: FormatV1, Parts: int32(len(enc.Pieces)),
		Data: enc.Pieces[0], Digest: enc.Digests[0], Objects: enc.Objects, ObjectCount: int32(len(enc.Objects)),
	}}
	var parts []*edgev1alpha1.AssemblagePart
	for i := 1; i < len(enc.Pieces); i++ {
		parts = append(parts, &edgev1alpha1.AssemblagePart{ObjectMeta: metav1.ObjectMeta{Name: PartName(name, i)},
			Spec: edgev1alpha1.AssemblagePartSpec{Assemblage: name, Version: enc.Version, Index: int32(i), Data: enc.Pieces[i], Digest: enc.Digests[i]}})
	}
	return a, parts
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	entries := []Entry{deployment("app", "web", 3), configMap("app", "cfg", map[string]any{"k": "v"}), namespace("app"), crd("widgets.example.com")}
	enc, err := Encode(entries)
	if err != nil {
		t.Fatal(err)
	}
	wantOrder := []string{"customresourcedefinitions.apiextensions.k8s.io/widgets.example.com", "namespaces/app", "configmaps/app/cfg", "deployments.apps/app/web"}
	if !reflect.DeepEqual(enc.Objects, wantOrder) {
		t.Errorf("objects = %v, want apply order %v", enc.Objects, wantOrder)
	}
	if len(enc.Pieces) != 1 {
		t.Errorf("a small document took %d pieces, want 1", len(enc.Pieces))
	}
	a, parts := assemblageOf("ws.p", enc)
	doc, err := DecodeAssemblage(a, parts)
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Objects) != 4 {
		t.Fatalf("decoded %d objects, want 4", len(doc.Objects))
	}
	dep := doc.Objects[3]
	if dep.Key().String() != "deployments.apps/app/web" || dep.GVR().String() != "apps/v1, Resource=deployments" {
		t.Errorf("decoded %s %s", dep.Key(), dep.GVR())
	}
	spec := dep.Object["spec"].(map[string]any)
	if spec["replicas"] != int64(3) || spec["ratio"] != 0.5 {
		t.Errorf("numbers came back as %#v and %#v, want int64 3 and float64 0.5", spec["replicas"], spec["ratio"])
	}
}

func TestEncodeIsCanonical(t *testing.T) {
	a, err := Encode([]Entry{configMap("ns", "b", map[string]any{"x": "1", "y": "2"}), configMap("ns", "a", nil)})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Encode([]Entry{configMap("ns", "a", nil), configMap("ns", "b", map[string]any{"y": "2", "x": "1"})})
	if err != nil {
		t.Fatal(err)
	}
	if a.Version != b.Version || !bytes.Equal(a.Pieces[0], b.Pieces[0]) {
		t.Errorf("equal content in another order gave versions %s and %s", a.Version, b.Version)
	}
	c, _ := Encode([]Entry{configMap("ns", "a", nil), configMap("ns", "b", map[string]any{"x": "1", "y": "3"})})
	if c.Version == a.Version {
		t.Errorf("a changed value kept version %s", a.Version)
	}
}

// incompressible returns n bytes of base64 text, which gzip hardly shrinks.
func incompressible(t *testing.T, n int) string {
	raw := make([]byte, n*3/4)
	if _, err := rand.Read(raw); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(raw)
}

func TestLargeObjectTravelsInParts(t *testing.T) {
	big := configMap("ns", "big", map[string]any{"blob": incompressible(t, 900<<10)})
	if err := CheckSize(&big); err != nil {
		t.Fatalf("a 900 KiB object: %v", err)
	}
	enc, err := Encode([]Entry{big, configMap("ns", "small", nil)})
	if err != nil {
		t.Fatal(err)
	}
	if len(enc.Pieces) < 3 {
		t.Fatalf("900 KiB of incompressible data took %d pieces of %d bytes", len(enc.Pieces), PieceBytes)
	}
	for i, p := range enc.Pieces {
		if len(p) > PieceBytes {
			t.Errorf("piece %d is %d bytes, more than %d", i, len(p), PieceBytes)
		}
	}
	a, parts := assemblageOf("ws.big", enc)
	// Parts of another version and of another assemblage are ignored.
	stale := parts[0].DeepCopy()
	stale.Spec.Version = "old"
	stale.Spec.Data = []byte("old")
	other := parts[0].DeepCopy()
	other.Spec.Assemblage = "ws.other"
	doc, err := DecodeAssemblage(a, append([]*edgev1alpha1.AssemblagePart{stale, other}, parts...))
	if err != nil {
		t.Fatal(err)
	}
	if got := doc.Objects[0].Object["data"].(map[string]any)["blob"]; got != big.Object["data"].(map[string]any)["blob"] {
		t.Errorf("the large object did not come back whole")
	}
}

func TestTooLarge(t *testing.T) {
	huge := configMap("ns", "huge", map[string]any{"blob": strings.Repeat("x", MaxObjectBytes)})
	err := CheckSize(&huge)
	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.Key.String() != "configmaps/ns/huge" || !strings.Contains(err.Error(), "configmaps/ns/huge") {
		t.Errorf("CheckSize = %v, want a TooLargeError naming the object", err)
	}
}

func refusalReason(err error) string {
	var r *RefusedError
	if errors.As(err, &r) {
		return r.Reason
	}
	return ""
}

func TestRefusals(t *testing.T) {
	big := configMap("ns", "big", map[string]any{"blob": incompressible(t, 600<<10)})
	enc, err := Encode([]Entry{big})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		mutate func(a *edgev1alpha1.Assemblage, parts []*edgev1alpha1.AssemblagePart) []*edgev1alpha1.AssemblagePart
		reason string
	}{
		{"a part missing", func(a *edgev1alpha1.Assemblage, parts []*edgev1alpha1.AssemblagePart) []*edgev1alpha1.AssemblagePart {
			return parts[1:]
		}, RefusedPartsMissing},
		{"a part of another version", func(a *edgev1alpha1.Assemblage, parts []*edgev1alpha1.AssemblagePart) []*edgev1alpha1.AssemblagePart {
			parts[0].Spec.Version = "older"
			return parts
		}, RefusedPartsMissing},
		{"a part's data truncated", func(a *edgev1alpha1.Assemblage, parts []*edgev1alpha1.AssemblagePart) []*edgev1alpha1.AssemblagePart {
			parts[0].Spec.Data = parts[0].Spec.Data[:100]
			return parts
		}, RefusedCorrupt},
		{"data and digest replaced together", func(a *edgev1alpha1.Assemblage, parts []*edgev1alpha1.AssemblagePart) []*edgev1alpha1.AssemblagePart {
			other, _ := Encode([]Entry{configMap("ns", "x", nil)})
			a.Spec.Data, a.Spec.Digest, a.Spec.Parts = other.Pieces[0], other.Digests[0], 1
			return nil
		}, RefusedCorrupt},
		{"an unknown format", func(a *edgev1alpha1.Assemblage, parts []*edgev1alpha1.AssemblagePart) []*edgev1alpha1.AssemblagePart {
			a.Spec.Format = "edge.kcp.io/zstd-json-v9"
			return parts
		}, RefusedUnknownFormat},
		{"no parts at all", func(a *edgev1alpha1.Assemblage, parts []*edgev1alpha1.AssemblagePart) []*edgev1alpha1.AssemblagePart {
			a.Spec.Parts = 0
			return parts
		}, RefusedCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, parts := assemblageOf("ws.p", enc)
			parts = tt.mutate(a, parts)
			doc, err := DecodeAssemblage(a, parts)
			if doc != nil || refusalReason(err) != tt.reason {
				t.Errorf("DecodeAssemblage = %v, %v; want refused with %s", doc, err, tt.reason)
			}
			if err != nil && !strings.Contains(err.Error(), "ws.p") {
				t.Errorf("the error does not name the assemblage: %v", err)
			}
		})
	}
}

func TestDecodeRefusesBadEntries(t *testing.T) {
	noName := Entry{Version: "v1", Resource: "configmaps", Namespaced: true, Object: map[string]any{"metadata": map[string]any{"namespace": "ns"}}}
	enc, err := Encode([]Entry{noName})
	if err != nil {
		t.Fatal(err)
	}
	a, parts := assemblageOf("ws.p", enc)
	if _, err := DecodeAssemblage(a, parts); refusalReason(err) != RefusedCorrupt {
		t.Errorf("an entry without a name: %v, want refused as corrupt", err)
	}
}

func FuzzDecode(f *testing.F) {
	enc, _ := Encode([]Entry{namespace("app"), deployment("app", "web", 2)})
	f.Add(enc.Pieces[0], enc.Version)
	f.Add([]byte{0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0}, "0")
	f.Add([]byte("{}"), "44136fa355b3678a")
	f.Fuzz(func(t *testing.T, data []byte, version string) {
		doc, err := Decode(FormatV1, version, [][]byte{data})
		if err != nil {
			if refusalReason(err) == "" {
				t.Fatalf("Decode failed without a refusal reason: %v", err)
			}
			return
		}
		// What decodes is a well-formed document: every entry names its object.
		for _, e := range doc.Objects {
			k := e.Key()
			if k.Name == "" || e.Resource == "" || (e.Namespaced && k.Namespace == "") {
				t.Fatalf("decoded an entry without a name: %+v", e)
			}
		}
	})
}

// TestEncodeReusesWritersFaithfully: the gzip writers are pooled, so an encode may get a writer
// that compressed something else before, perhaps something larger; the bytes must be the same
// as from a fresh one, also when many encode at once.
func TestEncodeReusesWritersFaithfully(t *testing.T) {
	large := []Entry{configMap("ns", "big", map[string]any{"blob": incompressible(t, 200_000)})}
	small := []Entry{configMap("ns", "a", map[string]any{"x": "1"}), configMap("ns", "b", nil)}
	want := map[string]*Encoded{}
	for name, entries := range map[string][]Entry{"large": large, "small": small} {
		enc, err := Encode(entries)
		if err != nil {
			t.Fatal(err)
		}
		// What a new writer makes of the same document.
		raw, _ := json.Marshal(Document{Objects: entries})
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
		_, _ = zw.Write(raw)
		_ = zw.Close()
		if fresh := buf.Bytes(); !bytes.Equal(bytes.Join(enc.Pieces, nil), fresh) {
			t.Fatalf("%s: Encode's bytes differ from a new gzip writer's", name)
		}
		want[name] = enc
	}
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for i := 0; i < 32; i++ {
		name, entries := "small", small
		if i%2 == 0 {
			name, entries = "large", large
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := Encode(entries)
			if err != nil {
				errs <- err.Error()
				return
			}
			if got.Version != want[name].Version || len(got.Pieces) != len(want[name].Pieces) {
				errs <- fmt.Sprintf("%s: version %s with %d pieces, want %s with %d", name, got.Version, len(got.Pieces), want[name].Version, len(want[name].Pieces))
				return
			}
			for p := range got.Pieces {
				if !bytes.Equal(got.Pieces[p], want[name].Pieces[p]) {
					errs <- fmt.Sprintf("%s: piece %d differs from a fresh writer's", name, p)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// BenchmarkCompress compresses the document of a typical assemblage, ten ConfigMaps (about 2 KB
// of JSON), with a gzip writer from the pool, as Encode does, and with a new writer each time, as
// Encode did before the pool: the difference is what the translator saves per destination and
// pass.
func BenchmarkCompress(b *testing.B) {
	var entries []Entry
	for i := range 10 {
		entries = append(entries, configMap("app", fmt.Sprintf("cm-%02d", i), map[string]any{"i": fmt.Sprint(i), "version": "1"}))
	}
	raw, err := json.Marshal(Document{Objects: entries})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("pooled writer", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			zw := gzipWriters.Get().(*gzip.Writer)
			if _, err := compress(raw, zw); err != nil {
				b.Fatal(err)
			}
			gzipWriters.Put(zw)
		}
	})
	b.Run("new writer", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			zw, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
			if _, err := compress(raw, zw); err != nil {
				b.Fatal(err)
			}
		}
	})
}
