// Package framework is the harness of edge-mc's integration and e2e tests. It starts a real kcp
// (bin/kcp, built by `make tools`) once per test package, gives each test a fresh workspace,
// builds edge-mc's commands for the tests to run as a user would, and has helpers that wait for
// conditions. Plain `go test ./test/...` needs nothing started by hand.
//
// A test package starts kcp from its TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(framework.RunWithKCP(m)) }
//
// Set EDGE_E2E_KUBECONFIG to the admin kubeconfig of a running kcp to use it instead of starting
// one, and EDGE_E2E_KEEP=1 to keep the kcp directory and log after the run.
package framework

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kcp-dev/edge-mc/pkg/workspaces"
)

// kcpStartTimeout bounds how long kcp may take to serve; it takes 10-30 s on a 2-core machine.
const kcpStartTimeout = 3 * time.Minute

// Server is a kcp server the tests talk to.
type Server struct {
	// KubeconfigPath is the admin kubeconfig; its current context points at root.
	KubeconfigPath string
	// Base reaches the server with admin rights; add a workspace path with workspaces.ConfigFor.
	Base *rest.Config
	// KCP is a cluster-aware client of kcp's own APIs.
	KCP kcpclientset.ClusterInterface
	// StartupTime is how long the server took to become ready (zero if not started here).
	StartupTime time.Duration
	// ProfilerAddress serves Go's /debug/pprof of the kcp process, without authentication, on
	// loopback (empty if not started here).
	ProfilerAddress string

	dir     string
	logPath string
	tokens  map[string]string // user name to bearer token
	bin     string
	env     []string // added to the environment kcp runs in
	args    []string
	cmd     *exec.Cmd
	exited  chan struct{}
	// shared: another process started the server for a whole run (SharedEdgeKCPEnv); this one
	// may not kill or restart it.
	shared bool
	// restarted: Restart started a new process.
	restarted bool
}

var server *Server

// KCP returns the package's kcp server. RunWithKCP must have started it.
func KCP(t testing.TB) *Server {
	t.Helper()
	if server == nil {
		t.Fatal("no kcp server: the package's TestMain must call framework.RunWithKCP")
	}
	return server
}

// KCPOption changes how RunWithKCP starts kcp.
type KCPOption func(*kcpOptions)

type kcpOptions struct {
	users  []User
	args   []string
	binary string
	dir    string
	env    []string
}

// testGC is the GOGC of the kcp servers that the e2e tests' packages start (RunWithKCP and the
// edge kcp), unless GOGC is set in the environment; testMemLimit their GOMEMLIMIT, which makes
// the collector work harder only past it. The tests, several packages at a time on two cores,
// are bound by CPU, with memory to spare. Making three test fleets (kubectl edge init, ensure
// wmw, ensure imw) on an idle kcp cost it 31-32 s of CPU with Go's default (GOGC=100; 1.5 GB
// resident after), 25.8 s with GOGC=200 (2.2 GB), 22.4 s with 400 (2.7 GB), 23.4 s with 800
// (4.2 GB). The benchmarks' servers (StartKCP) keep Go's default, as users run kcp.
const (
	testGC       = "400"
	testMemLimit = "3GiB"
)

// withTestGC starts kcp with GOGC=testGC and GOMEMLIMIT=testMemLimit, unless GOGC is set in
// the environment.
func withTestGC() KCPOption {
	return func(o *kcpOptions) {
		if os.Getenv("GOGC") == "" {
			o.env = append(o.env, "GOGC="+testGC, "GOMEMLIMIT="+testMemLimit)
		}
	}
}

// User is an identity that kcp authenticates by a static bearer token (kcp's --token-auth-file),
// as an organisation's identity provider would: a person, not a ServiceAccount of a workspace.
// It has no rights anywhere until a test grants it some.
type User struct {
	Name   string
	Groups []string
}

// WithUsers makes kcp accept a bearer token for each of users; Server.UserConfig and
// Server.UserKubeconfig make clients and kubeconfigs that authenticate as them.
func WithUsers(users ...User) KCPOption {
	return func(o *kcpOptions) { o.users = append(o.users, users...) }
}

// WithArgs adds args to kcp's command line (after the harness's own), for example
// --disable-admission-plugins=... for a benchmark of a differently configured kcp.
func WithArgs(args ...string) KCPOption {
	return func(o *kcpOptions) { o.args = append(o.args, args...) }
}

// InDir makes StartShardedKCP keep the center's data, credentials and logs in dir (made if
// missing) instead of a temporary directory, and leave them there when it stops: for programs
// that keep a center running for people, such as the demo's hack/sharded-center.
func InDir(dir string) KCPOption {
	return func(o *kcpOptions) { o.dir = dir }
}

// UserToken returns the bearer token by which the server knows the user name, if it was started
// with one (WithUsers; every server of the harness knows edge-controller-manager's user).
func (s *Server) UserToken(name string) (string, bool) {
	token, ok := s.tokens[name]
	return token, ok
}

// WithBinary starts the kcp at path instead of bin/kcp, for a benchmark that compares kcp
// releases.
func WithBinary(path string) KCPOption {
	return func(o *kcpOptions) { o.binary = path }
}

// RunWithKCP starts kcp, runs the tests, stops kcp and returns the exit code for os.Exit. When a
// test failed, the tail of kcp's log is printed.
func RunWithKCP(m *testing.M, opts ...KCPOption) int {
	var err error
	server, err = startServer(append([]KCPOption{withTestGC()}, opts...)...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "framework: %v\n", err)
		if server != nil {
			server.printLogTail(80)
			server.stop()
		}
		return 1
	}
	startCPU := CPUSeconds(server.PID())
	code := m.Run()
	server.printCPU(startCPU)
	if code != 0 && server.logPath != "" {
		server.printLogTail(30)
	}
	stopEdgeKCP()
	server.stop()
	RemoveCommands()
	return code
}

// StartKCP starts a kcp server as RunWithKCP does, for programs other than tests (benchmarks).
// Stop it with Stop.
func StartKCP(opts ...KCPOption) (*Server, error) { return startServer(opts...) }

// Stop stops a server started by StartKCP.
func (s *Server) Stop() { s.stop() }

// LogPath is the file kcp's output goes to ("" if kcp was not started here).
func (s *Server) LogPath() string { return s.logPath }

// RootDirectory is kcp's --root-directory, where it keeps its embedded etcd's data, or "" if
// it was not started here.
func (s *Server) RootDirectory() string {
	if s.dir == "" {
		return ""
	}
	return filepath.Join(s.dir, ".kcp")
}

// PID is the kcp process's ID, or 0 if it was not started here.
func (s *Server) PID() int {
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

func startServer(opts ...KCPOption) (*Server, error) {
	var o kcpOptions
	for _, opt := range opts {
		opt(&o)
	}
	if kc := os.Getenv("EDGE_E2E_KUBECONFIG"); kc != "" {
		if len(o.users) > 0 || len(o.args) > 0 || o.binary != "" {
			return nil, fmt.Errorf("these tests start kcp with users, arguments or a binary of their own (framework.WithUsers, WithArgs, WithBinary); unset EDGE_E2E_KUBECONFIG")
		}
		s := &Server{KubeconfigPath: kc}
		return s, s.connect()
	}
	kcpBin, err := RepoFile("bin", "kcp")
	if err != nil {
		return nil, err
	}
	if o.binary != "" {
		kcpBin = o.binary
	} else if _, err := os.Stat(kcpBin); err != nil {
		return nil, fmt.Errorf("%s is missing: run 'make tools' first (it builds kcp at the pinned version)", kcpBin)
	}
	dir, err := os.MkdirTemp("", "edge-mc-kcp-")
	if err != nil {
		return nil, err
	}
	ports, err := FreePorts(4)
	if err != nil {
		return nil, err
	}
	s := &Server{
		dir:             dir,
		logPath:         filepath.Join(dir, "kcp.log"),
		KubeconfigPath:  filepath.Join(dir, ".kcp", "admin.kubeconfig"),
		ProfilerAddress: "127.0.0.1:" + strconv.Itoa(ports[3]),
		exited:          make(chan struct{}),
	}
	s.bin = kcpBin
	s.env = o.env
	s.args = []string{"start",
		"--root-directory", filepath.Join(dir, ".kcp"),
		"--bind-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(ports[0]),
		"--embedded-etcd-client-port", strconv.Itoa(ports[1]),
		"--embedded-etcd-peer-port", strconv.Itoa(ports[2]),
		"--profiler-address", s.ProfilerAddress,
	}
	o.users = append(o.users, controllerUser)
	if len(o.users) > 0 {
		file, tokens, err := writeTokenFile(dir, o.users)
		if err != nil {
			return nil, err
		}
		s.tokens = tokens
		s.args = append(s.args, "--token-auth-file", file)
	}
	s.args = append(s.args, o.args...)
	start := time.Now()
	fmt.Fprintf(os.Stderr, "framework: starting kcp on 127.0.0.1:%d (log %s)\n", ports[0], s.logPath)
	if err := s.startProcess(); err != nil {
		return s, err
	}
	s.StartupTime = time.Since(start)
	fmt.Fprintf(os.Stderr, "framework: kcp ready in %s\n", s.StartupTime.Round(100*time.Millisecond))
	return s, nil
}

// startProcess starts kcp with s.args, appending to its log, and waits until it is ready.
func (s *Server) startProcess() error {
	logFile, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	s.cmd = exec.Command(s.bin, s.args...)
	if len(s.env) > 0 {
		s.cmd.Env = append(os.Environ(), s.env...)
	}
	s.cmd.Dir = s.dir
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	// Its own process group, so that stopping it stops everything it started.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	s.exited = make(chan struct{})
	if err := s.cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("starting %s: %w", s.bin, err)
	}
	cmd, exited := s.cmd, s.exited
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		close(exited)
	}()
	return s.waitReady()
}

// ShardAdminContext is the context of kcp's generated admin kubeconfig whose user is in
// system:masters; kcp-admin, the user of its other contexts, may not read /metrics.
const ShardAdminContext = "system:admin"

// Metrics returns kcp's Prometheus metrics (GET /metrics), read with the shard admin's
// credentials from the admin kubeconfig.
func (s *Server) Metrics(ctx context.Context) (string, error) {
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: s.KubeconfigPath},
		&clientcmd.ConfigOverrides{CurrentContext: ShardAdminContext}).ClientConfig()
	if err != nil {
		return "", fmt.Errorf("loading the context %s of %s: %w", ShardAdminContext, s.KubeconfigPath, err)
	}
	base, _ := workspaces.Split(cfg)
	client, err := rest.HTTPClientFor(base)
	if err != nil {
		return "", err
	}
	return getMetrics(ctx, client, base.Host)
}

// getMetrics reads GET <base>/metrics with client.
func getMetrics(ctx context.Context, client *http.Client, base string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s/metrics: %s", base, resp.Status)
	}
	return string(body), nil
}

// CenterCPUMark starts the line in which RunWithKCP prints, at the end, the CPU that the
// package's kcp used; hack/testtimes reads it into its summary.
const CenterCPUMark = "framework: the package's kcp used "

// printCPU prints the CPU that kcp has used, and how much of it was its start (startCPU), unless
// another process started it or it was restarted (its CPU before the restart is not known here).
func (s *Server) printCPU(startCPU float64) {
	if s.PID() == 0 || s.restarted {
		return
	}
	total := CPUSeconds(s.PID())
	fmt.Fprintf(os.Stderr, "%s%.1f s of CPU (%.1f s of it starting)\n", CenterCPUMark, total, startCPU)
}

// Kill ends the kcp process at once, as a crash or power loss would; its data stays.
func (s *Server) Kill() {
	s.mustOwn("kill")
	if s.cmd != nil && s.cmd.Process != nil {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.exited
	}
}

// Restart starts kcp again, after Kill, with the same data, address and ports, and waits until
// it is ready. Tests that restart kcp belong in a package of their own.
func (s *Server) Restart() error {
	s.mustOwn("restart")
	if s.bin == "" {
		return fmt.Errorf("kcp was not started by the harness")
	}
	s.restarted = true
	return s.startProcess()
}

// mustOwn panics if the run's packages share the server: a test that killed or restarted it
// would take it from every other package.
func (s *Server) mustOwn(what string) {
	if s.shared {
		panic(fmt.Sprintf("framework: a test may not %s the edge kcp that the run's packages share (%s)", what, SharedEdgeKCPEnv))
	}
}

// waitReady waits for the admin kubeconfig, /readyz, and the root workspace to answer.
func (s *Server) waitReady() error {
	ctx, cancel := context.WithTimeout(context.Background(), kcpStartTimeout)
	defer cancel()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		select {
		case <-s.exited:
			tail, _ := lastLines(s.logPath, 5)
			return fmt.Errorf("kcp exited before it was ready (%v); the end of its log:\n%s", s.cmd.ProcessState, strings.Join(tail, "\n"))
		case <-ctx.Done():
			return fmt.Errorf("kcp was not ready within %s: %v", kcpStartTimeout, last)
		case <-tick.C:
		}
		if _, err := os.Stat(s.KubeconfigPath); err != nil {
			last = err
			continue
		}
		if last = s.connect(); last != nil {
			continue
		}
		if last = s.probe(ctx); last == nil {
			return nil
		}
	}
}

func (s *Server) connect() error {
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: s.KubeconfigPath}, nil).ClientConfig()
	if err != nil {
		return fmt.Errorf("loading %s: %w", s.KubeconfigPath, err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	s.Base, _ = workspaces.Split(cfg)
	s.KCP, err = kcpclientset.NewForConfig(s.Base)
	return err
}

func (s *Server) probe(ctx context.Context) error {
	client, err := rest.HTTPClientFor(s.Base)
	if err != nil {
		return err
	}
	for _, path := range []string{"/readyz", "/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces"} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.Base.Host+path, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", path, resp.Status)
		}
	}
	return nil
}

// Stop ends the kcp process (SIGTERM, then SIGKILL after 20 s) and removes its directory unless
// EDGE_E2E_KEEP is set.
func (s *Server) stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	select {
	case <-s.exited:
	default:
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(20 * time.Second):
			_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
			<-s.exited
		}
	}
	if os.Getenv("EDGE_E2E_KEEP") != "" {
		fmt.Fprintf(os.Stderr, "framework: kept kcp's directory %s\n", s.dir)
		return
	}
	_ = os.RemoveAll(s.dir)
}

func (s *Server) printLogTail(n int) {
	f, err := os.Open(s.logPath)
	if err != nil {
		return
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1024*1024), 1024*1024)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	fmt.Fprintf(os.Stderr, "---- last %d lines of kcp's log (%s) ----\n%s\n---- end of kcp's log ----\n",
		len(lines), s.logPath, strings.Join(lines, "\n"))
}

// RepoFile returns the path of a file of this repository, found from the working directory.
func RepoFile(elems ...string) (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if raw, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil &&
			strings.HasPrefix(string(raw), "module github.com/kcp-dev/edge-mc\n") {
			return filepath.Join(append([]string{dir}, elems...)...), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the edge-mc repository")
		}
		dir = parent
	}
}
