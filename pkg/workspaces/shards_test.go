package workspaces

import "testing"

// The hashes kcp v0.31.2 writes into a Workspace's shard annotation for shards named root and
// amber (its workspace scheduling tests expect these values).
func TestShardHashIsKCPs(t *testing.T) {
	for name, want := range map[string]string{"root": "1pfxsevk", "amber": "29hdqnv7"} {
		if got := ShardHash(name); got != want {
			t.Errorf("ShardHash(%q) = %q, want %q", name, got, want)
		}
	}
}
