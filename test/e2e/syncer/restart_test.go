package syncer

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/test/framework"
)

// TestSyncerRestartMidway kills edge-syncer while it is applying a workload of many objects, slowed
// down by a low request rate to the edge, and restarts it: every object arrives, once, and those
// applied before the kill keep their UIDs.
func TestSyncerRestartMidway(t *testing.T) {
	t.Parallel()
	const count = 60
	pending := framework.StartLogicalPClusters(t, "edge2")
	f := setUp(t, map[string]string{"edge2": "south"})
	edge := pending()["edge2"]
	// Everything is in the mailbox before the syncer starts, so that it has all of it to apply.
	placeMany(t, f, "edge2", count, "south")

	slow := []string{"--edge-qps", "5", "--edge-burst", "1"}
	syncer := framework.StartSyncer(t, f.ESPW, f.IMW, "edge2", edge, slow...)
	ec := edge.DynamicClient(t)
	edgeUIDs := func() map[string]string { return configMapUIDs(t, ec, "many") }
	framework.Eventually(t, converge, func() (bool, string) {
		n := len(edgeUIDs())
		return n >= 5, fmt.Sprintf("%d objects at the edge", n)
	})
	syncer.Kill()
	before := edgeUIDs()
	if len(before) >= count {
		t.Fatalf("all %d objects were applied before the kill; the test did not interrupt the syncer", count)
	}
	t.Logf("killed edge-syncer with %d of %d objects applied", len(before), count)

	syncer.Restart()
	framework.Eventually(t, 3*converge, func() (bool, string) {
		n := len(edgeUIDs())
		return n == count, fmt.Sprintf("%d of %d objects at the edge", n, count)
	})
	after := edgeUIDs()
	for name, uid := range before {
		if after[name] != uid {
			t.Errorf("%s was recreated after the restart: uid %s, now %s", name, uid, after[name])
		}
	}
}

// placeMany places the namespace many with count ConfigMaps on the Locations of the region
// (framework.ManyConfigMaps) and waits until the assemblage in the mailbox of syncTarget carries
// them all.
func placeMany(t *testing.T, f *framework.Fleet, syncTarget string, count int, region string) {
	t.Helper()
	f.Apply(t, f.WMW, framework.ManyConfigMaps(count, region))
	mailbox := framework.KCP(t).DynamicClient(t, f.Mailbox(t, syncTarget))
	framework.EventuallyAssemblage(t, mailbox, placementAssemblage(t, f, "many"), func(a *edgev1alpha1.Assemblage) string {
		if a == nil || a.Spec.ObjectCount != int32(count)+1 {
			return fmt.Sprintf("the assemblage does not carry the namespace and the %d ConfigMaps yet: %v", count, a)
		}
		return ""
	})
}

// configMapUIDs returns the UIDs of the ConfigMaps cm-* in the namespace at the edge, by name
// (nil if the edge does not answer).
func configMapUIDs(t *testing.T, ec dynamic.Interface, namespace string) map[string]string {
	t.Helper()
	return framework.ObjectUIDs(t, ec, configMaps, namespace, "cm-")
}

// TestEdgeAPIServerRestartMidway kills the kube-apiserver of a real Kubernetes edge while
// edge-syncer, slowed down, is applying a workload of many objects, and starts it again 15 s
// later: the syncer recovers by itself (it keeps running and needs no restart), every object
// arrives, and those applied before keep their UIDs.
func TestEdgeAPIServerRestartMidway(t *testing.T) {
	t.Parallel()
	const count = 60
	startingKube := framework.StartKubeClusterInBackground(t, "kube2")
	f := setUp(t, map[string]string{"kube2": "west"})
	kube := startingKube()
	placeMany(t, f, "kube2", count, "west")

	syncer := framework.StartSyncer(t, f.ESPW, f.IMW, "kube2", kube.PCluster(), "--edge-qps", "5", "--edge-burst", "1")
	ec := kube.DynamicClient(t)
	framework.Eventually(t, converge, func() (bool, string) {
		n := len(configMapUIDs(t, ec, "many"))
		return n >= 5, fmt.Sprintf("%d objects at the edge", n)
	})
	before := configMapUIDs(t, ec, "many")
	if len(before) >= count {
		t.Fatalf("all %d objects were applied before the API server was killed; the test did not interrupt the syncer", count)
	}
	t.Logf("killing the edge's kube-apiserver with %d of %d objects applied, for 15 s", len(before), count)
	restartedAt := time.Now()
	if err := kube.RestartAPIServer(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("the edge's kube-apiserver is ready again after %s", time.Since(restartedAt).Round(100*time.Millisecond))
	back := time.Now()
	framework.Eventually(t, 3*converge, func() (bool, string) {
		n := len(configMapUIDs(t, ec, "many"))
		return n == count, fmt.Sprintf("%d of %d objects at the edge", n, count)
	})
	t.Logf("all %d objects at the edge %s after the API server came back", count, time.Since(back).Round(100*time.Millisecond))
	if syncer.Exited() {
		t.Error("edge-syncer exited when its edge's API server went away; it must ride it out")
	}
	after := configMapUIDs(t, ec, "many")
	for name, uid := range before {
		if after[name] != uid {
			t.Errorf("%s was recreated after the API server's restart: uid %s, now %s", name, uid, after[name])
		}
	}
}
