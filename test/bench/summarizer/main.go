// Command summarizer benchmarks the status summarizer, in one run on one kcp:
//
//  1. set-up (timed, not counted): the ESPW, an inventory workspace with N SyncTargets behind one
//     Location, a workload workspace with K Deployments and an EdgePlacement selecting them, and
//     edge-controller-manager with the mailbox controller, the scheduler and the status summarizer
//     (no placement translator); once the scheduler has resolved the N destinations, the benchmark
//     writes into each mailbox the placement's assemblage (the namespace and the K Deployments,
//     encoded with package transport), as the placement translator would;
//  2. storm: a parallel client plays the syncers: in every mailbox it writes the status a syncer
//     writes on the assemblage once its objects are applied and ready at its edge (the version
//     observed and applied, each object Ready, each Deployment's edge status), N writes; the clock
//     runs until the placement's summary says ready at N, and until every Deployment's
//     executing-count says N, and the writes into the workload workspace (placement status,
//     object annotations) are counted;
//  3. latency: M times, one Deployment in one assemblage's status turns failed (then back), and
//     the clock runs until the placement's summary shows it: p50, p99, max;
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
	"github.com/kcp-dev/edge-mc/pkg/transport"
	"github.com/kcp-dev/edge-mc/pkg/workspaces"
	"github.com/kcp-dev/edge-mc/test/framework"
)

var (
	syncTargetsGVR = edgev1alpha1.SchemeGroupVersion.WithResource("synctargets")
	locationsGVR   = edgev1alpha1.SchemeGroupVersion.WithResource("locations")
	placementsGVR  = edgev1alpha1.SchemeGroupVersion.WithResource("edgeplacements")
	deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	namespacesGVR  = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	// assemblagesGVR: the placement's one assemblage in each mailbox.
	assemblagesGVR = edgev1alpha1.SchemeGroupVersion.WithResource("assemblages")
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
	CountsDoneSeconds      float64 `json:"countsDoneSeconds"`
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
	// No placement translator: the benchmark writes the assemblages itself, and a translator
	// would write its own over them.
	cm := exec.Command(filepath.Join(binDir, "edge-controller-manager"), "--kubeconfig", s.KubeconfigPath,
		"--espw", b.espw.String(), "--workers", strconv.Itoa(workers), "--http-address", "127.0.0.1:"+strconv.Itoa(ports[0]),
		"--controllers", "mailbox,scheduler,status-summarizer")
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
	wmwCluster, err := b.waitForDestinations(n)
	if err != nil {
		return fmt.Errorf("%w (controller log: %s)", err, logFile.Name())
	}
	assemblages, err := b.deliver(wmwCluster, k)
	if err != nil {
		return err
	}
	res.SetupSeconds = time.Since(setupStart).Seconds()
	say("set-up done in %.0fs: %d assemblages of %d objects in %d mailboxes", res.SetupSeconds, len(assemblages), k+1, n)

	// 2. The storm.
	counter, stopCounting, err := b.countWMWWrites()
	if err != nil {
		return err
	}
	ready := b.watchSummary(func(c edgev1alpha1.DestinationCounts) bool { return int(c.Ready) == n })
	say("storm: %d assemblages reported applied and ready (one status write each), %d mailboxes at a time", len(assemblages), parallel)
	start := time.Now()
	var writes atomic.Int64
	if err := framework.ForEach(len(assemblages), parallel, func(i int) error {
		if err := assemblages[i].report(ctx, ""); err != nil {
			return err
		}
		writes.Add(1)
		return nil
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
	// The objects' counts come later: at most one write per object each ObjectCoalescePeriod.
	if err := b.waitForCounts(n, k, 2*time.Minute); err != nil {
		return err
	}
	res.CountsDoneSeconds = time.Since(start).Seconds()
	time.Sleep(time.Second) // a write the watch has not delivered yet
	stopCounting()
	res.PlacementStatusWrites, res.ObjectWrites = counter.placement.Load(), counter.objects.Load()
	res.WMWWritesPerSecond = float64(res.PlacementStatusWrites+res.ObjectWrites) / res.CountsDoneSeconds
	say("storm: %d writes in %.1fs; summary ready at %d after %.1fs, every count %d after %.1fs; %d placement status and %d object writes into the workload workspace",
		res.StormWrites, res.StormSeconds, n, res.SummaryReadySeconds, n, res.CountsDoneSeconds, res.PlacementStatusWrites, res.ObjectWrites)

	// 3. Single changes, each after a quiet period longer than the summarizer's coalescing period
	// (a change within it waits for the period's end, as the storm shows).
	var latencies []float64
	for i := 0; i < samples; i++ {
		time.Sleep(1500 * time.Millisecond)
		a := assemblages[rand.N(len(assemblages))]
		deployment := fmt.Sprintf("deployments.apps/app/web-%03d", rand.N(k))
		for _, failed := range []bool{true, false} {
			want := 0
			if failed {
				want = 1
			}
			seen := b.watchSummary(func(counts edgev1alpha1.DestinationCounts) bool { return int(counts.Failed) == want })
			start := time.Now()
			failing := ""
			if failed {
				failing = deployment
			}
			if err := a.report(ctx, failing); err != nil {
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
		d := &unstructured.Unstructured{Object: deploymentOf(i)}
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

// waitForDestinations waits until the scheduler has resolved the placement's n destinations,
// and returns the logical cluster of the workload workspace.
func (b *bench) waitForDestinations(n int) (string, error) {
	say("set-up: waiting for the scheduler to resolve %d destinations", n)
	start := time.Now()
	for {
		p, err := b.wmwDyn.Resource(placementsGVR).Get(b.ctx, "app", metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		if got, _, _ := unstructured.NestedInt64(p.Object, "status", "matchingSyncTargetCount"); int(got) == n {
			return logicalcluster.From(p).String(), nil
		}
		if time.Since(start) > 10*time.Minute {
			return "", fmt.Errorf("the placement has not %d destinations after %s", n, time.Since(start))
		}
		time.Sleep(2 * time.Second)
	}
}

// mailboxAssemblage is the placement's assemblage in one mailbox.
type mailboxAssemblage struct {
	client  dynamic.ResourceInterface // the mailbox's assemblages
	name    string
	version string
	objects []string
}

// deliver writes, into every mailbox, the placement's assemblage of the namespace and its k
// Deployments, as the placement translator writes it, and returns them.
func (b *bench) deliver(wmwCluster string, k int) ([]mailboxAssemblage, error) {
	dyn, err := dynamic.NewForConfig(b.s.ConfigFor(b.imw))
	if err != nil {
		return nil, err
	}
	list, err := dyn.Resource(syncTargetsGVR).List(b.ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	entries := []transport.Entry{{Version: "v1", Resource: "namespaces",
		Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "app"}}}}
	for i := 0; i < k; i++ {
		entries = append(entries, transport.Entry{Group: "apps", Version: "v1", Resource: "deployments", Namespaced: true, Object: deploymentOf(i)})
	}
	enc, err := transport.Encode(entries)
	if err != nil {
		return nil, err
	}
	name := transport.AssemblageName(wmwCluster, "app")
	a := &edgev1alpha1.Assemblage{
		TypeMeta: metav1.TypeMeta{APIVersion: edgev1alpha1.SchemeGroupVersion.String(), Kind: "Assemblage"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			transport.LabelPlacementCluster: wmwCluster, transport.LabelPlacementName: "app"}},
		Spec: edgev1alpha1.AssemblageSpec{
			Placement: edgev1alpha1.PlacementReference{Cluster: wmwCluster, Name: "app"},
			Version:   enc.Version, Format: transport.FormatV1, Parts: 1, Data: enc.Pieces[0], Digest: enc.Digests[0],
			Objects: enc.Objects, ObjectCount: int32(len(enc.Objects)),
		},
	}
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(a)
	if err != nil {
		return nil, err
	}
	say("set-up: writing the %d assemblages (%d bytes of data each)", len(list.Items), enc.CompressedBytes)
	out := make([]mailboxAssemblage, len(list.Items))
	err = framework.ForEach(len(list.Items), b.parallel, func(i int) error {
		path, _, _ := unstructured.NestedString(list.Items[i].Object, "status", "mailboxWorkspace")
		p, err := workspaces.ParsePath(path)
		if err != nil {
			return fmt.Errorf("SyncTarget %s: mailbox %q: %w", list.Items[i].GetName(), path, err)
		}
		c, err := dynamic.NewForConfig(b.s.ConfigFor(p))
		if err != nil {
			return err
		}
		client := c.Resource(assemblagesGVR)
		if _, err := client.Create(b.ctx, &unstructured.Unstructured{Object: runtime.DeepCopyJSON(raw)}, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("writing the assemblage into mailbox %s: %w", p, err)
		}
		out[i] = mailboxAssemblage{client: client, name: name, version: enc.Version, objects: enc.Objects}
		return nil
	})
	return out, err
}

func deploymentOf(i int) map[string]any {
	name := fmt.Sprintf("web-%03d", i)
	return map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name, "namespace": "app"},
		"spec": map[string]any{"replicas": int64(1), "selector": map[string]any{"matchLabels": map[string]any{"app": name}},
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": name}},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "web", "image": "nginx"}}}}},
	}
}

// report writes the status a syncer writes on the assemblage once it has applied its version:
// every object Ready with its edge status, except failing (a Deployment's key, or ""), which
// failed at the edge. One write, a merge patch of the status, as the syncer makes it.
func (a mailboxAssemblage) report(ctx context.Context, failing string) error {
	objects := make([]any, 0, len(a.objects))
	counts := map[string]any{"pending": int64(0), "applied": int64(0), "ready": int64(len(a.objects)), "failed": int64(0)}
	for _, o := range a.objects {
		entry := map[string]any{"object": o, "state": edgev1alpha1.ObjectReady}
		if strings.HasPrefix(o, "deployments.apps/") {
			entry["status"] = deploymentStatus(o == failing)
		}
		if o == failing {
			entry["state"], entry["reason"] = edgev1alpha1.ObjectFailed, "ProgressDeadlineExceeded: benchmark"
			counts["ready"], counts["failed"] = int64(len(a.objects)-1), int64(1)
		}
		objects = append(objects, entry)
	}
	now := metav1.Now().UTC().Format(time.RFC3339)
	ready := map[string]any{"type": edgev1alpha1.AssemblageReady, "status": "True", "reason": edgev1alpha1.ReasonAllObjectsReady,
		"message": "every object is ready at the edge", "lastTransitionTime": now}
	if failing != "" {
		ready = map[string]any{"type": edgev1alpha1.AssemblageReady, "status": "False", "reason": edgev1alpha1.ReasonObjectsFailed,
			"message": failing + " failed", "lastTransitionTime": now}
	}
	status := map[string]any{
		"observedVersion": a.version, "appliedVersion": a.version, "reportTime": now,
		"conditions": []any{
			map[string]any{"type": edgev1alpha1.AssemblageApplied, "status": "True", "reason": edgev1alpha1.ReasonVersionApplied, "message": "applied", "lastTransitionTime": now},
			ready,
		},
		"counts": counts, "objects": objects,
	}
	patch, _ := json.Marshal(map[string]any{"status": status})
	_, err := a.client.Patch(ctx, a.name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	return err
}

// deploymentStatus is a Deployment's status at the edge: ready, or failed.
func deploymentStatus(failed bool) map[string]any {
	progressing := map[string]any{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}
	if failed {
		progressing = map[string]any{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded", "message": "benchmark"}
	}
	return map[string]any{
		"observedGeneration": int64(1), "replicas": int64(1), "updatedReplicas": int64(1),
		"readyReplicas": int64(1), "availableReplicas": int64(1),
		"conditions": []any{progressing, map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"}},
	}
}

// waitForCounts waits until every one of the k Deployments says, in its executing-count, that it
// runs at the n destinations.
func (b *bench) waitForCounts(n, k int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		list, err := b.wmwDyn.Resource(deploymentsGVR).Namespace("app").List(b.ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		done := 0
		for i := range list.Items {
			if list.Items[i].GetAnnotations()[edgev1alpha1.AnnotationExecutingCount] == strconv.Itoa(n) {
				done++
			}
		}
		if done == k {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d Deployments count %d destinations after %s", done, k, n, timeout)
		}
		time.Sleep(250 * time.Millisecond)
	}
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
	fmt.Printf("| set-up (not counted): mailboxes, assemblages | %.0f s |\n", r.SetupSeconds)
	fmt.Printf("| storm: syncer status writes into the mailboxes (one per assemblage) | %d in %.1f s (%.0f/s) |\n", r.StormWrites, r.StormSeconds, r.StormWritesPerSecond)
	fmt.Printf("| storm start until the summary shows ready at all %d | %.1f s |\n", r.N, r.SummaryReadySeconds)
	fmt.Printf("| storm start until every object's executing-count says %d | %.1f s |\n", r.N, r.CountsDoneSeconds)
	fmt.Printf("| writes into the workload workspace during the storm: placement status / objects | %d / %d (%.1f/s) |\n", r.PlacementStatusWrites, r.ObjectWrites, r.WMWWritesPerSecond)
	fmt.Printf("| one object's state change in an assemblage's status until the summary shows it: p50 / p99 / max (target p99 < 2 s), %d samples | %.2f s / %.2f s / %.2f s |\n", 2*r.Samples, r.LatencyP50Seconds, r.LatencyP99Seconds, r.LatencyMaxSeconds)
	fmt.Printf("| edge-controller-manager RSS, peak | %.0f MB, %.0f MB |\n", r.ControllerRSSMB, r.ControllerPeakRSSMB)
	fmt.Printf("| edge-controller-manager CPU: total / idle (30 s) | %.0f s / %.1f%% of a core |\n", r.ControllerCPUSeconds, r.IdleControllerCPUShare)
	fmt.Printf("| kcp RSS | %.0f MB |\n", r.KCPRSSMB)
	fmt.Printf("| load average (1, 5, 15 min) at the end | %s |\n", r.LoadAverage)
}
