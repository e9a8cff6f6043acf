// Command kcpwrites measures what writes and workspaces cost a kcp server, for one or more kcp
// binaries, one after the other on the same machine, so that two kcp releases can be compared in
// one run (absolute figures on a shared machine vary from run to run; the order of the binaries
// alternates between rounds). For each binary and round it starts a fresh kcp with the test
// harness's arguments and:
//
//  1. writes: creates -n ConfigMaps of -object-size bytes in one workspace, -parallel at a time,
//     and reports the rate, kcp's CPU time per create (from /proc) and the writes kcp counted
//     (apiserver_request_total);
//  2. profile (with -profile DIR): keeps creating ConfigMaps for -profile-seconds while it takes
//     a CPU profile of kcp (its --profiler-address), saved as DIR/<label>-r<round>.pprof;
//  3. workspaces: creates -workspaces workspaces of kcp's default type in root, -parallel at a
//     time, each until ready, and reports the rate and kcp's RSS growth per workspace after a
//     settling time; then kcp's idle CPU over -idle with no client.
//
// Run it as `go run ./test/bench/kcpwrites` (bin/kcp alone) or with another build beside it:
// `go run ./test/bench/kcpwrites -kcp v0.31.2=bin/kcp -kcp v0.28.1=/path/to/kcp -rounds 2`.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kcp-dev/edge-mc/pkg/workspaces"
	"github.com/kcp-dev/edge-mc/test/framework"
)

// settle is how long kcp is left alone before its memory or idle CPU is read.
const settle = 10 * time.Second

type binary struct{ label, path string }

type binaries []binary

func (b *binaries) String() string {
	var s []string
	for _, x := range *b {
		s = append(s, x.label+"="+x.path)
	}
	return strings.Join(s, ",")
}

func (b *binaries) Set(v string) error {
	label, path, ok := strings.Cut(v, "=")
	if !ok || label == "" || path == "" {
		return fmt.Errorf("want label=path, for example v0.31.2=bin/kcp; got %q", v)
	}
	// The harness starts kcp in a directory of its own: a relative path must be made absolute
	// here, where it means what the user meant.
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("-kcp %s: %w", v, err)
	}
	*b = append(*b, binary{label, abs})
	return nil
}

type config struct {
	N, ObjectSize, Parallel, Workspaces, Rounds, ProfileSeconds int
	Idle                                                        time.Duration
	profileDir                                                  string
}

// figures are one binary's in one round.
type figures struct {
	Label          string  `json:"label"`
	Path           string  `json:"path"`
	Version        string  `json:"version"`
	Round          int     `json:"round"`
	StartupSeconds float64 `json:"startupSeconds"`
	FreshRSSMB     float64 `json:"freshRSSMB"`

	Creates            int     `json:"creates"`
	CreateSeconds      float64 `json:"createSeconds"`
	CreatesPerSecond   float64 `json:"createsPerSecond"`
	CPUSeconds         float64 `json:"kcpCPUSeconds"`
	CPUMillisPerCreate float64 `json:"kcpCPUMillisPerCreate"`
	WritesCounted      float64 `json:"writesCounted"`

	Profile string `json:"profile,omitempty"`

	Workspaces            int     `json:"workspaces"`
	WorkspaceSeconds      float64 `json:"workspaceSeconds"`
	WorkspacesPerSecond   float64 `json:"workspacesPerSecond"`
	RSSWithWorkspacesMB   float64 `json:"rssWithWorkspacesMB"`
	MBPerWorkspace        float64 `json:"mbPerWorkspace"`
	IdleCPUPercent        float64 `json:"idleCPUPercent"`
	IdleWindowSeconds     float64 `json:"idleWindowSeconds"`
	LoadAverageAtStart    string  `json:"loadAverageAtStart"`
	MeasurementFinishedAt string  `json:"finishedAt"`
}

func main() {
	var bins binaries
	var c config
	flag.Var(&bins, "kcp", "a kcp binary to measure, as label=path; repeat to compare (default: pinned=bin/kcp)")
	flag.IntVar(&c.N, "n", 1500, "ConfigMaps created")
	flag.IntVar(&c.ObjectSize, "object-size", 1024, "bytes of data in each ConfigMap")
	flag.IntVar(&c.Parallel, "parallel", 16, "requests at once")
	flag.IntVar(&c.Workspaces, "workspaces", 100, "workspaces created for the memory figure (0: none)")
	flag.IntVar(&c.Rounds, "rounds", 1, "rounds; each measures every binary once, in alternating order")
	flag.DurationVar(&c.Idle, "idle", 30*time.Second, "window of the idle CPU figure")
	flag.StringVar(&c.profileDir, "profile", "", "save a CPU profile of kcp under load into this directory")
	flag.IntVar(&c.ProfileSeconds, "profile-seconds", 20, "length of the -profile CPU profile")
	jsonOut := flag.String("json", "", "also write the figures as JSON to this file")
	flag.Parse()
	if len(bins) == 0 {
		path, err := framework.RepoFile("bin", "kcp")
		if err != nil {
			fail(err)
		}
		bins = binaries{{"pinned", path}}
	}
	for _, b := range bins {
		if _, err := os.Stat(b.path); err != nil {
			fail(fmt.Errorf("kcp binary %s (%s): %w; `make tools` builds bin/kcp", b.label, b.path, err))
		}
	}
	if c.profileDir != "" {
		if err := os.MkdirAll(c.profileDir, 0o755); err != nil {
			fail(err)
		}
	}
	ctx := context.Background()
	var all []figures
	for round := 1; round <= c.Rounds; round++ {
		order := append(binaries(nil), bins...)
		if round%2 == 0 {
			for i, j := 0, len(order)-1; i < j; i, j = i+1, j-1 {
				order[i], order[j] = order[j], order[i]
			}
		}
		for _, b := range order {
			f, err := measure(ctx, c, b, round)
			if err != nil {
				fail(fmt.Errorf("%s, round %d: %w", b.label, round, err))
			}
			all = append(all, f)
		}
	}
	printTable(os.Stdout, c, all)
	if *jsonOut != "" {
		raw, err := json.MarshalIndent(map[string]any{"config": c, "runs": all}, "", "  ")
		if err == nil {
			err = os.WriteFile(*jsonOut, append(raw, '\n'), 0o644)
		}
		if err != nil {
			fail(err)
		}
	}
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "kcpwrites: %v\n", err)
	os.Exit(1)
}

func say(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s  "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(raw))[:3], " ")
}

func mb(b int64) float64 { return float64(b) / 1e6 }

func measure(ctx context.Context, c config, b binary, round int) (figures, error) {
	f := figures{Label: b.label, Path: b.path, Round: round, LoadAverageAtStart: loadAverage()}
	if out, err := exec.Command(b.path, "--version").CombinedOutput(); err == nil {
		f.Version = strings.TrimSpace(string(out))
	}
	say("%s (%s), round %d: starting kcp; load average %s", b.label, f.Version, round, f.LoadAverageAtStart)
	s, err := framework.StartKCP(framework.WithBinary(b.path))
	if s != nil {
		defer s.Stop()
	}
	if err != nil {
		return f, err
	}
	f.StartupSeconds = s.StartupTime.Seconds()
	if err := sleep(ctx, settle); err != nil {
		return f, err
	}
	fresh, _, _ := framework.RSS(s.PID())
	f.FreshRSSMB = mb(fresh)

	root := logicalcluster.NewPath("root")
	if err := createReadyWorkspace(ctx, s, root, "writes"); err != nil {
		return f, err
	}
	client, err := kubernetes.NewForConfig(workspaces.ConfigFor(s.Base, root.Join("writes")))
	if err != nil {
		return f, err
	}
	payload := strings.Repeat("x", c.ObjectSize)
	create := func(name string) error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"payload": payload}}
		if _, err := client.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating ConfigMap %s: %w", name, err)
		}
		return nil
	}
	// The namespace may take a moment after the workspace is ready.
	if err := workspaces.Poll(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	}, "namespace default in root:writes"); err != nil {
		return f, err
	}

	say("%s: creating %d ConfigMaps of %d bytes, %d at a time", b.label, c.N, c.ObjectSize, c.Parallel)
	before, err := writes(ctx, s)
	if err != nil {
		return f, err
	}
	cpu0, t0 := framework.CPUSeconds(s.PID()), time.Now()
	if err := framework.ForEach(c.N, c.Parallel, func(i int) error { return create(fmt.Sprintf("cm-%06d", i)) }); err != nil {
		return f, err
	}
	f.Creates = c.N
	f.CreateSeconds = time.Since(t0).Seconds()
	f.CPUSeconds = framework.CPUSeconds(s.PID()) - cpu0
	f.CreatesPerSecond = float64(c.N) / f.CreateSeconds
	f.CPUMillisPerCreate = 1000 * f.CPUSeconds / float64(c.N)
	after, err := writes(ctx, s)
	if err != nil {
		return f, err
	}
	f.WritesCounted = after - before
	say("%s: %.0f creates/s, %.2f ms of kcp CPU each, %.0f writes counted", b.label, f.CreatesPerSecond, f.CPUMillisPerCreate, f.WritesCounted)

	if c.profileDir != "" {
		path := filepath.Join(c.profileDir, fmt.Sprintf("%s-r%d.pprof", b.label, round))
		say("%s: creating ConfigMaps for %ds while kcp is profiled into %s", b.label, c.ProfileSeconds, path)
		if err := profileUnderLoad(ctx, s, c, path, create); err != nil {
			return f, err
		}
		f.Profile = path
	}

	if c.Workspaces > 0 {
		if err := sleep(ctx, settle); err != nil {
			return f, err
		}
		base, _, _ := framework.RSS(s.PID())
		say("%s: creating %d workspaces in root, %d at a time, each until ready", b.label, c.Workspaces, c.Parallel)
		var done atomic.Int64
		t1 := time.Now()
		if err := framework.ForEach(c.Workspaces, c.Parallel, func(i int) error {
			defer done.Add(1)
			return createReadyWorkspace(ctx, s, root, fmt.Sprintf("ws-%05d", i))
		}); err != nil {
			return f, err
		}
		f.Workspaces = c.Workspaces
		f.WorkspaceSeconds = time.Since(t1).Seconds()
		f.WorkspacesPerSecond = float64(c.Workspaces) / f.WorkspaceSeconds
		if err := sleep(ctx, settle); err != nil {
			return f, err
		}
		rss, _, _ := framework.RSS(s.PID())
		f.RSSWithWorkspacesMB = mb(rss)
		f.MBPerWorkspace = mb(rss-base) / float64(c.Workspaces)
		say("%s: %.1f workspaces/s, %.1f MB of kcp RSS per workspace", b.label, f.WorkspacesPerSecond, f.MBPerWorkspace)
	}

	cpu1, t2 := framework.CPUSeconds(s.PID()), time.Now()
	if err := sleep(ctx, c.Idle); err != nil {
		return f, err
	}
	f.IdleWindowSeconds = time.Since(t2).Seconds()
	f.IdleCPUPercent = 100 * (framework.CPUSeconds(s.PID()) - cpu1) / f.IdleWindowSeconds
	f.MeasurementFinishedAt = time.Now().Format(time.RFC3339)
	say("%s: idle %.1f%% of a core", b.label, f.IdleCPUPercent)
	return f, nil
}

// writes is the number of writes kcp has counted so far, across all workspaces.
func writes(ctx context.Context, s *framework.Server) (float64, error) {
	metrics, err := s.Metrics(ctx)
	if err != nil {
		return 0, fmt.Errorf("reading kcp's metrics: %w", err)
	}
	var n float64
	for request, count := range framework.RequestCounts(metrics) {
		if framework.IsWrite(request) {
			n += count
		}
	}
	return n, nil
}

// profileUnderLoad takes a CPU profile of kcp while creating ConfigMaps, c.Parallel at a time,
// until the profile is written.
func profileUnderLoad(ctx context.Context, s *framework.Server, c config, path string, create func(string) error) error {
	loadCtx, stop := context.WithCancel(ctx)
	defer stop()
	var next atomic.Int64
	errs := make(chan error, c.Parallel)
	for w := 0; w < c.Parallel; w++ {
		go func() {
			for loadCtx.Err() == nil {
				if err := create(fmt.Sprintf("load-%07d", next.Add(1))); err != nil && loadCtx.Err() == nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", s.ProfilerAddress, c.ProfileSeconds)
	resp, err := http.Get(url)
	if err == nil {
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("GET %s: %s", url, resp.Status)
		}
	}
	if err == nil {
		var out *os.File
		if out, err = os.Create(path); err == nil {
			_, err = io.Copy(out, resp.Body)
			if cerr := out.Close(); err == nil {
				err = cerr
			}
		}
	}
	stop()
	for w := 0; w < c.Parallel; w++ {
		if werr := <-errs; werr != nil && err == nil {
			err = werr
		}
	}
	return err
}

// createReadyWorkspace creates a workspace of kcp's default type and waits until it is ready.
func createReadyWorkspace(ctx context.Context, s *framework.Server, parent logicalcluster.Path, name string) error {
	ws := &tenancyv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := s.KCP.Cluster(parent).TenancyV1alpha1().Workspaces().Create(ctx, ws, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating workspace %s in %s: %w", name, parent, err)
	}
	return workspaces.Poll(ctx, 2*time.Minute, func(ctx context.Context) (bool, error) {
		ws, err := s.KCP.Cluster(parent).TenancyV1alpha1().Workspaces().Get(ctx, name, metav1.GetOptions{})
		return err == nil && ws.Status.Phase == corev1alpha1.LogicalClusterPhaseReady, nil
	}, "workspace %s in %s to be ready", name, parent)
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

func printTable(w io.Writer, c config, all []figures) {
	fmt.Fprintf(w, "\n## kcp writes and workspaces: %d ConfigMaps of %d bytes and %d workspaces, %d at a time\n\n",
		c.N, c.ObjectSize, c.Workspaces, c.Parallel)
	fmt.Fprintln(w, "| kcp | round | load at start | creates/s | kcp CPU per create | writes counted | workspaces/s | kcp RSS per workspace | fresh RSS | idle CPU |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	for _, f := range all {
		fmt.Fprintf(w, "| %s (%s) | %d | %s | %.0f | %.2f ms | %.0f | %.1f | %.1f MB | %.0f MB | %.1f%% |\n",
			f.Label, f.Version, f.Round, f.LoadAverageAtStart, f.CreatesPerSecond, f.CPUMillisPerCreate, f.WritesCounted,
			f.WorkspacesPerSecond, f.MBPerWorkspace, f.FreshRSSMB, f.IdleCPUPercent)
	}
	for _, f := range all {
		if f.Profile != "" {
			fmt.Fprintf(w, "\nCPU profiles under load: `go tool pprof -top %s` (and the others in the same directory)\n", f.Profile)
			break
		}
	}
}
