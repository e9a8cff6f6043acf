package syncer

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/test/framework"
)

// pushSettings goes to both edges of TestPushMode; in its rollout, one destination at a time
// with a soak, in name order: the push edge (edge-a) first.
func pushSettings(value string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata: {name: settings}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: settings}
data: {value: %s}
`, value)
}

// pushSettingsPlacement places pushSettings on both edges, with the rollout given (if any).
func pushSettingsPlacement(rollout string) string {
	return `apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: settings}
spec:
  locationSelectors: [{matchLabels: {region: north}}]
  downsync: [{namespaces: [settings]}]
` + rollout
}

// pushApp goes to the Kubernetes edge alone, whose real controllers make its Deployment ready.
func pushApp(mode string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec: {containers: [{name: api, image: registry.example/api:1}]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: api-settings, namespace: shop}
data: {mode: %s}
---
apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: app}
spec:
  locationSelectors: [{matchLabels: {kind: kube}}]
  downsync: [{namespaces: [shop]}]
`, mode)
}

// TestPushMode: one fleet with a push edge (a real Kubernetes cluster whose syncer
// edge-controller-manager runs at the center) and a pull edge (a kcp logical cluster with its own
// syncer process). One placement reaches both, and the push edge reports its Deployment Ready
// and has its drift repaired;
// the push host killed mid-rollout and restarted keeps the rollout's bound and recreates
// nothing; the push edge's API server down for 60 s is stale, loses nothing, and converges after;
// a kubeconfig with a bad credential gets a clear condition, and its token is in no log.
func TestPushMode(t *testing.T) {
	t.Parallel()
	start := time.Now()
	startingKube := framework.StartKubeClusterInBackground(t, "edge-a")
	startingPull := framework.StartLogicalPClusters(t, "edge-b")
	f := setUp(t, map[string]string{"edge-a": "north", "edge-b": "north"})
	kube := startingKube()
	pull := startingPull()["edge-b"]
	framework.StartSyncer(t, f.ESPW, f.IMW, "edge-b", pull)
	edgeArgs := []string{"--imw", f.IMW.String(), "--espw", f.ESPW.String()}
	framework.KubectlEdge(t, append([]string{"ensure", "location", "edge-a", "kind=kube", "--push", "--edge-kubeconfig", kube.KubeconfigPath}, edgeArgs...)...).MustSucceed(t)

	t.Run("prep-for-syncer installs nothing", func(t *testing.T) {
		r := framework.KubectlEdge(t, append([]string{"prep-for-syncer", "edge-a", "--syncer-image", "example/edge-syncer:1"}, edgeArgs...)...)
		if r.Err != nil || strings.TrimSpace(r.Stdout) != "" || !strings.Contains(r.Stderr, "push mode") {
			t.Errorf("prep-for-syncer of a push SyncTarget: err %v, stdout %q, stderr %q; want nothing printed and a note that it is in push mode", r.Err, r.Stdout, r.Stderr)
		}
	})

	inventory := framework.KCP(t).DynamicClient(t, f.IMW)
	wmw := framework.KCP(t).DynamicClient(t, f.WMW)
	edgeA, edgeB := kube.DynamicClient(t), pull.DynamicClient(t)
	f.Apply(t, f.WMW, pushSettings("v1"))
	f.Apply(t, f.WMW, pushSettingsPlacement(""))
	f.Apply(t, f.WMW, pushApp("fast"))

	t.Run("one placement reaches push and pull edges", func(t *testing.T) {
		eventually(t, "push edge", edgeA, configMaps, "settings", "settings", fieldIs("v1", "data", "value"))
		eventually(t, "pull edge", edgeB, configMaps, "settings", "settings", fieldIs("v1", "data", "value"))
		eventually(t, "push edge", edgeA, deployments, "shop", "api", fieldIs("2", "status", "readyReplicas"))
		framework.EventuallyPlacementCondition(t, wmw, "app", edgev1alpha1.PlacementReady, metav1.ConditionTrue)
		framework.EventuallyPlacementCondition(t, wmw, "settings", edgev1alpha1.PlacementReady, metav1.ConditionTrue)
		syncTargetCondition(t, inventory, "edge-a", edgev1alpha1.SyncTargetEdgeReachable, metav1.ConditionTrue, edgev1alpha1.ReasonEdgeReachable)
		syncTargetCondition(t, inventory, "edge-a", edgev1alpha1.SyncTargetSyncerReady, metav1.ConditionTrue, edgev1alpha1.ReasonHeartbeatCurrent)
		for name, want := range map[string]string{"edge-a": "Mode: push", "edge-b": "Mode: pull"} {
			r := framework.KubectlEdge(t, append([]string{"status", "--target", name}, edgeArgs...)...)
			if r.Err != nil || !strings.Contains(r.Stdout, want) {
				t.Errorf("status --target %s: %v\n%s%s; want %q", name, r.Err, r.Stdout, r.Stderr, want)
			}
		}
	})
	before := pushEdgeUIDs(t, edgeA)

	t.Run("drift at the push edge repaired", func(t *testing.T) {
		edited := framework.GetObject(t, edgeA, configMaps, "shop", "api-settings")
		if err := unstructured.SetNestedField(edited.Object, "edited", "data", "mode"); err != nil {
			t.Fatal(err)
		}
		if _, err := edgeA.Resource(configMaps).Namespace("shop").Update(framework.Context(t, 10*time.Second), edited, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "repaired", edgeA, configMaps, "shop", "api-settings", fieldIs("fast", "data", "mode"))
	})

	t.Run("push host killed mid-rollout", func(t *testing.T) {
		// The soak is longer than edge-controller-manager takes to start again, so that a
		// restarted translator that forgot the rollout would deliver to the pull edge within it.
		const soak = 30 * time.Second
		f.Apply(t, f.WMW, pushSettingsPlacement(fmt.Sprintf("  rollout: {maxInFlight: 1, minReadySeconds: %d}\n", int(soak.Seconds()))))
		applied := time.Now()
		f.Apply(t, f.WMW, pushSettings("v2"))
		got := eventually(t, "push edge first", edgeA, configMaps, "settings", "settings", fieldIs("v2", "data", "value"))
		f.ECM.Crash()
		f.ECM.RestartReady(t, 2*time.Minute)
		time.Sleep(3 * time.Second)
		// The soak counts from the delivery, which the translator records to the second.
		if since := time.Since(applied); since < soak-2*time.Second {
			if v := fieldOf(framework.GetObject(t, edgeB, configMaps, "settings", "settings"), "data", "value"); v != "v1" {
				t.Errorf("%s after the change, within the push edge's %s soak and after the push host's restart, the pull edge has %q: two destinations in flight, more than maxInFlight 1", since.Round(100*time.Millisecond), soak, v)
			}
		} else {
			t.Logf("edge-controller-manager took until %s after the change to start again, past the soak: the bound was not put to the test", since.Round(100*time.Millisecond))
		}
		eventually(t, "pull edge second", edgeB, configMaps, "settings", "settings", fieldIs("v2", "data", "value"))
		if gap := time.Since(applied); gap < soak-time.Second {
			t.Errorf("the pull edge got v2 %s after the change, within the push edge's %s soak: more than maxInFlight 1", gap.Round(100*time.Millisecond), soak)
		}
		framework.EventuallyPlacementCondition(t, wmw, "settings", edgev1alpha1.PlacementReady, metav1.ConditionTrue)
		syncTargetCondition(t, inventory, "edge-a", edgev1alpha1.SyncTargetSyncerReady, metav1.ConditionTrue, edgev1alpha1.ReasonHeartbeatCurrent)
		if after := framework.GetObject(t, edgeA, configMaps, "settings", "settings"); after.GetResourceVersion() != got.GetResourceVersion() {
			t.Errorf("the restarted push syncer wrote the unchanged ConfigMap again (resourceVersion %s, then %s)", got.GetResourceVersion(), after.GetResourceVersion())
		}
		sameUIDs(t, "after the push host's restart", before, pushEdgeUIDs(t, edgeA))
	})

	t.Run("push edge down for 60 s", func(t *testing.T) {
		var wg sync.WaitGroup
		var restartErr error
		down := time.Now()
		wg.Add(1)
		go func() {
			defer wg.Done()
			restartErr = kube.RestartAPIServer(60 * time.Second)
		}()
		syncTargetCondition(t, inventory, "edge-a", edgev1alpha1.SyncTargetEdgeReachable, metav1.ConditionFalse, edgev1alpha1.ReasonEdgeUnreachable)
		syncTargetCondition(t, inventory, "edge-a", edgev1alpha1.SyncTargetSyncerReady, metav1.ConditionUnknown, edgev1alpha1.ReasonHeartbeatStale)
		t.Logf("stale %s after the API server went down", time.Since(down).Round(100*time.Millisecond))
		// A change made while the edge is down reaches it when it is back.
		f.Apply(t, f.WMW, pushApp("slow"))
		wg.Wait()
		if restartErr != nil {
			t.Fatalf("restarting the push edge's API server: %v", restartErr)
		}
		back := time.Now()
		eventually(t, "converged", edgeA, configMaps, "shop", "api-settings", fieldIs("slow", "data", "mode"))
		t.Logf("the change made during the outage reached the push edge %s after its API server was back", time.Since(back).Round(100*time.Millisecond))
		syncTargetCondition(t, inventory, "edge-a", edgev1alpha1.SyncTargetSyncerReady, metav1.ConditionTrue, edgev1alpha1.ReasonHeartbeatCurrent)
		syncTargetCondition(t, inventory, "edge-a", edgev1alpha1.SyncTargetEdgeReachable, metav1.ConditionTrue, edgev1alpha1.ReasonEdgeReachable)
		sameUIDs(t, "after the outage", before, pushEdgeUIDs(t, edgeA))
	})

	t.Run("bad credentials", func(t *testing.T) {
		const badToken = "not-a-token-of-edge-a-0123456789"
		bad := badKubeconfig(t, kube.KubeconfigPath, badToken)
		framework.KubectlEdge(t, append([]string{"ensure", "location", "edge-a", "--push", "--edge-kubeconfig", bad}, edgeArgs...)...).MustSucceed(t)
		msg := syncTargetCondition(t, inventory, "edge-a", edgev1alpha1.SyncTargetEdgeReachable, metav1.ConditionFalse, edgev1alpha1.ReasonEdgeUnauthorized)
		if !strings.Contains(msg, "401") || strings.Contains(msg, badToken) {
			t.Errorf("EdgeReachable's message %q: want the server's 401 and never the token", msg)
		}
		framework.KubectlEdge(t, append([]string{"ensure", "location", "edge-a", "--push", "--edge-kubeconfig", kube.KubeconfigPath}, edgeArgs...)...).MustSucceed(t)
		syncTargetCondition(t, inventory, "edge-a", edgev1alpha1.SyncTargetEdgeReachable, metav1.ConditionTrue, edgev1alpha1.ReasonEdgeReachable)
		if log, err := os.ReadFile(f.ECM.LogPath()); err != nil || strings.Contains(string(log), badToken) {
			t.Errorf("edge-controller-manager's log holds the stored kubeconfig's token (or cannot be read: %v)", err)
		}
		sameUIDs(t, "after the bad credential", before, pushEdgeUIDs(t, edgeA))
	})
	t.Logf("TestPushMode took %s", time.Since(start).Round(time.Second))
}

// syncTargetCondition waits until the SyncTarget's condition has the status and reason, and
// returns its message.
func syncTargetCondition(t *testing.T, inventory dynamic.Interface, name, condType string, status metav1.ConditionStatus, reason string) string {
	t.Helper()
	var msg string
	eventually(t, "SyncTarget "+name+" "+condType, inventory, syncTargets, "", name, func(u *unstructured.Unstructured) string {
		if u == nil {
			return "absent"
		}
		s, r, m := framework.ConditionStatus(u, condType)
		msg = m
		if s != status || r != reason {
			return fmt.Sprintf("%s is %s/%s (%s), want %s/%s", condType, s, r, m, status, reason)
		}
		return ""
	})
	return msg
}

// pushEdgeUIDs are the UIDs of what the placements put on the push edge.
func pushEdgeUIDs(t *testing.T, edge dynamic.Interface) map[string]string {
	t.Helper()
	uids := map[string]string{}
	for key, obj := range map[string]*unstructured.Unstructured{
		"namespace settings":  framework.GetObject(t, edge, namespaces, "", "settings"),
		"namespace shop":      framework.GetObject(t, edge, namespaces, "", "shop"),
		"configmap settings":  framework.GetObject(t, edge, configMaps, "settings", "settings"),
		"deployment shop/api": framework.GetObject(t, edge, deployments, "shop", "api"),
	} {
		if obj == nil {
			t.Fatalf("%s is missing at the push edge", key)
		}
		uids[key] = string(obj.GetUID())
	}
	return uids
}

func sameUIDs(t *testing.T, when string, before, after map[string]string) {
	t.Helper()
	for key, uid := range before {
		if after[key] != uid {
			t.Errorf("%s: %s was deleted and created again at the push edge (uid %s, now %s)", when, key, uid, after[key])
		}
	}
}

// badKubeconfig writes a kubeconfig for the same server, trusted as the good one trusts it, with
// a token that the server does not know.
func badKubeconfig(t *testing.T, good, token string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(good)
	if err != nil {
		t.Fatal(err)
	}
	if err := clientcmdapi.MinifyConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if err := clientcmdapi.FlattenConfig(cfg); err != nil {
		t.Fatal(err)
	}
	for _, user := range cfg.AuthInfos {
		*user = clientcmdapi.AuthInfo{Token: token}
	}
	path := filepath.Join(t.TempDir(), "bad.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}
