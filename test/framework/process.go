package framework

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	kcpkubernetesclientset "github.com/kcp-dev/client-go/kubernetes"
	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/kcp-dev/edge-mc/pkg/espw"
	"github.com/kcp-dev/edge-mc/pkg/workspaces"
)

// Command is a program run as a separate process in its own process group, its output appended
// to a log file. Tests use it through Process; benchmarks, which have no testing.TB, directly.
type Command struct {
	path    string
	args    []string
	logPath string
	cmd     *exec.Cmd
	exited  chan struct{}
}

// StartCommand runs path args..., appending its output to logPath, until Stop or Kill.
func StartCommand(path, logPath string, args ...string) (*Command, error) {
	c := &Command{path: path, args: args, logPath: logPath}
	return c, c.start()
}

func (c *Command) start() error {
	f, err := os.OpenFile(c.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(f, "==== %s: starting %s\n", time.Now().Format(time.RFC3339Nano), filepath.Base(c.path))
	c.cmd = exec.Command(c.path, c.args...)
	c.cmd.Stdout, c.cmd.Stderr = f, f
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.exited = make(chan struct{})
	if err := c.cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("starting %s: %w", filepath.Base(c.path), err)
	}
	cmd, exited := c.cmd, c.exited
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(exited)
	}()
	return nil
}

// Stop ends the process with SIGTERM (SIGKILL after 15 s) and waits for it.
func (c *Command) Stop() { c.signal(syscall.SIGTERM) }

// Kill ends the process at once, as a crash would.
func (c *Command) Kill() { c.signal(syscall.SIGKILL) }

func (c *Command) signal(sig syscall.Signal) {
	if c.cmd == nil || c.cmd.Process == nil {
		return
	}
	select {
	case <-c.exited:
		return
	default:
	}
	_ = syscall.Kill(-c.cmd.Process.Pid, sig)
	select {
	case <-c.exited:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-c.exited
	}
}

// Restart starts the process again with the same arguments, after Stop or Kill.
func (c *Command) Restart() error { return c.start() }

// Exited says whether the process has ended.
func (c *Command) Exited() bool {
	select {
	case <-c.exited:
		return true
	default:
		return false
	}
}

// PID is the process's ID.
func (c *Command) PID() int { return c.cmd.Process.Pid }

// LogPath is the file the process's output goes to.
func (c *Command) LogPath() string { return c.logPath }

// Process is a command of this tree run by a test as a separate process, as an operator runs it;
// its output goes to a log file that is printed when the test fails.
type Process struct {
	*Command
	t    testing.TB
	name string
}

// StartProcess runs bin/<name> args... until the test ends or Stop or Kill is called.
func StartProcess(t testing.TB, name string, args ...string) *Process {
	t.Helper()
	c, err := StartCommand(filepath.Join(BinDir(t), name), filepath.Join(t.TempDir(), name+".log"), args...)
	if err != nil {
		t.Fatal(err)
	}
	p := &Process{Command: c, t: t, name: name}
	t.Cleanup(func() {
		p.Stop()
		if raw, err := os.ReadFile(p.logPath); err == nil && bytes.Contains(raw, []byte(dataRaceMark)) {
			t.Errorf("%s reported a data race (built with %s=1); its log %s says:\n%s", p.name, RaceEnv, p.logPath, raceReport(raw))
		}
		if t.Failed() {
			raw, _ := os.ReadFile(p.logPath)
			const max = 30000
			if len(raw) > max {
				raw = raw[len(raw)-max:]
			}
			t.Logf("---- log of %s (%s) ----\n%s\n---- end of log of %s ----", p.name, p.logPath, raw, p.name)
			if why := FailureNote(t); why != "" {
				t.Logf("---- the test failed: %s", why)
			}
		}
	})
	return p
}

// dataRaceMark begins each report of Go's race detector.
const dataRaceMark = "WARNING: DATA RACE"

// raceReport is the first data race report in a log, cut to a readable length.
func raceReport(log []byte) string {
	i := bytes.Index(log, []byte(dataRaceMark))
	if i < 0 {
		return ""
	}
	report := log[i:]
	if end := bytes.Index(report, []byte("\n==================")); end > 0 {
		report = report[:end]
	}
	const max = 8000
	if len(report) > max {
		report = report[:max]
	}
	return string(report)
}

// Restart starts the process again with the same arguments, after Stop or Kill.
func (p *Process) Restart() {
	p.t.Helper()
	if err := p.Command.Restart(); err != nil {
		p.t.Fatal(err)
	}
}

// Crash kills the process with SIGKILL (kill -9: no shutdown code runs, as in a crash or a
// node's power loss) and logs it; Restart starts it again.
func (p *Process) Crash() {
	p.t.Helper()
	if p.Exited() {
		p.t.Fatalf("%s was to be killed but had already exited", p.name)
	}
	pid := p.PID()
	p.Kill()
	p.t.Logf("kill -9 %s (pid %d)", p.name, pid)
}

// ControllerManager is an edge-controller-manager process with its HTTP address.
type ControllerManager struct {
	*Process
	HTTPAddress string
}

// WebhookArgs serve edge-controller-manager's admission webhook on a port of its own (kcp runs on
// this host), for a fleet whose test writes StatusCollectors or HealthRules: NewFleetWithArgs(t,
// regions, WebhookArgs...).
var WebhookArgs = []string{"--webhook-address", "127.0.0.1:0"}

// StartControllerManager runs edge-controller-manager for the ESPW with its own identity, the
// ServiceAccount that 'kubectl edge init' makes in the ESPW (see ControllerKubeconfig), and extra
// args, and waits until it is ready (its controllers' caches synced). A --kubeconfig in extra
// replaces the identity's.
func StartControllerManager(t testing.TB, espw logicalcluster.Path, extra ...string) *ControllerManager {
	t.Helper()
	cm := StartControllerManagerNoWait(t, espw, extra...)
	cm.WaitReady(t, 2*time.Minute)
	return cm
}

// StartControllerManagerNoWait is StartControllerManager without waiting for readiness.
func StartControllerManagerNoWait(t testing.TB, espw logicalcluster.Path, extra ...string) *ControllerManager {
	t.Helper()
	ports, err := FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	var args []string
	if !slices.ContainsFunc(extra, func(a string) bool { return a == "--kubeconfig" || strings.HasPrefix(a, "--kubeconfig=") }) {
		args = []string{"--kubeconfig", ControllerKubeconfig(t, espw)}
	}
	args = append(args, "--espw", espw.String(), "--http-address", addr, "-v=2")
	if os.Getenv("EDGE_E2E_WEBHOOK") == "1" {
		// Every fleet serves the admission webhook: to measure what it costs kcp.
		args = append(args, WebhookArgs...)
	}
	args = append(args, extra...)
	return &ControllerManager{Process: StartProcess(t, "edge-controller-manager", args...), HTTPAddress: addr}
}

// controllerUser is the kcp user that edge-controller-manager runs as in the tests: every kcp the
// harness starts (RunWithKCP, RunWithShardedKCP) authenticates it by a static bearer token, as
// an operator's identity provider would.
var controllerUser = User{Name: espw.DefaultControllerUser}

// ControllerKubeconfig makes sure the ESPW grants edge-controller-manager's user its rights, as
// 'kubectl edge init' does, and returns the path of a kubeconfig with the user's token (what
// 'kubectl edge init --controller-token-file ... --controller-kubeconfig ...' writes). The ESPW
// must exist. Against a kcp that the harness did not start (EDGE_E2E_KUBECONFIG), which knows no
// token of the user, it returns the admin kubeconfig.
func ControllerKubeconfig(t testing.TB, espwPath logicalcluster.Path) string {
	t.Helper()
	s := KCP(t)
	token, ok := s.tokens[controllerUser.Name]
	if !ok {
		t.Logf("kcp knows no token of %s (EDGE_E2E_KUBECONFIG): edge-controller-manager runs with the admin kubeconfig", controllerUser.Name)
		return s.KubeconfigPath
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base, _ := workspaces.Split(s.Base)
	kube, err := kcpkubernetesclientset.NewForConfig(base)
	if err != nil {
		t.Fatal(err)
	}
	if err := espw.EnsureControllerRights(ctx, s.KCP, kube, espwPath, controllerUser.Name, &espw.Result{}); err != nil {
		t.Fatalf("granting edge-controller-manager's user its rights in %s: %v", espwPath, err)
	}
	file := filepath.Join(t.TempDir(), "edge-controller-manager.kubeconfig")
	if err := espw.WriteControllerKubeconfig(file, base, espwPath, controllerUser.Name, []byte(token)); err != nil {
		t.Fatal(err)
	}
	return file
}

// ControllerToken returns the bearer token of edge-controller-manager's user, written to a file,
// for kubectl edge init --controller-token-file.
func ControllerToken(t testing.TB) string {
	t.Helper()
	token, ok := KCP(t).tokens[controllerUser.Name]
	if !ok {
		t.Fatalf("kcp knows no token of %s: the harness did not start it", controllerUser.Name)
	}
	file := filepath.Join(t.TempDir(), "ecm.token")
	if err := os.WriteFile(file, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// RestartReady starts edge-controller-manager again with the same arguments, after Stop, Kill
// or Crash, and waits until it is ready.
func (cm *ControllerManager) RestartReady(t testing.TB, timeout time.Duration) {
	t.Helper()
	cm.Restart()
	cm.WaitReady(t, timeout)
}

// Readyz returns the status code and body of /readyz, or an error if it does not answer.
func (cm *ControllerManager) Readyz() (int, string, error) { return Readyz(cm.HTTPAddress) }

// WaitReady waits until /readyz answers 200.
func (cm *ControllerManager) WaitReady(t testing.TB, timeout time.Duration) {
	t.Helper()
	if err := WaitReadyz(context.Background(), cm.HTTPAddress, timeout, cm.Exited); err != nil {
		t.Fatalf("edge-controller-manager: %v", err)
	}
}

// Readyz returns the status code and body of http://<address>/readyz, as edge-mc's processes
// serve it (package health), or an error if it does not answer.
func Readyz(address string) (int, string, error) {
	resp, err := http.Get("http://" + address + "/readyz")
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, string(body), nil
}

// WaitReadyz waits, every 200 ms and at most timeout, until http://<address>/readyz answers 200;
// it gives up at once when exited says the process has ended.
func WaitReadyz(ctx context.Context, address string, timeout time.Duration, exited func() bool) error {
	deadline := time.Now().Add(timeout)
	why := ""
	for {
		if exited() {
			return fmt.Errorf("it exited before it was ready (last /readyz: %s)", why)
		}
		code, body, err := Readyz(address)
		switch {
		case err != nil:
			why = err.Error()
		case code == http.StatusOK:
			return nil
		default:
			why = fmt.Sprintf("%d %s", code, body)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %s: /readyz: %s", timeout, why)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
