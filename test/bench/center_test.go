package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/kcp-dev/edge-mc/pkg/workspaces"
	"github.com/kcp-dev/edge-mc/test/framework"
)

// shardMetrics plays a kcp shard's /metrics: apiserver_request_total series with the counts
// set, or an error.
type shardMetrics struct {
	counts map[string]float64 // "VERB resource" to count
	err    error
}

func (s *shardMetrics) Metrics(context.Context) (string, error) {
	if s.err != nil {
		return "", s.err
	}
	var b strings.Builder
	b.WriteString("# TYPE apiserver_request_total counter\n")
	for request, n := range s.counts {
		verb, resource, _ := strings.Cut(request, " ")
		fmt.Fprintf(&b, "apiserver_request_total{code=\"201\",component=\"apiserver\",resource=%q,verb=%q} %v\n", resource, verb, n)
	}
	return b.String(), nil
}

// TestRequestCounterByShard checks what the per-shard figures come from: each shard's requests
// since counting started, from its own counters, and the center's as their sum; nothing when a
// shard's counters cannot be read.
func TestRequestCounterByShard(t *testing.T) {
	ctx := context.Background()
	root := &shardMetrics{counts: map[string]float64{"POST workspaces": 10, "GET workspaces": 100}}
	other := &shardMetrics{counts: map[string]float64{"PATCH assemblages": 5}}
	c := startCounting(ctx, root, other)
	root.counts["POST workspaces"] = 13
	root.counts["GET workspaces"] = 150
	other.counts["PATCH assemblages"] = 25
	other.counts["POST workspaces"] = 2

	each := c.sinceEach(ctx)
	if len(each) != 2 {
		t.Fatalf("sinceEach gave %d deltas, want one per shard: %v", len(each), each)
	}
	if got := each[0].sum(framework.IsWrite); got != 3 {
		t.Errorf("root's writes = %v, want 3 (its POSTs since counting started)", got)
	}
	if got := each[1].sum(framework.IsWrite); got != 22 {
		t.Errorf("the other shard's writes = %v, want 20 PATCHes + 2 POSTs", got)
	}
	whole := c.since(ctx)
	if whole["POST workspaces"] != 5 || whole["PATCH assemblages"] != 20 || whole["GET workspaces"] != 50 {
		t.Errorf("the center's requests = %v, want the shards' sums", whole)
	}

	other.err = errors.New("connection refused")
	if got := c.sinceEach(ctx); got != nil {
		t.Errorf("with a shard's counters unreadable, sinceEach = %v, want nil (not read)", got)
	}
	if got := c.since(ctx); got != nil {
		t.Errorf("with a shard's counters unreadable, since = %v, want nil (not read)", got)
	}
	if got := startCounting(ctx, root, other).since(ctx); got != nil {
		t.Errorf("counting started without a shard's counters: since = %v, want nil", got)
	}
}

// TestMailboxesByShard checks how the bench tells which shard holds a mailbox: kcp's shard
// annotation on its workspace names the shard by hash; an unknown or missing one counts apart.
func TestMailboxesByShard(t *testing.T) {
	names := []string{"root", "shard-1"}
	if got := shardNameOf(workspaces.ShardHash("shard-1"), names); got != "shard-1" {
		t.Errorf("shardNameOf(hash of shard-1) = %q", got)
	}
	if got := shardNameOf("1pfxsevk", names); got != "root" {
		t.Errorf("shardNameOf(1pfxsevk, kcp's hash of root) = %q, want root", got)
	}
	for _, a := range []string{"", workspaces.ShardHash("shard-2")} {
		if got := shardNameOf(a, names); got != "" {
			t.Errorf("shardNameOf(%q) = %q, want none", a, got)
		}
	}
	counts, none := countByShard([]string{"root", "shard-1", "shard-1", "", "root", "shard-1"}, names)
	if counts[0] != 2 || counts[1] != 3 || none != 1 {
		t.Errorf("countByShard = %v, %d of no shard; want [2 3], 1", counts, none)
	}
}

// TestShardFigures checks the per-shard section: each shard's writes and CPU over the fan-out
// and the idle window, the front-proxy's and cache server's CPU, and the table that says them.
func TestShardFigures(t *testing.T) {
	fig := &shardedFigures{Shards: 2, ESPWShard: "root", IMWShard: "root", WMWShard: "shard-1",
		ByShard: []shardFigures{{Name: "root", Mailboxes: 4}, {Name: "shard-1", Mailboxes: 2}}}
	before := cpuSample{shards: []float64{10, 20}, frontProxy: 1, cache: 2}
	after := cpuSample{shards: []float64{15, 22}, frontProxy: 4, cache: 2.5}
	cpu := after.since(before)
	fig.recordFanout([]requestDelta{{"PATCH assemblages": 40, "GET assemblages": 7}, {"POST workspaces": 10}}, cpu, 10)
	root, other := fig.ByShard[0], fig.ByShard[1]
	if root.FanoutWrites != 40 || root.FanoutWritesPerSecond != 4 || other.FanoutWrites != 10 || other.FanoutWritesPerSecond != 1 {
		t.Errorf("fan-out writes: root %v (%v/s), shard-1 %v (%v/s); want 40 (4/s) and 10 (1/s), reads not counted",
			root.FanoutWrites, root.FanoutWritesPerSecond, other.FanoutWrites, other.FanoutWritesPerSecond)
	}
	if root.FanoutCPUSeconds != 5 || other.FanoutCPUSeconds != 2 || fig.FrontProxyFanoutCPUSeconds != 3 || fig.CacheFanoutCPUSeconds != 0.5 {
		t.Errorf("fan-out CPU: root %v, shard-1 %v, front-proxy %v, cache %v; want 5, 2, 3, 0.5",
			root.FanoutCPUSeconds, other.FanoutCPUSeconds, fig.FrontProxyFanoutCPUSeconds, fig.CacheFanoutCPUSeconds)
	}
	if len(root.FanoutTopWrites) != 1 || root.FanoutTopWrites[0].Request != "PATCH assemblages" {
		t.Errorf("root's most frequent writes = %v, want PATCH assemblages only", root.FanoutTopWrites)
	}
	fig.recordIdle([]requestDelta{{"UPDATE leases": 6}, {}}, cpu, 20)
	if fig.ByShard[0].IdleWritesPerSecond != 0.3 || fig.ByShard[1].IdleWritesPerSecond != 0 || fig.ByShard[0].IdleCPUPercent != 25 {
		t.Errorf("idle: root %v writes/s at %v%%, shard-1 %v writes/s; want 0.3 at 25%%, 0", fig.ByShard[0].IdleWritesPerSecond,
			fig.ByShard[0].IdleCPUPercent, fig.ByShard[1].IdleWritesPerSecond)
	}
	// Counters that could not be read leave the writes unknown, not zero: the lists say "not read".
	unread := &shardedFigures{ByShard: []shardFigures{{Name: "root"}}}
	unread.recordFanout(nil, cpu, 10)
	if unread.ByShard[0].FanoutTopWrites != nil || unread.ByShard[0].FanoutCPUSeconds != 5 {
		t.Errorf("with no counters: %+v, want no writes listed and the CPU still there", unread.ByShard[0])
	}
	// A center of one kcp has no section: recording into it does nothing.
	var none *shardedFigures
	none.recordFanout(nil, cpu, 10)
	none.recordIdle(nil, cpu, 10)

	var out bytes.Buffer
	r := &result{Config: config{N: 6}, Sharded: fig}
	printShards(&out, r)
	for _, want := range []string{"| root | 4 of 6 | ESPW, inventory | 40 (4.0/s) | PATCH assemblages 40 |", "| shard-1 | 2 of 6 | workloads | 10 (1.0/s) |",
		"| front-proxy (every client's requests) |"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the per-shard table has no %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	printShards(&out, &result{})
	if out.Len() != 0 {
		t.Errorf("a center of one kcp printed a per-shard section:\n%s", out.String())
	}
}

// refusingMetrics plays a kcp whose apiserver_request_total has series by answer code.
type refusingMetrics struct{ text string }

func (r *refusingMetrics) Metrics(context.Context) (string, error) { return r.text, nil }

// TestRefusedRequests: the requests a kcp refused with 429 are counted apart, per request, and
// are neither writes nor assemblage writes; the request itself still counts every answer.
func TestRefusedRequests(t *testing.T) {
	ctx := context.Background()
	series := func(applied, refused int) string {
		return fmt.Sprintf("apiserver_request_total{code=\"200\",resource=\"assemblages\",verb=\"APPLY\"} %d\n"+
			"apiserver_request_total{code=\"429\",resource=\"assemblages\",verb=\"APPLY\"} %d\n"+
			"apiserver_request_total{code=\"429\",resource=\"leases\",verb=\"PUT\"} %d\n", applied, refused, refused)
	}
	kcp := &refusingMetrics{text: series(10, 1)}
	c := startCounting(ctx, kcp)
	kcp.text = series(40, 6)
	d := c.since(ctx)
	if got := d.sum(isRefused); got != 10 {
		t.Errorf("refused = %v, want 10 (5 applies and 5 PUTs since counting started): %v", got, d)
	}
	if got := d[refusedPrefix+"APPLY assemblages"]; got != 5 {
		t.Errorf("refused applies of assemblages = %v, want 5", got)
	}
	if got := d.sum(isAssemblageWrite); got != 35 {
		t.Errorf("assemblage writes = %v, want 35 (30 accepted and 5 refused attempts)", got)
	}
	if got := d.sum(framework.IsWrite); got != 40 {
		t.Errorf("writes = %v, want 40 (every attempt once, refusals not counted again)", got)
	}
}
