package quickstart

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kcp-dev/edge-mc/pkg/workspaces"
	"github.com/kcp-dev/edge-mc/test/framework"
)

const (
	// stopHeading is the heading of the page's last section, which stops what the others started:
	// the test checks the result before running it.
	stopHeading = "Stop everything"
	// pageTimeout bounds the run of the page up to stopHeading; it takes 2-4 minutes on a busy
	// 2-core machine, most of it for the two kcp servers to start.
	pageTimeout = 15 * time.Minute
)

// settings are the variables of the page's first sh block, which the test sets itself.
var settings = []string{"QS", "CENTER_PORT", "EDGE_PORT", "ECM_PORT", "SYNCER_PORT", "PATH"}

var (
	configMaps     = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	namespaces     = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	deployments    = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	edgePlacements = schema.GroupVersionResource{Group: "edge.kcp.io", Version: "v1alpha1", Resource: "edgeplacements"}
	syncTargets    = schema.GroupVersionResource{Group: "edge.kcp.io", Version: "v1alpha1", Resource: "synctargets"}
)

// TestQuickstart runs docs/quickstart.md and checks that it does what it says.
func TestQuickstart(t *testing.T) {
	root, err := framework.RepoFile()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "docs", "quickstart.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := Blocks(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("docs/quickstart.md: %v", err)
	}
	checkExamplesShown(t, root, blocks)

	var sh []Block
	for _, b := range blocks {
		if b.Lang == "sh" {
			sh = append(sh, b)
		}
	}
	if len(sh) < 2 {
		t.Fatalf("docs/quickstart.md has %d sh blocks; want the settings block and the steps", len(sh))
	}
	names, err := ExportedNames(sh[0])
	if err != nil {
		t.Fatalf("docs/quickstart.md: the first sh block must only export the walk-through's settings: %v", err)
	}
	if !slices.Equal(names, settings) {
		t.Fatalf("docs/quickstart.md: the first sh block sets %v; this test knows how to set %v: update one or the other", names, settings)
	}
	stop := slices.IndexFunc(sh, func(b Block) bool { return b.Heading == stopHeading })
	if stop < 0 {
		t.Fatalf("docs/quickstart.md has no sh block under the heading %q, which this test runs last", stopHeading)
	}

	dir := t.TempDir()
	qs := filepath.Join(dir, "qs")
	page := &pageRun{t: t, root: root, dir: dir, qs: qs, env: testSettings(t, qs)}
	t.Cleanup(page.killLeftovers)

	start := time.Now()
	page.run("the steps", sh[1:stop], pageTimeout)
	t.Logf("the steps took %s", time.Since(start).Round(time.Second))
	page.checkWorkloadPlaced()

	page.run("the stop block", sh[stop:], 2*time.Minute)
	page.checkEverythingStopped()
}

// checkExamplesShown checks that the page shows each file of examples/quickstart, which its
// commands apply, as it is.
func checkExamplesShown(t *testing.T, root string, blocks []Block) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "examples", "quickstart", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples/quickstart/*.yaml: %v", err)
	}
	for _, f := range files {
		want, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(blocks, func(b Block) bool { return b.Lang == "yaml" && b.Text == string(want) }) {
			t.Errorf("docs/quickstart.md does not show examples/quickstart/%s as it is: copy the file into its yaml block", filepath.Base(f))
		}
	}
}

// testSettings returns the values of the settings for this run: a directory of its own, free
// ports, and this tree's commands first on the PATH, then the pinned tools in bin/.
func testSettings(t *testing.T, qs string) map[string]string {
	t.Helper()
	root, _ := framework.RepoFile()
	ports := freePortRuns(t, 3, 3, 4)
	return map[string]string{
		"QS":          qs,
		"CENTER_PORT": strconv.Itoa(ports[0]),
		"EDGE_PORT":   strconv.Itoa(ports[1]),
		// edge-controller-manager on the first port of the run, the syncers on the next three.
		"ECM_PORT":    strconv.Itoa(ports[2]),
		"SYNCER_PORT": strconv.Itoa(ports[2]),
		"PATH":        framework.BinDir(t) + string(os.PathListSeparator) + filepath.Join(root, "bin") + string(os.PathListSeparator) + os.Getenv("PATH"),
	}
}

// freePortRuns returns, for each length, the first port of a run of that many consecutive ports
// that are free, below the ephemeral range from which other tests get theirs.
func freePortRuns(t *testing.T, lengths ...int) []int {
	t.Helper()
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	var firsts []int
	for _, n := range lengths {
		found := false
		for try := 0; try < 500 && !found; try++ {
			first := 20000 + rand.IntN(12000)
			var run []net.Listener
			for p := first; p < first+n; p++ {
				l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
				if err != nil {
					break
				}
				run = append(run, l)
			}
			if len(run) == n {
				held = append(held, run...)
				firsts = append(firsts, first)
				found = true
				continue
			}
			for _, l := range run {
				l.Close()
			}
		}
		if !found {
			t.Fatalf("found no %d consecutive free ports", n)
		}
	}
	return firsts
}

// pageRun runs blocks of the page and checks their results.
type pageRun struct {
	t    *testing.T
	root string
	dir  string
	qs   string
	env  map[string]string
	// groups are the process groups of the bash runs, which what they start stays in.
	groups []int
}

// run runs blocks in order in one bash, with -e -u -o pipefail, from the repository's root, after
// setting the settings, and fails the test, with the output and the tails of the page's logs, if
// they fail or take longer than timeout.
func (p *pageRun) run(what string, blocks []Block, timeout time.Duration) {
	t := p.t
	t.Helper()
	var script strings.Builder
	script.WriteString("set -euo pipefail\n")
	for _, name := range settings {
		fmt.Fprintf(&script, "export %s=%s\n", name, shellQuote(p.env[name]))
	}
	for _, b := range blocks {
		fmt.Fprintf(&script, "printf '\\n### docs/quickstart.md line %%s: %%s\\n' %d %s\n", b.Line, shellQuote(b.Heading))
		script.WriteString(b.Text)
	}
	name := strings.ReplaceAll(what, " ", "-")
	scriptPath := filepath.Join(p.dir, name+".sh")
	if err := os.WriteFile(scriptPath, []byte(script.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(filepath.Join(p.dir, name+".out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()

	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", scriptPath)
	cmd.Dir = p.root
	cmd.Env = append(withoutKubeconfig(os.Environ()), "HOME="+p.dir)
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group, which the processes it starts in the background stay in, so that a
	// timeout, and the test's cleanup, can end them all.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	t.Logf("running %s of docs/quickstart.md (%d sh blocks); output in %s", what, len(blocks), out.Name())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.groups = append(p.groups, cmd.Process.Pid)
	runErr := cmd.Wait()
	output, _ := os.ReadFile(out.Name())
	t.Logf("---- output of %s ----\n%s---- end ----", what, output)
	if runErr != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			runErr = fmt.Errorf("not done within %s: %w", timeout, runErr)
		}
		p.logTails()
		t.Fatalf("%s of docs/quickstart.md failed: %v (the last ### line of the output says which block)", what, runErr)
	}
}

func withoutKubeconfig(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, "KUBECONFIG=") })
}

// shellQuote quotes s for bash, in single quotes.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// logTails logs the end of each log the page's processes wrote.
func (p *pageRun) logTails() {
	logs, _ := filepath.Glob(filepath.Join(p.qs, "logs", "*.log"))
	for _, l := range logs {
		raw, _ := os.ReadFile(l)
		lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
		if len(lines) > 40 {
			lines = lines[len(lines)-40:]
		}
		for i, l := range lines {
			if len(l) > 300 {
				lines[i] = l[:300] + " [...]"
			}
		}
		p.t.Logf("---- last lines of %s ----\n%s", filepath.Base(l), strings.Join(lines, "\n"))
	}
}

// checkWorkloadPlaced checks what the page says happened: both kcp servers up, every syncer
// reporting, the placement scheduled to two destinations, the workload customised at each, and
// nothing at the third edge cluster.
func (p *pageRun) checkWorkloadPlaced() {
	t := p.t
	t.Helper()
	defer func() {
		if t.Failed() {
			p.logTails()
		}
	}()
	center := p.centerBase()
	imw := p.dynamic(workspaces.ConfigFor(center, logicalcluster.NewPath("root:imw")))
	wmw := p.dynamic(workspaces.ConfigFor(center, logicalcluster.NewPath("root:wmw")))

	for _, edge := range []string{"edge-1", "edge-2", "edge-3"} {
		framework.EventuallyObject(t, "syncer heartbeat", imw, syncTargets, "", edge, conditionIs("SyncerReady", metav1.ConditionTrue))
	}
	framework.EventuallyObject(t, "placement", wmw, edgePlacements, "", "hello", func(u *unstructured.Unstructured) string {
		if why := conditionIs("Scheduled", metav1.ConditionTrue)(u); why != "" {
			return why
		}
		if why := conditionIs("Projected", metav1.ConditionTrue)(u); why != "" {
			return why
		}
		return framework.FieldIs("2", "status", "matchingSyncTargetCount")(u)
	})

	for edge, region := range map[string]string{"edge-1": "eu", "edge-2": "us"} {
		ec := p.edge(edge)
		framework.EventuallyObject(t, "expanded at "+edge, ec, configMaps, "hello", "hello-config", func(u *unstructured.Unstructured) string {
			if why := framework.FieldIs(region, "data", "region")(u); why != "" {
				return why
			}
			return framework.FieldIs("Hello from "+region+"!", "data", "greeting")(u)
		})
		framework.EventuallyObject(t, "customised at "+edge, ec, deployments, "hello", "hello", func(u *unstructured.Unstructured) string {
			if u == nil {
				return "absent"
			}
			containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
			if len(containers) != 1 {
				return fmt.Sprintf("%d containers", len(containers))
			}
			env, _, _ := unstructured.NestedSlice(containers[0].(map[string]any), "env")
			if len(env) != 1 || fmt.Sprint(env[0].(map[string]any)["value"]) != region {
				return fmt.Sprintf("env is %v, want REGION=%s", env, region)
			}
			return ""
		})
	}
	// By now the translator has written every destination's mailbox: edge-3 is not one of them.
	ec := p.edge("edge-3")
	ctx := framework.Context(t, time.Minute)
	if _, err := ec.Resource(namespaces).Get(ctx, "hello", metav1.GetOptions{}); err == nil {
		t.Errorf("namespace hello is at edge-3, which the placement does not select")
	}
	if _, err := ec.Resource(configMaps).Namespace("hello").Get(ctx, "hello-config", metav1.GetOptions{}); err == nil {
		t.Errorf("configmap hello/hello-config is at edge-3, which the placement does not select")
	}
}

// checkEverythingStopped checks that every process whose PID the page recorded has exited.
func (p *pageRun) checkEverythingStopped() {
	t := p.t
	t.Helper()
	pids := p.recordedPIDs()
	if len(pids) != 6 {
		t.Errorf("the page recorded %d PIDs (%v); want 6: two kcp servers, edge-controller-manager, three syncers", len(pids), pids)
	}
	framework.Eventually(t, time.Minute, func() (bool, string) {
		var running []int
		for _, pid := range pids {
			if processRuns(pid) {
				running = append(running, pid)
			}
		}
		return len(running) == 0, fmt.Sprintf("processes still running after the stop block: %v", running)
	})
}

func (p *pageRun) recordedPIDs() []int {
	raw, _ := os.ReadFile(filepath.Join(p.qs, "pids"))
	var pids []int
	for _, f := range strings.Fields(string(raw)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// killLeftovers kills what the page started and did not stop, if the test failed half way: the
// processes whose PIDs it recorded, and any other process of its bash runs' process groups whose
// command line names the page's directory (a group's number may be reused once it is empty, so
// membership alone does not make a process ours).
func (p *pageRun) killLeftovers() {
	for _, pid := range p.recordedPIDs() {
		if processRuns(pid) {
			p.t.Logf("killing pid %d, which the page started and did not stop", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range procs {
		pid, err := strconv.Atoi(filepath.Base(dir))
		if err != nil {
			continue
		}
		pgid, err := syscall.Getpgid(pid)
		if err != nil || !slices.Contains(p.groups, pgid) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join(dir, "cmdline"))
		if bytes.Contains(cmdline, []byte(p.qs)) {
			p.t.Logf("killing pid %d, left by the page: %s", pid, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// processRuns says whether a process exists and is not a zombie (a process whose parent, here
// the page's bash, is gone, is reaped by whoever inherits it; until then it is a zombie).
func processRuns(pid int) bool {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses and may hold spaces.
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || !strings.HasPrefix(s[i+1:], " Z")
}

// centerBase returns a config of the center kcp, from the admin kubeconfig the page's kcp wrote.
func (p *pageRun) centerBase() *rest.Config {
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(p.qs, "kcp", "admin.kubeconfig"))
	if err != nil {
		p.t.Fatal(err)
	}
	base, _ := workspaces.Split(cfg)
	return base
}

// edge returns a client of an edge cluster, from the kubeconfig the page made for it.
func (p *pageRun) edge(name string) dynamic.Interface {
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(p.qs, name+".kubeconfig"))
	if err != nil {
		p.t.Fatal(err)
	}
	return p.dynamic(cfg)
}

func (p *pageRun) dynamic(cfg *rest.Config) dynamic.Interface {
	c, err := dynamic.NewForConfig(cfg)
	if err != nil {
		p.t.Fatal(err)
	}
	return c
}

// conditionIs is a check for framework.EventuallyObject: the object has the condition with the
// status.
func conditionIs(condType string, want metav1.ConditionStatus) func(u *unstructured.Unstructured) string {
	return func(u *unstructured.Unstructured) string {
		if u == nil {
			return "absent"
		}
		if got, reason, msg := framework.ConditionStatus(u, condType); got != want {
			return fmt.Sprintf("%s is %q (%s: %s), want %s", condType, got, reason, msg, want)
		}
		return ""
	}
}
