// Package sharded runs edge-mc against a sharded center: a cache server, a root shard, a second
// shard and a front-proxy, started from bin/ by framework.RunWithShardedKCP. Every client (the
// tests, kubectl edge, edge-controller-manager, syncers) is given the front-proxy's address only.
//
// It checks what a user of a sharded center relies on: the harness's workspaces work through
// the front-proxy, and kcp places workspaces, mailboxes included, on both shards.
package sharded

import (
	"os"
	"testing"

	"github.com/kcp-dev/edge-mc/test/framework"
)

func TestMain(m *testing.M) { os.Exit(framework.RunWithShardedKCP(m, 2)) }
