// Command rollout benchmarks spec.rollout: how long a change takes to roll across a fleet within
// maxInFlight, against the ideal, what it costs the center against the same change made all at
// once, and whether a rollout that waits costs any CPU. One run, one kcp, no real syncers:
//
//  1. set-up (timed, reported, in no figure): a center kcp, the ESPW, an inventory and a workload
//     workspace, edge-controller-manager with the mailbox controller, the scheduler, the
//     placement translator and the status summarizer; N SyncTargets and Locations (kubectl edge
//     ensure location, labelled ring=canary for the first -canary, ring=main for the others) and
//     their mailboxes;
//  2. the edge player plays every destination's syncer: one watch of the assemblages of all
//     mailboxes (through the virtual workspace of mailbox.edge.kcp.io) and, for each version it
//     has not seen, the assemblage status a syncer writes: at -applied-after the version applied
//     with its objects not ready, at -ready-after every object ready (pkg/syncer's status, as its
//     field manager). It renews no heartbeat Lease: every SyncTarget's SyncerReady stays Unknown
//     with reason HeartbeatMissing, which the rollout does not count as stale (only
//     HeartbeatStale is, a syncer that was heard and went silent), so staleness plays no part;
//  3. two placements over all N destinations, each of one ConfigMap in a namespace of its own:
//     "flat" without spec.rollout, and "rolled" with maxInFlight -max-in-flight and
//     minReadySeconds -min-ready; each first delivery is timed (the paced one goes in waves too);
//  4. idle: -idle with nothing rolling out: CPU of kcp and edge-controller-manager, requests;
//  5. paced: the ConfigMap of "rolled" is edited; the clock runs until the placement's status
//     shows the new revision complete (RolloutComplete, history). The ideal is the number of
//     waves (N over maxInFlight, rounded up) times the per-wave time (-ready-after plus
//     -min-ready); the edge player's record gives each wave's time and the most destinations in
//     flight at once. kcp's request counters (apiserver_request_total by verb and resource) are
//     read before the edit and -settle after the end;
//  6. unbounded: the same edit of "flat", until the edge player has reported every destination
//     ready with it, counted the same way;
//  7. waiting: "rolled" gets a first stage "canary" (ring=canary) with a pause gate, and a third
//     edit; once its status says it waits at the gate (the canary done, the rest waiting), CPU
//     and requests over -idle, as in 4; then `kubectl edge rollout resume` and the time until
//     the rest are done.
//
// It prints a markdown table on stdout, progress on stderr, and the figures as JSON with -json.
// Figures are reported, never asserted. Run it with `make bench-rollout` or
// `go run ./test/bench/rollout -n 1000`; it needs bin/kcp (make tools) and builds
// edge-controller-manager from this tree. See docs/dev/performance.md.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/cli"
	"github.com/kcp-dev/edge-mc/test/framework"
)

var (
	syncTargetsGVR = edgev1alpha1.SchemeGroupVersion.WithResource("synctargets")
	namespacesGVR  = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	configMapsGVR  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

// The two placements, each of one ConfigMap in the namespace of its name.
const (
	pacedPlacement = "rolled"
	flatPlacement  = "flat"
	canaryStage    = "canary"
)

// config is the benchmark's shape, from the flags.
type config struct {
	N                   int     `json:"destinations"`
	MaxInFlight         string  `json:"maxInFlight"`
	WaveSize            int     `json:"maxInFlightDestinations"`
	MinReadySeconds     int     `json:"minReadySeconds"`
	AppliedAfterSeconds float64 `json:"appliedAfterSeconds"`
	ReadyAfterSeconds   float64 `json:"readyAfterSeconds"`
	Canary              int     `json:"canaryDestinations"`
	IdleSeconds         float64 `json:"idleSeconds"`
	SettleSeconds       float64 `json:"settleSeconds"`
	Parallel            int     `json:"parallel"`
	Workers             int     `json:"workers"`
	Center              bool    `json:"center,omitempty"`
	Dashboard           bool    `json:"dashboard,omitempty"`
	// Placements, with -dashboard: flat to all N destinations, and Placements-1 more, each to a
	// tenth of them (their Locations are labelled group=g0 to g9 in turn).
	Placements int `json:"placements,omitempty"`
	Rounds     int `json:"rounds,omitempty"`
	// ControllerCap is edge-controller-manager's cap of writes in flight (4 x -workers): the
	// raw writes run at it.
	ControllerCap  int `json:"controllerCap"`
	ProfileSeconds int `json:"profileSeconds,omitempty"`

	maxInFlight                                     intstr.IntOrString
	appliedAfter, readyAfter, idle, settle, timeout time.Duration
	jsonOut, profileDir                             string
}

func (c *config) validate() error {
	switch {
	case c.N < 2:
		return errors.New("-n must be at least 2 (a canary and the rest)")
	case c.MinReadySeconds < 0:
		return errors.New("-min-ready must not be negative")
	case c.readyAfter <= 0 || c.appliedAfter < 0 || (c.appliedAfter > 0 && c.appliedAfter >= c.readyAfter):
		return errors.New("-ready-after must be positive, and -applied-after (0: no separate applied report) shorter than it")
	case c.Canary < 0 || c.Canary >= c.N:
		return fmt.Errorf("-canary must be from 1 to %d (0: 1%% of -n, at least 1)", c.N-1)
	case c.Parallel < 1 || c.Workers < 1:
		return errors.New("-parallel and -workers must be at least 1")
	case c.idle <= 0 || c.settle < 0 || c.timeout <= 0:
		return errors.New("-idle and -timeout must be positive, -settle not negative")
	case c.Center && c.Rounds < 1:
		return errors.New("-rounds must be at least 1")
	case c.Placements < 1 || (c.Placements > 1 && !c.Dashboard):
		return errors.New("-placements must be at least 1, and more than 1 only with -dashboard")
	case c.profileDir != "" && c.ProfileSeconds < 1:
		return errors.New("-profile-seconds must be at least 1")
	}
	if c.profileDir == "" {
		c.ProfileSeconds = 0
	}
	c.maxInFlight = intstr.Parse(c.MaxInFlight)
	size, err := intstr.GetScaledValueFromIntOrPercent(&c.maxInFlight, c.N, true)
	if err != nil || size < 1 || (c.maxInFlight.Type == intstr.String && !strings.HasSuffix(c.MaxInFlight, "%")) {
		return fmt.Errorf("-max-in-flight %q must be a positive number or a percentage such as 10%%", c.MaxInFlight)
	}
	c.WaveSize = min(size, c.N)
	if c.Canary == 0 {
		c.Canary = max(1, c.N/100)
	}
	c.ControllerCap = 4 * c.Workers
	c.AppliedAfterSeconds, c.ReadyAfterSeconds = c.appliedAfter.Seconds(), c.readyAfter.Seconds()
	c.IdleSeconds, c.SettleSeconds = c.idle.Seconds(), c.settle.Seconds()
	return nil
}

func main() {
	var c config
	flag.IntVar(&c.N, "n", 1000, "destinations: SyncTargets, Locations and mailboxes, all selected by both placements")
	flag.StringVar(&c.MaxInFlight, "max-in-flight", "10%", "spec.rollout.maxInFlight of the paced placement: a number or a percentage")
	flag.IntVar(&c.MinReadySeconds, "min-ready", 3, "spec.rollout.minReadySeconds of the paced placement (the soak)")
	flag.DurationVar(&c.appliedAfter, "applied-after", time.Second, "when, after a new version reaches a mailbox, the edge player reports it applied with its objects not ready yet (0: no such report)")
	flag.DurationVar(&c.readyAfter, "ready-after", 2*time.Second, "when, after a new version reaches a mailbox, the edge player reports every object of it ready")
	flag.IntVar(&c.Canary, "canary", 0, "destinations labelled ring=canary, the stage before the pause gate (0: 1% of -n, at least 1)")
	flag.DurationVar(&c.idle, "idle", time.Minute, "the window over which idle CPU and requests are measured, with nothing rolling out and with a rollout waiting at a gate")
	flag.DurationVar(&c.settle, "settle", 5*time.Second, "how long after a change is complete its requests are still counted (trailing status writes)")
	flag.DurationVar(&c.timeout, "timeout", 30*time.Minute, "how long any one step may take")
	flag.IntVar(&c.Parallel, "parallel", 16, "requests at once of the set-up and of the edge player")
	flag.IntVar(&c.Workers, "workers", 8, "edge-controller-manager --workers")
	flag.BoolVar(&c.Center, "center", false, "the center-side benchmark only: the unbounded placement's first delivery and -rounds edits, timed until every new version reached its mailbox, against a plain client's creates and updates of ConfigMaps of an assemblage's size into the same mailboxes, at edge-controller-manager's cap of writes in flight (4 x -workers)")
	flag.BoolVar(&c.Dashboard, "dashboard", false, "kubectl edge dashboard's pages only: once the unbounded placement is ready at every destination, the size of each page and the time to serve it and to load it in headless Chromium (if installed)")
	flag.IntVar(&c.Placements, "placements", 1, "with -dashboard, how many placements: flat to all -n destinations, and the others (extra-001...) each of one ConfigMap to a tenth of them (Locations labelled group=g0 to g9 in turn)")
	flag.IntVar(&c.Rounds, "rounds", 3, "with -center, how many edits")
	flag.StringVar(&c.jsonOut, "json", "", "also write the figures as JSON to this file")
	flag.StringVar(&c.profileDir, "profile", "", "save CPU profiles of kcp and edge-controller-manager (built with a profiler for this) over the first -profile-seconds of the paced rollout into this directory")
	flag.IntVar(&c.ProfileSeconds, "profile-seconds", 30, "length of the -profile CPU profiles")
	flag.Parse()
	if err := c.validate(); err != nil {
		fmt.Fprintf(os.Stderr, "rollout benchmark: %v\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := run(ctx, c)
	if err != nil {
		fmt.Fprintf(os.Stderr, "rollout benchmark: %v\n", err)
		os.Exit(1)
	}
	if c.Center {
		printCenter(os.Stdout, res)
	} else if c.Dashboard {
		printDashboard(os.Stdout, res)
	} else {
		printTables(os.Stdout, res)
	}
	if c.jsonOut != "" {
		raw, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(c.jsonOut, append(raw, '\n'), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "rollout benchmark: %v\n", err)
			os.Exit(1)
		}
	}
}

func say(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s  "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// result is every figure of a run.
type result struct {
	Config config `json:"config"`
	Cores  int    `json:"cores"`
	// MailboxesSeconds is the set-up of the N destinations: from the first kubectl edge ensure
	// location until every SyncTarget says MailboxReady.
	MailboxesSeconds float64 `json:"setupMailboxesSeconds"`
	// The first delivery of each placement: from its creation until every destination has it
	// ready (flat) or its status says complete (rolled).
	FirstFlatSeconds  float64 `json:"firstDeliveryUnboundedSeconds"`
	FirstPacedSeconds float64 `json:"firstDeliveryPacedSeconds"`

	Paced     change `json:"paced"`
	Unbounded change `json:"unbounded"`
	AfterGate change `json:"afterGate"`

	IdleNoRollout idle `json:"idleNoRollout"`
	IdleWaiting   idle `json:"idleWaitingAtGate"`

	// -center: the first delivery's and each edit's fan-out, and the raw writes.
	CenterCreate  fanOut      `json:"centerCreate,omitempty"`
	CenterUpdates []change    `json:"centerUpdates,omitempty"`
	Raw           []rawWrites `json:"raw,omitempty"`
	// What edge-controller-manager's metrics said at the end (-center): the write limit to
	// kcp, the 429s and 503s it met, its retries.
	WriteLimit    float64 `json:"writeLimit,omitempty"`
	WriteRefusals float64 `json:"writeRefusals"`
	Retries       float64 `json:"retries"`

	// -dashboard: the pages of kubectl edge dashboard.
	Dashboard *dashboardFigures `json:"dashboard,omitempty"`

	ControllerRSSMB float64  `json:"controllerRSSMB"`
	KCPRSSMB        float64  `json:"kcpRSSMB"`
	LoadAverages    []string `json:"loadAverages"`
}

// change is what one edit cost, from the edit until it was complete everywhere.
type change struct {
	Destinations int `json:"destinations"`
	// Seconds: edit until complete (the placement's status for a paced one; the edge player's
	// last ready report for an unbounded one).
	Seconds float64 `json:"seconds"`
	// FirstDeliverySeconds: edit until the first new version reached a mailbox;
	// LastReadySeconds: edit until the edge player reported the last destination ready.
	FirstDeliverySeconds float64 `json:"firstDeliverySeconds"`
	LastReadySeconds     float64 `json:"lastReadySeconds"`
	// Waves and IdealSeconds: for a paced change, the number of waves and their ideal total,
	// waves times (ready-after + minReadySeconds); Ratio is Seconds over it.
	Waves        int       `json:"waves,omitempty"`
	IdealSeconds float64   `json:"idealSeconds,omitempty"`
	Ratio        float64   `json:"ratio,omitempty"`
	WaveSeconds  []float64 `json:"waveSeconds,omitempty"`
	// MaxInFlight is the most destinations that had the new version and were not done with it
	// at one moment, from the edge player's record.
	MaxInFlight int `json:"maxInFlightSeen"`
	Deliveries  int `json:"deliveries"`
	// Requests are kcp's requests from the edit until -settle after the end, by verb and
	// resource; Writes and Reads sum them.
	Requests     []requestCount `json:"requests"`
	Writes       float64        `json:"writes"`
	Reads        float64        `json:"reads"`
	PlayerWrites int64          `json:"edgePlayerWrites"`
	// PlacementChanges are the changes of the placement's status that the benchmark's watch
	// saw, by the controller whose part changed.
	PlacementChanges statusChanges `json:"placementStatusChanges"`
	// OtherPlacementChanges are those of the other placement, which was not edited.
	OtherPlacementChanges statusChanges `json:"otherPlacementStatusChanges"`
	KCPCPUSeconds         float64       `json:"kcpCPUSeconds"`
	ControllerCPUSeconds  float64       `json:"controllerCPUSeconds"`
	// FanOut: how fast the new versions reached the mailboxes.
	FanOut fanOut `json:"fanOut"`
}

// idle is what the center spent over a window in which nothing changed.
type idle struct {
	// State is the paced placement's rollout during the window, from its status.
	State                string         `json:"state"`
	Seconds              float64        `json:"seconds"`
	KCPCPUPercent        float64        `json:"kcpCPUPercentOfOneCore"`
	ControllerCPUPercent float64        `json:"controllerCPUPercentOfOneCore"`
	Requests             []requestCount `json:"requests"`
	Writes               float64        `json:"writes"`
	Reads                float64        `json:"reads"`
	// Deliveries are new versions that reached a mailbox during the window.
	Deliveries int `json:"deliveries"`
}

// bench is the running benchmark.
type bench struct {
	cfg            config
	s              *framework.Server
	binDir, dir    string
	ecm            *framework.Command
	ecmPprof       string // the profiler's address, with -profile
	ecmHTTP        string // the address of its /metrics
	espw, imw, wmw logicalcluster.Path
	wmwDyn         dynamic.Interface
	player         *edgePlayer
	placements     *placementWatch
}

func run(ctx context.Context, c config) (*result, error) {
	res := &result{Config: c, Cores: goruntime.NumCPU()}
	b := &bench{cfg: c}
	defer b.stop()
	if err := b.setUp(ctx, res); err != nil {
		return nil, err
	}
	load := func(when string) {
		avg := framework.LoadAverage()
		res.LoadAverages = append(res.LoadAverages, fmt.Sprintf("%s: %.2f %.2f %.2f", when, avg[0], avg[1], avg[2]))
	}
	load("after the set-up")
	if c.Center {
		if err := b.runCenter(ctx, res); err != nil {
			return nil, err
		}
		load("at the end")
		return res, b.finish(res)
	}

	// 3. The first deliveries.
	start := time.Now()
	say("first delivery: placement %s (no spec.rollout) on %d destinations", flatPlacement, c.N)
	if err := b.createPlacement(ctx, flatPlacement, nil); err != nil {
		return nil, err
	}
	if _, err := b.waitAllReady(ctx, flatPlacement, start, c.N); err != nil {
		return nil, err
	}
	res.FirstFlatSeconds = time.Since(start).Seconds()
	if c.Dashboard {
		if err := b.extraPlacements(ctx); err != nil {
			return nil, err
		}
		b.sleep(ctx, c.settle)
		load("before the dashboard's pages")
		if err := b.runDashboard(ctx, res); err != nil {
			return nil, err
		}
		load("at the end")
		return res, b.finish(res)
	}
	start = time.Now()
	say("first delivery: placement %s (maxInFlight %s, minReadySeconds %d) on %d destinations", pacedPlacement, c.MaxInFlight, c.MinReadySeconds, c.N)
	if err := b.createPlacement(ctx, pacedPlacement, b.rolloutSpec(false)); err != nil {
		return nil, err
	}
	if _, err := b.waitPlacement(ctx, pacedPlacement, "the first revision complete", completedOtherThan("")); err != nil {
		return nil, err
	}
	res.FirstPacedSeconds = time.Since(start).Seconds()
	say("first delivery: %s everywhere after %.1fs, %s after %.1fs", flatPlacement, res.FirstFlatSeconds, pacedPlacement, res.FirstPacedSeconds)
	b.sleep(ctx, c.settle)

	// 4. Idle, nothing rolling out.
	var err error
	if res.IdleNoRollout, err = b.measureIdle(ctx, "nothing rolling out"); err != nil {
		return nil, err
	}

	// 5. The paced edit, then 6. the same edit unbounded.
	waitProfiles := func() {}
	if c.profileDir != "" {
		if err := os.MkdirAll(c.profileDir, 0o755); err != nil {
			return nil, err
		}
		waitProfiles = profile(ctx, c.profileDir, c.ProfileSeconds, map[string]string{
			"edge-controller-manager-paced": b.ecmPprof, "kcp-paced": b.s.ProfilerAddress})
	}
	if res.Paced, err = b.measureChange(ctx, pacedPlacement, "v2", c.N, time.Time{}); err != nil {
		return nil, err
	}
	waitProfiles()
	load("after the paced rollout")
	if res.Unbounded, err = b.measureChange(ctx, flatPlacement, "v2", c.N, time.Time{}); err != nil {
		return nil, err
	}
	load("after the unbounded change")

	// 7. A rollout waiting at a pause gate.
	say("waiting: placement %s gets a canary stage (%d destinations) with a pause gate, and a third edit", pacedPlacement, c.Canary)
	before := revisionOf(b.placements.get(pacedPlacement))
	if err := b.patchPlacement(ctx, pacedPlacement, map[string]any{"spec": map[string]any{"rollout": b.rolloutSpec(true)}}); err != nil {
		return nil, err
	}
	if err := b.editConfigMap(ctx, pacedPlacement, "v3"); err != nil {
		return nil, err
	}
	if _, err := b.waitPlacement(ctx, pacedPlacement, "the rollout to wait at the gate after stage "+canaryStage, waitingAtGate(before, canaryStage)); err != nil {
		return nil, err
	}
	b.sleep(ctx, c.settle)
	if res.IdleWaiting, err = b.measureIdle(ctx, "waiting at the pause gate"); err != nil {
		return nil, err
	}
	resumeAt := time.Now()
	if err := b.kubectlEdge(ctx, "rollout", "resume", pacedPlacement, "--wmw", b.wmw.String()); err != nil {
		return nil, err
	}
	if res.AfterGate, err = b.measureChange(ctx, pacedPlacement, "", c.N-c.Canary, resumeAt); err != nil {
		return nil, err
	}
	load("at the end")
	return res, b.finish(res)
}

// finish reads the RSS at the end.
func (b *bench) finish(res *result) error {
	if cur, _, err := framework.RSS(b.ecm.PID()); err == nil {
		res.ControllerRSSMB = float64(cur) / 1e6
	}
	if cur, _, err := framework.RSS(b.s.PID()); err == nil {
		res.KCPRSSMB = float64(cur) / 1e6
	}
	return nil
}

// setUp starts kcp and edge-controller-manager, makes the workspaces and the N destinations
// with their mailboxes, the workload's namespaces and ConfigMaps, and starts the edge player and
// the watch of the placements.
func (b *bench) setUp(ctx context.Context, res *result) error {
	var err error
	if b.dir, err = os.MkdirTemp("", "edge-mc-bench-rollout-"); err != nil {
		return err
	}
	say("starting kcp and building edge-controller-manager")
	if b.s, err = framework.StartKCP(); err != nil {
		return err
	}
	if b.binDir, err = framework.BuildPackages("./cmd/edge-controller-manager"); err != nil {
		return err
	}
	base := logicalcluster.NewPath("root:bench")
	b.espw, b.imw, b.wmw = base.Join("espw"), base.Join("imw"), base.Join("wmw")
	for _, args := range [][]string{{"init"}, {"ensure", "imw", b.imw.String()}, {"ensure", "wmw", b.wmw.String()}} {
		if err := b.kubectlEdge(ctx, args...); err != nil {
			return err
		}
	}
	if b.wmwDyn, err = dynamic.NewForConfig(b.s.ConfigFor(b.wmw)); err != nil {
		return err
	}
	ports, err := framework.FreePorts(2)
	if err != nil {
		return err
	}
	address := "127.0.0.1:" + strconv.Itoa(ports[0])
	b.ecmHTTP = address
	args := []string{"--kubeconfig", b.s.KubeconfigPath, "--espw", b.espw.String(), "--workers", strconv.Itoa(b.cfg.Workers),
		"--http-address", address, "--controllers", "mailbox,scheduler,placement-translator,upsync,status-summarizer"}
	if b.cfg.profileDir != "" {
		b.ecmPprof = "127.0.0.1:" + strconv.Itoa(ports[1])
		args = append(args, "--profiler-address", b.ecmPprof)
	}
	b.ecm, err = framework.StartCommand(filepath.Join(b.binDir, "edge-controller-manager"), filepath.Join(b.dir, "edge-controller-manager.log"), args...)
	if err != nil {
		return err
	}
	say("edge-controller-manager started (log %s); waiting until it is ready", b.ecm.LogPath())
	if err := framework.WaitReadyz(ctx, address, 3*time.Minute, b.ecm.Exited); err != nil {
		return fmt.Errorf("edge-controller-manager: %w (log: %s)", err, b.ecm.LogPath())
	}

	start := time.Now()
	if err := b.destinations(ctx); err != nil {
		return err
	}
	res.MailboxesSeconds = time.Since(start).Seconds()
	say("set-up: %d mailboxes ready after %.0fs", b.cfg.N, res.MailboxesSeconds)

	if b.player, err = startEdgePlayer(ctx, b.s, b.espw, b.cfg.appliedAfter, b.cfg.readyAfter, b.cfg.Parallel); err != nil {
		return err
	}
	if b.placements, err = watchPlacements(ctx, b.s, b.wmw); err != nil {
		return err
	}
	for _, name := range []string{flatPlacement, pacedPlacement} {
		if err := b.createSettings(ctx, name); err != nil {
			return err
		}
	}
	return nil
}

func (b *bench) stop() {
	if b.ecm != nil {
		b.ecm.Stop()
		if raw, err := os.ReadFile(b.ecm.LogPath()); err == nil && bytes.Contains(raw, []byte("panic")) {
			say("edge-controller-manager's log mentions a panic: %s", b.ecm.LogPath())
		}
	}
	if b.s != nil {
		b.s.Stop()
	}
	if b.binDir != "" {
		os.RemoveAll(b.binDir)
	}
	if b.dir != "" {
		os.RemoveAll(b.dir)
	}
}

// kubectlEdge runs `kubectl edge args...` in this process (package cli, which the plugin runs)
// with the admin kubeconfig and the benchmark's ESPW.
func (b *bench) kubectlEdge(ctx context.Context, args ...string) error {
	var out bytes.Buffer
	cmd := cli.NewCommand(genericclioptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out})
	cmd.SetArgs(append([]string{"--kubeconfig", b.s.KubeconfigPath, "--espw", b.espw.String()}, args...))
	if err := cmd.ExecuteContext(ctx); err != nil {
		return fmt.Errorf("kubectl edge %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	return nil
}

// destinations makes the N SyncTargets and Locations, and waits until every mailbox is ready.
func (b *bench) destinations(ctx context.Context) error {
	n := b.cfg.N
	say("set-up: %d SyncTargets and Locations (kubectl edge ensure location), %d at a time", n, b.cfg.Parallel)
	if err := framework.ForEach(n, b.cfg.Parallel, func(i int) error {
		ring := "main"
		if i < b.cfg.Canary {
			ring = "canary"
		}
		labels := []string{"fleet=bench", "ring=" + ring}
		if b.cfg.Placements > 1 {
			labels = append(labels, fmt.Sprintf("group=g%d", i%extraGroups))
		}
		return b.kubectlEdge(ctx, append(append([]string{"ensure", "location", fmt.Sprintf("edge-%05d", i)}, labels...), "--imw", b.imw.String())...)
	}); err != nil {
		return err
	}
	imw, err := dynamic.NewForConfig(b.s.ConfigFor(b.imw))
	if err != nil {
		return err
	}
	start, last, lastReady, lastChange := time.Now(), time.Now(), -1, time.Now()
	for {
		list, err := imw.Resource(syncTargetsGVR).List(ctx, metav1.ListOptions{})
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil && time.Since(lastChange) > 5*time.Minute:
			return fmt.Errorf("listing the SyncTargets: %w (no progress for 5m)", err)
		case err != nil:
			// A busy kcp may time out a list of many SyncTargets: ask again, within the
			// no-progress bound (a run on a loaded machine stopped here at 601 of 1000).
			say("set-up: listing the SyncTargets: %v; trying again", err)
			if err := b.sleep(ctx, 2*time.Second); err != nil {
				return err
			}
			continue
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
		if ready > lastReady {
			lastReady, lastChange = ready, time.Now()
		} else if time.Since(lastChange) > 5*time.Minute {
			return fmt.Errorf("only %d of %d mailboxes ready, none more for 5m (edge-controller-manager's log: %s)", ready, n, b.ecm.LogPath())
		}
		if time.Since(last) > 15*time.Second {
			say("set-up: %d of %d mailboxes ready after %.0fs", ready, n, time.Since(start).Seconds())
			last = time.Now()
		}
		if err := b.sleep(ctx, 2*time.Second); err != nil {
			return err
		}
	}
}

// rolloutSpec is the paced placement's spec.rollout; withGate adds the canary stage and its gate.
func (b *bench) rolloutSpec(withGate bool) map[string]any {
	r := map[string]any{"minReadySeconds": int64(b.cfg.MinReadySeconds)}
	if b.cfg.maxInFlight.Type == intstr.Int {
		r["maxInFlight"] = int64(b.cfg.maxInFlight.IntValue())
	} else {
		r["maxInFlight"] = b.cfg.maxInFlight.String()
	}
	if withGate {
		r["stages"] = []any{map[string]any{"name": canaryStage, "pause": true,
			"selector": map[string]any{"matchLabels": map[string]any{"ring": "canary"}}}}
	}
	return r
}

// createPlacement creates a placement of the namespace of its name on every destination.
func (b *bench) createPlacement(ctx context.Context, name string, rollout map[string]any) error {
	return b.createPlacementOn(ctx, name, map[string]any{"fleet": "bench"}, rollout)
}

// createPlacementOn creates a placement of the namespace of its name on the destinations whose
// Location has the labels.
func (b *bench) createPlacementOn(ctx context.Context, name string, labels map[string]any, rollout map[string]any) error {
	spec := map[string]any{
		"locationSelectors": []any{map[string]any{"matchLabels": labels}},
		"downsync":          []any{map[string]any{"namespaces": []any{name}}},
	}
	if rollout != nil {
		spec["rollout"] = rollout
	}
	p := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": edgev1alpha1.SchemeGroupVersion.String(), "kind": "EdgePlacement",
		"metadata": map[string]any{"name": name}, "spec": spec,
	}}
	if _, err := b.wmwDyn.Resource(placementsGVR).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating EdgePlacement %s in %s: %w", name, b.wmw, err)
	}
	return nil
}

func (b *bench) patchPlacement(ctx context.Context, name string, patch map[string]any) error {
	raw, _ := json.Marshal(patch)
	if _, err := b.wmwDyn.Resource(placementsGVR).Patch(ctx, name, types.MergePatchType, raw, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("patching EdgePlacement %s in %s: %w", name, b.wmw, err)
	}
	return nil
}

// editConfigMap sets the value of the ConfigMap that the placement of the given name selects.
func (b *bench) editConfigMap(ctx context.Context, placement, value string) error {
	raw, _ := json.Marshal(map[string]any{"data": map[string]any{"value": value}})
	if _, err := b.wmwDyn.Resource(configMapsGVR).Namespace(placement).Patch(ctx, "settings", types.MergePatchType, raw, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("editing ConfigMap %s/settings in %s: %w", placement, b.wmw, err)
	}
	return nil
}

// measureChange edits the placement's ConfigMap (value "": no edit, the change began at since,
// as with a resume) and measures until the change is complete at its destinations.
func (b *bench) measureChange(ctx context.Context, placement, value string, destinations int, since time.Time) (change, error) {
	c := change{Destinations: destinations}
	p := b.placements.get(placement)
	paced := p != nil && p.Spec.Rollout.Paces()
	oldRevision := revisionOf(p)
	if !since.IsZero() {
		// A change under way: complete once the current revision is.
		oldRevision = ""
		if p.Status.Rollout != nil && len(p.Status.Rollout.History) > 1 {
			oldRevision = p.Status.Rollout.History[1].Revision
		}
	}
	requestsBefore := b.requestCounts(ctx)
	kcpCPU, ecmCPU, playerWrites := framework.CPUSeconds(b.s.PID()), framework.CPUSeconds(b.ecm.PID()), b.player.writes.Load()
	other := flatPlacement
	if placement == flatPlacement {
		other = pacedPlacement
	}
	changesBefore, otherBefore := b.placements.changesOf(placement), b.placements.changesOf(other)
	start := since
	if value != "" {
		say("%s: ConfigMap %s/settings := %s, to %d destinations", placement, placement, value, destinations)
		start = time.Now()
		if err := b.editConfigMap(ctx, placement, value); err != nil {
			return c, err
		}
	} else {
		say("%s: the change goes on to %d destinations", placement, destinations)
	}
	var done time.Time
	var err error
	if paced {
		done, err = b.waitPlacement(ctx, placement, "the new revision complete", completedOtherThan(oldRevision))
	} else {
		done, err = b.waitAllReady(ctx, placement, start, destinations)
	}
	if err != nil {
		return c, err
	}
	c.Seconds = done.Sub(start).Seconds()
	b.sleep(ctx, b.cfg.settle)
	c.KCPCPUSeconds = framework.CPUSeconds(b.s.PID()) - kcpCPU
	c.ControllerCPUSeconds = framework.CPUSeconds(b.ecm.PID()) - ecmCPU
	c.PlayerWrites = b.player.writes.Load() - playerWrites
	c.PlacementChanges = b.placements.changesOf(placement).minus(changesBefore)
	c.OtherPlacementChanges = b.placements.changesOf(other).minus(otherBefore)
	c.Requests = requestDiff(requestsBefore, b.requestCounts(ctx))
	c.Writes, c.Reads = sumRequests(c.Requests)

	minReady := time.Duration(0)
	if paced {
		minReady = time.Duration(b.cfg.MinReadySeconds) * time.Second
	}
	var spans []span
	var first, lastReady time.Time
	for _, d := range b.player.of(placement, start) {
		c.Deliveries++
		if first.IsZero() || d.seen.Before(first) {
			first = d.seen
		}
		if d.ready.IsZero() {
			continue
		}
		if d.ready.After(lastReady) {
			lastReady = d.ready
		}
		end := d.doneAt(minReady)
		if end.Before(d.seen) {
			end = d.seen
		}
		spans = append(spans, span{start: d.seen, end: end})
	}
	c.FirstDeliverySeconds = first.Sub(start).Seconds()
	c.FanOut = b.fanOutOf(placement, start)
	c.LastReadySeconds = lastReady.Sub(start).Seconds()
	c.MaxInFlight = maxOverlap(spans)
	if paced {
		waves := wavesOf(spans, b.cfg.WaveSize)
		c.Waves = ceilDiv(destinations, b.cfg.WaveSize)
		c.IdealSeconds = float64(c.Waves) * (b.cfg.readyAfter + minReady).Seconds()
		c.Ratio = c.Seconds / c.IdealSeconds
		c.WaveSeconds = waveSeconds(waves)
	}
	say("%s: complete at %d destinations after %.1fs (first delivery after %.1fs, last ready after %.1fs); %d deliveries, at most %d in flight; %.0f writes, %.0f reads",
		placement, destinations, c.Seconds, c.FirstDeliverySeconds, c.LastReadySeconds, c.Deliveries, c.MaxInFlight, c.Writes, c.Reads)
	return c, nil
}

// measureIdle measures the center's CPU and requests over -idle.
func (b *bench) measureIdle(ctx context.Context, what string) (idle, error) {
	w := idle{Seconds: b.cfg.IdleSeconds}
	p := b.placements.get(pacedPlacement)
	w.State = fmt.Sprintf("%s: %s; %s", what, stageCounts(p), conditionText(p, edgev1alpha1.PlacementProgressing))
	say("idle: %.0fs, %s", b.cfg.IdleSeconds, w.State)
	requestsBefore := b.requestCounts(ctx)
	start := time.Now()
	kcpCPU, ecmCPU := framework.CPUSeconds(b.s.PID()), framework.CPUSeconds(b.ecm.PID())
	if err := b.sleep(ctx, b.cfg.idle); err != nil {
		return w, err
	}
	elapsed := time.Since(start).Seconds()
	w.KCPCPUPercent = 100 * (framework.CPUSeconds(b.s.PID()) - kcpCPU) / elapsed
	w.ControllerCPUPercent = 100 * (framework.CPUSeconds(b.ecm.PID()) - ecmCPU) / elapsed
	w.Requests = requestDiff(requestsBefore, b.requestCounts(ctx))
	w.Writes, w.Reads = sumRequests(w.Requests)
	for _, name := range []string{pacedPlacement, flatPlacement} {
		w.Deliveries += len(b.player.of(name, start))
	}
	after := b.placements.get(pacedPlacement)
	say("idle: kcp %.1f%%, edge-controller-manager %.1f%% of a core; %.0f writes, %.0f reads, %d deliveries; at the end: %s",
		w.KCPCPUPercent, w.ControllerCPUPercent, w.Writes, w.Reads, w.Deliveries, stageCounts(after))
	return w, nil
}

// waitPlacement waits until cond holds of the placement, and returns when the watch saw it.
func (b *bench) waitPlacement(ctx context.Context, name, what string, cond func(p *edgev1alpha1.EdgePlacement) bool) (time.Time, error) {
	ch := b.placements.await(name, cond)
	return b.wait(ctx, ch, fmt.Sprintf("EdgePlacement %s: %s", name, what), func() string {
		p := b.placements.get(name)
		return fmt.Sprintf("%s; %s", stageCounts(p), conditionText(p, edgev1alpha1.PlacementProgressing))
	})
}

// waitAllReady waits until the edge player has reported n destinations ready with a version of
// the placement that came at or after since.
func (b *bench) waitAllReady(ctx context.Context, placement string, since time.Time, n int) (time.Time, error) {
	ch := b.player.await(func(ds map[deliveryKey]*delivery) bool { return readyCount(ds, placement, since) >= n })
	return b.wait(ctx, ch, fmt.Sprintf("%d destinations ready with placement %s", n, placement), func() string {
		ds := b.player.of(placement, since)
		ready := 0
		for _, d := range ds {
			if !d.ready.IsZero() {
				ready++
			}
		}
		return fmt.Sprintf("%d deliveries, %d reported ready", len(ds), ready)
	})
}

// wait waits for ch, saying progress every 15 s, for at most -timeout.
func (b *bench) wait(ctx context.Context, ch <-chan time.Time, what string, progress func() string) (time.Time, error) {
	start := time.Now()
	tick := time.NewTicker(15 * time.Second)
	defer tick.Stop()
	timeout := time.After(b.cfg.timeout)
	for {
		select {
		case at := <-ch:
			return at, nil
		case <-tick.C:
			say("waiting for %s (%.0fs): %s", what, time.Since(start).Seconds(), progress())
		case <-timeout:
			return time.Time{}, fmt.Errorf("timed out after %s waiting for %s: %s (edge-controller-manager's log: %s)", b.cfg.timeout, what, progress(), b.ecm.LogPath())
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		}
	}
}

func (b *bench) sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// requestCounts reads kcp's request counters; nil if they cannot be read (said on stderr).
func (b *bench) requestCounts(ctx context.Context) map[string]float64 {
	metrics, err := b.s.Metrics(ctx)
	if err != nil {
		say("cannot read kcp's request counters: %v", err)
		return nil
	}
	return requestCounts(metrics)
}

// createSettings makes, in the workload workspace, the namespace name with one ConfigMap,
// settings: what each of the benchmark's placements delivers.
func (b *bench) createSettings(ctx context.Context, name string) error {
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}}}
	if _, err := b.wmwDyn.Resource(namespacesGVR).Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating namespace %s in %s: %w", name, b.wmw, err)
	}
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "settings", "namespace": name}, "data": map[string]any{"value": "v1"}}}
	if _, err := b.wmwDyn.Resource(configMapsGVR).Namespace(name).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating ConfigMap %s/settings in %s: %w", name, b.wmw, err)
	}
	return nil
}
