package framework

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	binDir    string
	built     bool // binDir is BinDir's own build, which RemoveCommands removes
	buildErr  error
)

// CommandsEnv names the environment variable that gives the tests a directory holding
// edge-mc's commands already built from this tree: make test-e2e gives it bin/, where make build
// has just put them, so that the packages it runs do not each link the same three binaries
// again. It is not used when EDGE_E2E_RACE asks for commands built with the race detector.
const CommandsEnv = "EDGE_E2E_COMMANDS"

// BinDir builds edge-mc's commands (./cmd/...) once per test package, into a directory that
// BinDir returns, so that tests run the code of this tree as a user runs the installed binaries;
// with EDGE_E2E_COMMANDS set, it returns that directory instead.
func BinDir(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		if dir := os.Getenv(CommandsEnv); dir != "" && !RaceEnabled() {
			binDir, buildErr = builtCommands(dir)
			return
		}
		binDir, buildErr = BuildCommands()
		built = true
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binDir
}

// RemoveCommands removes the directory that BinDir built the commands into, if it built them;
// RunWithKCP calls it at the end, and so must the TestMain of a package that uses BinDir
// without RunWithKCP.
func RemoveCommands() {
	if built && binDir != "" {
		_ = os.RemoveAll(binDir)
	}
}

// builtCommands checks that dir, named by CommandsEnv, is an absolute path (go test runs each
// package's tests in that package's directory) that holds every command of ./cmd/, and returns
// it.
func builtCommands(dir string) (string, error) {
	if !filepath.IsAbs(dir) {
		return "", fmt.Errorf("%s=%s: must be an absolute path, since each test package runs in its own directory", CommandsEnv, dir)
	}
	cmdDir, err := RepoFile("cmd")
	if err != nil {
		return "", err
	}
	commands, err := os.ReadDir(cmdDir)
	if err != nil {
		return "", err
	}
	for _, c := range commands {
		if !c.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, c.Name())); err != nil {
			return "", fmt.Errorf("%s=%s: %v; unset it to have the tests build edge-mc's commands, or build them there with go build -o %s/ ./cmd/...", CommandsEnv, dir, err, dir)
		}
	}
	return dir, nil
}

// BuildCommands builds edge-mc's commands (./cmd/...) of this tree into a new temporary
// directory, and returns it; the caller removes it.
func BuildCommands() (string, error) { return BuildPackages("./cmd/...") }

// RaceEnv names the environment variable that, set to 1, builds edge-mc's commands for the
// tests with the race detector (go build -race), so that the controllers and the syncer run
// under it with the e2e tests' real load; a test fails if a process it ran reports a data race.
// The commands run several times slower so built.
const RaceEnv = "EDGE_E2E_RACE"

// RaceEnabled says whether EDGE_E2E_RACE asks for commands built with the race detector.
func RaceEnabled() bool { return os.Getenv(RaceEnv) == "1" }

// BuildPackages builds the given main packages of this tree (patterns relative to the
// repository's root, such as ./cmd/...) into a new temporary directory, each binary named after
// its package's directory, and returns the directory; the caller removes it. With
// EDGE_E2E_RACE=1 they are built with the race detector.
func BuildPackages(patterns ...string) (string, error) {
	root, err := RepoFile()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "edge-mc-bin-")
	if err != nil {
		return "", err
	}
	args := []string{"build", "-o", dir + string(os.PathSeparator)}
	if RaceEnabled() {
		args = append(args, "-race")
		fmt.Fprintf(os.Stderr, "framework: building %s with the race detector (%s=1)\n", strings.Join(patterns, " "), RaceEnv)
	}
	cmd := exec.Command("go", append(args, patterns...)...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("go build %s: %v\n%s", strings.Join(patterns, " "), err, out)
	}
	return dir, nil
}

// Result is what a command printed and how it ended.
type Result struct {
	Stdout, Stderr string
	Err            error
}

// Kubectl runs `kubectl args...` against the package's kcp with the admin kubeconfig, with
// edge-mc's commands first on the PATH, so that `kubectl edge ...` runs this tree's plugin.
func Kubectl(t testing.TB, args ...string) Result {
	t.Helper()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("kubectl is not on the PATH (the machine image provides kubectl v1.32): %v", err)
	}
	return run(t, "", kubectl, args...)
}

// ApplyArgs are the arguments of `kubectl apply` as the tests run it, followed by args (such as
// "-f", file): server-side apply (field manager edge-mc-e2e, taking over fields that another
// manager set, as client-side apply would), validated by the server alone. So kubectl fetches
// no OpenAPI document, which client-side apply and client-side validation do at every call;
// serving OpenAPI v3 to concurrent clients crashed kcp v0.28.1 once (docs/reliability.md). The
// server still refuses what its schemas refuse, and server-side apply refuses fields that a
// built-in kind does not have.
func ApplyArgs(args ...string) []string {
	return append([]string{"apply", "--server-side", "--force-conflicts", "--field-manager=edge-mc-e2e", "--validate=false"}, args...)
}

// KubectlApply runs `kubectl --server <workspace URL> apply -f -` (with ApplyArgs) with manifest
// on its input.
func KubectlApply(t testing.TB, serverURL, manifest string) Result {
	t.Helper()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("kubectl is not on the PATH (the machine image provides kubectl v1.32): %v", err)
	}
	return run(t, manifest, kubectl, append([]string{"--server", serverURL}, ApplyArgs("-f", "-")...)...)
}

// KubectlEdge runs `kubectl edge args...`.
func KubectlEdge(t testing.TB, args ...string) Result {
	t.Helper()
	return Kubectl(t, append([]string{"edge"}, args...)...)
}

func run(t testing.TB, stdin, name string, args ...string) Result {
	t.Helper()
	s := KCP(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r := runCommand(ctx, stdin, []string{"KUBECONFIG=" + s.KubeconfigPath, "PATH=" + BinDir(t) + string(os.PathListSeparator) + os.Getenv("PATH")}, name, args...)
	t.Logf("$ %s %s\n%s%s", filepath.Base(name), strings.Join(args, " "), indent(r.Stdout), indent(r.Stderr))
	return r
}

// runCommand runs a command with stdin on its input and env added to this process' environment.
func runCommand(ctx context.Context, stdin string, env []string, name string, args ...string) Result {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return Result{Stdout: stdout.String(), Stderr: stderr.String(), Err: err}
}

// MustSucceed fails the test if the command failed.
func (r Result) MustSucceed(t testing.TB) Result {
	t.Helper()
	if r.Err != nil {
		t.Fatalf("command failed: %v\nstdout:\n%s\nstderr:\n%s", r.Err, r.Stdout, r.Stderr)
	}
	return r
}

// MustFail fails the test if the command succeeded, and returns its output.
func (r Result) MustFail(t testing.TB) Result {
	t.Helper()
	if r.Err == nil {
		t.Fatalf("command succeeded but should have failed\nstdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
	}
	return r
}

func indent(s string) string {
	if s == "" {
		return ""
	}
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ") + "\n"
}
