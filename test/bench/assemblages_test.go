package main

import (
	"crypto/rand"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/yaml"

	"github.com/kcp-dev/edge-mc/pkg/transport"
	"github.com/kcp-dev/edge-mc/test/framework"
)

// inMailbox is obj as a watch of the mailbox export's virtual workspace delivers it: unstructured,
// with its mailbox's logical cluster.
func inMailbox(t *testing.T, mailbox logicalcluster.Name, obj runtime.Object) *unstructured.Unstructured {
	t.Helper()
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetAnnotations(map[string]string{logicalcluster.AnnotationKey: mailbox.String()})
	return u
}

// manifest is the namespace of placement 0 with the bench's workload of k objects, the
// Deployment with the given image, and one more ConfigMap of the given data.
func manifest(t *testing.T, k int, image, extra string) string {
	t.Helper()
	docs := []string{"apiVersion: v1\nkind: Namespace\nmetadata: {name: " + groupNamespace(0) + "}\n"}
	for _, u := range workloadObjects(groupNamespace(0), k, 16, false) {
		if u.GetKind() == "Deployment" {
			containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
			containers[0].(map[string]any)["image"] = image
			_ = unstructured.SetNestedSlice(u.Object, containers, "spec", "template", "spec", "containers")
		}
		raw, err := yaml.Marshal(u.Object)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(raw))
	}
	if extra != "" {
		docs = append(docs, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra, namespace: "+groupNamespace(0)+"}\ndata: {blob: "+extra+"}\n")
	}
	return strings.Join(docs, "---\n")
}

// TestAssemblageFeed checks how the bench reads the mailboxes: a destination holds the objects
// its placement's assemblage carries once the whole assemblage (every part) is there and
// decodes; an assemblage that cannot be read changes nothing and is reported; a new version
// replaces the old one; and the objects are those of the assemblage, content included.
func TestAssemblageFeed(t *testing.T) {
	const k = 3
	wmw := "wmwcluster"
	dests := []*destination{
		{index: 0, group: 0, name: "edge-0000", mailboxCluster: "mb0"},
		{index: 1, group: 0, name: "edge-0001", mailboxCluster: "mb1"},
	}
	v := newView(len(dests), workloadKeys(k, false))
	feed := newAssemblageFeed(v, dests,
		func(d *destination) string { return transport.AssemblageName(wmw, placementName(d.group)) },
		func(d *destination) string { return groupNamespace(d.group) })
	indexers := cache.Indexers{kcpcache.ClusterIndexName: kcpcache.ClusterIndexFunc}
	feed.assemblages = cache.NewIndexer(kcpcache.MetaClusterNamespaceKeyFunc, indexers)
	feed.parts = cache.NewIndexer(kcpcache.MetaClusterNamespaceKeyFunc, indexers)
	add := func(store cache.Indexer, u *unstructured.Unstructured) {
		t.Helper()
		if err := store.Add(u); err != nil {
			t.Fatal(err)
		}
		feed.changed(u, time.Now())
	}
	counts := func() (int, int) { p, c, _ := v.counts(); return p, c }

	// Destination 0's assemblage, with 530 KiB of text that does not compress: in more than one piece.
	noise := make([]byte, 400<<10)
	if _, err := rand.Read(noise); err != nil {
		t.Fatal(err)
	}
	asm, parts := framework.EncodeAssemblage(t, wmw, placementName(0), framework.Entries(t, manifest(t, k, initialImage, base64.StdEncoding.EncodeToString(noise))))
	if len(parts) == 0 {
		t.Fatalf("the assemblage has %d parts; the test needs it in pieces", asm.Spec.Parts)
	}
	add(feed.assemblages, inMailbox(t, "mb0", asm))
	if p, c := counts(); p != 0 || c != 0 {
		t.Fatalf("with its parts missing, the assemblage counts %d objects, %d destinations complete; want none", p, c)
	}
	if n, why := feed.refusals(); n != 0 {
		t.Errorf("parts on their way count as a refusal: %s", why)
	}
	for _, p := range parts {
		add(feed.parts, inMailbox(t, "mb0", p))
	}
	if p, c := counts(); p != k || c != 1 {
		t.Fatalf("with every part, %d objects and %d destinations complete; want %d and 1", p, c, k)
	}

	// A corrupt assemblage is reported and counts nothing; an assemblage of a mailbox that is not
	// the fleet's, or of another placement, is ignored.
	bad, _ := framework.EncodeAssemblage(t, wmw, placementName(0), framework.Entries(t, manifest(t, k, initialImage, "")))
	bad.Spec.Digest = "0000000000000000"
	add(feed.assemblages, inMailbox(t, "mb1", bad))
	if n, why := feed.refusals(); n != 1 || !strings.Contains(why, "edge-0001") {
		t.Errorf("refusals: %d, %q; want 1, naming edge-0001", n, why)
	}
	other, _ := framework.EncodeAssemblage(t, wmw, placementName(1), framework.Entries(t, manifest(t, k, initialImage, "")))
	add(feed.assemblages, inMailbox(t, "mb1", other))
	good, _ := framework.EncodeAssemblage(t, wmw, placementName(0), framework.Entries(t, manifest(t, k, initialImage, "")))
	add(feed.assemblages, inMailbox(t, "elsewhere", good))
	if p, c := counts(); p != k || c != 1 {
		t.Fatalf("after assemblages that do not count: %d objects, %d complete; want %d and 1", p, c, k)
	}
	add(feed.assemblages, inMailbox(t, "mb1", good))
	if n, _ := feed.refusals(); n != 0 {
		t.Errorf("a good version left %d refusals", n)
	}
	if p, c := counts(); p != 2*k || c != 2 {
		t.Fatalf("with both assemblages good: %d objects, %d complete; want %d and 2", p, c, 2*k)
	}

	// A new version: the probe sees the Deployment's new content, and a ConfigMap that left the
	// assemblage leaves the destination.
	v.startProbe(objectKey(deploymentsGVR, deploymentName), []int{1}, func(u *unstructured.Unstructured) bool { return imageOf(u) == updatedImage })
	entries := framework.Entries(t, manifest(t, k, updatedImage, ""))
	var kept []transport.Entry
	for _, e := range entries {
		if e.Key().Name != configMapName(2) {
			kept = append(kept, e)
		}
	}
	next, _ := framework.EncodeAssemblage(t, wmw, placementName(0), kept)
	add(feed.assemblages, inMailbox(t, "mb1", next))
	if p, c, probed := v.counts(); p != 2*k-1 || c != 1 || probed != 1 {
		t.Fatalf("after the new version: %d objects, %d complete, %d probed; want %d, 1, 1", p, c, probed, 2*k-1)
	}

	// Deleted: its objects are gone from the destination.
	u := inMailbox(t, "mb0", asm)
	if err := feed.assemblages.Delete(u); err != nil {
		t.Fatal(err)
	}
	feed.changed(cache.DeletedFinalStateUnknown{Key: "mb0|" + asm.Name, Obj: u}, time.Now())
	if p, c := counts(); p != k-1 || c != 0 {
		t.Fatalf("after the deletion: %d objects, %d complete; want %d and 0", p, c, k-1)
	}
}
