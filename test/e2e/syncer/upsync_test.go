package syncer

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kcp-dev/edge-mc/test/framework"
)

const returnWorkload = `apiVersion: v1
kind: Namespace
metadata: {name: app}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: app}
data: {mode: "1"}
---
apiVersion: v1
kind: Namespace
metadata: {name: mine}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: owned, namespace: mine}
data: {author: wrote-this}
`

const returnPlacement = `apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: reports}
spec:
  locationSelectors: [{matchLabels: {region: east}}]
  downsync:
  - namespaces: [app]
  upsync:
  - resources: [configmaps]
    namespaces: [app, reports, mine]
  - resources: [services]
    namespaces: [app]
`

var edgePlacements = schema.GroupVersionResource{Group: "edge.kcp.io", Version: "v1alpha1", Resource: "edgeplacements"}

// TestUpsyncReturn runs objects made at two edge clusters back into the workload workspace: they
// come back marked, follow edits and deletions at the edge, go when the placement stops covering
// them, never overwrite an object of the workspace's own, never travel back down to the mailboxes,
// and an object made at both edges is an UpsyncConflict naming both until one edge deletes it.
func TestUpsyncReturn(t *testing.T) {
	t.Parallel()
	made := framework.StartLogicalPClusters(t, "edge-a", "edge-b")
	f := setUp(t, map[string]string{"edge-a": "east", "edge-b": "east"})
	edgeA, edgeB := made()["edge-a"], made()["edge-b"]
	framework.StartSyncer(t, f.ESPW, f.IMW, "edge-a", edgeA)
	framework.StartSyncer(t, f.ESPW, f.IMW, "edge-b", edgeB)
	ecA, ecB := edgeA.DynamicClient(t), edgeB.DynamicClient(t)
	wmw := framework.KCP(t).DynamicClient(t, f.WMW)
	imwCluster := logicalClusterOf(t, f.IMW)

	f.Apply(t, f.WMW, returnWorkload)
	f.Apply(t, f.WMW, returnPlacement)
	for _, ec := range []dynamic.Interface{ecA, ecB} {
		eventually(t, "down-sync", ec, configMaps, "app", "settings", fieldIs("1", "data", "mode"))
	}

	// returned checks that an object is in the workload workspace, came back from edge, and
	// bears the marks of the return path.
	returned := func(from string, more func(u *unstructured.Unstructured) string) func(u *unstructured.Unstructured) string {
		return func(u *unstructured.Unstructured) string {
			if u == nil {
				return "absent"
			}
			if l := u.GetLabels(); l["edge.kcp.io/upsynced"] != "true" || l["edge.kcp.io/returned"] != "true" {
				return fmt.Sprintf("not labelled as up-synced and returned: %v", l)
			}
			if a := u.GetAnnotations(); a["edge.kcp.io/upsynced-from"] != from || a["edge.kcp.io/upsynced-from-cluster"] != imwCluster {
				return fmt.Sprintf("not annotated as coming from %s|%s: %v", imwCluster, from, a)
			}
			if more != nil {
				return more(u)
			}
			return ""
		}
	}

	t.Run("objects made at the edges come back, marked, into their namespaces", func(t *testing.T) {
		createConfigMap(t, ecA, "app", "report-a", map[string]any{"result": "ok"})
		eventually(t, "returned", wmw, configMaps, "app", "report-a", returned("edge-a", fieldIs("ok", "data", "result")))

		// A kind of the workloads export, from the other edge.
		framework.Kubectl(t, "--kubeconfig", edgeB.KubeconfigPath, "create", "service", "clusterip", "edge-svc", "-n", "app", "--tcp=8080").MustSucceed(t)
		createConfigMap(t, ecB, "app", "report-b", map[string]any{"result": "ok"})
		eventually(t, "returned", wmw, configMaps, "app", "report-b", returned("edge-b", nil))
		eventually(t, "returned service", wmw, services, "app", "edge-svc", returned("edge-b", func(u *unstructured.Unstructured) string {
			if ports, _, _ := unstructured.NestedSlice(u.Object, "spec", "ports"); len(ports) != 1 || fmt.Sprint(ports[0].(map[string]any)["port"]) != "8080" {
				return fmt.Sprintf("spec.ports is %v, want port 8080", ports)
			}
			return ""
		}))

		// A namespace that only the edge has is made in the workload workspace, marked as such.
		framework.Kubectl(t, "--kubeconfig", edgeA.KubeconfigPath, "create", "namespace", "reports").MustSucceed(t)
		createConfigMap(t, ecA, "reports", "r1", map[string]any{"n": "1"})
		eventually(t, "returned into a new namespace", wmw, configMaps, "reports", "r1", returned("edge-a", nil))
		eventually(t, "namespace made for it", wmw, namespaces, "", "reports", func(u *unstructured.Unstructured) string {
			if u == nil {
				return "absent"
			}
			if u.GetLabels()["edge.kcp.io/upsync-namespace"] != "true" {
				return fmt.Sprintf("not labelled as made for up-synced objects: %v", u.GetLabels())
			}
			return ""
		})
	})

	t.Run("what came back never goes back down to the mailboxes", func(t *testing.T) {
		// A change of a down-synced object of the same namespace reaches edge-b: the translator has
		// reconciled edge-b's mailbox since report-a came back, and did not project report-a there.
		f.Kubectl(t, f.WMW, "patch", "configmap", "settings", "-n", "app", "--type=merge", "-p", `{"data":{"mode":"2"}}`)
		eventually(t, "down-sync after the return", ecB, configMaps, "app", "settings", fieldIs("2", "data", "mode"))
		mailboxB := framework.KCP(t).DynamicClient(t, f.Mailbox(t, "edge-b"))
		if a := framework.GetAssemblage(t, mailboxB, placementAssemblage(t, f, "reports")); a == nil || slices.Contains(a.Spec.Objects, "configmaps/app/report-a") {
			t.Errorf("the returned report-a was placed into the assemblage for edge-b: %v", a)
		}
		if u := framework.GetObject(t, ecB, configMaps, "app", "report-a"); u != nil {
			t.Errorf("the returned report-a reached edge-b")
		}
	})

	t.Run("an edit at the edge arrives", func(t *testing.T) {
		framework.Kubectl(t, "--kubeconfig", edgeA.KubeconfigPath, "patch", "configmap", "report-a", "-n", "app", "--type=merge", "-p", `{"data":{"result":"better"}}`).MustSucceed(t)
		eventually(t, "edit returned", wmw, configMaps, "app", "report-a", returned("edge-a", fieldIs("better", "data", "result")))
	})

	t.Run("the same object at two edges is a conflict naming both, until one edge deletes it", func(t *testing.T) {
		createConfigMap(t, ecA, "app", "shared", map[string]any{"from": "edge-a"})
		createConfigMap(t, ecB, "app", "shared", map[string]any{"from": "edge-b"})
		framework.EventuallyPlacementCondition(t, wmw, "reports", "UpsyncConflict", metav1.ConditionTrue, "configmaps/app/shared", "edge-a", "edge-b")
		kept := eventually(t, "one of them kept", wmw, configMaps, "app", "shared", framework.Present)
		winner := kept.GetAnnotations()["edge.kcp.io/upsynced-from"]
		if got := fieldOf(kept, "data", "from"); got != winner {
			t.Fatalf("the copy says it comes from %s but holds the data of %s", winner, got)
		}
		loser, loserEdge := "edge-b", ecB
		if winner == "edge-b" {
			loser, loserEdge = "edge-a", ecA
		}
		t.Logf("the copy from %s is kept; deleting the one at %s", winner, loser)
		if err := loserEdge.Resource(configMaps).Namespace("app").Delete(framework.Context(t, 10*time.Second), "shared", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		framework.EventuallyPlacementCondition(t, wmw, "reports", "UpsyncConflict", metav1.ConditionFalse)
		after := framework.GetObject(t, wmw, configMaps, "app", "shared")
		if after == nil || after.GetUID() != kept.GetUID() || after.GetAnnotations()["edge.kcp.io/upsynced-from"] != winner {
			t.Errorf("the kept copy changed hands or was recreated: before %s from %s, after %v", kept.GetUID(), winner, after)
		}
	})

	t.Run("an object of the workspace's own is never overwritten, and is reported", func(t *testing.T) {
		framework.Kubectl(t, "--kubeconfig", edgeA.KubeconfigPath, "create", "namespace", "mine").MustSucceed(t)
		createConfigMap(t, ecA, "mine", "owned", map[string]any{"author": "the edge"})
		framework.EventuallyPlacementCondition(t, wmw, "reports", "UpsyncConflict", metav1.ConditionTrue, "configmaps/mine/owned", "edge-a", "of its own")
		own := framework.GetObject(t, wmw, configMaps, "mine", "owned")
		if fieldOf(own, "data", "author") != "wrote-this" || own.GetLabels()["edge.kcp.io/upsynced"] != "" {
			t.Errorf("the workspace's own object was overwritten: %v", own)
		}
		if err := ecA.Resource(configMaps).Namespace("mine").Delete(framework.Context(t, 10*time.Second), "owned", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		framework.EventuallyPlacementCondition(t, wmw, "reports", "UpsyncConflict", metav1.ConditionFalse)
		if own := framework.GetObject(t, wmw, configMaps, "mine", "owned"); fieldOf(own, "data", "author") != "wrote-this" {
			t.Errorf("the workspace's own object changed or went when the edge's went: %v", own)
		}
	})

	t.Run("a deletion at the edge removes it", func(t *testing.T) {
		framework.Kubectl(t, "--kubeconfig", edgeA.KubeconfigPath, "delete", "configmap", "report-a", "-n", "app").MustSucceed(t)
		eventually(t, "deleted at the edge", wmw, configMaps, "app", "report-a", absent)
	})

	t.Run("deselecting removes it; a kind that cannot come back is reported", func(t *testing.T) {
		framework.EventuallyPlacementCondition(t, wmw, "reports", "Upsynced", metav1.ConditionTrue)
		f.Kubectl(t, f.WMW, "patch", "edgeplacement", "reports", "--type=json", "-p",
			`[{"op":"replace","path":"/spec/upsync/1","value":{"apiGroup":"coordination.k8s.io","resources":["leases"]}}]`)
		eventually(t, "deselected", wmw, services, "app", "edge-svc", absent)
		framework.EventuallyPlacementCondition(t, wmw, "reports", "Upsynced", metav1.ConditionFalse, "leases.coordination.k8s.io cannot come back")
		// What the rules still cover stays.
		eventually(t, "still covered", wmw, configMaps, "reports", "r1", returned("edge-a", nil))
	})

	t.Run("a destination dropped takes what came from it", func(t *testing.T) {
		eventually(t, "there before", wmw, configMaps, "app", "report-b", returned("edge-b", nil))
		f.Kubectl(t, f.IMW, "label", "location", "edge-b", "region=west", "--overwrite")
		eventually(t, "destination dropped", wmw, configMaps, "app", "report-b", absent)
		eventually(t, "the other destination's stay", wmw, configMaps, "reports", "r1", returned("edge-a", nil))
	})
}

// TestUpsyncControllerRestart kills edge-controller-manager while it brings many up-synced
// objects back, changes the edge meanwhile, and restarts it: the workload workspace ends up with
// exactly what the edge has, and what came back before the kill is not recreated.
func TestUpsyncControllerRestart(t *testing.T) {
	t.Parallel()
	const count = 60
	pending := framework.StartLogicalPClusters(t, "edge-r")
	f := setUp(t, map[string]string{"edge-r": "west"})
	edge := pending()["edge-r"]
	f.Apply(t, f.WMW, `apiVersion: v1
kind: Namespace
metadata: {name: many}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: marker, namespace: many}
data: {a: b}
---
apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: many}
spec:
  locationSelectors: [{matchLabels: {region: west}}]
  downsync: [{namespaces: [many], objectNames: [marker]}]
  upsync: [{resources: [configmaps], namespaces: [many]}]
`)
	// A slow syncer trickles the objects into the mailbox, so that the kill comes midway.
	framework.StartSyncer(t, f.ESPW, f.IMW, "edge-r", edge, "--qps", "5", "--burst", "1")
	ec := edge.DynamicClient(t)
	eventually(t, "down-sync", ec, configMaps, "many", "marker", framework.Present)
	for i := 0; i < count; i++ {
		createConfigMap(t, ec, "many", fmt.Sprintf("cm-%02d", i), map[string]any{"i": fmt.Sprint(i)})
	}

	wmw := framework.KCP(t).DynamicClient(t, f.WMW)
	mailbox := framework.KCP(t).DynamicClient(t, f.Mailbox(t, "edge-r"))
	framework.Eventually(t, converge, func() (bool, string) {
		n := len(upsyncedUIDs(t, wmw, "many"))
		return n >= 5, fmt.Sprintf("%d objects came back", n)
	})
	f.ECM.Kill()
	before := upsyncedUIDs(t, wmw, "many")
	if len(before) >= count {
		t.Fatalf("all %d objects came back before the kill; the test did not interrupt the controller", count)
	}
	t.Logf("killed edge-controller-manager with %d of %d objects back", len(before), count)

	// Meanwhile at the edge: five go (some of them came back already), five more come.
	var gone []string
	for name := range before {
		if len(gone) < 5 {
			gone = append(gone, name)
		}
	}
	for _, name := range gone {
		framework.Kubectl(t, "--kubeconfig", edge.KubeconfigPath, "delete", "configmap", name, "-n", "many").MustSucceed(t)
	}
	createConfigMap(t, ec, "many", "late-1", map[string]any{"i": "late"})
	want := map[string]bool{"late-1": true}
	for i := 0; i < count; i++ {
		want[fmt.Sprintf("cm-%02d", i)] = true
	}
	for _, name := range gone {
		delete(want, name)
	}
	// The syncer keeps the mailbox up to date while the controller is away.
	framework.Eventually(t, 3*converge, func() (bool, string) {
		got := upsyncedUIDs(t, mailbox, "many")
		return sameNames(got, want), fmt.Sprintf("mailbox holds %d up-synced objects, want %d", len(got), len(want))
	})

	restarted := time.Now()
	f.ECM.Restart()
	f.ECM.WaitReady(t, 2*time.Minute)
	framework.Eventually(t, 3*converge, func() (bool, string) {
		got := upsyncedUIDs(t, wmw, "many")
		return sameNames(got, want), fmt.Sprintf("the workspace holds %s, want %d objects without %v", names(got), len(want), gone)
	})
	t.Logf("the workspace holds exactly what the edge has %s after the restart", time.Since(restarted).Round(100*time.Millisecond))
	after := upsyncedUIDs(t, wmw, "many")
	for name, uid := range before {
		if want[name] && after[name] != uid {
			t.Errorf("%s was recreated after the restart: uid %s, now %s", name, uid, after[name])
		}
	}
}

// logicalClusterOf returns the logical cluster of the workspace at path.
func logicalClusterOf(t *testing.T, path logicalcluster.Path) string {
	t.Helper()
	parent, name := path.Split()
	return strings.TrimSpace(framework.Kubectl(t, "--server", framework.KCP(t).ServerURL(parent), "get", "workspace", name,
		"-o", "jsonpath={.spec.cluster}").MustSucceed(t).Stdout)
}

func createConfigMap(t *testing.T, client dynamic.Interface, namespace, name string, data map[string]any) {
	t.Helper()
	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": namespace},
		"data":     data,
	}}
	if _, err := client.Resource(configMaps).Namespace(namespace).Create(framework.Context(t, 10*time.Second), cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating configmap %s/%s: %v", namespace, name, err)
	}
}

// upsyncedUIDs lists the configmaps of a namespace labelled as up-synced, with their UIDs.
func upsyncedUIDs(t *testing.T, client dynamic.Interface, namespace string) map[string]string {
	t.Helper()
	list, err := client.Resource(configMaps).Namespace(namespace).List(framework.Context(t, 10*time.Second), metav1.ListOptions{LabelSelector: "edge.kcp.io/upsynced=true"})
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for _, item := range list.Items {
		out[item.GetName()] = string(item.GetUID())
	}
	return out
}

func sameNames(got map[string]string, want map[string]bool) bool {
	if len(got) != len(want) {
		return false
	}
	for name := range got {
		if !want[name] {
			return false
		}
	}
	return true
}

func names(m map[string]string) string {
	var out []string
	for name := range m {
		out = append(out, name)
	}
	sort.Strings(out)
	return fmt.Sprintf("%d objects %v", len(out), out)
}
