package badinput

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
	t.Parallel()
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
	w.mended(t, "shop", "kube1", "deployments.apps/shop/broken")
	w.statusShows(t, "shop", false, "Failing", "Broken in shop")
	w.goodKeepsConverging(t)
}

// TestHandEditsInAMailboxArePutBack edits, as a kcp admin could, the SyncerConfig (its heartbeat
// and an upsync rule added) and the good placement's Assemblage (its version, data and object
// list, and a shared entry added) in a mailbox: the placement translator puts both back, added
// fields included, the edge keeps what it has (same UID and resourceVersion), and the good
// placement keeps converging.
func TestHandEditsInAMailboxArePutBack(t *testing.T) {
	t.Parallel()
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

// TestKindTheEdgeDoesNotServe places a HorizontalPodAutoscaler (a kind of workloads.edge.kcp.io,
// which carries no CRD in the assemblage) on an edge cluster that serves Deployments but not
// HorizontalPodAutoscalers: the object's state there is Failed, not an endless Pending; the
// placement's broken entry says that the edge does not serve the kind and what to do (the CRD
// into the placement, or installed at the edge), and `kubectl edge status` shows it; the
// placement's other objects are applied, and the good placement keeps converging. Installing the
// kind at the edge, as the message says, gets the object there without anything else done, and
// clears the entry.
func TestKindTheEdgeDoesNotServe(t *testing.T) {
	t.Parallel()
	w := setUp(t)
	ctx := framework.Context(t, 2*time.Minute)
	lean, err := framework.CreateLogicalPCluster(ctx, framework.EdgeKCP(t), "lean",
		logicalcluster.NewPath("root").Join(fmt.Sprintf("edge-lean-%06d", time.Now().UnixNano()%1000000)), framework.LogicalPClusterOptions{CRDs: []string{"deployments.apps.yaml"}, KubeconfigDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	framework.KubectlEdge(t, "ensure", "location", "lean", "region=south", "--imw", w.IMW.String(), "--espw", w.ESPW.String()).MustSucceed(t)
	framework.StartSyncer(t, w.ESPW, w.IMW, "lean", lean)

	start := time.Now()
	w.Apply(t, w.WMW, labObjects+`---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: lab}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 3
---
`+labPlacement("{matchLabels: {region: south}}"))
	const hpa = "horizontalpodautoscalers.autoscaling/lab/web"
	msg := w.condition(t, "lab", edgev1alpha1.PlacementReady, metav1.ConditionFalse, "failing at 1 of 1 destinations", "status.broken")
	t.Logf("Ready False %.1fs after apply: %s", time.Since(start).Seconds(), msg)
	entry := w.brokenEntry(t, "lab", "lean", hpa, "does not serve horizontalpodautoscalers.autoscaling",
		"add the CRD horizontalpodautoscalers.autoscaling to the placement's downsync, or install it at the edge")
	t.Logf("broken entry %.1fs after apply: %+v", time.Since(start).Seconds(), entry)
	framework.EventuallyObject(t, "the placement's other object at the lean edge", lean.DynamicClient(t), configMaps, "lab", "settings",
		framework.FieldIs("fast", "data", "mode"))
	w.statusShows(t, "lab", true, "Failing", "Broken in lab", hpa, "does not serve horizontalpodautoscalers.autoscaling")
	w.goodKeepsConverging(t)

	start = time.Now()
	framework.Kubectl(t, "--kubeconfig", lean.KubeconfigPath, "apply", "--server-side", "-f", "../../../config/workload-crds/horizontalpodautoscalers.autoscaling.yaml").MustSucceed(t)
	hpas := schema.GroupVersionResource{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"}
	framework.EventuallyObject(t, "the HorizontalPodAutoscaler, once the edge serves its kind", lean.DynamicClient(t), hpas, "lab", "web", framework.Present)
	t.Logf("after the fix: the HorizontalPodAutoscaler at the edge %.1fs after its CRD was installed there", time.Since(start).Seconds())
	w.mended(t, "lab", "lean", hpa)
	w.statusShows(t, "lab", false, "Failing", "Broken in lab")
	w.goodKeepsConverging(t)
}

// TestSyncerGivenTheWrongMailbox starts edge-syncer for edge1 with edge2's mailbox kubeconfig,
// then with its own kubeconfig and edge2's UID: each time it refuses to start, with an error that
// names both UIDs and the fix, before it applies anything or renews any heartbeat. Had it started,
// it would have applied edge2's workload at edge1 and kept edge2 looking served. edge2's Lease
// stays its own syncer's, and the good placement keeps converging.
func TestSyncerGivenTheWrongMailbox(t *testing.T) {
	t.Parallel()
	w := setUp(t)
	edge1, edge2 := w.syncers["edge1"], w.syncers["edge2"]
	leases := schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
	holder := func() string {
		l := framework.GetObject(t, framework.KCP(t).DynamicClient(t, w.Mailbox(t, "edge2")), leases, transport.SyncerNamespace, transport.HeartbeatLease)
		h, _, _ := unstructured.NestedString(l.Object, "spec", "holderIdentity")
		return h
	}
	before := holder()
	for _, tc := range []struct {
		name, kubeconfig, uid string
		wantUID               string
	}{
		{"edge2's mailbox kubeconfig", edge2.KubeconfigPath, edge1.UID, edge2.UID},
		{"edge2's UID", edge1.KubeconfigPath, edge2.UID, edge1.UID},
	} {
		ctx := framework.Context(t, time.Minute)
		cmd := exec.CommandContext(ctx, filepath.Join(framework.BinDir(t), "edge-syncer"),
			"--from-kubeconfig", tc.kubeconfig, "--to-kubeconfig", w.edges["edge1"].KubeconfigPath,
			"--sync-target-name", "edge1", "--sync-target-uid", tc.uid, "--http-address", "127.0.0.1:0")
		start := time.Now()
		out, err := cmd.CombinedOutput()
		if err == nil || ctx.Err() != nil {
			t.Fatalf("edge-syncer for edge1 with %s: exited %v after %.1fs, want a refusal at once:\n%s", tc.name, err, time.Since(start).Seconds(), out)
		}
		for _, want := range []string{"the mailbox of the SyncTarget with UID " + tc.wantUID, "SyncTarget edge1 with UID " + tc.uid, "kubectl edge prep-for-syncer edge1 again"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("edge-syncer for edge1 with %s: its error lacks %q:\n%s", tc.name, want, out)
			}
		}
		t.Logf("edge-syncer for edge1 with %s refused in %.1fs: %s", tc.name, time.Since(start).Seconds(), strings.TrimSpace(string(out)))
	}
	if after := holder(); after != before {
		t.Errorf("edge2's heartbeat Lease is held by %q now, by %q before", after, before)
	}
	if edge1.Exited() || edge2.Exited() {
		t.Error("a syncer of the fleet exited")
	}
	w.goodKeepsConverging(t)
}

// TestEdgeRefusesACRD places a custom kind, its CRD and one object of it, on edge1, which has a
// CRD of that name already with another scope (installed there by someone else), and on edge2,
// which has none: edge1 refuses the CRD (a CRD's scope cannot change), and the placement's broken
// entry for edge1 names the CRD and the edge's reason; edge2 gets the kind and the object; the
// placement's other objects reach both, and the good placement keeps converging. Once the
// conflicting CRD is removed at edge1, the placement's next version brings the kind and the
// object there.
func TestEdgeRefusesACRD(t *testing.T) {
	t.Parallel()
	w := setUp(t)
	crd := func(scope string) string {
		return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  scope: ` + scope + `
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`
	}
	edge1 := w.edges["edge1"]
	clusterScoped := filepath.Join(t.TempDir(), "gadgets-cluster-scoped.yaml")
	if err := os.WriteFile(clusterScoped, []byte(crd("Cluster")), 0o600); err != nil {
		t.Fatal(err)
	}
	framework.Kubectl(t, append([]string{"--kubeconfig", edge1.KubeconfigPath}, framework.ApplyArgs("-f", clusterScoped)...)...).MustSucceed(t)
	start := time.Now()
	w.Apply(t, w.WMW, crd("Namespaced")+"---\n"+labObjects)
	gadget := "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g1, namespace: lab}\nspec: {size: 3}\n"
	framework.Eventually(t, framework.Converge, func() (bool, string) {
		r := framework.KubectlApply(t, framework.KCP(t).ServerURL(w.WMW), gadget)
		return r.Err == nil, "the Gadget kind is not served in the workload workspace yet: " + r.Stderr
	})
	w.Apply(t, w.WMW, labPlacement("{matchExpressions: [{key: region, operator: In, values: [east, west]}]}"))
	const crdKey = "customresourcedefinitions.apiextensions.k8s.io/gadgets.example.com"
	msg := w.condition(t, "lab", edgev1alpha1.PlacementReady, metav1.ConditionFalse, "failing at 1 of 2 destinations", "status.broken")
	t.Logf("Ready False %.1fs after apply: %s", time.Since(start).Seconds(), msg)
	entry := w.brokenEntry(t, "lab", "edge1", crdKey, "refused", "spec.scope")
	t.Logf("broken entry %.1fs after apply: %+v", time.Since(start).Seconds(), entry)
	gadgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}
	framework.EventuallyObject(t, "the Gadget at edge2", w.edges["edge2"].DynamicClient(t), gadgets, "lab", "g1", framework.Present)
	for _, edge := range []string{"edge1", "edge2"} {
		w.at(t, edge, "the placement's other object", configMaps, "lab", "settings", framework.FieldIs("fast", "data", "mode"))
	}
	w.statusShows(t, "lab", true, "Failing", "Broken in lab", crdKey, "refused")
	w.goodKeepsConverging(t)

	// The conflicting CRD removed at edge1; the placement's next version brings the kind there.
	framework.Kubectl(t, "--kubeconfig", edge1.KubeconfigPath, "delete", "crd", "gadgets.example.com").MustSucceed(t)
	start = time.Now()
	w.Apply(t, w.WMW, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: lab}\ndata: {mode: slow}\n")
	framework.EventuallyObject(t, "the Gadget at edge1, its CRD delivered", edge1.DynamicClient(t), gadgets, "lab", "g1", framework.Present)
	t.Logf("after the fix: the Gadget at edge1 %.1fs after the next version", time.Since(start).Seconds())
	w.mended(t, "lab", "edge1", crdKey)
	w.statusShows(t, "lab", false, "Failing", "Broken in lab")
	w.goodKeepsConverging(t)
}

// labObjects are the namespace lab and a ConfigMap in it: the placement lab's objects that every
// edge takes, beside the bad one a test adds.
const labObjects = `apiVersion: v1
kind: Namespace
metadata: {name: lab}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: lab}
data: {mode: fast}
`

// labPlacement is the EdgePlacement lab, of the namespace lab, for the Locations that the
// selector (YAML) matches.
func labPlacement(selector string) string {
	return `apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: lab}
spec:
  locationSelectors: [` + selector + `]
  downsync: [{namespaces: [lab]}]
`
}
