// Command summarizer benchmarks the status summarizer, in one run on one kcp:
//
//  1. set-up (timed, not counted): the ESPW, an inventory workspace with N SyncTargets behind one
//     Location, a workload workspace with K Deployments and an EdgePlacement selecting them, and
//     edge-controller-manager with all its controllers, until the placement translator has
//     written the N*K copies into the N mailboxes;
//  2. storm: a parallel client plays the syncers: in every mailbox it writes what a syncer writes
//     once the copies are applied and ready at its edge (SyncerConfig status.applied naming every
//     copy's version, then a ready status on each Deployment copy), N*(K+1) writes; the clock runs
//     until the placement's summary says ready at N, and the writes into the workload workspace
//     (placement status, object annotations) are counted;
//  3. latency: M times, one copy's status turns failed (then back), and the clock runs until the
//     placement's summary shows it: p50, p99, max;
//
// then prints a table (and JSON with -json), with the controller's RSS and CPU. The syncers'
// own share of the edge-to-summary path (the edge watch, their status coalescing) is measured
// by the fleet benchmark, which runs real syncers; this one isolates the summarizer.
// Run it with `make bench-summarizer` or `go run ./test/bench/summarizer -n 1000 -k 10`.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/workspaces"
	"github.com/kcp-dev/edge-mc/test/framework"
)

var (
	syncTargetsGVR = edgev1alpha1.SchemeGroupVersion.WithResource("synctargets")
	locationsGVR   = edgev1alpha1.SchemeGroupVersion.WithResource("locations")
	placementsGVR  = edgev1alpha1.SchemeGroupVersion.WithResource("edgeplacements")
	deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	namespacesGVR  = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	// syncerConfigsGVR: the one SyncerConfig of each mailbox.
	syncerConfigsGVR = edgev1alpha1.SchemeGroupVersion.WithResource("syncerconfigs")
)

type result struct {
	N                      int     `json:"destinations"`
	K                      int     `json:"objectsPerDestination"`
	Samples                int     `json:"latencySamples"`
	SetupSeconds           float64 `json:"setupSeconds"`
	StormWrites            int     `json:"stormWrites"`
	StormSeconds           float64 `json:"stormSeconds"`
	StormWritesPerSecond   float64 `json:"stormWritesPerSecond"`
	SummaryReadySeconds    float64 `json:"summaryReadySeconds"`
	PlacementStatusWrites  int64   `json:"placementStatusWrites"`
	ObjectWrites           int64   `json:"objectWrites"`
	WMWWritesPerSecond     float64 `json:"wmwWritesPerSecond"`
	LatencyP50Seconds      float64 `json:"latencyP50Seconds"`
	LatencyP99Seconds      float64 `json:"latencyP99Seconds"`
	LatencyMaxSeconds      float64 `json:"latencyMaxSeconds"`
	ControllerRSSMB        float64 `json:"controllerRSSMB"`
	ControllerPeakRSSMB    float64 `json:"controllerPeakRSSMB"`
	ControllerCPUSeconds   float64 `json:"controllerCPUSeconds"`
	IdleControllerCPUShare float64 `json:"idleControllerCPUPercentOfOneCore"`
	KCPRSSMB               float64 `json:"kcpRSSMB"`
	LoadAverage            string  `json:"loadAverage"`
}

func main() {
	n := flag.Int("n", 300, "number of destinations (SyncTargets, each with its mailbox)")
	k := flag.Int("k", 10, "number of Deployments placed on every destination")
	samples := flag.Int("samples", 40, "number of single status changes timed")
	parallel := flag.Int("parallel", 16, "parallel requests of the clients that set things up and play the syncers")
	workers := flag.Int("workers", 16, "edge-controller-manager --workers")
	jsonOut := flag.String("json", "", "also write the figures as JSON to this file")
	flag.Parse()
	if err := run(*n, *k, *samples, *parallel, *workers, *jsonOut); err != nil {
		fmt.Fprintf(os.Stderr, "summarizer benchmark: %v\n", err)
		os.Exit(1)
	}
}

func say(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s  "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

type bench struct {
	ctx      context.Context
	s        *framework.Server
	binDir   string
	espw     logicalcluster.Path
	imw, wmw logicalcluster.Path
	wmwDyn   dynamic.Interface
	parallel int
}

func run(n, k, samples, parallel, workers int, jsonOut string) error {
	ctx := context.Background()
	res := result{N: n, K: k, Samples: samples}
	say("starting kcp")
	s, err := framework.StartKCP()
	if err != nil {
		return err
	}
	defer s.Stop()
	binDir, err := framework.BuildCommands()
	if err != nil {
		return err
	}
	defer os.RemoveAll(binDir)
	b := &bench{ctx: ctx, s: s, binDir: binDir, parallel: parallel,
		espw: logicalcluster.NewPath("root:bench:espw"), imw: logicalcluster.NewPath("root:bench:imw"), wmw: logicalcluster.NewPath("root:bench:wmw")}
	setupStart := time.Now()
	for _, args := range [][]string{
		{"init", "--espw", b.espw.String()},
		{"ensure", "imw", b.imw.String(), "--espw", b.espw.String()},
		{"ensure", "wmw", b.wmw.String(), "--espw", b.espw.String()},
	} {
		if err := b.kubectlEdge(args...); err != nil {
			return err
		}
	}
	if b.wmwDyn, err = dynamic.NewForConfig(s.ConfigFor(b.wmw)); err != nil {
		return err
	}
	ports, err := framework.FreePorts(1)
	if err != nil {
		return err
	}
	logFile, err := os.Create(filepath.Join(binDir, "ecm.log"))
	if err != nil {
		return err
	}
	cm := exec.Command(filepath.Join(binDir, "edge-controller-manager"), "--kubeconfig", s.KubeconfigPath,
		"--espw", b.espw.String(), "--workers", strconv.Itoa(workers), "--http-address", "127.0.0.1:"+strconv.Itoa(ports[0]))
	cm.Stdout, cm.Stderr = logFile, logFile
	if err := cm.Start(); err != nil {
		return err
	}
	defer func() { _ = cm.Process.Signal(syscall.SIGTERM); _ = cm.Wait() }()

	if err := b.inventory(n); err != nil {
		return err
	}
	if err := b.workload(k); err != nil {
		return err
	}
	copies, err := b.waitForCopies(n, k)
	if err != nil {
		return fmt.Errorf("%w (controller log: %s)", err, logFile.Name())
	}
	res.SetupSeconds = time.Since(setupStart).Seconds()
	say("set-up done in %.0fs: %d copies in %d mailboxes", res.SetupSeconds, len(copies), n)

	// 2. The storm.
	counter, stopCounting, err := b.countWMWWrites()
	if err != nil {
		return err
	}
	ready := b.watchSummary(func(c edgev1alpha1.DestinationCounts) bool { return int(c.Ready) == n })
	byMailbox := map[dynamic.ResourceInterface][]mailboxCopy{}
	var configs []dynamic.ResourceInterface
	for _, c := range copies {
		if byMailbox[c.config] == nil {
			configs = append(configs, c.config)
		}
		byMailbox[c.config] = append(byMailbox[c.config], c)
	}
	say("storm: %d copies in %d mailboxes marked applied (one SyncerConfig status write per mailbox) and ready, %d mailboxes at a time", len(copies), len(configs), parallel)
	start := time.Now()
	var writes atomic.Int64
	if err := framework.ForEach(len(configs), parallel, func(i int) error {
		return markReady(ctx, configs[i], byMailbox[configs[i]], &writes)
	}); err != nil {
		return err
	}
	res.StormSeconds = time.Since(start).Seconds()
	res.StormWrites = int(writes.Load())
	res.StormWritesPerSecond = float64(res.StormWrites) / res.StormSeconds
	if err := wait(ready, 10*time.Minute, "the summary to show ready at every destination"); err != nil {
		return err
	}
	res.SummaryReadySeconds = time.Since(start).Seconds()
	time.Sleep(3 * time.Second) // the last coalesced object writes
	stopCounting()
	res.PlacementStatusWrites, res.ObjectWrites = counter.placement.Load(), counter.objects.Load()
	res.WMWWritesPerSecond = float64(res.PlacementStatusWrites+res.ObjectWrites) / (res.SummaryReadySeconds + 3)
	say("storm: %d writes in %.1fs; summary ready at %d after %.1fs; %d placement status and %d object writes into the workload workspace",
		res.StormWrites, res.StormSeconds, n, res.SummaryReadySeconds, res.PlacementStatusWrites, res.ObjectWrites)

	// 3. Single changes, each after a quiet period longer than the summarizer's coalescing period
	// (a change within it waits for the period's end, as the storm shows).
	var latencies []float64
	for i := 0; i < samples; i++ {
		time.Sleep(1500 * time.Millisecond)
		c := copies[rand.N(len(copies))]
		for !c.hasStatus {
			c = copies[rand.N(len(copies))]
		}
		for _, failed := range []bool{true, false} {
			want := 0
			if failed {
				want = 1
			}
			seen := b.watchSummary(func(counts edgev1alpha1.DestinationCounts) bool { return int(counts.Failed) == want })
			start := time.Now()
			if err := c.setStatus(ctx, failed); err != nil {
				return err
			}
			if err := wait(seen, time.Minute, "the summary to show a status change"); err != nil {
				return err
			}
			latencies = append(latencies, time.Since(start).Seconds())
			time.Sleep(1500 * time.Millisecond)
		}
	}
	sort.Float64s(latencies)
	res.LatencyP50Seconds = latencies[len(latencies)/2]
	res.LatencyP99Seconds = latencies[(len(latencies)*99)/100]
	res.LatencyMaxSeconds = latencies[len(latencies)-1]
	res.LoadAverage = loadAverage()

	say("idle: 30s with nothing changing")
	cpuBefore := framework.CPUSeconds(cm.Process.Pid)
	time.Sleep(30 * time.Second)
	res.IdleControllerCPUShare = 100 * (framework.CPUSeconds(cm.Process.Pid) - cpuBefore) / 30
	cur, peak, _ := framework.RSS(cm.Process.Pid)
	res.ControllerRSSMB, res.ControllerPeakRSSMB = float64(cur)/1e6, float64(peak)/1e6
	res.ControllerCPUSeconds = framework.CPUSeconds(cm.Process.Pid)
	kcpRSS, _, _ := framework.RSS(s.PID())
	res.KCPRSSMB = float64(kcpRSS) / 1e6

	printTable(res)
	if jsonOut != "" {
		raw, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(jsonOut, append(raw, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func (b *bench) kubectlEdge(args ...string) error {
	cmd := exec.Command(filepath.Join(b.binDir, "kubectl-edge"), append(args, "--kubeconfig", b.s.KubeconfigPath)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("kubectl edge %v: %v\n%s", args, err, out)
	}
	return nil
}

// inventory creates n SyncTargets behind one Location and waits for their mailboxes.
func (b *bench) inventory(n int) error {
	dyn, err := dynamic.NewForConfig(b.s.ConfigFor(b.imw))
	if err != nil {
		return err
	}
	loc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": edgev1alpha1.SchemeGroupVersion.String(), "kind": "Location",
		"metadata": map[string]any{"name": "bench", "labels": map[string]any{"fleet": "bench"}},
		"spec":     map[string]any{"instanceSelector": map[string]any{"matchLabels": map[string]any{"fleet": "bench"}}},
	}}
	if _, err := dyn.Resource(locationsGVR).Create(b.ctx, loc, metav1.CreateOptions{}); err != nil {
		return err
	}
	say("set-up: %d SyncTargets and their mailboxes", n)
	if err := framework.ForEach(n, b.parallel, func(i int) error {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": edgev1alpha1.SchemeGroupVersion.String(), "kind": "SyncTarget",
			"metadata": map[string]any{"name": fmt.Sprintf("edge-%05d", i), "labels": map[string]any{"fleet": "bench"}},
		}}
		_, err := dyn.Resource(syncTargetsGVR).Create(b.ctx, u, metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	start := time.Now()
	for last := time.Now(); ; time.Sleep(2 * time.Second) {
		list, err := dyn.Resource(syncTargetsGVR).List(b.ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		ready := 0
		for i := range list.Items {
			if s, _, _ := framework.ConditionStatus(&list.Items[i], edgev1alpha1.SyncTargetMailboxReady); s == metav1.ConditionTrue {
				ready++
			}
		}
		if ready == n {
			return nil
		}
		if time.Since(last) > 15*time.Second {
			say("set-up: %d of %d mailboxes ready after %.0fs", ready, n, time.Since(start).Seconds())
			last = time.Now()
		}
		if time.Since(start) > time.Duration(n)*2*time.Second+5*time.Minute {
			return fmt.Errorf("only %d of %d mailboxes ready after %s", ready, n, time.Since(start))
		}
	}
}

// workload creates the namespace, k Deployments and the EdgePlacement.
func (b *bench) workload(k int) error {
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "app"}}}
	if _, err := b.wmwDyn.Resource(namespacesGVR).Create(b.ctx, ns, metav1.CreateOptions{}); err != nil {
		return err
	}
	for i := 0; i < k; i++ {
		name := fmt.Sprintf("web-%03d", i)
		d := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": name, "namespace": "app"},
			"spec": map[string]any{"replicas": int64(1), "selector": map[string]any{"matchLabels": map[string]any{"app": name}},
				"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": name}},
					"spec": map[string]any{"containers": []any{map[string]any{"name": "web", "image": "nginx"}}}}},
		}}
		if _, err := b.wmwDyn.Resource(deploymentsGVR).Namespace("app").Create(b.ctx, d, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	p := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": edgev1alpha1.SchemeGroupVersion.String(), "kind": "EdgePlacement",
		"metadata": map[string]any{"name": "app"},
		"spec": map[string]any{"locationSelectors": []any{map[string]any{"matchLabels": map[string]any{"fleet": "bench"}}},
			"downsync": []any{map[string]any{"apiGroup": "apps", "resources": []any{"deployments"}, "namespaces": []any{"app"}}}},
	}}
	_, err := b.wmwDyn.Resource(placementsGVR).Create(b.ctx, p, metav1.CreateOptions{})
	return err
}

// mailboxCopy is one Deployment copy in one mailbox.
type mailboxCopy struct {
	client     dynamic.ResourceInterface
	config     dynamic.ResourceInterface // the mailbox's SyncerConfigs
	key        string                    // as in SyncerConfig status.applied
	name       string
	projection string
	// hasStatus: a Deployment, whose status the syncer copies back (the namespace has none).
	hasStatus bool
}

// waitForCopies waits until every mailbox holds the k Deployment copies and the namespace's, and
// returns them.
func (b *bench) waitForCopies(n, k int) ([]mailboxCopy, error) {
	dyn, err := dynamic.NewForConfig(b.s.ConfigFor(b.imw))
	if err != nil {
		return nil, err
	}
	list, err := dyn.Resource(syncTargetsGVR).List(b.ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	say("set-up: waiting for the %d copies", n*(k+1))
	var mailboxes, namespaces, configs []dynamic.ResourceInterface
	for i := range list.Items {
		path, _, _ := unstructured.NestedString(list.Items[i].Object, "status", "mailboxWorkspace")
		p, err := workspaces.ParsePath(path)
		if err != nil {
			return nil, fmt.Errorf("SyncTarget %s: mailbox %q: %w", list.Items[i].GetName(), path, err)
		}
		c, err := dynamic.NewForConfig(b.s.ConfigFor(p))
		if err != nil {
			return nil, err
		}
		mailboxes = append(mailboxes, c.Resource(deploymentsGVR).Namespace("app"))
		namespaces = append(namespaces, c.Resource(namespacesGVR))
		configs = append(configs, c.Resource(syncerConfigsGVR))
	}
	out := make([][]mailboxCopy, len(mailboxes))
	start := time.Now()
	err = framework.ForEach(len(mailboxes), b.parallel, func(i int) error {
		for {
			l, err := mailboxes[i].List(b.ctx, metav1.ListOptions{LabelSelector: edgev1alpha1.LabelProjected + "=true"})
			ns, nsErr := namespaces[i].Get(b.ctx, "app", metav1.GetOptions{})
			if err == nil && nsErr == nil && len(l.Items) == k {
				for _, item := range l.Items {
					out[i] = append(out[i], mailboxCopy{client: mailboxes[i], config: configs[i], name: item.GetName(), hasStatus: true,
						key:        edgev1alpha1.CopyKey(deploymentsGVR.GroupResource(), "app", item.GetName()),
						projection: item.GetAnnotations()[edgev1alpha1.AnnotationProjectionHash]})
				}
				// The namespace travels too; a syncer marks it applied, and copies back no status.
				out[i] = append(out[i], mailboxCopy{client: namespaces[i], config: configs[i], name: "app",
					key:        edgev1alpha1.CopyKey(namespacesGVR.GroupResource(), "", "app"),
					projection: ns.GetAnnotations()[edgev1alpha1.AnnotationProjectionHash]})
				return nil
			}
			if time.Since(start) > 15*time.Minute {
				return fmt.Errorf("mailbox %d does not hold the %d copies and the namespace after %s (%v, %v)", i, k, time.Since(start), err, nsErr)
			}
			time.Sleep(2 * time.Second)
		}
	})
	var all []mailboxCopy
	for _, cs := range out {
		all = append(all, cs...)
	}
	return all, err
}

// markReady writes, for one mailbox, what its syncer writes once the copies are applied at its
// edge and ready there: SyncerConfig status.applied with each copy's version, then each copy's
// ready status.
func markReady(ctx context.Context, config dynamic.ResourceInterface, copies []mailboxCopy, writes *atomic.Int64) error {
	applied := map[string]any{}
	for _, c := range copies {
		u, err := c.client.Get(ctx, c.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		hash := u.GetAnnotations()[edgev1alpha1.AnnotationProjectionHash]
		if hash != c.projection {
			say("note: the copy %s was written again by the placement translator during the storm", c.name)
		}
		applied[c.key] = hash
	}
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{"applied": applied}})
	if _, err := config.Patch(ctx, edgev1alpha1.SyncerConfigName, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		return err
	}
	writes.Add(1)
	for _, c := range copies {
		if !c.hasStatus {
			continue
		}
		if err := c.setStatus(ctx, false); err != nil {
			return err
		}
		writes.Add(1)
	}
	return nil
}

// setStatus writes a ready, or failed, Deployment status into the copy, as its syncer would.
func (c mailboxCopy) setStatus(ctx context.Context, failed bool) error {
	u, err := c.client.Get(ctx, c.name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	progressing := map[string]any{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}
	if failed {
		progressing = map[string]any{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded", "message": "benchmark"}
	}
	status := map[string]any{
		"observedGeneration": u.GetGeneration(), "replicas": int64(1), "updatedReplicas": int64(1),
		"readyReplicas": int64(1), "availableReplicas": int64(1),
		"conditions": []any{progressing, map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"}},
	}
	patch, _ := json.Marshal(map[string]any{"status": status})
	_, err = c.client.Patch(ctx, c.name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	return err
}

// writeCounter counts the writes into the workload workspace.
type writeCounter struct{ placement, objects atomic.Int64 }

func (b *bench) countWMWWrites() (*writeCounter, func(), error) {
	c := &writeCounter{}
	ctx, cancel := context.WithCancel(b.ctx)
	for _, w := range []struct {
		gvr     schema.GroupVersionResource
		counter *atomic.Int64
	}{{placementsGVR, &c.placement}, {deploymentsGVR, &c.objects}} {
		watcher, err := b.wmwDyn.Resource(w.gvr).Watch(ctx, metav1.ListOptions{})
		if err != nil {
			cancel()
			return nil, nil, err
		}
		go func(counter *atomic.Int64) {
			defer watcher.Stop()
			for ev := range watcher.ResultChan() {
				if ev.Type == watch.Modified {
					counter.Add(1)
				}
			}
		}(w.counter)
	}
	return c, cancel, nil
}

// watchSummary returns a channel closed once the placement's summary satisfies done.
func (b *bench) watchSummary(done func(edgev1alpha1.DestinationCounts) bool) <-chan error {
	out := make(chan error, 1)
	go func() {
		for {
			w, err := b.wmwDyn.Resource(placementsGVR).Watch(b.ctx, metav1.ListOptions{FieldSelector: "metadata.name=app"})
			if err != nil {
				out <- err
				return
			}
			for ev := range w.ResultChan() {
				u, ok := ev.Object.(*unstructured.Unstructured)
				if !ok {
					continue
				}
				p := &edgev1alpha1.EdgePlacement{}
				if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p) == nil && p.Status.Summary != nil && done(*p.Status.Summary) {
					w.Stop()
					close(out)
					return
				}
			}
		}
	}()
	return out
}

func wait(ch <-chan error, timeout time.Duration, what string) error {
	select {
	case err := <-ch:
		return err
	case <-time.After(timeout):
		return fmt.Errorf("timed out after %s waiting for %s", timeout, what)
	}
}

// loadAverage is the machine's load while measuring: figures taken on a busy machine say so.
func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(raw))[:3], " ")
}

func printTable(r result) {
	fmt.Printf("\nstatus summarizer benchmark: %d destinations x %d Deployments, %d cores\n\n", r.N, r.K, goruntime.NumCPU())
	fmt.Printf("| measure | value |\n|---|---|\n")
	fmt.Printf("| set-up (not counted): mailboxes, copies | %.0f s |\n", r.SetupSeconds)
	fmt.Printf("| storm: syncer writes into the mailboxes (applied + status) | %d in %.1f s (%.0f/s) |\n", r.StormWrites, r.StormSeconds, r.StormWritesPerSecond)
	fmt.Printf("| storm start until the summary shows ready at all %d | %.1f s |\n", r.N, r.SummaryReadySeconds)
	fmt.Printf("| writes into the workload workspace during the storm: placement status / objects | %d / %d (%.1f/s) |\n", r.PlacementStatusWrites, r.ObjectWrites, r.WMWWritesPerSecond)
	fmt.Printf("| one copy's status change until the summary shows it: p50 / p99 / max (target p99 < 2 s), %d samples | %.2f s / %.2f s / %.2f s |\n", 2*r.Samples, r.LatencyP50Seconds, r.LatencyP99Seconds, r.LatencyMaxSeconds)
	fmt.Printf("| edge-controller-manager RSS, peak | %.0f MB, %.0f MB |\n", r.ControllerRSSMB, r.ControllerPeakRSSMB)
	fmt.Printf("| edge-controller-manager CPU: total / idle (30 s) | %.0f s / %.1f%% of a core |\n", r.ControllerCPUSeconds, r.IdleControllerCPUShare)
	fmt.Printf("| kcp RSS | %.0f MB |\n", r.KCPRSSMB)
	fmt.Printf("| load average (1, 5, 15 min) at the end | %s |\n", r.LoadAverage)
}
