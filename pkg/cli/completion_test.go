package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// run runs kubectl edge with args and returns what it printed and its error.
func runEdge(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := NewCommand(genericiooptions.IOStreams{Out: &out, ErrOut: &errOut})
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

// TestCompletionScripts: the helper kubectl runs for "kubectl edge <TAB>", and the scripts for
// kubectl-edge run directly, name the program the shell runs.
func TestCompletionScripts(t *testing.T) {
	out, err := runEdge(t, "completion", "plugin")
	if err != nil || !strings.HasPrefix(out, "#!/usr/bin/env sh") || !strings.Contains(out, `exec kubectl-edge __complete "$@"`) {
		t.Errorf("completion plugin: %v\n%s", err, out)
	}
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		out, err := runEdge(t, "completion", shell)
		if err != nil || !strings.Contains(out, "kubectl-edge") || len(out) < 500 {
			t.Errorf("completion %s: %v; %d bytes, naming kubectl-edge: %v", shell, err, len(out), strings.Contains(out, "kubectl-edge"))
		}
	}
	if _, err := runEdge(t, "completion", "tcsh"); err == nil || !strings.Contains(err.Error(), "bash, zsh, fish and powershell") {
		t.Errorf("completion tcsh: %v", err)
	}
}

// TestCompletionWithoutKCP: with kcp unreachable, completing a name fails at once (the shell
// shows nothing) instead of hanging; completing a workspace path offers root: to begin with.
func TestCompletionWithoutKCP(t *testing.T) {
	kubeconfig := unreachableKubeconfig(t, "https://127.0.0.1:1/clusters/root:wmw")
	start := time.Now()
	out, err := runEdge(t, "__complete", "--kubeconfig", kubeconfig, "rollout", "status", "")
	if err != nil || !strings.HasSuffix(strings.TrimSpace(out), ":1") || time.Since(start) > completionTimeout {
		t.Errorf("completing a placement with kcp unreachable: %v after %s; want the error directive (:1) at once:\n%s", err, time.Since(start), out)
	}
	out, err = runEdge(t, "__complete", "--kubeconfig", kubeconfig, "status", "--wmw", "ro")
	if err != nil || !strings.Contains(out, "root:\n") {
		t.Errorf("completing --wmw ro: %v\n%s", err, out)
	}
}
