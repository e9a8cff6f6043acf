// Command scheduler benchmarks the edge scheduler against the requirement of its issue: with
// -locations SyncTargets and as many Locations (default 1,000) spread over -imws inventory
// workspaces, and -placements EdgePlacements (default 100) in one workload workspace,
//
//  1. resolve all: the time from the start of edge-controller-manager (--controllers scheduler)
//     until every placement's SinglePlacementSlices hold exactly its expected destinations and
//     its status says Scheduled for the current generation;
//  2. one change: -changes times, one SyncTarget's edge.kcp.io/synctarget label is changed so that
//     its Location no longer selects it, and then changed back; each time the clock runs from just
//     before the update call until a watch on the slices shows the destination gone from (or back
//     in) the slices of every placement it affects. Alongside, it counts the slice and placement
//     writes each change caused, to show that the work is proportional to what changed (the
//     affected placements, -placements/-regions of them) rather than to the fleet.
//
// Every Location carries the label region=r<i%regions> and selects exactly one SyncTarget (as
// `kubectl edge ensure location` makes them); placement j selects region r<j%regions>. The
// set-up (kcp, the ESPW, the workspaces, the objects) is timed and reported but is not part of
// the figures.
//
// It prints the figures as a markdown table on stdout (progress goes to stderr) and, with -json,
// writes them to a file. Figures are reported, never asserted. Run it with `make bench-scheduler`
// or `go run ./test/bench/scheduler -locations 1000 -placements 100`; it needs bin/kcp (make
// tools) and builds edge-controller-manager from the current tree.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	kcpkubernetesclientset "github.com/kcp-dev/client-go/kubernetes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/espw"
	"github.com/kcp-dev/edge-mc/pkg/workspaces"
	"github.com/kcp-dev/edge-mc/test/framework"
)

var (
	placementsGVR  = edgev1alpha1.SchemeGroupVersion.WithResource("edgeplacements")
	slicesGVR      = edgev1alpha1.SchemeGroupVersion.WithResource("singleplacementslices")
	locationsGVR   = edgev1alpha1.SchemeGroupVersion.WithResource("locations")
	syncTargetsGVR = edgev1alpha1.SchemeGroupVersion.WithResource("synctargets")
)

const (
	// regionLabel is the Location label that the placements select on.
	regionLabel = "region"
	// parallel is how many objects the set-up creates at once.
	parallel = 16
	// resolveTimeout bounds the "resolve all" phase.
	resolveTimeout = 10 * time.Minute
	// changeTimeout bounds one change's convergence.
	changeTimeout = time.Minute
	// quiet is how long no slice or placement event must arrive after a change converged before
	// the change's writes are counted and the next change starts.
	quiet = 500 * time.Millisecond
)

type result struct {
	Locations                 int     `json:"locations"`
	InventoryWorkspaces       int     `json:"inventoryWorkspaces"`
	Placements                int     `json:"placements"`
	Regions                   int     `json:"regions"`
	Changes                   int     `json:"changes"`
	Workers                   int     `json:"workers"`
	Cores                     int     `json:"cores"`
	SetupSeconds              float64 `json:"setupSeconds"`
	SetupObjects              int     `json:"setupObjects"`
	InventoryObjectsPerSecond float64 `json:"inventoryObjectsPerSecond"`

	ControllerReadySeconds  float64 `json:"controllerReadySeconds"`
	ResolveAllSeconds       float64 `json:"resolveAllSeconds"`
	LocationStatusesSeconds float64 `json:"locationStatusesSeconds"`
	TotalDestinations       int     `json:"totalDestinations"`

	AffectedPlacementsPerChange float64   `json:"affectedPlacementsPerChange"`
	ChangeSeconds               []float64 `json:"changeSeconds"` // leave, return, leave, return, ...
	ChangeP50Seconds            float64   `json:"changeP50Seconds"`
	ChangeP90Seconds            float64   `json:"changeP90Seconds"`
	ChangeMaxSeconds            float64   `json:"changeMaxSeconds"`
	// Slice writes seen from the update call until convergence, and until the step went quiet.
	SliceWritesToConvergenceMean float64 `json:"sliceWritesToConvergenceMean"`
	SliceWritesToConvergenceMax  int     `json:"sliceWritesToConvergenceMax"`
	SliceWritesPerChangeMean     float64 `json:"sliceWritesPerChangeMean"`
	SliceWritesPerChangeMax      int     `json:"sliceWritesPerChangeMax"`
	PlacementWritesPerChangeMean float64 `json:"placementWritesPerChangeMean"`
	PlacementWritesPerChangeMax  int     `json:"placementWritesPerChangeMax"`

	ControllerCPUResolveSeconds    float64 `json:"controllerCPUResolveSeconds"`
	ControllerCPUPerChangeMillisec float64 `json:"controllerCPUPerChangeMilliseconds"`
	ControllerCPUSeconds           float64 `json:"controllerCPUSeconds"`
	ControllerRSSMB                float64 `json:"controllerRSSMB"`
	ControllerPeakRSSMB            float64 `json:"controllerPeakRSSMB"`
	KCPRSSMB                       float64 `json:"kcpRSSMB"`
}

// config is the benchmark's shape, from the flags.
type config struct {
	locations, imws, placements, regions, changes, workers int
}

func main() {
	var c config
	flag.IntVar(&c.locations, "locations", 1000, "number of Locations, and of SyncTargets (one per Location)")
	flag.IntVar(&c.imws, "imws", 10, "number of inventory workspaces the Locations and SyncTargets are spread over")
	flag.IntVar(&c.placements, "placements", 100, "number of EdgePlacements")
	flag.IntVar(&c.regions, "regions", 10, "number of regions: Location i has region r<i%regions>, placement j selects r<j%regions>")
	flag.IntVar(&c.changes, "changes", 20, "number of single label changes to time (each is timed leaving and returning)")
	flag.IntVar(&c.workers, "workers", 8, "edge-controller-manager --workers")
	jsonOut := flag.String("json", "", "also write the figures as JSON to this file")
	flag.Parse()
	if c.locations < 1 || c.imws < 1 || c.imws > c.locations || c.placements < 1 || c.regions < 1 || c.regions > c.locations || c.changes < 0 || c.workers < 1 {
		fmt.Fprintln(os.Stderr, "scheduler benchmark: need 1 <= -imws <= -locations, 1 <= -regions <= -locations, -placements >= 1, -changes >= 0, -workers >= 1")
		os.Exit(2)
	}
	if err := run(c, *jsonOut); err != nil {
		fmt.Fprintf(os.Stderr, "scheduler benchmark: %v\n", err)
		os.Exit(1)
	}
}

func say(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s  "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func stName(i int) string  { return fmt.Sprintf("st-%04d", i) }
func locName(i int) string { return fmt.Sprintf("loc-%04d", i) }
func plName(j int) string  { return fmt.Sprintf("p-%03d", j) }
func region(i int) string  { return fmt.Sprintf("r%d", i) }

// imwOf is the inventory workspace (index) that holds Location and SyncTarget i: contiguous
// blocks, so that every workspace holds every region.
func (c config) imwOf(i int) int { return i * c.imws / c.locations }

func run(c config, jsonOut string) error {
	ctx := context.Background()
	res := result{Locations: c.locations, InventoryWorkspaces: c.imws, Placements: c.placements, Regions: c.regions,
		Changes: c.changes, Workers: c.workers, Cores: goruntime.NumCPU()}

	// Set-up.
	setupStart := time.Now()
	say("starting kcp")
	s, err := framework.StartKCP()
	if err != nil {
		return err
	}
	defer s.Stop()

	base := logicalcluster.NewPath("root:bench")
	espwPath := base.Join("espw")
	wmw := base.Join("wmw")
	say("installing the ESPW at %s", espwPath)
	kube, err := kcpkubernetesclientset.NewForConfig(s.Base)
	if err != nil {
		return err
	}
	if _, err := espw.Install(ctx, s.KCP, kube, espwPath, nil); err != nil {
		return err
	}
	ensurer := &workspaces.Ensurer{KCP: s.KCP}
	imws := make([]logicalcluster.Path, c.imws)
	imwClusters := make([]string, c.imws)
	wsPaths := []logicalcluster.Path{wmw} // then the IMWs
	for k := range c.imws {
		imws[k] = base.Join(fmt.Sprintf("imw-%02d", k))
		wsPaths = append(wsPaths, imws[k])
	}
	say("creating %d inventory workspaces and the workload workspace %s, binding %s", c.imws, wmw, edgev1alpha1.EdgeAPIExportName)
	if err := framework.ForEach(len(wsPaths), parallel, func(k int) error {
		ws, err := ensurer.Workspace(ctx, wsPaths[k])
		if err != nil {
			return err
		}
		if k > 0 {
			imwClusters[k-1] = ws.Spec.Cluster
		}
		_, err = ensurer.Binding(ctx, wsPaths[k], edgev1alpha1.EdgeAPIExportName, espwPath, edgev1alpha1.EdgeAPIExportName)
		return err
	}); err != nil {
		return err
	}
	imwClients := make([]dynamic.Interface, c.imws)
	for k := range c.imws {
		if imwClients[k], err = dynamic.NewForConfig(s.ConfigFor(imws[k])); err != nil {
			return err
		}
	}
	wmwClient, err := dynamic.NewForConfig(s.ConfigFor(wmw))
	if err != nil {
		return err
	}

	say("creating %d SyncTargets and %d Locations in %d inventory workspaces, %d at a time", c.locations, c.locations, c.imws, parallel)
	var created atomic.Int64
	inventoryStart := time.Now()
	stopProgress := progress("inventory", &created, 2*c.locations)
	err = framework.ForEach(c.locations, parallel, func(i int) error {
		client := imwClients[c.imwOf(i)]
		st := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": edgev1alpha1.SchemeGroupVersion.String(),
			"kind":       "SyncTarget",
			"metadata": map[string]any{
				"name":   stName(i),
				"labels": map[string]any{edgev1alpha1.LabelSyncTarget: stName(i), regionLabel: region(i % c.regions)},
			},
		}}
		if _, err := client.Resource(syncTargetsGVR).Create(ctx, st, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating SyncTarget %s: %w", stName(i), err)
		}
		created.Add(1)
		loc := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": edgev1alpha1.SchemeGroupVersion.String(),
			"kind":       "Location",
			"metadata": map[string]any{
				"name":   locName(i),
				"labels": map[string]any{regionLabel: region(i % c.regions)},
			},
			"spec": map[string]any{
				"instanceSelector": map[string]any{"matchLabels": map[string]any{edgev1alpha1.LabelSyncTarget: stName(i)}},
			},
		}}
		if _, err := client.Resource(locationsGVR).Create(ctx, loc, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating Location %s: %w", locName(i), err)
		}
		created.Add(1)
		return nil
	})
	stopProgress()
	if err != nil {
		return err
	}
	res.InventoryObjectsPerSecond = float64(2*c.locations) / time.Since(inventoryStart).Seconds()

	say("creating %d EdgePlacements in %s, %d at a time", c.placements, wmw, parallel)
	created.Store(0)
	stopProgress = progress("placements", &created, c.placements)
	err = framework.ForEach(c.placements, parallel, func(j int) error {
		p := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": edgev1alpha1.SchemeGroupVersion.String(),
			"kind":       "EdgePlacement",
			"metadata":   map[string]any{"name": plName(j)},
			"spec": map[string]any{
				"locationSelectors": []any{map[string]any{"matchLabels": map[string]any{regionLabel: region(j % c.regions)}}},
			},
		}}
		if _, err := wmwClient.Resource(placementsGVR).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating EdgePlacement %s: %w", plName(j), err)
		}
		created.Add(1)
		return nil
	})
	stopProgress()
	if err != nil {
		return err
	}

	// What each placement must resolve to.
	perRegion := make([]int, c.regions)
	for i := range c.locations {
		perRegion[i%c.regions]++
	}
	expected := map[string]int{}
	for j := range c.placements {
		expected[plName(j)] = perRegion[j%c.regions]
		res.TotalDestinations += perRegion[j%c.regions]
	}

	// Watch the slices and placements of the workload workspace from now on.
	tr := newTracker()
	informerCtx, stopInformers := context.WithCancel(ctx)
	defer stopInformers()
	if err := tr.watch(informerCtx, wmwClient); err != nil {
		return err
	}

	say("building edge-controller-manager")
	binDir, err := framework.BuildCommands()
	if err != nil {
		return err
	}
	defer os.RemoveAll(binDir)
	res.SetupSeconds = time.Since(setupStart).Seconds()
	res.SetupObjects = 2*c.locations + c.placements
	say("set-up done in %.1fs (kcp start, ESPW, workspaces, %d objects)", res.SetupSeconds, res.SetupObjects)

	// Phase 1: resolve all.
	ports, err := framework.FreePorts(1)
	if err != nil {
		return err
	}
	httpAddress := "127.0.0.1:" + strconv.Itoa(ports[0])
	logFile, err := os.CreateTemp("", "edge-mc-bench-scheduler-ecm-*.log")
	if err != nil {
		return err
	}
	failed := true
	defer func() {
		logFile.Close()
		if failed {
			fmt.Fprintf(os.Stderr, "edge-controller-manager log: %s; its tail:\n%s", logFile.Name(), tail(logFile.Name(), 40))
		} else {
			os.Remove(logFile.Name())
		}
	}()
	cm := exec.Command(filepath.Join(binDir, "edge-controller-manager"), "--controllers", "scheduler",
		"--workers", strconv.Itoa(c.workers), "--espw", espwPath.String(), "--kubeconfig", s.KubeconfigPath,
		"--http-address", httpAddress)
	cm.Stdout, cm.Stderr = logFile, logFile

	allResolved := func() bool {
		for name, want := range expected {
			if tr.destinationCount(name) != want || !tr.placementScheduled(name) {
				return false
			}
		}
		return true
	}
	resolved := tr.await(allResolved)
	say("resolve all: starting edge-controller-manager (--controllers scheduler --workers %d); %d placements, %d destinations to resolve",
		c.workers, c.placements, res.TotalDestinations)
	start := time.Now()
	if err := cm.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cm.Wait(); close(exited) }()
	defer func() {
		_ = cm.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cm.Process.Kill()
			<-exited
		}
	}()
	readyAt := make(chan time.Duration, 1)
	go func() {
		for {
			select {
			case <-exited:
				return
			case <-time.After(50 * time.Millisecond):
			}
			resp, err := http.Get("http://" + httpAddress + "/readyz")
			if err != nil {
				continue
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				readyAt <- time.Since(start)
				return
			}
		}
	}()
	lastReport := time.Now()
	var resolvedAt time.Time
	for resolvedAt.IsZero() {
		select {
		case resolvedAt = <-resolved:
		case <-exited:
			return fmt.Errorf("edge-controller-manager exited during the resolve-all phase")
		case <-time.After(time.Second):
			if time.Since(start) > resolveTimeout {
				return fmt.Errorf("not all placements resolved after %s: %s", resolveTimeout, tr.summary(expected))
			}
			if time.Since(lastReport) > 10*time.Second {
				say("resolve all: %s after %.0fs", tr.summary(expected), time.Since(start).Seconds())
				lastReport = time.Now()
			}
		}
	}
	res.ResolveAllSeconds = resolvedAt.Sub(start).Seconds()
	select {
	case d := <-readyAt:
		res.ControllerReadySeconds = d.Seconds()
	case <-time.After(10 * time.Second):
		return fmt.Errorf("edge-controller-manager's /readyz is not 200 although every placement resolved")
	}
	say("resolve all: %d placements (%d destinations) resolved %.2fs after edge-controller-manager started (ready, caches synced, after %.2fs)",
		c.placements, res.TotalDestinations, res.ResolveAllSeconds, res.ControllerReadySeconds)
	// Before the changes, let the scheduler finish its other writes: every Location's status.
	// This is polled, outside every timed figure except its own.
	locationsDone, err := waitLocationStatuses(ctx, imwClients, c.locations, exited)
	if err != nil {
		return err
	}
	res.LocationStatusesSeconds = locationsDone.Sub(start).Seconds()
	say("resolve all: every Location's status.instances is 1 %.2fs after edge-controller-manager started", res.LocationStatusesSeconds)
	tr.waitQuiet(quiet, 30*time.Second)
	cpuAfterResolve := framework.CPUSeconds(cm.Process.Pid)
	res.ControllerCPUResolveSeconds = cpuAfterResolve

	// Phase 2: single label changes. Only SyncTargets whose region some placement selects are
	// worth changing; pick them spread over the fleet.
	var candidates []int
	for i := range c.locations {
		if i%c.regions < c.placements {
			candidates = append(candidates, i)
		}
	}
	changes := min(c.changes, len(candidates))
	var sliceToConv, slicePerStep, placementPerStep []int
	var affectedTotal int
	for k := range changes {
		i := candidates[k*len(candidates)/changes]
		cluster := imwClusters[c.imwOf(i)]
		key := destKey(cluster, stName(i))
		var affected []string
		for j := range c.placements {
			if j%c.regions == i%c.regions {
				affected = append(affected, plName(j))
			}
		}
		affectedTotal += len(affected)
		client := imwClients[c.imwOf(i)].Resource(syncTargetsGVR)
		for _, leave := range []bool{true, false} {
			value := stName(i)
			if leave {
				value = stName(i) + "-off"
			}
			st, err := client.Get(ctx, stName(i), metav1.GetOptions{})
			if err != nil {
				return err
			}
			labels := st.GetLabels()
			labels[edgev1alpha1.LabelSyncTarget] = value
			st.SetLabels(labels)
			done := tr.await(func() bool {
				for _, p := range affected {
					if tr.hasDestination(p, key) == leave {
						return false
					}
				}
				return true
			})
			t0 := time.Now()
			if _, err := client.Update(ctx, st, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("updating SyncTarget %s: %w", stName(i), err)
			}
			var at time.Time
			select {
			case at = <-done:
			case <-exited:
				return fmt.Errorf("edge-controller-manager exited during the change phase")
			case <-time.After(changeTimeout):
				return fmt.Errorf("SyncTarget %s (label %s=%s): the slices of %d affected placements did not follow within %s (%s)",
					stName(i), edgev1alpha1.LabelSyncTarget, value, len(affected), changeTimeout, tr.summary(expected))
			}
			d := at.Sub(t0)
			toConv := tr.sliceWritesAtDone()
			tr.waitQuiet(quiet, 10*time.Second)
			sw, pw := tr.writes()
			res.ChangeSeconds = append(res.ChangeSeconds, d.Seconds())
			sliceToConv = append(sliceToConv, toConv)
			slicePerStep = append(slicePerStep, sw)
			placementPerStep = append(placementPerStep, pw)
			verb := "returns to"
			if leave {
				verb = "leaves"
			}
			say("change %d/%d: %s %s %d placements in %.0fms (slice writes: %d until then, %d in all; placement writes %d)",
				k+1, changes, stName(i), verb, len(affected), 1000*d.Seconds(), toConv, sw, pw)
		}
	}
	if changes > 0 {
		res.AffectedPlacementsPerChange = float64(affectedTotal) / float64(changes)
		sorted := append([]float64(nil), res.ChangeSeconds...)
		sort.Float64s(sorted)
		res.ChangeP50Seconds = framework.Percentile(sorted, 0.50)
		res.ChangeP90Seconds = framework.Percentile(sorted, 0.90)
		res.ChangeMaxSeconds = sorted[len(sorted)-1]
		res.SliceWritesToConvergenceMean, res.SliceWritesToConvergenceMax = meanMax(sliceToConv)
		res.SliceWritesPerChangeMean, res.SliceWritesPerChangeMax = meanMax(slicePerStep)
		res.PlacementWritesPerChangeMean, res.PlacementWritesPerChangeMax = meanMax(placementPerStep)
	}

	res.ControllerCPUSeconds = framework.CPUSeconds(cm.Process.Pid)
	if n := len(res.ChangeSeconds); n > 0 {
		res.ControllerCPUPerChangeMillisec = 1000 * (res.ControllerCPUSeconds - cpuAfterResolve) / float64(n)
	}
	cur, peak, _ := framework.RSS(cm.Process.Pid)
	res.ControllerRSSMB, res.ControllerPeakRSSMB = float64(cur)/1e6, float64(peak)/1e6
	if pid := s.PID(); pid != 0 {
		kcpRSS, _, _ := framework.RSS(pid)
		res.KCPRSSMB = float64(kcpRSS) / 1e6
	}
	failed = false

	printTable(res)
	if jsonOut != "" {
		raw, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(jsonOut, append(raw, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// waitLocationStatuses polls the inventory workspaces until every Location's status says it has
// its one instance, and returns when that was first seen.
func waitLocationStatuses(ctx context.Context, clients []dynamic.Interface, total int, exited <-chan struct{}) (time.Time, error) {
	deadline := time.Now().Add(resolveTimeout)
	for {
		done := 0
		for _, client := range clients {
			list, err := client.Resource(locationsGVR).List(ctx, metav1.ListOptions{})
			if err != nil {
				return time.Time{}, err
			}
			for _, item := range list.Items {
				if n, _, _ := unstructured.NestedInt64(item.Object, "status", "instances"); n == 1 {
					done++
				}
			}
		}
		if done == total {
			return time.Now(), nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("only %d of %d Locations have status.instances 1 after %s", done, total, resolveTimeout)
		}
		select {
		case <-exited:
			return time.Time{}, fmt.Errorf("edge-controller-manager exited while the Location statuses were awaited")
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func destKey(cluster, syncTarget string) string { return cluster + "|" + syncTarget }

// tracker follows the slices and placements of the workload workspace through informers (one
// watch each) and tells when a condition on them becomes true, with the time at which the event
// that made it true arrived.
type tracker struct {
	mu sync.Mutex
	// slices: by slice name, its placement (label) and destinations (destKey).
	slices map[string]*sliceState
	// byPlacement: placement name -> names of its slices.
	byPlacement map[string]map[string]struct{}
	// scheduled: placement name -> observedGeneration == generation and Scheduled True.
	scheduled map[string]bool

	// Counters since the last await: writes seen (a new resourceVersion, a creation or a
	// deletion), and the slice writes seen when the condition became true.
	sliceWrites, placementWrites, sliceWritesDone int
	lastEvent                                     time.Time

	cond func() bool
	done chan time.Time
}

type sliceState struct {
	placement    string
	destinations map[string]struct{}
}

func newTracker() *tracker {
	return &tracker{slices: map[string]*sliceState{}, byPlacement: map[string]map[string]struct{}{}, scheduled: map[string]bool{}}
}

// watch starts the informers and waits for their (empty or not) initial lists.
func (t *tracker) watch(ctx context.Context, client dynamic.Interface) error {
	factory := dynamicinformer.NewDynamicSharedInformerFactory(client, 0)
	slices := factory.ForResource(slicesGVR).Informer()
	placements := factory.ForResource(placementsGVR).Informer()
	handlers := func(set func(u *unstructured.Unstructured), del func(name string), count func()) cache.ResourceEventHandler {
		return cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) {
				now := time.Now()
				t.event(now, func() { set(obj.(*unstructured.Unstructured)); count() })
			},
			UpdateFunc: func(old, obj any) {
				now := time.Now()
				o, n := old.(*unstructured.Unstructured), obj.(*unstructured.Unstructured)
				if o.GetResourceVersion() == n.GetResourceVersion() {
					return // a relist, not a write
				}
				t.event(now, func() { set(n); count() })
			},
			DeleteFunc: func(obj any) {
				now := time.Now()
				if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = d.Obj
				}
				u, ok := obj.(*unstructured.Unstructured)
				if !ok {
					return
				}
				t.event(now, func() { del(u.GetName()); count() })
			},
		}
	}
	if _, err := slices.AddEventHandler(handlers(t.setSlice, t.deleteSlice, func() { t.sliceWrites++ })); err != nil {
		return err
	}
	if _, err := placements.AddEventHandler(handlers(t.setPlacement, t.deletePlacement, func() { t.placementWrites++ })); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	for gvr, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("the informer on %s in the workload workspace did not sync", gvr.Resource)
		}
	}
	return nil
}

// event applies one informer event under the lock and checks the awaited condition.
func (t *tracker) event(now time.Time, apply func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	apply()
	t.lastEvent = now
	if t.cond != nil && t.cond() {
		t.sliceWritesDone = t.sliceWrites
		t.done <- now
		t.cond = nil
	}
}

func (t *tracker) setSlice(u *unstructured.Unstructured) {
	s := &edgev1alpha1.SinglePlacementSlice{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, s); err != nil {
		say("cannot decode SinglePlacementSlice %s: %v", u.GetName(), err)
		return
	}
	t.deleteSlice(s.Name)
	st := &sliceState{placement: s.Labels[edgev1alpha1.LabelPlacement], destinations: map[string]struct{}{}}
	for _, d := range s.Destinations {
		st.destinations[destKey(d.Cluster, d.SyncTargetName)] = struct{}{}
	}
	t.slices[s.Name] = st
	if t.byPlacement[st.placement] == nil {
		t.byPlacement[st.placement] = map[string]struct{}{}
	}
	t.byPlacement[st.placement][s.Name] = struct{}{}
}

func (t *tracker) deleteSlice(name string) {
	if old, ok := t.slices[name]; ok {
		delete(t.byPlacement[old.placement], name)
		delete(t.slices, name)
	}
}

func (t *tracker) setPlacement(u *unstructured.Unstructured) {
	p := &edgev1alpha1.EdgePlacement{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
		say("cannot decode EdgePlacement %s: %v", u.GetName(), err)
		return
	}
	t.scheduled[p.Name] = p.Status.ObservedGeneration == p.Generation &&
		meta.IsStatusConditionTrue(p.Status.Conditions, edgev1alpha1.PlacementScheduled)
}

func (t *tracker) deletePlacement(name string) { delete(t.scheduled, name) }

// The queries below run with mu held: inside a condition, or through summary.

// destinationCount is how many destinations the placement's slices hold together.
func (t *tracker) destinationCount(placement string) int {
	n := 0
	for name := range t.byPlacement[placement] {
		n += len(t.slices[name].destinations)
	}
	return n
}

func (t *tracker) hasDestination(placement, key string) bool {
	for name := range t.byPlacement[placement] {
		if _, ok := t.slices[name].destinations[key]; ok {
			return true
		}
	}
	return false
}

func (t *tracker) placementScheduled(placement string) bool { return t.scheduled[placement] }

// await resets the write counters and returns a channel that receives the arrival time of the
// event that makes cond true. cond runs with the tracker's lock held and must be false now.
func (t *tracker) await(cond func() bool) <-chan time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sliceWrites, t.placementWrites, t.sliceWritesDone = 0, 0, 0
	t.cond, t.done = cond, make(chan time.Time, 1)
	return t.done
}

func (t *tracker) sliceWritesAtDone() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sliceWritesDone
}

// writes returns the slice and placement writes seen since the last await.
func (t *tracker) writes() (slices, placements int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sliceWrites, t.placementWrites
}

// waitQuiet waits until no event has arrived for d, at most max.
func (t *tracker) waitQuiet(d, max time.Duration) {
	deadline := time.Now().Add(max)
	for time.Now().Before(deadline) {
		t.mu.Lock()
		since := time.Since(t.lastEvent)
		t.mu.Unlock()
		if since >= d {
			return
		}
		time.Sleep(d - since)
	}
}

// summary says how far the placements are, for progress and errors.
func (t *tracker) summary(expected map[string]int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	complete, scheduled, dests, want := 0, 0, 0, 0
	for name, n := range expected {
		got := t.destinationCount(name)
		dests += got
		want += n
		if got == n {
			complete++
		}
		if t.scheduled[name] {
			scheduled++
		}
	}
	return fmt.Sprintf("%d of %d placements with complete slices, %d with status Scheduled for their generation, %d of %d destinations, %d slices",
		complete, len(expected), scheduled, dests, want, len(t.slices))
}

// progress says every 5 s how many of total objects are created, until the returned func runs.
func progress(what string, created *atomic.Int64, total int) (stop func()) {
	start := time.Now()
	stopTicks := framework.Every(5*time.Second, func() {
		n := created.Load()
		say("%s: %d of %d objects created (%.0f objects/s)", what, n, total, float64(n)/time.Since(start).Seconds())
	})
	return func() {
		stopTicks()
		n := created.Load()
		say("%s: %d of %d objects created in %.1fs (%.0f objects/s)", what, n, total, time.Since(start).Seconds(), float64(n)/time.Since(start).Seconds())
	}
}

func meanMax(v []int) (float64, int) {
	sum, m := 0, 0
	for _, x := range v {
		sum += x
		m = max(m, x)
	}
	return float64(sum) / float64(len(v)), m
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error() + "\n"
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, bufio.ErrTooLong) {
		lines = append(lines, err.Error())
	}
	return strings.Join(lines, "\n") + "\n"
}

func printTable(r result) {
	fmt.Printf("\nedge scheduler benchmark: %d SyncTargets and Locations in %d inventory workspaces, %d EdgePlacements over %d regions, %d workers, %d cores\n\n",
		r.Locations, r.InventoryWorkspaces, r.Placements, r.Regions, r.Workers, r.Cores)
	fmt.Printf("| measure | value | target |\n|---|---|---|\n")
	fmt.Printf("| set-up (kcp, ESPW, workspaces, %d objects; not part of the figures) | %.1f s (inventory %.0f objects/s) | |\n", r.SetupObjects, r.SetupSeconds, r.InventoryObjectsPerSecond)
	fmt.Printf("| resolve all: edge-controller-manager start to every placement's slices complete and status Scheduled (%d destinations) | %.2f s (ready after %.2f s) | |\n",
		r.TotalDestinations, r.ResolveAllSeconds, r.ControllerReadySeconds)
	fmt.Printf("| edge-controller-manager start to every Location's status written (polled every 250 ms) | %.2f s | |\n", r.LocationStatusesSeconds)
	fmt.Printf("| one label change to updated slices, p50 / p90 / max of %d (%d changes, leaving and returning) | %.0f / %.0f / %.0f ms | < 1 s |\n",
		len(r.ChangeSeconds), r.Changes, 1000*r.ChangeP50Seconds, 1000*r.ChangeP90Seconds, 1000*r.ChangeMaxSeconds)
	fmt.Printf("| placements affected by one change | %.0f of %d | |\n", r.AffectedPlacementsPerChange, r.Placements)
	fmt.Printf("| slice writes per change until converged, mean / max | %.1f / %d | = affected placements |\n", r.SliceWritesToConvergenceMean, r.SliceWritesToConvergenceMax)
	fmt.Printf("| slice writes per change in all (until %.1f s quiet), mean / max | %.1f / %d | = affected placements |\n", quiet.Seconds(), r.SliceWritesPerChangeMean, r.SliceWritesPerChangeMax)
	fmt.Printf("| EdgePlacement writes per change (status counts), mean / max | %.1f / %d | <= affected placements |\n", r.PlacementWritesPerChangeMean, r.PlacementWritesPerChangeMax)
	fmt.Printf("| edge-controller-manager CPU time: resolve all / per change / total | %.2f s / %.1f ms / %.2f s | |\n",
		r.ControllerCPUResolveSeconds, r.ControllerCPUPerChangeMillisec, r.ControllerCPUSeconds)
	fmt.Printf("| edge-controller-manager RSS, peak | %.0f MB, %.0f MB | |\n", r.ControllerRSSMB, r.ControllerPeakRSSMB)
	fmt.Printf("| kcp RSS | %.0f MB | |\n", r.KCPRSSMB)
}
