package sharded

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kcp-dev/edge-mc/test/framework"
)

// maxSyncTargets bounds how many SyncTargets TestMailboxesOnBothShards makes while waiting for
// kcp to place a mailbox on each shard. kcp picks a schedulable shard at random for each
// workspace, so the chance that 16 mailboxes all land on one of two shards is 2^-15.
const maxSyncTargets = 16

// TestMailboxesOnBothShards runs the inventory admin's steps through the front-proxy (kubectl
// edge init, ensure wmw/imw, ensure location) with the mailbox controller running, adding
// SyncTargets until each shard holds at least one mailbox, and checks that every mailbox is
// Ready wherever it landed, that a syncer's credential for a mailbox on either shard reaches
// that mailbox only (403 in the other shard's mailbox, the inventory, workload and service
// provider workspaces, root), and that kubectl edge status --target names the shard that holds
// it.
// The ESPW and the inventory and workload workspaces are on one shard (see oneShardFleet); the
// mailboxes, children of the ESPW, go where kcp puts them.
func TestMailboxesOnBothShards(t *testing.T) {
	t.Parallel()
	c := framework.ShardedKCP(t)
	f, _ := oneShardFleet(t)
	perShard := map[string][]string{}
	for i := 0; i < maxSyncTargets && len(perShard) < len(c.Shards); i++ {
		name := fmt.Sprintf("edge-%d", i)
		framework.KubectlEdge(t, "ensure", "location", name, "region=r"+fmt.Sprint(i),
			"--imw", f.IMW.String(), "--espw", f.ESPW.String()).MustSucceed(t)
		mailbox := f.Mailbox(t, name)
		shard := c.EventuallyShardOf(t, mailbox)
		t.Logf("SyncTarget %s: mailbox %s on shard %s", name, mailbox, shard)
		perShard[shard] = append(perShard[shard], name)
	}
	// Wherever a mailbox landed, the mailbox controller finished setting it up.
	imw := framework.KCP(t).DynamicClient(t, f.IMW)
	for _, names := range perShard {
		for _, name := range names {
			framework.EventuallyObject(t, "the mailbox of "+name+" is ready", imw, syncTargetsGVR, "", name, mailboxReady)
		}
	}
	for _, s := range c.Shards {
		if len(perShard[s.Name]) == 0 {
			t.Errorf("no mailbox landed on shard %s (mailboxes per shard: %v)", s.Name, perShard)
		}
	}
	// A syncer's credential, given by prep-for-syncer through the front-proxy, reaches its own
	// mailbox and nothing else, whichever shard holds what: the mailbox on the other shard (by
	// path and by logical cluster), the inventory and workload workspaces and the ESPW on the
	// first shard, root.
	var shards []string
	for shard := range perShard {
		shards = append(shards, shard)
	}
	if len(shards) == 2 {
		for i, shard := range shards {
			name, other := perShard[shard][0], perShard[shards[1-i]][0]
			who := fmt.Sprintf("the syncer credential of %s (mailbox on shard %s)", name, shard)
			cred, mailbox := f.SyncerCredential(t, name)
			otherMailbox := f.Mailbox(t, other)
			st := framework.GetObject(t, imw, syncTargetsGVR, "", other)
			otherCluster, _, _ := unstructured.NestedString(st.Object, "status", "mailboxCluster")
			framework.ExpectAllowed(t, who, cred,
				framework.Get("list the Assemblages in its mailbox", mailbox, "/apis/edge.kcp.io/v1alpha1/assemblages"),
				framework.Get("list the AssemblageParts in its mailbox", mailbox, "/apis/edge.kcp.io/v1alpha1/assemblageparts"))
			framework.ExpectRefused(t, who, cred,
				framework.Get("list ConfigMaps in the mailbox of "+other+" on shard "+shards[1-i], otherMailbox, "/api/v1/configmaps"),
				framework.Get("read the syncer token in the mailbox of "+other, otherMailbox, "/api/v1/namespaces/default/secrets/edge-syncer-token"),
				framework.Get("list Secrets in the mailbox of "+other+" by its logical cluster", logicalcluster.NewPath(otherCluster), "/api/v1/secrets"),
				framework.Create("write a ConfigMap into the mailbox of "+other, otherMailbox, "/api/v1/namespaces/default/configmaps",
					`{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "intruder"}}`),
				framework.Get("list SyncTargets in the inventory workspace", f.IMW, "/apis/edge.kcp.io/v1alpha1/synctargets"),
				framework.Get("list ConfigMaps in the workload workspace", f.WMW, "/api/v1/configmaps"),
				framework.Get("list Workspaces (the mailboxes) in the ESPW", f.ESPW, "/apis/tenancy.kcp.io/v1alpha1/workspaces"),
				framework.Get("list Secrets in the ESPW", f.ESPW, "/api/v1/secrets"),
				framework.Get("list Namespaces in root", logicalcluster.NewPath("root"), "/api/v1/namespaces"),
				framework.Get("list Secrets in every workspace at once", logicalcluster.NewPath("*"), "/api/v1/secrets"))
		}
	}
	// What an operator sees: kubectl edge status --target names the shard of the mailbox.
	for shard, names := range perShard {
		out := framework.KubectlEdge(t, "status", "--target", names[0], "--imw", f.IMW.String()).MustSucceed(t).Stdout
		if first, _, _ := strings.Cut(out, "\n"); !strings.HasSuffix(first, " on shard "+shard) {
			t.Errorf("kubectl edge status --target %s: the first line should end with %q: %q", names[0], " on shard "+shard, first)
		}
	}
}
