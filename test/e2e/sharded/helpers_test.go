package sharded

import (
	"fmt"
	"testing"

	"github.com/kcp-dev/logicalcluster/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/test/framework"
)

var rootPath = logicalcluster.NewPath("root")

func logicalPath(s string) logicalcluster.Path { return logicalcluster.NewPath(s) }

var syncTargetsGVR = schema.GroupVersionResource{Group: "edge.kcp.io", Version: "v1alpha1", Resource: "synctargets"}

// mailboxReady is a check for framework.EventuallyObject: the SyncTarget's MailboxReady
// condition is True.
func mailboxReady(u *unstructured.Unstructured) string {
	if u == nil {
		return "absent"
	}
	conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conditions {
		m, _ := c.(map[string]any)
		if m["type"] == string(edgev1alpha1.SyncTargetMailboxReady) {
			if m["status"] == string(metav1.ConditionTrue) {
				return ""
			}
			return fmt.Sprintf("MailboxReady is %v: %v", m["status"], m["message"])
		}
	}
	return "no MailboxReady condition"
}

// oneShardFleet is framework.NewMailboxFleet with the ESPW, the inventory and the workload
// workspace all on one shard, the ESPW's (kubectl edge init creates the ESPW, of a type of its
// own, so kcp places it; the other two follow it), so that the tests that use it see one shard's
// virtual workspace of edge.kcp.io, and the mailboxes' shards only in that of mailbox.edge.kcp.io.
// TestInventoryOnEveryShard and TestPlacementAcrossShards spread the bindings of edge.kcp.io.
func oneShardFleet(t *testing.T) (*framework.Fleet, string) {
	t.Helper()
	c := framework.ShardedKCP(t)
	base := framework.NewWorkspace(t)
	f := &framework.Fleet{ESPW: base.Join("espw"), WMW: base.Join("wmw"), IMW: base.Join("imw")}
	framework.KubectlEdge(t, "init", "--espw", f.ESPW.String()).MustSucceed(t)
	shard := c.EventuallyShardOf(t, f.ESPW)
	t.Logf("the ESPW %s is on shard %s", f.ESPW, shard)
	c.CreateWorkspaceOn(t, f.WMW, shard)
	c.CreateWorkspaceOn(t, f.IMW, shard)
	framework.KubectlEdge(t, "ensure", "wmw", f.WMW.String(), "--espw", f.ESPW.String()).MustSucceed(t)
	framework.KubectlEdge(t, "ensure", "imw", f.IMW.String(), "--espw", f.ESPW.String()).MustSucceed(t)
	f.ECM = framework.StartControllerManager(t, f.ESPW, "--controllers", "mailbox")
	return f, shard
}
