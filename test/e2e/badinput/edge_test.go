package badinput

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/transport"
	"github.com/kcp-dev/edge-mc/test/framework"
)

// TestEdgeRefusesAnObject places a Deployment that kcp stores but Kubernetes refuses (its selector
// does not match its template's labels) on a logical-cluster edge, which takes it, and on a real
// Kubernetes edge, which refuses it: the placement is Failing, its broken entry names that
// destination, the object and the edge's reason, and `kubectl edge status` shows it; the other
// objects of the placement are applied at both, the good placement keeps converging on every
// edge, and fixing the Deployment clears the entry and gets it to the Kubernetes edge.
func TestEdgeRefusesAnObject(t *testing.T) {
	w := newWorld(t, true)
	start := time.Now()
	w.Apply(t, w.WMW, `apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: shop}
data: {mode: fast}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: broken, namespace: shop}
spec:
  replicas: 1
  selector: {matchLabels: {app: broken}}
  template:
    metadata: {labels: {app: something-else}}
    spec: {containers: [{name: broken, image: registry.example/broken:1}]}
---
apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: shop}
spec:
  locationSelectors: [{matchExpressions: [{key: region, operator: In, values: [east, north]}]}]
  downsync: [{namespaces: [shop]}]
`)
	msg := w.condition(t, "shop", edgev1alpha1.PlacementReady, metav1.ConditionFalse, "failing at 1 of 2 destinations", "status.broken")
	t.Logf("Ready False %.1fs after apply: %s", time.Since(start).Seconds(), msg)
	if r := w.reason(t, "shop", edgev1alpha1.PlacementReady); r != edgev1alpha1.ReasonFailing {
		t.Errorf("Ready reason is %s, want %s", r, edgev1alpha1.ReasonFailing)
	}
	entry := w.brokenEntry(t, "shop", "kube1", "deployments.apps/shop/broken", "refused", "selector")
	t.Logf("broken entry %.1fs after apply: %+v", time.Since(start).Seconds(), entry)
	w.statusShows(t, "shop", true, "Failing", "Broken in shop", ":kube1", "deployments.apps/shop/broken", "refused")
	for _, edge := range []string{"edge1", "kube1"} {
		w.at(t, edge, "the placement's other object", configMaps, "shop", "settings", framework.FieldIs("fast", "data", "mode"))
	}
	w.at(t, "edge1", "the Deployment at the edge that takes it", deployments, "shop", "broken", framework.Present)
	w.neverAt(t, "kube1", deployments, "shop", "broken")
	w.neverAt(t, "edge2", configMaps, "shop", "settings")
	for _, b := range w.broken(t, "shop") {
		if !strings.HasSuffix(b.Destination, ":kube1") {
			t.Errorf("a broken entry for a destination that took everything: %+v", b)
		}
	}
	w.goodKeepsConverging(t)

	start = time.Now()
	w.Kubectl(t, w.WMW, "patch", "deployment", "broken", "-n", "shop", "--type=merge", "-p", `{"spec":{"template":{"metadata":{"labels":{"app":"broken"}}}}}`)
	w.at(t, "kube1", "the fixed Deployment", deployments, "shop", "broken", framework.FieldIs("1", "status", "readyReplicas"))
	t.Logf("after the fix: the Deployment ready at kube1 %.1fs after the patch", time.Since(start).Seconds())
	framework.Eventually(t, framework.Converge, func() (bool, string) {
		for _, b := range w.broken(t, "shop") {
			if b.Object == "deployments.apps/shop/broken" && strings.HasSuffix(b.Destination, ":kube1") {
				return false, fmt.Sprintf("still broken: %+v", b)
			}
		}
		return true, ""
	})
	w.statusShows(t, "shop", false, "Failing", "Broken in shop")
	w.goodKeepsConverging(t)
}

// TestHandEditsInAMailboxArePutBack edits, as a kcp admin could, the SyncerConfig (its heartbeat
// and an upsync rule added) and the good placement's Assemblage (its version, data and object
// list, and a shared entry added) in a mailbox: the placement translator puts both back, added
// fields included, the edge keeps what it has (same UID and resourceVersion), and the good
// placement keeps converging.
func TestHandEditsInAMailboxArePutBack(t *testing.T) {
	w := setUp(t)
	mb := w.Mailbox(t, "edge1")
	mailbox := framework.KCP(t).DynamicClient(t, mb)
	before := framework.GetObject(t, w.edges["edge1"].DynamicClient(t), configMaps, "good", "config")
	if before == nil {
		t.Fatal("good/config is not at edge1")
	}
	ctx := framework.Context(t, 30*time.Second)

	cfg := framework.GetObject(t, mailbox, syncerConfigs, "", edgev1alpha1.SyncerConfigName)
	if cfg == nil {
		t.Fatalf("no SyncerConfig %s in the mailbox %s", edgev1alpha1.SyncerConfigName, mb)
	}
	interval, _, _ := unstructured.NestedInt64(cfg.Object, "spec", "heartbeat", "intervalSeconds")
	start := time.Now()
	patch := `{"spec":{"heartbeat":{"intervalSeconds":3600},"upsync":[{"resources":["secrets"],"namespaces":["*"],"names":["*"]}]}}`
	if _, err := mailbox.Resource(syncerConfigs).Patch(ctx, edgev1alpha1.SyncerConfigName, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("editing the SyncerConfig: %v", err)
	}
	framework.EventuallyObject(t, "the SyncerConfig put back", mailbox, syncerConfigs, "", edgev1alpha1.SyncerConfigName, func(u *unstructured.Unstructured) string {
		if u == nil {
			return "absent"
		}
		got, _, _ := unstructured.NestedInt64(u.Object, "spec", "heartbeat", "intervalSeconds")
		upsync, _, _ := unstructured.NestedSlice(u.Object, "spec", "upsync")
		if got != interval || len(upsync) != 0 {
			return fmt.Sprintf("heartbeat interval %d s (want %d), upsync %v (want none)", got, interval, upsync)
		}
		return ""
	})
	t.Logf("SyncerConfig put back %.1fs after the edit", time.Since(start).Seconds())

	name := transport.AssemblageName(w.logicalCluster(t), "good")
	orig := framework.GetAssemblage(t, mailbox, name)
	if orig == nil {
		t.Fatalf("no assemblage %s in the mailbox %s", name, mb)
	}
	start = time.Now()
	edit, _ := json.Marshal(map[string]any{"spec": map[string]any{"version": "edited-by-hand", "data": []byte("not an assemblage"), "objects": []string{"configmaps/good/intruder"},
		// A field the translator leaves out when it has nothing for it: the syncer would take
		// good/config for another assemblage's and leave it alone.
		"shared": []map[string]string{{"object": "configmaps/good/config", "assemblage": "someone-else"}}}})
	if _, err := mailbox.Resource(assemblages).Patch(ctx, name, types.MergePatchType, edit, metav1.PatchOptions{}); err != nil {
		t.Fatalf("editing the assemblage: %v", err)
	}
	framework.EventuallyAssemblage(t, mailbox, name, func(a *edgev1alpha1.Assemblage) string {
		if a == nil {
			return "absent"
		}
		if a.Spec.Version != orig.Spec.Version || a.Spec.Digest != orig.Spec.Digest || strings.Join(a.Spec.Objects, ",") != strings.Join(orig.Spec.Objects, ",") || len(a.Spec.Shared) != len(orig.Spec.Shared) {
			return fmt.Sprintf("version %s, digest %s, objects %v, shared %v; want %s, %s, %v, %v", a.Spec.Version, a.Spec.Digest, a.Spec.Objects, a.Spec.Shared,
				orig.Spec.Version, orig.Spec.Digest, orig.Spec.Objects, orig.Spec.Shared)
		}
		if a.Status.AppliedVersion != orig.Spec.Version {
			return "applied version " + a.Status.AppliedVersion
		}
		return ""
	})
	t.Logf("assemblage put back and applied %.1fs after the edit", time.Since(start).Seconds())
	after := framework.GetObject(t, w.edges["edge1"].DynamicClient(t), configMaps, "good", "config")
	if after == nil || after.GetUID() != before.GetUID() || after.GetResourceVersion() != before.GetResourceVersion() {
		t.Errorf("good/config at edge1 changed under the hand edits: before uid %s rv %s, after %v", before.GetUID(), before.GetResourceVersion(), after)
	}
	w.neverAt(t, "edge1", configMaps, "good", "intruder")
	w.goodKeepsConverging(t)
}
