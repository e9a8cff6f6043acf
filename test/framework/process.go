package framework

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
)

// Process is a command of this tree run by a test as a separate process, as an operator runs it;
// its output goes to a log file that is printed when the test fails.
type Process struct {
	t       testing.TB
	name    string
	args    []string
	logPath string
	cmd     *exec.Cmd
	exited  chan struct{}
}

// StartProcess runs bin/<name> args... until the test ends or Stop or Kill is called.
func StartProcess(t testing.TB, name string, args ...string) *Process {
	t.Helper()
	dir := t.TempDir()
	p := &Process{t: t, name: name, args: args, logPath: filepath.Join(dir, name+".log")}
	p.start()
	t.Cleanup(func() {
		if t.Failed() {
			raw, _ := os.ReadFile(p.logPath)
			const max = 30000
			if len(raw) > max {
				raw = raw[len(raw)-max:]
			}
			t.Logf("---- log of %s (%s) ----\n%s\n---- end of log of %s ----", p.name, p.logPath, raw, p.name)
		}
		p.Stop()
	})
	return p
}

func (p *Process) start() {
	p.t.Helper()
	f, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		p.t.Fatal(err)
	}
	fmt.Fprintf(f, "==== %s: starting %s\n", time.Now().Format(time.RFC3339Nano), p.name)
	p.cmd = exec.Command(filepath.Join(BinDir(p.t), p.name), p.args...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p.exited = make(chan struct{})
	if err := p.cmd.Start(); err != nil {
		p.t.Fatalf("starting %s: %v", p.name, err)
	}
	cmd, exited := p.cmd, p.exited
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(exited)
	}()
}

// Stop ends the process with SIGTERM (SIGKILL after 15 s) and waits for it.
func (p *Process) Stop() { p.signal(syscall.SIGTERM) }

// Kill ends the process at once, as a crash would.
func (p *Process) Kill() { p.signal(syscall.SIGKILL) }

func (p *Process) signal(sig syscall.Signal) {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	select {
	case <-p.exited:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	select {
	case <-p.exited:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
	}
}

// Restart starts the process again with the same arguments, after Stop or Kill.
func (p *Process) Restart() {
	p.t.Helper()
	p.start()
}

// Exited says whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// ControllerManager is an edge-controller-manager process with its HTTP address.
type ControllerManager struct {
	*Process
	HTTPAddress string
}

// StartControllerManager runs edge-controller-manager for the ESPW with the admin kubeconfig and
// extra args, and waits until it is ready (its controllers' caches synced).
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
	args := append([]string{"--kubeconfig", KCP(t).KubeconfigPath, "--espw", espw.String(), "--http-address", addr, "-v=2"}, extra...)
	return &ControllerManager{Process: StartProcess(t, "edge-controller-manager", args...), HTTPAddress: addr}
}

// Readyz returns the status code and body of /readyz, or an error if it does not answer.
func (cm *ControllerManager) Readyz() (int, string, error) {
	resp, err := http.Get("http://" + cm.HTTPAddress + "/readyz")
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	buf := make([]byte, 4096)
	n, _ := resp.Body.Read(buf)
	return resp.StatusCode, string(buf[:n]), nil
}

// WaitReady waits until /readyz answers 200.
func (cm *ControllerManager) WaitReady(t testing.TB, timeout time.Duration) {
	t.Helper()
	Eventually(t, timeout, func() (bool, string) {
		if cm.Exited() {
			t.Fatalf("edge-controller-manager exited")
		}
		code, body, err := cm.Readyz()
		if err != nil {
			return false, err.Error()
		}
		return code == http.StatusOK, fmt.Sprintf("/readyz: %d %s", code, body)
	})
}

// PID is the process's ID.
func (p *Process) PID() int { return p.cmd.Process.Pid }
