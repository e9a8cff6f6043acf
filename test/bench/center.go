package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/kcp-dev/edge-mc/pkg/workspaces"
	"github.com/kcp-dev/edge-mc/test/framework"
)

// The center is one kcp (-shards 1), or a sharded kcp of -shards shards behind a front-proxy,
// with a cache server, as test/e2e/sharded starts it (framework.StartShardedKCP). Every client
// (kubectl edge, edge-controller-manager, the syncers, the bench's watches and its raw client)
// reaches it through fleet.center: the kcp itself, or the front-proxy. What the bench measures
// of the center's processes goes by shard: each shard's own CPU, RSS and request counters; the
// center's figures of the other sections are the shards' sums.

// metricsSource reads one kcp process's Prometheus metrics: a *framework.Server, or a
// *framework.Shard, read on the shard's own address.
type metricsSource interface {
	Metrics(ctx context.Context) (string, error)
}

// centerShard is one kcp process of the center: the center kcp, or one shard of it.
type centerShard struct {
	name            string
	pid             int
	metrics         metricsSource
	profilerAddress string
}

// startCenter starts the center of -shards shards; for a sharded one, the Server returned is its
// front-proxy. The ShardedCenter is returned even with an error, so that it can be stopped.
func startCenter(c config) (*framework.Server, *framework.ShardedCenter, error) {
	args := framework.WithArgs(c.CenterKCPArgs...)
	if c.Shards < 2 {
		s, err := framework.StartKCP(args)
		return s, nil, err
	}
	sc, err := framework.StartShardedKCP(c.Shards, args)
	if err != nil {
		return nil, sc, err
	}
	return sc.Front, sc, nil
}

// shardsOf lists the kcp processes of the center.
func shardsOf(center *framework.Server, sharded *framework.ShardedCenter) []centerShard {
	if sharded == nil {
		return []centerShard{{name: "kcp", pid: center.PID(), metrics: center, profilerAddress: center.ProfilerAddress}}
	}
	var out []centerShard
	for _, s := range sharded.Shards {
		out = append(out, centerShard{name: s.Name, pid: s.PID(), metrics: s, profilerAddress: s.ProfilerAddress})
	}
	return out
}

// countCenter starts counting the requests of every shard of the center.
func (f *fleet) countCenter(ctx context.Context) *requestCounter {
	var sources []metricsSource
	for _, s := range f.shards {
		sources = append(sources, s.metrics)
	}
	return startCounting(ctx, sources...)
}

// centerRSS is the RSS of the center's kcp processes together.
func (f *fleet) centerRSS() int64 {
	var sum int64
	for _, s := range f.shards {
		rss, _, _ := framework.RSS(s.pid)
		sum += rss
	}
	return sum
}

// shardedFigures: with -shards 2 or more, the center is a sharded kcp; these are its figures by
// shard. Every client reaches the center through the front-proxy, the raw client too; the
// center kcp's figures of the other sections (CPU, RSS, requests) are the shards' sums, and the
// bare kcp they are compared with is one kcp, not sharded.
type shardedFigures struct {
	Shards int `json:"shards"`
	// The shard that holds each of the fleet's own workspaces (kcp places them, as it places
	// the mailboxes).
	ESPWShard string `json:"espwShard"`
	IMWShard  string `json:"imwShard"`
	WMWShard  string `json:"wmwShard"`
	// MailboxesOfNoShard counts the mailboxes whose workspace names no shard of the center.
	MailboxesOfNoShard int            `json:"mailboxesOfNoShard"`
	ByShard            []shardFigures `json:"byShard"`
	// The center's other processes: the front-proxy, which every request to the center passes,
	// and the cache server. CPU during the fan-out, and idle.
	FrontProxyFanoutCPUSeconds float64 `json:"frontProxyFanoutCPUSeconds"`
	FrontProxyIdleCPUPercent   float64 `json:"frontProxyIdleCPUPercent"`
	CacheFanoutCPUSeconds      float64 `json:"cacheFanoutCPUSeconds"`
	CacheIdleCPUPercent        float64 `json:"cacheIdleCPUPercent"`
}

// shardFigures: one shard, from its own apiserver_request_total and its process.
type shardFigures struct {
	Name string `json:"name"`
	// Mailboxes is how many of the N mailboxes kcp placed on the shard.
	Mailboxes int `json:"mailboxes"`
	// Every write (POST, PUT, PATCH, DELETE) the shard served during the fan-out (from the
	// EdgePlacements' creation until all objects were at the edges), per second, and the most
	// frequent by verb and resource.
	FanoutWrites          float64       `json:"fanoutWrites"`
	FanoutWritesPerSecond float64       `json:"fanoutWritesPerSecond"`
	FanoutTopWrites       []requestRate `json:"fanoutTopWrites"`
	FanoutCPUSeconds      float64       `json:"fanoutCPUSeconds"`
	// The same over the idle window.
	IdleWritesPerSecond float64       `json:"idleWritesPerSecond"`
	IdleTopWrites       []requestRate `json:"idleTopWrites"`
	IdleCPUPercent      float64       `json:"idleCPUPercent"`
	RSSMB               float64       `json:"rssMB"`
}

// shardNameOf returns the name of the shard whose hash a workspace's ShardAnnotation holds, ""
// if none of names.
func shardNameOf(annotation string, names []string) string {
	for _, n := range names {
		if annotation != "" && workspaces.ShardHash(n) == annotation {
			return n
		}
	}
	return ""
}

// countByShard counts the names of shards (one per mailbox) for each of names, in that order,
// and those that are none of them.
func countByShard(shardOfMailbox []string, names []string) (counts []int, none int) {
	counts = make([]int, len(names))
	index := map[string]int{}
	for i, n := range names {
		index[n] = i
	}
	for _, s := range shardOfMailbox {
		if i, ok := index[s]; ok {
			counts[i]++
		} else {
			none++
		}
	}
	return counts, none
}

// placeShards starts the sharded section: where kcp placed the fleet's workspaces and mailboxes.
// nil for a center of one kcp.
func (f *fleet) placeShards(ctx context.Context) *shardedFigures {
	if f.sharded == nil {
		return nil
	}
	fig := &shardedFigures{Shards: len(f.shards)}
	var names, ofMailbox []string
	for _, s := range f.shards {
		names = append(names, s.name)
	}
	for _, d := range f.dests {
		ofMailbox = append(ofMailbox, d.shard)
	}
	counts, none := countByShard(ofMailbox, names)
	fig.MailboxesOfNoShard = none
	for i, n := range names {
		fig.ByShard = append(fig.ByShard, shardFigures{Name: n, Mailboxes: counts[i]})
	}
	shardOf := func(path logicalcluster.Path) string {
		name, err := f.sharded.ShardOf(ctx, path)
		if err != nil {
			return "unknown: " + err.Error()
		}
		return name
	}
	fig.ESPWShard, fig.IMWShard, fig.WMWShard = shardOf(f.espw), shardOf(f.imw), shardOf(f.wmw)
	say("sharded center: mailboxes by shard %s (%d of no shard); ESPW on %s, inventory on %s, workloads on %s",
		describeMailboxes(fig), none, fig.ESPWShard, fig.IMWShard, fig.WMWShard)
	return fig
}

func describeMailboxes(fig *shardedFigures) string {
	var parts []string
	for _, s := range fig.ByShard {
		parts = append(parts, fmt.Sprintf("%s %d", s.Name, s.Mailboxes))
	}
	return strings.Join(parts, ", ")
}

// recordFanout sets each shard's fan-out figures from what it served (one delta per shard, in
// the order of ByShard; nil if they could not be read) and the CPU each process used.
func (fig *shardedFigures) recordFanout(perShard []requestDelta, cpu cpuSample, seconds float64) {
	if fig == nil {
		return
	}
	for i := range fig.ByShard {
		s := &fig.ByShard[i]
		if i < len(perShard) {
			s.FanoutWrites = perShard[i].sum(framework.IsWrite)
			s.FanoutWritesPerSecond = s.FanoutWrites / seconds
			s.FanoutTopWrites = perShard[i].rates(seconds, framework.IsWrite, 5)
		}
		if i < len(cpu.shards) {
			s.FanoutCPUSeconds = cpu.shards[i]
		}
	}
	fig.FrontProxyFanoutCPUSeconds, fig.CacheFanoutCPUSeconds = cpu.frontProxy, cpu.cache
}

// recordIdle sets each shard's figures of the idle window.
func (fig *shardedFigures) recordIdle(perShard []requestDelta, cpu cpuSample, window float64) {
	if fig == nil {
		return
	}
	percent := func(s float64) float64 { return 100 * s / window }
	for i := range fig.ByShard {
		s := &fig.ByShard[i]
		if i < len(perShard) {
			s.IdleWritesPerSecond = perShard[i].sum(framework.IsWrite) / window
			s.IdleTopWrites = perShard[i].rates(window, framework.IsWrite, 5)
		}
		if i < len(cpu.shards) {
			s.IdleCPUPercent = percent(cpu.shards[i])
		}
	}
	fig.FrontProxyIdleCPUPercent, fig.CacheIdleCPUPercent = percent(cpu.frontProxy), percent(cpu.cache)
}

// workspaces lists the fleet's own workspaces with their shards.
func (fig *shardedFigures) workspaces() []struct{ what, shard string } {
	return []struct{ what, shard string }{{"ESPW", fig.ESPWShard}, {"inventory", fig.IMWShard}, {"workloads", fig.WMWShard}}
}

// printShards prints the sharded section as a table of its own.
func printShards(w io.Writer, r *result) {
	fig := r.Sharded
	if fig == nil {
		return
	}
	byName := map[string][]string{}
	for _, ws := range fig.workspaces() {
		byName[ws.shard] = append(byName[ws.shard], ws.what)
	}
	fmt.Fprintf(w, "\nper shard of the center (%d kcp shards; each shard's own /metrics and process; the fan-out runs %.1f s, the idle window %.0f s):\n\n",
		fig.Shards, r.Fanout.EdgeSeconds, r.Idle.WindowSeconds)
	fmt.Fprintf(w, "| shard | mailboxes | also holds | fan-out writes (per second) | fan-out writes, most frequent | fan-out CPU | idle writes per second | idle CPU | RSS |\n")
	fmt.Fprintf(w, "|---|---|---|---|---|---|---|---|---|\n")
	for _, s := range fig.ByShard {
		holds := byName[s.Name]
		sort.Strings(holds)
		fmt.Fprintf(w, "| %s | %d of %d | %s | %.0f (%.1f/s) | %s | %.1f s | %.2f/s | %.1f%% of a core | %.0f MB |\n",
			s.Name, s.Mailboxes, r.Config.N, cell(strings.Join(holds, ", ")), s.FanoutWrites, s.FanoutWritesPerSecond,
			cell(describeRequests(s.FanoutTopWrites, false, 3)), s.FanoutCPUSeconds, s.IdleWritesPerSecond, s.IdleCPUPercent, s.RSSMB)
	}
	if fig.MailboxesOfNoShard > 0 {
		fmt.Fprintf(w, "| (no shard named) | %d of %d | | | | | | | |\n", fig.MailboxesOfNoShard, r.Config.N)
	}
	fmt.Fprintf(w, "| front-proxy (every client's requests) | | | | | %.1f s | | %.1f%% of a core | |\n", fig.FrontProxyFanoutCPUSeconds, fig.FrontProxyIdleCPUPercent)
	fmt.Fprintf(w, "| cache server | | | | | %.1f s | | %.1f%% of a core | |\n", fig.CacheFanoutCPUSeconds, fig.CacheIdleCPUPercent)
	for _, ws := range fig.workspaces() {
		if strings.HasPrefix(ws.shard, "unknown") {
			fmt.Fprintf(w, "\nthe shard of the %s workspace: %s\n", ws.what, cell(ws.shard))
		}
	}
}
