package sharded

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kcp-dev/edge-mc/test/framework"
)

// maxSyncTargets bounds how many SyncTargets TestMailboxesOnBothShards makes while waiting for
// kcp to place a mailbox on each shard. kcp picks a schedulable shard at random for each
// workspace, so the chance that 16 mailboxes all land on one of two shards is 2^-15.
const maxSyncTargets = 16

// TestMailboxesOnBothShards runs the inventory admin's steps through the front-proxy (kubectl
// edge init, ensure wmw/imw, ensure location) with the mailbox controller running, adding
// SyncTargets until each shard holds at least one mailbox, and checks that every mailbox is
// Ready wherever it landed, and that kubectl edge status --target names the shard that holds it.
// The ESPW and the inventory and workload workspaces are on one shard (see oneShardFleet); the
// mailboxes, children of the ESPW, go where kcp puts them.
func TestMailboxesOnBothShards(t *testing.T) {
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
	// What an operator sees: kubectl edge status --target names the shard of the mailbox.
	for shard, names := range perShard {
		out := framework.KubectlEdge(t, "status", "--target", names[0], "--imw", f.IMW.String()).MustSucceed(t).Stdout
		if first, _, _ := strings.Cut(out, "\n"); !strings.HasSuffix(first, " on shard "+shard) {
			t.Errorf("kubectl edge status --target %s: the first line should end with %q: %q", names[0], " on shard "+shard, first)
		}
	}
}
