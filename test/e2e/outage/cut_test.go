package outage

import (
	"fmt"
	"testing"
	"time"

	"github.com/kcp-dev/edge-mc/test/framework"
)

// TestSyncerConnectionCut cuts the syncer's connection to the center, as a network partition
// would (a proxy that lets nothing through, both processes left running), for a minute, three
// times and more the fleet's heartbeat grace period here: the SyncTarget's SyncerReady turns Unknown, the
// placement's summary counts the destination stale (a silent syncer), the edge stays exactly as
// last applied, and a change made in the workload workspace during the cut arrives once the
// connection is back; then the same with the connections reset and refused for 15 s. Nothing
// else is deleted or rewritten at the edge. The times to converge are logged.
func TestSyncerConnectionCut(t *testing.T) {
	t.Parallel()
	pending := framework.StartLogicalPClusters(t, "edge1")
	f := setUp(t, map[string]string{"edge1": "east"})
	edge := pending()["edge1"]
	syncer, proxy := framework.StartSyncerThroughProxy(t, f.ESPW, f.IMW, "edge1", edge)
	f.Mailbox(t, "edge1")
	ec := edge.DynamicClient(t)
	f.Apply(t, f.WMW, workload)
	eventually(t, "down-sync", ec, configMaps, "app", "changing", fieldIs("1", "data", "version"))
	eventually(t, "down-sync", ec, deployments, "app", "web", present)
	imw := framework.KCP(t).DynamicClient(t, f.IMW)
	eventually(t, "the syncer's heartbeat", imw, syncTargets, "", "edge1", conditionIs("SyncerReady", "True"))
	time.Sleep(5 * time.Second) // let status writes and the like settle
	before := snapshot(t, edge)

	t.Log("cutting the syncer's connection to the center")
	proxy.Pause()
	cutAt := time.Now()
	framework.Eventually(t, 2*time.Minute, func() (bool, string) {
		st := framework.GetObject(t, imw, syncTargets, "", "edge1")
		status, _, _ := framework.ConditionStatus(st, "SyncerReady")
		return status == "Unknown", fmt.Sprintf("SyncerReady is %q", status)
	})
	t.Logf("SyncerReady turned Unknown %s after the cut", time.Since(cutAt).Round(time.Second))
	// The placement's summary counts the destination stale, and says why.
	wmw := framework.KCP(t).DynamicClient(t, f.WMW)
	eventually(t, "the summary during the cut", wmw, placements, "", "app", summaryCounts("stale", 1, "silent"))
	t.Logf("the placement counted the destination stale %s after the cut", time.Since(cutAt).Round(time.Second))
	f.Kubectl(t, f.WMW, "patch", "configmap", "changing", "-n", "app", "--type=merge", "-p", `{"data":{"version":"2"}}`)
	// A cut of a minute (it ran two until 2026-11-29; the syncer's redial backoff is capped well
	// below either): the syncer keeps retrying and the edge keeps its workload.
	for time.Since(cutAt) < time.Minute {
		time.Sleep(5 * time.Second)
		if now := snapshot(t, edge); fmt.Sprint(now) != fmt.Sprint(before) {
			t.Fatalf("the edge changed while its syncer was cut off:\nbefore %v\nnow    %v", before, now)
		}
		if syncer.Exited() {
			t.Fatal("edge-syncer exited while cut off")
		}
	}

	t.Logf("restoring the connection after %s", time.Since(cutAt).Round(time.Second))
	if err := proxy.Start(); err != nil {
		t.Fatal(err)
	}
	restoredAt := time.Now()
	eventually(t, "the change made during the cut", ec, configMaps, "app", "changing", fieldIs("2", "data", "version"))
	converged := time.Since(restoredAt)
	eventually(t, "the syncer's heartbeat after the cut", imw, syncTargets, "", "edge1", conditionIs("SyncerReady", "True"))
	t.Logf("converged %s after the connection came back; SyncerReady True again %s after", converged.Round(100*time.Millisecond),
		time.Since(restoredAt).Round(100*time.Millisecond))
	eventually(t, "the summary after the cut", wmw, placements, "", "app", summaryCounts("stale", 0, ""))
	t.Logf("the placement no longer counted the destination stale %s after the connection came back", time.Since(restoredAt).Round(100*time.Millisecond))

	// Then a cut that resets the connections (as a crashed load balancer would): the syncer
	// dials again, and a change made meanwhile arrives.
	proxy.Stop()
	stoppedAt := time.Now()
	f.Kubectl(t, f.WMW, "patch", "configmap", "changing", "-n", "app", "--type=merge", "-p", `{"data":{"version":"3"}}`)
	time.Sleep(15 * time.Second)
	accepted := proxy.Accepted()
	if err := proxy.Start(); err != nil {
		t.Fatal(err)
	}
	restoredAt = time.Now()
	eventually(t, "the change made while the connections were refused", ec, configMaps, "app", "changing", fieldIs("3", "data", "version"))
	t.Logf("after %s of refused connections, converged %s after they were accepted again", restoredAt.Sub(stoppedAt).Round(time.Second),
		time.Since(restoredAt).Round(100*time.Millisecond))
	if proxy.Accepted() <= accepted {
		t.Errorf("the syncer did not connect again after its connections were reset")
	}

	after := snapshot(t, edge)
	for id, b := range before {
		a := after[id]
		if a[0] != b[0] {
			t.Errorf("%s was deleted and recreated: uid %s, now %s", id, b[0], a[0])
		}
		if id != "configmaps/changing" && a[1] != b[1] {
			t.Errorf("%s, which did not change, was written: resourceVersion %s, now %s", id, b[1], a[1])
		}
	}
}
