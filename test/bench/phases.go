package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	statussummarizer "github.com/kcp-dev/edge-mc/pkg/status-summarizer"
	"github.com/kcp-dev/edge-mc/test/framework"
)

// noWebhookAdmission is the center kcp's argument of -no-webhook-admission (issue 17, item 7):
// kcp's webhook admission plugins are built anew on every write.
const noWebhookAdmission = "--disable-admission-plugins=apis.kcp.io/MutatingWebhook,apis.kcp.io/ValidatingWebhook"

// kcpAccepts checks that bin/kcp's start command takes the flag named by arg (--name=value), as
// `kcp start options` lists them, so that a run it cannot make fails before the set-up.
func kcpAccepts(ctx context.Context, arg string) error {
	name, _, _ := strings.Cut(arg, "=")
	bin, err := framework.RepoFile("bin", "kcp")
	if err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, bin, "start", "options").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s start options: %w\n%s", bin, err, out)
	}
	if !strings.Contains(string(out), name+" ") {
		return fmt.Errorf("%s does not take %s: `kcp start options` does not list it (kcp lets its start command take only some of the generic API server's flags, and this build refuses that one), so the center cannot be started with %s",
			bin, name, arg)
	}
	return nil
}

// run sets up the fleet, runs every phase, prints the table on out and writes the JSON.
func run(ctx context.Context, c config, out io.Writer) (*result, error) {
	if os.Getenv("EDGE_E2E_KUBECONFIG") != "" {
		return nil, errors.New("the fleet benchmark starts kcp servers of its own and measures their processes: unset EDGE_E2E_KUBECONFIG")
	}
	c.StatusTimeoutSeconds, c.IdleSeconds = c.statusTimeout.Seconds(), c.idle.Seconds()
	c.CenterKCPArgs = []string{}
	if c.NoWebhookAdmission {
		c.CenterKCPArgs = append(c.CenterKCPArgs, noWebhookAdmission)
	}
	res := &result{Config: c, Machine: machineNow()}
	say("machine: %d cores, load average %.2f %.2f %.2f, %.1f of %.1f GB available",
		res.Machine.Cores, res.Machine.LoadAverage[0], res.Machine.LoadAverage[1], res.Machine.LoadAverage[2], res.Machine.MemAvailableGBStart, res.Machine.MemTotalGB)
	if c.NoWebhookAdmission {
		if err := kcpAccepts(ctx, noWebhookAdmission); err != nil {
			return nil, fmt.Errorf("-no-webhook-admission: %w", err)
		}
		say("the center kcp runs with %s", noWebhookAdmission)
	}

	f, err := setUp(ctx, c, &res.Setup)
	failed := true
	defer func() { f.stop(failed || c.keep) }()
	if err != nil {
		return nil, fmt.Errorf("set-up: %w", err)
	}

	res.Sharded = f.placeShards(ctx)

	watchCtx, stopWatches := context.WithCancel(ctx)
	defer stopWatches()
	keys := workloadKeys(c.K, c.Secrets)
	mailboxes, edges := newView(c.N, keys), newView(c.N, keys)
	say("watching the assemblages in the mailboxes, the pclusters and the placements")
	feed, synced, err := f.watchAssemblages(watchCtx, mailboxes)
	if err != nil {
		return nil, err
	}
	f.feed = feed
	s, err := f.watchEdges(watchCtx, edges)
	if err != nil {
		return nil, err
	}
	synced = append(synced, s...)
	placements, s, err := f.watchPlacements(watchCtx)
	if err != nil {
		return nil, err
	}
	if !cache.WaitForCacheSync(ctx.Done(), append(synced, s...)...) {
		return nil, fmt.Errorf("the bench's watches did not sync: %w", ctx.Err())
	}

	if err := f.fanout(ctx, feed, mailboxes, edges, &res.Fanout, res.Sharded); err != nil {
		return nil, fmt.Errorf("fan-out: %w", err)
	}
	if err := f.update(ctx, mailboxes, edges, &res.Update); err != nil {
		return nil, fmt.Errorf("update: %w", err)
	}
	res.Collect = collectFigures{Enabled: c.Collect}
	if c.Collect {
		res.Collect.Collector, res.Collect.HealthRule = collectorName, healthRuleName
	}
	if err := f.status(ctx, placements, &res.Status, &res.Collect); err != nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	if err := f.measureIdle(ctx, &res.Idle, res.Sharded); err != nil {
		return nil, fmt.Errorf("idle: %w", err)
	}
	f.measureMemory(&res.Memory, res.Sharded)
	if err := f.raw(ctx, &res.Raw); err != nil {
		return nil, fmt.Errorf("raw: %w", err)
	}
	if c.keep {
		res.Bare.NotMeasured = "-keep leaves the fleet running, and the bare kcp is measured alone"
	} else {
		stopWatches()
		say("stopping the fleet (syncers, edge-controller-manager, both kcp servers) before the bare kcp")
		if f.sharded != nil {
			say("bare: the center was %d kcp shards; the bare kcp is one kcp, not sharded, and the idle ratio compares the shards' CPU together with it", len(f.shards))
		}
		f.stopProcesses()
		// The fleet's figures are in hand: a bare kcp that fails is reported, not fatal.
		if err := measureBare(ctx, c, &res.Bare); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			res.Bare = bareFigures{Workspaces: c.N, NotMeasured: err.Error()}
			say("bare: not measured: %v", err)
		}
	}
	res.ratios()

	printTable(out, res)
	printShards(out, res)
	if c.jsonOut != "" {
		if err := writeJSON(c.jsonOut, res); err != nil {
			return nil, err
		}
		say("wrote %s", c.jsonOut)
	}
	failed = false
	if c.Collect && !res.Collect.Measured {
		return res, fmt.Errorf("-collect: the status collector and health rule did not show what the edges hold: %s", res.Collect.NotMeasured)
	}
	if c.keep {
		f.describe()
		<-ctx.Done()
	}
	return res, nil
}

// ratios sets the figures that compare a phase with the raw client or the bare kcp of the run.
func (r *result) ratios() {
	ratio := func(a, b float64) float64 {
		if b <= 0 {
			return 0
		}
		return a / b
	}
	r.Fanout.MailboxRatioToRaw = ratio(r.Raw.MailboxSeconds, r.Fanout.MailboxSeconds)
	r.Fanout.EdgeRatioToRaw = ratio(r.Fanout.EdgeSeconds, r.Raw.MailboxSeconds+r.Raw.EdgeSeconds)
	r.Update.P90RatioToRaw = ratio(r.Update.P90Seconds, r.Raw.UpdateSeconds)
	if r.Bare.Measured {
		r.Idle.CenterKCPRatioToBare = ratio(r.Idle.CenterKCPCPUPercent, r.Bare.CPUPercent)
	}
}

func machineNow() machine {
	total, available := framework.Memory()
	return machine{Cores: goruntime.NumCPU(), LoadAverage: framework.LoadAverage(), MemTotalGB: float64(total) / 1e9, MemAvailableGBStart: float64(available) / 1e9}
}

// describe says how to reach the fleet that -keep leaves running.
func (f *fleet) describe() {
	say("the fleet keeps running until interrupted (-keep):")
	say("  center: KUBECONFIG=%s; ESPW %s, inventory %s, workloads %s", f.center.KubeconfigPath, f.espw, f.imw, f.wmw)
	for _, s := range f.shards {
		say("  center kcp %s (pid %d): profile http://%s/debug/pprof/", s.name, s.pid, s.profilerAddress)
	}
	if f.sharded != nil {
		say("  center front-proxy %s (pid %d), cache server (pid %d)", f.sharded.ProxyURL, f.sharded.FrontProxyPID(), f.sharded.CachePID())
	}
	say("  edge kcp (pid %d): KUBECONFIG=%s; pclusters root:pc-%s ...; profile http://%s/debug/pprof/", f.edge.PID(), f.edge.KubeconfigPath, f.dests[0].name, f.edge.ProfilerAddress)
	say("  edge-controller-manager (pid %d): http://%s/metrics, http://%s/debug/pprof/, log %s", f.ecm.PID(), f.ecmAddress, f.ecmPprofAddress, f.ecm.LogPath())
	if f.syncers != nil {
		say("  syncers (pid %d): http://%s/metrics, http://%s/debug/pprof/, log %s", f.syncers.PID(), f.syncersAddress, f.syncersPprofAddress, f.syncers.LogPath())
	} else {
		say("  push mode: the syncers run in edge-controller-manager")
	}
}

// cpuSample is the CPU seconds each process has used so far. shards holds each kcp process of
// the center's (one, unless the center is sharded), centerKCP their sum; frontProxy and cache
// are a sharded center's other processes.
type cpuSample struct {
	controller, syncers, centerKCP, edgeKCP, bench float64
	shards                                         []float64
	frontProxy, cache                              float64
}

func (f *fleet) cpu() cpuSample {
	s := cpuSample{
		controller: framework.CPUSeconds(f.ecm.PID()),
		syncers:    framework.CPUSeconds(f.syncersPID()),
		edgeKCP:    framework.CPUSeconds(f.edge.PID()),
		bench:      framework.CPUSeconds(os.Getpid()),
	}
	for _, sh := range f.shards {
		cpu := framework.CPUSeconds(sh.pid)
		s.shards = append(s.shards, cpu)
		s.centerKCP += cpu
	}
	if f.sharded != nil {
		s.frontProxy, s.cache = framework.CPUSeconds(f.sharded.FrontProxyPID()), framework.CPUSeconds(f.sharded.CachePID())
	}
	return s
}

func (a cpuSample) since(b cpuSample) cpuSample {
	d := cpuSample{controller: a.controller - b.controller, syncers: a.syncers - b.syncers, centerKCP: a.centerKCP - b.centerKCP,
		edgeKCP: a.edgeKCP - b.edgeKCP, bench: a.bench - b.bench, frontProxy: a.frontProxy - b.frontProxy, cache: a.cache - b.cache}
	for i := range min(len(a.shards), len(b.shards)) {
		d.shards = append(d.shards, a.shards[i]-b.shards[i])
	}
	return d
}

// stall is how long a phase may go without progress before the benchmark gives up on it. The
// machine may be shared and slow: a phase that still moves is waited for.
const stall = 5 * time.Minute

// await waits for ch, saying progress's message every 10 s. It gives up when progress's count
// has not grown for patience.
func await(ctx context.Context, ch <-chan time.Time, patience time.Duration, what string, progress func() (int, string)) (time.Time, error) {
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	last, lastChange := -1, time.Now()
	for {
		select {
		case at := <-ch:
			return at, nil
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case now := <-tick.C:
			count, msg := progress()
			say("%s", msg)
			if count > last {
				last, lastChange = count, now
			} else if now.Sub(lastChange) >= patience {
				return time.Time{}, fmt.Errorf("%s: no progress for %s: %s", what, patience, msg)
			}
		}
	}
}

// fanout creates the EdgePlacements and times until every destination's assemblage carries all
// its objects in its mailbox, and until every object is at its edge.
// sharded, if not nil, gets each shard's figures.
func (f *fleet) fanout(ctx context.Context, feed *assemblageFeed, mailboxes, edges *view, fig *fanoutFigures, sharded *shardedFigures) error {
	c := f.cfg
	fig.Objects, fig.Assemblages = c.N*c.K, c.N
	wmw, err := dynamic.NewForConfig(f.center.ConfigFor(f.wmw))
	if err != nil {
		return err
	}
	inMailboxes := mailboxes.await(func(v *view) bool { return v.complete == c.N })
	atEdges := edges.await(func(v *view) bool { return v.complete == c.N })
	progress := func() (int, string) {
		mp, mc, _ := mailboxes.counts()
		ep, ec, _ := edges.counts()
		msg := fmt.Sprintf("fan-out: %d of %d objects in the mailboxes' assemblages (%d of %d destinations complete), %d at the edges (%d complete)",
			mp, fig.Objects, mc, c.N, ep, ec)
		if n, why := feed.refusals(); n > 0 {
			msg += fmt.Sprintf("; %d assemblages cannot be read, for example: %s", n, why)
		}
		return mp + ep, msg
	}
	var profiles <-chan error
	if c.profileDir != "" {
		profiles = f.takeProfiles(ctx, "fanout", c.ProfileSeconds)
	}
	say("fan-out: creating %d EdgePlacements for %d destinations, %d objects each", c.P, c.N, c.K)
	centerRequests, edgeRequests := f.countCenter(ctx), startCounting(ctx, f.edge)
	cpu0 := f.cpu()
	t0 := time.Now()
	for j := range c.P {
		if _, err := wmw.Resource(placementsGVR).Create(ctx, placementObject(j, c.Collect), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating EdgePlacement %s: %w", placementName(j), err)
		}
	}
	mailboxesAt, err := await(ctx, inMailboxes, stall, "every assemblage complete in its mailbox", progress)
	if err != nil {
		return err
	}
	mailboxPhase := centerRequests.since(ctx)
	fig.MailboxSeconds = mailboxesAt.Sub(t0).Seconds()
	fig.MailboxPhaseCenterWrites = mailboxPhase.writes(fig.MailboxSeconds)
	fig.MailboxPhaseCenterWritesTotal = mailboxPhase.sum(framework.IsWrite)
	say("fan-out: every assemblage complete in its mailbox after %.1fs (%.0f center writes, %.0f of them assemblages)",
		fig.MailboxSeconds, fig.MailboxPhaseCenterWritesTotal, mailboxPhase.sum(isAssemblageWrite))
	edgesAt, err := await(ctx, atEdges, stall, "all objects at the edges", progress)
	if err != nil {
		return err
	}
	cpu := f.cpu().since(cpu0)
	fig.EdgeSeconds = edgesAt.Sub(t0).Seconds()
	perShard := centerRequests.sinceEach(ctx)
	sharded.recordFanout(perShard, cpu, fig.EdgeSeconds)
	whole := sumDeltas(perShard)
	fig.CenterKCPRequests = whole.rates(fig.EdgeSeconds, nil, topRequests)
	fig.AssemblageWrites = whole.sum(isAssemblageWrite)
	fig.AssemblageWritesPerDestination = fig.AssemblageWrites / float64(c.N)
	fig.AssemblageStatusWrites = whole.sum(isAssemblageStatusWrite)
	fig.CenterWritesTotal = whole.sum(framework.IsWrite)
	fig.AssemblageBytes = feed.bytes()
	fig.AssemblageBytesPerDestination = float64(fig.AssemblageBytes) / float64(c.N)
	edgeDelta := edgeRequests.since(ctx)
	fig.EdgeKCPRequests = edgeDelta.rates(fig.EdgeSeconds, nil, topRequests)
	fig.CenterKCPRefused, fig.EdgeKCPRefused = whole.sum(isRefused), edgeDelta.sum(isRefused)
	_, fig.EdgeDestinations, _ = edges.counts()
	say("fan-out: all %d objects at the edges after %.1fs; %.0f assemblage writes (%.2f per destination), %.0f bytes of assemblages per destination",
		fig.Objects, fig.EdgeSeconds, fig.AssemblageWrites, fig.AssemblageWritesPerDestination, fig.AssemblageBytesPerDestination)
	fig.MailboxObjectsPerSecond = float64(fig.Objects) / fig.MailboxSeconds
	perMailbox := seconds(t0, mailboxes.completeTimes())
	fig.MailboxP50Seconds, fig.MailboxP99Seconds = percentile(perMailbox, 0.50), percentile(perMailbox, 0.99)
	perEdge := seconds(t0, edges.completeTimes())
	fig.EdgeP50Seconds, fig.EdgeP99Seconds = percentile(perEdge, 0.50), percentile(perEdge, 0.99)
	fig.ControllerCPUSeconds, fig.SyncersCPUSeconds, fig.CenterKCPCPUSeconds, fig.EdgeKCPCPUSeconds, fig.BenchCPUSeconds =
		cpu.controller, cpu.syncers, cpu.centerKCP, cpu.edgeKCP, cpu.bench
	if profiles != nil {
		if err := <-profiles; err != nil {
			say("profiles: %v", err)
		}
	}
	return nil
}

// takeProfiles takes CPU profiles of both kcp servers, edge-controller-manager and the syncers'
// process at once, for
// the given seconds, into -profile, named after the phase; the channel receives their errors
// when all are done.
func (f *fleet) takeProfiles(ctx context.Context, phase string, seconds int) <-chan error {
	c := f.cfg
	type target struct{ name, address string }
	var targets []target
	for _, s := range f.shards {
		name := "kcp-center"
		if f.sharded != nil {
			name += "-" + s.name
		}
		targets = append(targets, target{name, s.profilerAddress})
	}
	targets = append(targets, target{"kcp-edge", f.edge.ProfilerAddress}, target{"edge-controller-manager", f.ecmPprofAddress})
	if f.syncers != nil {
		targets = append(targets, target{"syncers", f.syncersPprofAddress})
	}
	done := make(chan error, 1)
	if err := os.MkdirAll(c.profileDir, 0o755); err != nil {
		done <- err
		return done
	}
	say("profiles: taking %ds CPU profiles of the center's kcp (every shard), the edge kcp, edge-controller-manager and the syncers into %s", seconds, c.profileDir)
	go func() {
		errs := make([]error, len(targets))
		_ = framework.ForEach(len(targets), len(targets), func(i int) error {
			t := targets[i]
			errs[i] = saveProfile(ctx, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", t.address, seconds),
				filepath.Join(c.profileDir, t.name+"-"+phase+".cpu.pprof"))
			return nil
		})
		done <- errors.Join(errs...)
	}()
	return done
}

func saveProfile(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("GET %s: %s %s", url, resp.Status, body)
	}
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, resp.Body); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// update gives the first placement's Deployment a new image and times until each of its
// destinations' assemblages carries it, and until each of their edges has it.
func (f *fleet) update(ctx context.Context, mailboxes, edges *view, fig *updateFigures) error {
	dests := f.destinationsOf(0)
	fig.Destinations = len(dests)
	key := objectKey(deploymentsGVR, deploymentName)
	isNew := func(u *unstructured.Unstructured) bool { return imageOf(u) == updatedImage }
	mailboxes.startProbe(key, dests, isNew)
	edges.startProbe(key, dests, isNew)
	inMailboxes := mailboxes.await(func(v *view) bool { return v.probed == len(dests) })
	atEdges := edges.await(func(v *view) bool { return v.probed == len(dests) })
	progress := func() (int, string) {
		_, _, inAssemblages := mailboxes.counts()
		_, _, atEdges := edges.counts()
		return inAssemblages + atEdges, fmt.Sprintf("update: %d of %d assemblages and %d of %d edges have the new image", inAssemblages, len(dests), atEdges, len(dests))
	}
	wmw, err := dynamic.NewForConfig(f.center.ConfigFor(f.wmw))
	if err != nil {
		return err
	}
	deployments := wmw.Resource(deploymentsGVR).Namespace(groupNamespace(0))
	say("update: the image of Deployment %s/%s, placed at %d destinations", groupNamespace(0), deploymentName, len(dests))
	requests := f.countCenter(ctx)
	var profiles <-chan error
	if f.cfg.profileDir != "" {
		profiles = f.takeProfiles(ctx, "update", f.cfg.ProfileSeconds)
	}
	t0 := time.Now()
	// The status summarizer writes the object's executing-count annotation now and then: read
	// and write again on a conflict, as any client would.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		dep, err := deployments.Get(ctx, deploymentName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
		containers[0].(map[string]any)["image"] = updatedImage
		if err := unstructured.SetNestedSlice(dep.Object, containers, "spec", "template", "spec", "containers"); err != nil {
			return err
		}
		_, err = deployments.Update(ctx, dep, metav1.UpdateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("updating Deployment %s/%s: %w", groupNamespace(0), deploymentName, err)
	}
	if _, err := await(ctx, inMailboxes, stall, "the new image in every assemblage", progress); err != nil {
		return err
	}
	at, err := await(ctx, atEdges, stall, "the new image at every edge", progress)
	if err != nil {
		return err
	}
	fig.MaxSeconds = at.Sub(t0).Seconds()
	delta := requests.since(ctx)
	fig.AssemblageWrites = delta.sum(isAssemblageWrite)
	fig.CenterWrites = delta.writes(fig.MaxSeconds)
	fig.CenterWritesTotal = delta.sum(framework.IsWrite)
	fig.CenterKCPRefused = delta.sum(isRefused)
	inAssemblages := seconds(t0, mailboxes.probeTimes(dests))
	fig.MailboxP50Seconds, fig.MailboxP90Seconds = percentile(inAssemblages, 0.50), percentile(inAssemblages, 0.90)
	fig.MailboxMaxSeconds = inAssemblages[len(inAssemblages)-1]
	times := seconds(t0, edges.probeTimes(dests))
	fig.P50Seconds, fig.P90Seconds, fig.P99Seconds = percentile(times, 0.50), percentile(times, 0.90), percentile(times, 0.99)
	say("update: in every assemblage after %.2fs (p90 %.2fs), at every edge after %.2fs (p90 %.2fs); %.0f assemblage writes",
		fig.MailboxMaxSeconds, fig.MailboxP90Seconds, fig.MaxSeconds, fig.P90Seconds, fig.AssemblageWrites)
	if profiles != nil {
		if err := <-profiles; err != nil {
			say("profiles: %v", err)
		}
	}
	return nil
}

// status turns the first placement's Deployment ready at some of its destinations, one at a
// time, and times until the placement's status.summary.ready counts each. It ends early, as not
// measured, when the summary does not appear or does not follow. With -collect, once they are
// ready, it checks what the status collector and the health rule show (collect).
func (f *fleet) status(ctx context.Context, placements *placementsView, fig *statusFigures, collect *collectFigures) error {
	requests, cpu0, t0 := f.countCenter(ctx), f.cpu(), time.Now()
	defer func() {
		delta, cpu := requests.since(ctx), f.cpu().since(cpu0)
		fig.Seconds, fig.CenterWritesTotal, fig.AssemblageStatusWrites = time.Since(t0).Seconds(), delta.sum(framework.IsWrite), delta.sum(isAssemblageStatusWrite)
		fig.ControllerCPUSeconds, fig.SyncersCPUSeconds = cpu.controller, cpu.syncers
	}()
	if collect.Enabled {
		collect.NotMeasured = "the status phase did not turn the Deployments ready"
	}
	all := f.destinationsOf(0)
	m := min(f.cfg.StatusDestinations, len(all))
	fig.Destinations = m
	timeout := f.cfg.statusTimeout
	name := placementName(0)
	say("status: waiting (at most %s) for EdgePlacement %s's status.summary", timeout, name)
	if _, err := await(ctx, placements.await(name, func(s *edgev1alpha1.DestinationCounts) bool { return s != nil }), timeout, "the summary",
		func() (int, string) { return 0, "status: EdgePlacement " + name + " has no status.summary yet" }); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		fig.NotMeasured = fmt.Sprintf("EdgePlacement %s had no status.summary %s after the fan-out (is the status summarizer running?)", name, timeout)
		say("status: not measured: %s", fig.NotMeasured)
		return nil
	}
	// Isolated changes: each after the summarizer's coalescing period has passed since the
	// summary last changed, so that it is written at once, as a change in a quiet fleet is.
	isolated, err := f.statusChanges(ctx, placements, fig, all, m, true, statussummarizer.CoalescePeriod)
	if err != nil || isolated == nil {
		return err
	}
	if collect.Enabled {
		collect.NotMeasured = ""
		if err := f.checkCollect(ctx, placements, m, collect); err != nil {
			return err
		}
	}
	// A stream of changes, each made as soon as the one before shows: each waits for the end of
	// the summarizer's period begun by the one before (one placement status write a period).
	stream, err := f.statusChanges(ctx, placements, fig, all, m, false, 0)
	if err != nil || stream == nil {
		return err
	}
	sort.Float64s(isolated)
	sort.Float64s(stream)
	p50, p99, maxSeconds := percentile(isolated, 0.50), percentile(isolated, 0.99), isolated[len(isolated)-1]
	fig.Measured, fig.P50Seconds, fig.P99Seconds, fig.MaxSeconds = true, &p50, &p99, &maxSeconds
	fig.StreamP50Seconds, fig.StreamP99Seconds = percentile(stream, 0.50), percentile(stream, 0.99)
	fig.CoalescePeriodSeconds = statussummarizer.CoalescePeriod.Seconds()
	say("status: %d isolated changes, p50 %.2fs, p99 %.2fs; %d in a stream, p50 %.2fs, p99 %.2fs", m, p50, p99, m, fig.StreamP50Seconds, fig.StreamP99Seconds)
	return nil
}

// statusChanges turns the first placement's Deployment ready (or, with ready false, not ready
// again) at m of its destinations all, one at a time, each after quiet has passed since the
// summary last changed, and returns the seconds from each change to the summary's ready count
// following it. It returns nil, with fig.NotMeasured said, when the summary does not follow.
func (f *fleet) statusChanges(ctx context.Context, placements *placementsView, fig *statusFigures, all []int, m int, ready bool, quiet time.Duration) ([]float64, error) {
	timeout := f.cfg.statusTimeout
	name := placementName(0)
	what := "ready"
	if !ready {
		what = "not ready again"
	}
	var times []float64
	lastSeen := time.Now()
	for k := range m {
		if err := sleep(ctx, quiet-time.Since(lastSeen)); err != nil {
			return nil, err
		}
		d := f.dests[all[k*len(all)/m]]
		before := placements.summary(name).Ready
		counted := placements.await(name, func(s *edgev1alpha1.DestinationCounts) bool {
			return s != nil && (ready && s.Ready > before || !ready && s.Ready < before)
		})
		t0 := time.Now()
		if err := setDeploymentReady(ctx, d, ready); err != nil {
			return nil, err
		}
		at, err := await(ctx, counted, timeout, "the summary", func() (int, string) {
			return 0, fmt.Sprintf("status: summary of %s is %+v, waiting for ready to move from %d", name, placements.summary(name), before)
		})
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			fig.NotMeasured = fmt.Sprintf("status.summary.ready of EdgePlacement %s stayed at %d for %s after the Deployment at %s turned %s (%d of %d changes seen)",
				name, before, timeout, d.name, what, k, m)
			say("status: not measured: %s", fig.NotMeasured)
			return nil, nil
		}
		lastSeen = at
		times = append(times, at.Sub(t0).Seconds())
	}
	return times, nil
}

// setDeploymentReady writes, at the destination's edge, the status a Deployment controller
// writes once its replicas are available; with ready false, once none is available (a pod
// lost).
func setDeploymentReady(ctx context.Context, d *destination, ready bool) error {
	client, err := dynamic.NewForConfig(d.pcluster.Config)
	if err != nil {
		return err
	}
	deployments := client.Resource(deploymentsGVR).Namespace(groupNamespace(d.group))
	dep, err := deployments.Get(ctx, deploymentName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading the Deployment at %s: %w", d.name, err)
	}
	replicas, _, _ := unstructured.NestedInt64(dep.Object, "spec", "replicas")
	now := time.Now().UTC().Format(time.RFC3339)
	condition := func(condType, status, reason string) map[string]any {
		return map[string]any{"type": condType, "status": status, "reason": reason, "lastUpdateTime": now, "lastTransitionTime": now}
	}
	available, availableCondition := replicas, condition("Available", "True", "MinimumReplicasAvailable")
	if !ready {
		available, availableCondition = 0, condition("Available", "False", "MinimumReplicasUnavailable")
	}
	dep.Object["status"] = map[string]any{
		"observedGeneration": dep.GetGeneration(),
		"replicas":           replicas,
		"updatedReplicas":    replicas,
		"readyReplicas":      available,
		"availableReplicas":  available,
		"conditions":         []any{availableCondition, condition("Progressing", "True", "NewReplicaSetAvailable")},
	}
	if _, err := deployments.UpdateStatus(ctx, dep, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("writing the Deployment's status at %s: %w", d.name, err)
	}
	return nil
}

// measureIdle samples the processes' CPU time over the idle window, after a short settling.
// sharded, if not nil, gets each shard's figures.
func (f *fleet) measureIdle(ctx context.Context, fig *idleFigures, sharded *shardedFigures) error {
	say("idle: settling %s, then measuring CPU over %s with nothing changing", settle, f.cfg.idle)
	if err := sleep(ctx, settle); err != nil {
		return err
	}
	var profiles <-chan error
	if f.cfg.profileDir != "" {
		profiles = f.takeProfiles(ctx, "idle", min(f.cfg.ProfileSeconds, int(f.cfg.idle.Seconds())))
	}
	centerRequests, edgeRequests := f.countCenter(ctx), startCounting(ctx, f.edge)
	cpu0, t0 := f.cpu(), time.Now()
	if err := sleep(ctx, f.cfg.idle); err != nil {
		return err
	}
	cpu, window := f.cpu().since(cpu0), time.Since(t0).Seconds()
	fig.WindowSeconds = window
	perShard := centerRequests.sinceEach(ctx)
	sharded.recordIdle(perShard, cpu, window)
	fig.CenterKCPRequests = sumDeltas(perShard).rates(window, nil, 0)
	fig.EdgeKCPRequests = edgeRequests.top(ctx, window)
	if profiles != nil {
		if err := <-profiles; err != nil {
			say("profiles: %v", err)
		}
	}
	percent := func(s float64) float64 { return 100 * s / window }
	fig.ControllerCPUPercent, fig.SyncersCPUPercent = percent(cpu.controller), percent(cpu.syncers)
	fig.CenterKCPCPUPercent, fig.EdgeKCPCPUPercent = percent(cpu.centerKCP), percent(cpu.edgeKCP)
	say("idle: controllers %.1f%%, syncers %.1f%%, center kcp %.1f%%, edge kcp %.1f%% of a core",
		fig.ControllerCPUPercent, fig.SyncersCPUPercent, fig.CenterKCPCPUPercent, fig.EdgeKCPCPUPercent)
	return nil
}

// measureMemory reads the processes' RSS; sharded, if not nil, gets each shard's.
func (f *fleet) measureMemory(fig *memoryFigures, sharded *shardedFigures) {
	mb := func(b int64) float64 { return float64(b) / 1e6 }
	cur, peak, _ := framework.RSS(f.ecm.PID())
	fig.ControllerRSSMB, fig.ControllerPeakRSSMB = mb(cur), mb(peak)
	cur, _, _ = framework.RSS(f.syncersPID())
	fig.SyncersRSSMB = mb(cur)
	fig.SyncersRSSPerSyncerMB = fig.SyncersRSSMB / float64(f.cfg.N)
	center := f.centerRSS()
	if sharded != nil {
		for i := range min(len(sharded.ByShard), len(f.shards)) {
			rss, _, _ := framework.RSS(f.shards[i].pid)
			sharded.ByShard[i].RSSMB = mb(rss)
		}
	}
	edge, _, _ := framework.RSS(f.edge.PID())
	fig.CenterKCPRSSMB, fig.EdgeKCPRSSMB = mb(center), mb(edge)
	fig.CenterKCPFreshRSSMB, fig.EdgeKCPFreshRSSMB = mb(f.centerRSSFresh), mb(f.edgeRSSFresh)
	fig.CenterKCPMBPerDestination = mb(center-f.centerRSSFresh) / float64(f.cfg.N)
	fig.EdgeKCPMBPerPCluster = mb(edge-f.edgeRSSFresh) / float64(f.cfg.N)
	fig.CenterKCPSetUpRSSMB = mb(f.centerRSSSetUp)
	fig.CenterKCPMBPerDestinationFromSetUp = mb(center-f.centerRSSSetUp) / float64(f.cfg.N)
}

// raw writes N*K objects with a plain parallel client into a namespace of their own in every
// mailbox (K ConfigMaps each, of the workload's sizes: mailboxes serve no Deployments), then the
// workload's N*K objects into every pcluster, and times each; then it updates one ConfigMap in
// every mailbox, N writes, and times them.
func (f *fleet) raw(ctx context.Context, fig *rawFigures) error {
	c := f.cfg
	fig.Objects, fig.Parallelism = c.N*c.K, c.Parallel
	mailboxes := make([]dynamic.Interface, c.N)
	pclusters := make([]dynamic.Interface, c.N)
	for i, d := range f.dests {
		var err error
		if mailboxes[i], err = dynamic.NewForConfig(f.center.ConfigFor(d.mailbox)); err != nil {
			return err
		}
		if pclusters[i], err = dynamic.NewForConfig(d.pcluster.Config); err != nil {
			return err
		}
	}
	say("raw: creating namespace %s in every mailbox and pcluster (not timed)", rawNamespace)
	if err := framework.ForEach(2*c.N, c.Parallel, func(i int) error {
		client := mailboxes[i%c.N]
		if i >= c.N {
			client = pclusters[i%c.N]
		}
		_, err := client.Resource(namespacesGVR).Create(ctx, namespaceObject(rawNamespace), metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	write := func(where string, clients []dynamic.Interface, objects []*unstructured.Unstructured) (float64, cpuSample, error) {
		var done atomic.Int64
		say("raw: writing %d objects into the %s, %d at a time", fig.Objects, where, c.Parallel)
		stop := every(10*time.Second, func() string {
			return fmt.Sprintf("raw: %d of %d objects into the %s", done.Load(), fig.Objects, where)
		})
		defer stop()
		cpu0, t0 := f.cpu(), time.Now()
		err := framework.ForEach(fig.Objects, c.Parallel, func(i int) error {
			u := objects[i%c.K]
			if _, err := clients[i/c.K].Resource(gvrOf(u)).Namespace(rawNamespace).Create(ctx, u.DeepCopy(), metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating %s %s in the %s of %s: %w", u.GetKind(), u.GetName(), where, f.dests[i/c.K].name, err)
			}
			done.Add(1)
			return nil
		})
		d, cpu := time.Since(t0).Seconds(), f.cpu().since(cpu0)
		say("raw: %d objects into the %s in %.1fs (%.0f/s)", fig.Objects, where, d, float64(fig.Objects)/d)
		return d, cpu, err
	}
	var err error
	var cpu cpuSample
	if fig.MailboxSeconds, cpu, err = write("mailboxes", mailboxes, configMapObjects(rawNamespace, c.K, c.ObjectSize)); err != nil {
		return err
	}
	fig.MailboxObjectsPerSecond, fig.MailboxCenterKCPCPUSeconds = float64(fig.Objects)/fig.MailboxSeconds, cpu.centerKCP
	if fig.EdgeSeconds, cpu, err = write("pclusters", pclusters, workloadObjects(rawNamespace, c.K, c.ObjectSize, false)); err != nil {
		return err
	}
	fig.EdgeObjectsPerSecond, fig.EdgeKCPCPUSeconds = float64(fig.Objects)/fig.EdgeSeconds, cpu.edgeKCP

	fig.Updates = c.N
	patch, err := json.Marshal(map[string]any{"data": map[string]any{"payload": updatedPayload(c.ObjectSize)}})
	if err != nil {
		return err
	}
	name := configMapName(0)
	say("raw: %d writes, ConfigMap %s/%s updated in every mailbox, %d at a time", c.N, rawNamespace, name, c.Parallel)
	t0 := time.Now()
	if err := framework.ForEach(c.N, c.Parallel, func(i int) error {
		if _, err := mailboxes[i].Resource(configMapsGVR).Namespace(rawNamespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("updating ConfigMap %s/%s in the mailbox of %s: %w", rawNamespace, name, f.dests[i].name, err)
		}
		return nil
	}); err != nil {
		return err
	}
	fig.UpdateSeconds = time.Since(t0).Seconds()
	say("raw: %d updates in %.2fs", c.N, fig.UpdateSeconds)
	return nil
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
