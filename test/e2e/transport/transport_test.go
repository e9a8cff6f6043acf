// Package transport tests the assemblage transport end to end: what one placement costs the
// center in writes, what reaches a real Kubernetes edge from one assemblage, and the limits of
// size. Its tests run one at a time, because they count kcp's writes, which kcp counts for the
// whole server.
package transport

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/test/framework"
)

func TestMain(m *testing.M) {
	os.Exit(framework.RunWithKCP(m))
}

var (
	assemblagesGVR = edgev1alpha1.SchemeGroupVersion.WithResource("assemblages")
	placementsGVR  = edgev1alpha1.SchemeGroupVersion.WithResource("edgeplacements")
	configMaps     = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secrets        = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	services       = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	deployments    = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	widgets        = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
)

const widgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`

// fortyObjects is a namespace and 39 objects in it of five kinds, one of them custom: with the
// Widget CRD, 40 objects of 6 kinds (and the Namespace).
func fortyObjects() (string, map[schema.GroupVersionResource][]string) {
	var b strings.Builder
	names := map[schema.GroupVersionResource][]string{}
	b.WriteString("apiVersion: v1\nkind: Namespace\nmetadata: {name: fleet}\n")
	add := func(gvr schema.GroupVersionResource, name, doc string) {
		names[gvr] = append(names[gvr], name)
		b.WriteString("---\n" + doc)
	}
	for i := range 10 {
		n := fmt.Sprintf("cfg-%02d", i)
		add(configMaps, n, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: fleet}\ndata: {index: %q}\n", n, fmt.Sprint(i)))
	}
	for i := range 10 {
		n := fmt.Sprintf("secret-%02d", i)
		add(secrets, n, fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata: {name: %s, namespace: fleet}\nstringData: {token: t%d}\n", n, i))
	}
	for i := range 8 {
		n := fmt.Sprintf("svc-%02d", i)
		add(services, n, fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata: {name: %s, namespace: fleet}\nspec: {selector: {app: app-%02d}, ports: [{port: 80}]}\n", n, i))
	}
	for i := range 5 {
		n := fmt.Sprintf("app-%02d", i)
		add(deployments, n, fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %s, namespace: fleet}
spec:
  replicas: 1
  selector: {matchLabels: {app: %s}}
  template:
    metadata: {labels: {app: %s}}
    spec: {containers: [{name: app, image: registry.example/app:1}]}
`, n, n, n))
	}
	for i := range 5 {
		n := fmt.Sprintf("widget-%02d", i)
		add(widgets, n, fmt.Sprintf("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: %s, namespace: fleet}\nspec: {size: %d}\n", n, i))
	}
	return b.String(), names
}

const fleetPlacement = `apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: fleet}
spec:
  locationSelectors: [{matchLabels: {region: north}}]
  downsync:
  - namespaces: [fleet]
`

// writesSince returns kcp's writes since before, by request, and their sum.
func writesSince(t *testing.T, before map[string]float64) (map[string]float64, float64) {
	t.Helper()
	metrics, err := framework.KCP(t).Metrics(framework.Context(t, 30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	total := 0.0
	for req, n := range framework.RequestCounts(metrics) {
		if d := n - before[req]; d > 0 && framework.IsWrite(req) {
			out[req] = d
			total += d
		}
	}
	return out, total
}

func requestCounts(t *testing.T) map[string]float64 {
	t.Helper()
	metrics, err := framework.KCP(t).Metrics(framework.Context(t, 30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return framework.RequestCounts(metrics)
}

func describe(writes map[string]float64) string {
	var parts []string
	for req, n := range writes {
		parts = append(parts, fmt.Sprintf("%s %.0f", req, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// TestFortyObjectsFromOneAssemblage places 40 objects of 6 kinds, a custom kind among them, on a
// real Kubernetes edge (kube-apiserver, controllers, a kwok node) and on a simulated one: each
// destination gets them from one assemblage, written once, and the placement's summary counts
// every object, the custom kind's too.
func TestFortyObjectsFromOneAssemblage(t *testing.T) {
	// Not parallel: it counts every write kcp serves while its placement goes out.
	pending := framework.StartLogicalPClusters(t, "sim1")
	startingKube := framework.StartKubeClusterInBackground(t, "kube1")
	f := framework.NewFleet(t, map[string]string{"kube1": "north", "sim1": "north"})
	kube := startingKube()
	sim := pending()["sim1"]
	framework.StartSyncer(t, f.ESPW, f.IMW, "kube1", kube.PCluster())
	framework.StartSyncer(t, f.ESPW, f.IMW, "sim1", sim)
	f.Apply(t, f.WMW, widgetCRD)
	framework.EventuallyCRDEstablished(t, f.WMW, "widgets.example.com")
	workload, names := fortyObjects()
	f.Apply(t, f.WMW, workload)
	mailboxes := map[string]logicalcluster.Path{"kube1": f.Mailbox(t, "kube1"), "sim1": f.Mailbox(t, "sim1")}

	before := requestCounts(t)
	start := time.Now()
	f.Apply(t, f.WMW, fleetPlacement)
	edges := map[string]*framework.PCluster{"kube1": kube.PCluster(), "sim1": sim}
	for edgeName, p := range edges {
		client := p.DynamicClient(t)
		for gvr, list := range names {
			for _, n := range list {
				framework.EventuallyObject(t, edgeName, client, gvr, "fleet", n, framework.Present)
			}
		}
	}
	t.Logf("40 objects at both edges in %s", time.Since(start).Round(100*time.Millisecond))
	// The real edge runs the Deployments: Ready, from its own controllers and kwok.
	for _, n := range names[deployments] {
		framework.EventuallyObject(t, "kube1", kube.DynamicClient(t), deployments, "fleet", n, framework.FieldIs("1", "status", "readyReplicas"))
	}

	// One assemblage per destination, carrying everything.
	for edgeName, mb := range mailboxes {
		list, err := framework.KCP(t).DynamicClient(t, mb).Resource(assemblagesGVR).List(framework.Context(t, 10*time.Second), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 1 {
			t.Fatalf("mailbox of %s holds %d assemblages, want 1", edgeName, len(list.Items))
		}
		a := &edgev1alpha1.Assemblage{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[0].Object, a); err != nil {
			t.Fatal(err)
		}
		if a.Spec.ObjectCount != 40 { // the CRD, the Namespace and 38 objects in it
			t.Errorf("the assemblage of %s carries %d objects, want 40: %v", edgeName, a.Spec.ObjectCount, a.Spec.Objects)
		}
	}

	// The center's writes for the placement: the assemblages (once per destination, or twice if
	// a custom kind's informer was still starting), the SyncerConfigs, the scheduler's slice, and
	// status; not one write per object per destination.
	writes, total := writesSince(t, before)
	t.Logf("kcp writes while the placement went out: %.0f (%s)", total, describe(writes))
	assemblageWrites := writes["APPLY assemblages"] + writes["PATCH assemblages"] + writes["CREATE assemblages"] + writes["UPDATE assemblages"]
	if assemblageWrites < 2 || assemblageWrites > 4 {
		t.Errorf("%.0f writes of assemblages for 2 destinations, want 2 to 4", assemblageWrites)
	}
	// No object is created or applied in the center: a copy in a mailbox would be. The status
	// summarizer's count annotation on each workload object in the workload workspace is a
	// merge patch through the export's virtual workspace, which kcp serves as a PATCH and a PUT.
	for _, r := range []string{"configmaps", "secrets", "deployments", "services", "widgets"} {
		for _, verb := range []string{"POST", "APPLY", "CREATE"} {
			if n := writes[verb+" "+r]; n > 0 {
				t.Errorf("the center wrote %s %s %.0f times: objects must travel inside assemblages only", verb, r, n)
			}
		}
		if n := writes["PATCH "+r]; n > 0 {
			t.Logf("%s: %.0f annotation patches of the workload objects by the status summarizer", r, n)
		}
	}

	// The summary counts every object, the Widgets too.
	framework.Eventually(t, framework.Converge, func() (bool, string) {
		u := framework.GetObject(t, framework.KCP(t).DynamicClient(t, f.WMW), placementsGVR, "", "fleet")
		if u == nil {
			return false, "no placement"
		}
		objects, _, _ := unstructured.NestedSlice(u.Object, "status", "objects")
		found := 0
		for _, o := range objects {
			m, _ := o.(map[string]any)
			if name, _ := m["object"].(string); strings.HasPrefix(name, "widgets.example.com/fleet/") {
				if applied, ready := m["applied"], m["ready"]; fmt.Sprint(applied) != "0" || fmt.Sprint(ready) != "0" {
					found++
				}
			}
		}
		return found == 5, fmt.Sprintf("the summary counts %d of the 5 Widgets as applied or ready at their destinations: %v", found, objects)
	})
}

// TestLargeObjectTravels places a ConfigMap of 900 KiB that does not compress: it travels in
// parts and arrives whole.
func TestLargeObjectTravels(t *testing.T) {
	t.Parallel()
	pending := framework.StartLogicalPClusters(t, "sim1")
	f := framework.NewFleet(t, map[string]string{"sim1": "north"})
	sim := pending()["sim1"]
	framework.StartSyncer(t, f.ESPW, f.IMW, "sim1", sim)
	raw := make([]byte, 675<<10)
	if _, err := rand.Read(raw); err != nil {
		t.Fatal(err)
	}
	blob := base64.StdEncoding.EncodeToString(raw) // 900 KiB of text
	sum := sha256.Sum256([]byte(blob))
	manifest := fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata: {name: fleet}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: big, namespace: fleet}\ndata: {blob: %s}\n", blob)
	f.Apply(t, f.WMW, manifest)
	f.Apply(t, f.WMW, fleetPlacement)
	got := framework.EventuallyObject(t, "sim1", sim.DynamicClient(t), configMaps, "fleet", "big", framework.Present)
	data, _, _ := unstructured.NestedString(got.Object, "data", "blob")
	if s := sha256.Sum256([]byte(data)); hex.EncodeToString(s[:]) != hex.EncodeToString(sum[:]) {
		t.Fatalf("the large ConfigMap arrived with %d bytes of other data", len(data))
	}
	list, err := framework.KCP(t).DynamicClient(t, f.Mailbox(t, "sim1")).Resource(assemblagesGVR).List(framework.Context(t, 10*time.Second), metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("assemblages: %v, %v", list, err)
	}
	parts, _, _ := unstructured.NestedInt64(list.Items[0].Object, "spec", "parts")
	if parts < 3 {
		t.Errorf("900 KiB of incompressible data travelled in %d parts; each holds at most 256 KiB", parts)
	}
	t.Logf("900 KiB travelled in %d parts", parts)
}
