package sharded

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kcp-dev/edge-mc/test/framework"
)

// shardOutage is how long TestShardDown keeps the second shard down.
const shardOutage = 60 * time.Second

var (
	configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)

// shardDownWorkload is a namespace and a ConfigMap whose data.version the test edits, placed
// to every Location.
const shardDownWorkload = `apiVersion: v1
kind: Namespace
metadata: {name: app}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: app
  annotations: {edge.kcp.io/expand-parameters: "true"}
data: {region: "%%(region)", version: "%s"}
---
apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: app}
spec:
  locationSelectors: [{matchLabels: {}}]
  downsync: [{namespaces: [app]}]
`

// edgeOnShard is one destination of TestShardDown: its SyncTarget, mailbox, shard, edge cluster,
// and the UIDs that its edge objects had before the outage.
type edgeOnShard struct {
	name, region, mailbox, shard string
	pcluster                     *framework.PCluster
	uids                         map[string]types.UID
}

// TestShardDown kills the second shard for shardOutage under a running fleet whose service
// provider, inventory and workload workspaces are on the root shard and whose mailboxes are on
// both, each with a syncer reaching it through the front-proxy. While the shard is down: an
// edit of the workload reaches the edges whose mailboxes are on the root shard; the placement's
// summary counts the other edges stale, each with a broken entry naming the shard;
// edge-controller-manager stays up and ready, and, killed and started again, becomes ready and
// delivers a second edit to the root shard's edges. After the shard's restart every edge
// converges to the last edit, and no object at any edge, and no assemblage in any mailbox, was
// deleted and made again (their UIDs are those from before).
func TestShardDown(t *testing.T) {
	c := framework.ShardedKCP(t)
	root, second := c.Shards[0], c.Shards[1]
	if root.Name != "root" {
		t.Fatalf("the first shard is %s, not root", root.Name)
	}

	// The ESPW must be on the root shard: kubectl edge init makes it of a type of its own, so
	// kcp places it, and the test tries again, in a new workspace, until it lands there.
	base := c.NewWorkspaceOn(t, root.Name)
	var espw logicalcluster.Path
	for attempt := 1; ; attempt++ {
		espw = base.Join(fmt.Sprintf("espw-%d", attempt))
		framework.KubectlEdge(t, "init", "--espw", espw.String()).MustSucceed(t)
		shard := c.EventuallyShardOf(t, espw)
		t.Logf("the ESPW %s is on shard %s", espw, shard)
		if shard == root.Name {
			break
		}
		if attempt == 8 {
			t.Fatalf("8 ESPWs in a row landed on shard %s, none on %s", second.Name, root.Name)
		}
	}
	wmw, imw := base.Join("wmw"), base.Join("imw")
	c.CreateWorkspaceOn(t, wmw, root.Name)
	c.CreateWorkspaceOn(t, imw, root.Name)
	framework.KubectlEdge(t, "ensure", "wmw", wmw.String(), "--espw", espw.String()).MustSucceed(t)
	framework.KubectlEdge(t, "ensure", "imw", imw.String(), "--espw", espw.String()).MustSucceed(t)
	ecm := framework.StartControllerManager(t, espw, append([]string{"--controllers", "mailbox,scheduler,placement-translator,upsync,status-summarizer"},
		framework.FleetHeartbeatArgs...)...)

	// SyncTargets until each shard holds a mailbox, each with an edge cluster and a syncer.
	var edges []*edgeOnShard
	perShard := map[string]int{}
	for i := 0; i < maxSyncTargets && (len(perShard) < len(c.Shards) || i < 2); i++ {
		e := &edgeOnShard{name: fmt.Sprintf("edge-%d", i), region: fmt.Sprintf("r%d", i)}
		framework.KubectlEdge(t, "ensure", "location", e.name, "region="+e.region, "--imw", imw.String(), "--espw", espw.String()).MustSucceed(t)
		st := framework.EventuallyObject(t, "the mailbox of "+e.name+" is ready", framework.KCP(t).DynamicClient(t, imw), syncTargetsGVR, "", e.name, mailboxReady)
		e.mailbox, _, _ = unstructured.NestedString(st.Object, "status", "mailboxWorkspace")
		e.shard = c.EventuallyShardOf(t, logicalcluster.NewPath(e.mailbox))
		perShard[e.shard]++
		edges = append(edges, e)
		t.Logf("SyncTarget %s: mailbox %s on shard %s", e.name, e.mailbox, e.shard)
	}
	if len(perShard) < len(c.Shards) {
		t.Fatalf("after %d SyncTargets the mailboxes are on %d shards only: %v", len(edges), len(perShard), perShard)
	}
	var names []string
	for _, e := range edges {
		names = append(names, e.name)
	}
	made := framework.NewLogicalPClusters(t, names...)
	for _, e := range edges {
		e.pcluster = made[e.name]
		framework.StartSyncer(t, espw, imw, e.name, e.pcluster).WaitReady(t, 2*time.Minute)
	}

	framework.KubectlApply(t, framework.KCP(t).ServerURL(wmw), fmt.Sprintf(shardDownWorkload, "1")).MustSucceed(t)
	start := time.Now()
	for _, e := range edges {
		waitForVersion(t, e, "1", framework.Converge)
		e.uids = edgeUIDs(t, e)
	}
	t.Logf("the workload reached all %d edges in %s", len(edges), time.Since(start).Round(100*time.Millisecond))
	waitForSummary(t, wmw, "all edges ready", func(ready, stale int32, _ []any) bool { return ready == int32(len(edges)) && stale == 0 })
	assemblageUIDs := map[string]types.UID{}
	for _, e := range edges {
		assemblageUIDs[e.mailbox] = placementAssemblageUID(t, e.mailbox)
	}

	// The second shard goes down.
	var onRoot, onSecond []*edgeOnShard
	for _, e := range edges {
		if e.shard == second.Name {
			onSecond = append(onSecond, e)
		} else {
			onRoot = append(onRoot, e)
		}
	}
	ecmPID := ecm.PID()
	second.Kill()
	killed := time.Now()
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			if err := second.Restart(); err != nil {
				t.Errorf("restarting shard %s after the test: %v", second.Name, err)
			}
		}
	})
	t.Logf("killed shard %s (%d of %d mailboxes on it)", second.Name, len(onSecond), len(edges))

	framework.KubectlApply(t, framework.KCP(t).ServerURL(wmw), fmt.Sprintf(shardDownWorkload, "2")).MustSucceed(t)
	for _, e := range onRoot {
		waitForVersion(t, e, "2", shardOutage)
	}
	t.Logf("with shard %s down, the edit reached the %d edges whose mailboxes are on shard %s in %s", second.Name, len(onRoot), root.Name, time.Since(killed).Round(100*time.Millisecond))

	waitForSummary(t, wmw, fmt.Sprintf("the %d edges on shard %s stale, each with a broken entry naming it", len(onSecond), second.Name),
		func(ready, stale int32, broken []any) bool {
			if ready != int32(len(onRoot)) || stale != int32(len(onSecond)) {
				return false
			}
			for _, e := range onSecond {
				if !hasBrokenEntry(broken, e.name, "shard "+second.Name) {
					return false
				}
			}
			return true
		})
	t.Logf("the summary counted the %d edges on shard %s stale, naming the shard, %s after the kill", len(onSecond), second.Name, time.Since(killed).Round(100*time.Millisecond))
	for _, e := range onSecond {
		st := framework.GetObject(t, framework.KCP(t).DynamicClient(t, imw), syncTargetsGVR, "", e.name)
		if st == nil {
			t.Fatalf("no SyncTarget %s", e.name)
		}
		status, reason, msg := framework.ConditionStatus(st, "SyncerReady")
		t.Logf("SyncTarget %s: SyncerReady %s, %s: %s", e.name, status, reason, msg)
		if reason != "MailboxUnreachable" {
			t.Errorf("SyncTarget %s, whose mailbox is on the shard that is down: SyncerReady's reason is %s, want MailboxUnreachable", e.name, reason)
		}
	}
	if ecm.Exited() || ecm.PID() != ecmPID {
		t.Fatalf("edge-controller-manager exited while shard %s was down", second.Name)
	}
	if code, body, err := ecm.Readyz(); err != nil || code != 200 {
		t.Errorf("edge-controller-manager is not ready while shard %s is down: %d %s %v", second.Name, code, body, err)
	}

	// edge-controller-manager started while the shard is down is ready and serves the root shard.
	ecm.Crash()
	began := time.Now()
	ecm.RestartReady(t, 2*time.Minute)
	t.Logf("edge-controller-manager, started again with shard %s down, was ready in %s", second.Name, time.Since(began).Round(100*time.Millisecond))
	framework.KubectlApply(t, framework.KCP(t).ServerURL(wmw), fmt.Sprintf(shardDownWorkload, "3")).MustSucceed(t)
	edited := time.Now()
	for _, e := range onRoot {
		waitForVersion(t, e, "3", framework.Converge)
	}
	t.Logf("a second edit reached the edges on shard %s in %s", root.Name, time.Since(edited).Round(100*time.Millisecond))
	waitForSummary(t, wmw, fmt.Sprintf("the edges on shard %s still stale, naming it, after edge-controller-manager's restart", second.Name),
		func(ready, stale int32, broken []any) bool {
			if ready != int32(len(onRoot)) || stale != int32(len(onSecond)) {
				return false
			}
			for _, e := range onSecond {
				if !hasBrokenEntry(broken, e.name, "shard "+second.Name) {
					return false
				}
			}
			return true
		})

	// Whatever the edges of the second shard run is as it was.
	for _, e := range onSecond {
		if v := edgeVersion(t, e); v != "1" {
			t.Errorf("edge %s, whose mailbox is on the shard that is down, runs version %q, want 1 as before", e.name, v)
		}
	}
	if wait := shardOutage - time.Since(killed); wait > 0 {
		time.Sleep(wait)
	}
	began = time.Now()
	if err := second.Restart(); err != nil {
		t.Fatalf("restarting shard %s: %v", second.Name, err)
	}
	restarted = true
	back := time.Now()
	t.Logf("shard %s was down for %s; it was ready again %s after its start", second.Name, back.Sub(killed).Round(100*time.Millisecond), back.Sub(began).Round(100*time.Millisecond))
	for _, e := range onSecond {
		waitForVersion(t, e, "3", 3*time.Minute)
	}
	t.Logf("the edges on shard %s converged to the last edit %s after the shard was ready", second.Name, time.Since(back).Round(100*time.Millisecond))
	waitForSummary(t, wmw, "all edges ready again", func(ready, stale int32, _ []any) bool { return ready == int32(len(edges)) && stale == 0 })
	t.Logf("the summary counted every edge ready %s after the shard was ready", time.Since(back).Round(100*time.Millisecond))

	// Nothing was made again: not at the edges, not in the mailboxes.
	for _, e := range edges {
		for what, uid := range edgeUIDs(t, e) {
			if uid != e.uids[what] {
				t.Errorf("edge %s (mailbox on shard %s): %s has UID %s, before the outage %s: it was deleted and made again", e.name, e.shard, what, uid, e.uids[what])
			}
		}
		if uid := placementAssemblageUID(t, e.mailbox); uid != assemblageUIDs[e.mailbox] {
			t.Errorf("mailbox %s (shard %s): the placement's assemblage has UID %s, before the outage %s: it was deleted and made again", e.mailbox, e.shard, uid, assemblageUIDs[e.mailbox])
		}
	}
}

// edgeVersion reads data.version of the ConfigMap app/settings at the edge ("" if absent).
func edgeVersion(t *testing.T, e *edgeOnShard) string {
	t.Helper()
	u := framework.GetObject(t, e.pcluster.DynamicClient(t), configMapsGVR, "app", "settings")
	if u == nil {
		return ""
	}
	v, _, _ := unstructured.NestedString(u.Object, "data", "version")
	return v
}

// waitForVersion waits until the edge runs the ConfigMap at the given version, customised for it.
func waitForVersion(t *testing.T, e *edgeOnShard, version string, timeout time.Duration) {
	t.Helper()
	client := e.pcluster.DynamicClient(t)
	framework.Eventually(t, timeout, func() (bool, string) {
		u := framework.GetObject(t, client, configMapsGVR, "app", "settings")
		if u == nil {
			return false, fmt.Sprintf("edge %s (mailbox on shard %s) has no ConfigMap app/settings", e.name, e.shard)
		}
		v, _, _ := unstructured.NestedString(u.Object, "data", "version")
		region, _, _ := unstructured.NestedString(u.Object, "data", "region")
		return v == version && region == e.region, fmt.Sprintf("edge %s (mailbox on shard %s) runs version %q for region %q, want %q for %q", e.name, e.shard, v, region, version, e.region)
	})
}

// edgeUIDs returns the UIDs of the workload's objects at the edge.
func edgeUIDs(t *testing.T, e *edgeOnShard) map[string]types.UID {
	t.Helper()
	client := e.pcluster.DynamicClient(t)
	out := map[string]types.UID{}
	for what, get := range map[string]func() *unstructured.Unstructured{
		"namespace app": func() *unstructured.Unstructured { return framework.GetObject(t, client, namespacesGVR, "", "app") },
		"ConfigMap app/settings": func() *unstructured.Unstructured {
			return framework.GetObject(t, client, configMapsGVR, "app", "settings")
		},
	} {
		u := get()
		if u == nil {
			t.Fatalf("edge %s has no %s", e.name, what)
		}
		out[what] = u.GetUID()
	}
	return out
}

// placementAssemblageUID returns the UID of the assemblage of the placement app in a mailbox.
func placementAssemblageUID(t *testing.T, mailbox string) types.UID {
	t.Helper()
	var uid types.UID
	framework.Eventually(t, framework.Converge, func() (bool, string) {
		list, err := framework.KCP(t).DynamicClient(t, logicalcluster.NewPath(mailbox)).Resource(assemblagesGVR).List(framework.Context(t, 10*time.Second), metav1.ListOptions{})
		if err != nil {
			return false, fmt.Sprintf("listing the assemblages of mailbox %s: %v", mailbox, err)
		}
		for _, a := range list.Items {
			if name, _, _ := unstructured.NestedString(a.Object, "spec", "placement", "name"); name == "app" {
				uid = a.GetUID()
				return true, ""
			}
		}
		return false, fmt.Sprintf("mailbox %s holds no assemblage of the placement app (%d assemblages)", mailbox, len(list.Items))
	})
	return uid
}

// waitForSummary waits until the placement app's summary passes check, given its ready and
// stale counts and its broken entries.
func waitForSummary(t *testing.T, wmw logicalcluster.Path, what string, check func(ready, stale int32, broken []any) bool) {
	t.Helper()
	framework.Eventually(t, framework.Converge, func() (bool, string) {
		u := framework.GetObject(t, framework.KCP(t).DynamicClient(t, wmw), placementsGVR, "", "app")
		if u == nil {
			return false, "no EdgePlacement app"
		}
		ready, _, _ := unstructured.NestedInt64(u.Object, "status", "summary", "ready")
		stale, _, _ := unstructured.NestedInt64(u.Object, "status", "summary", "stale")
		broken, _, _ := unstructured.NestedSlice(u.Object, "status", "broken")
		return check(int32(ready), int32(stale), broken), fmt.Sprintf("waiting for %s: placement app has %d ready, %d stale, broken %v", what, ready, stale, broken)
	})
}

// hasBrokenEntry says whether the broken entries hold one for the destination, with no object,
// whose reason contains want.
func hasBrokenEntry(broken []any, syncTarget, want string) bool {
	for _, b := range broken {
		m, _ := b.(map[string]any)
		dest, _ := m["destination"].(string)
		reason, _ := m["reason"].(string)
		object, _ := m["object"].(string)
		if strings.HasSuffix(dest, ":"+syncTarget) && object == "" && strings.Contains(reason, want) {
			return true
		}
	}
	return false
}
