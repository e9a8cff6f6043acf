package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// TestWrongInputs gives kubectl edge each of its inputs wrong, as a user could, and checks that
// it fails with a message naming the input and how to put it right. The kubeconfig points at a
// port where nothing listens: every case here must be caught before kcp is asked anything, and
// the last cases show what a user sees when kcp cannot be reached.
func TestWrongInputs(t *testing.T) {
	kubeconfig := unreachableKubeconfig(t, "https://127.0.0.1:1")
	tokenFile := filepath.Join(t.TempDir(), "empty-token")
	if err := os.WriteFile(tokenFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want []string // fragments of the error, all of them
	}{
		// Positional arguments: which is missing or too many, with the usage.
		{[]string{"init", "root:espw"}, []string{"kubectl edge init", `unexpected argument "root:espw"`, "takes no arguments", "--espw"}},
		{[]string{"ensure", "wmw"}, []string{"kubectl edge ensure wmw", "missing <workspace path>", "kubectl edge ensure wmw root:wmw"}},
		{[]string{"ensure", "imw", "root:a", "root:b"}, []string{`unexpected argument "root:b"`, "at most 1 argument", "<workspace path>"}},
		{[]string{"ensure", "location"}, []string{"kubectl edge ensure location", "missing <name>", "--imw <workspace path>"}},
		{[]string{"remove", "location", "--imw", "root:imw"}, []string{"kubectl edge remove location", "missing <name>"}},
		{[]string{"remove", "location", "a", "b", "--imw", "root:imw"}, []string{`unexpected argument "b"`}},
		{[]string{"prep-for-syncer", "--imw", "root:imw"}, []string{"kubectl edge prep-for-syncer", "missing <synctarget>"}},
		{[]string{"status", "web", "db"}, []string{"kubectl edge status", `unexpected argument "db"`, "at most 1 argument"}},
		{[]string{"rollout", "status"}, []string{"kubectl edge rollout status", "missing <placement>"}},
		{[]string{"rollout", "pause"}, []string{"missing <placement>"}},
		{[]string{"rollout", "resume", "a", "b"}, []string{`unexpected argument "b"`}},
		{[]string{"rollout", "history"}, []string{"missing <placement>"}},
		{[]string{"rollout", "status", "web", "-o", "table"}, []string{"-o table", "json, yaml, wide and name"}},
		{[]string{"rollout", "status", "web", "-w", "-o", "json"}, []string{"-o json with -w", "drop one"}},
		{[]string{"rollout", "history", "web", "-o", "jsonpath"}, []string{"-o jsonpath", "json, yaml, wide and name"}},
		// Workspace paths.
		{[]string{"init", "--espw", "root:Edge_SP"}, []string{`--espw: "root:Edge_SP" is not a workspace path`, "for example root:edge:imw"}},
		{[]string{"ensure", "wmw", "Root:wmw"}, []string{`"Root:wmw" is not a workspace path`}},
		{[]string{"ensure", "location", "edge-1", "--imw", "root::imw"}, []string{`--imw: "root::imw" is not a workspace path`}},
		{[]string{"remove", "location", "edge-1", "--imw", "root:imw:"}, []string{`"root:imw:" is not a workspace path`}},
		// Names and labels of locations.
		{[]string{"ensure", "location", "Edge_1", "--imw", "root:imw"}, []string{`"Edge_1" cannot name a location`, "lower-case letters, digits"}},
		{[]string{"ensure", "location", "edge-1", "--imw", "root:imw", strings.Repeat("x", 64)}, []string{"is not a label argument", "key=value", "key-"}},
		{[]string{"ensure", "location", strings.Repeat("e", 64), "--imw", "root:imw"}, []string{"cannot name a location", "at most 63"}},
		{[]string{"ensure", "location", "edge-1", "env", "--imw", "root:imw"}, []string{`"env" is not a label argument`, "write key=value to set a label, or key- to remove one"}},
		{[]string{"ensure", "location", "edge-1", "env=prod", "env=dev", "--imw", "root:imw"}, []string{`label "env=dev"`, `given two values, "prod" and "dev"`}},
		{[]string{"ensure", "location", "edge-1", "env=prod", "env-", "--imw", "root:imw"}, []string{"env", "both set and removed"}},
		{[]string{"ensure", "location", "edge-1", "bad key=x", "--imw", "root:imw"}, []string{`label "bad key=x"`, `the key "bad key" is not valid`}},
		{[]string{"ensure", "location", "edge-1", "env=not ok", "--imw", "root:imw"}, []string{`label "env=not ok"`, `the value "not ok" is not valid`}},
		// Flags.
		{[]string{"ensure", "location", "edge-1"}, []string{"no --imw given", "https://127.0.0.1:1 names no workspace", "--imw root:imw"}},
		{[]string{"prep-for-syncer", "edge-1", "--kubeconfig-only"}, []string{"no --imw given", "names no workspace"}},
		{[]string{"prep-for-syncer", "edge-1", "--imw", "root:imw"}, []string{"give --syncer-image", "this kubectl-edge, dev, is not a release", "make images PUSH=<registry>"}},
		{[]string{"prep-for-syncer", "edge-1", "--imw", "root:imw", "--syncer-image", "reg.example/edge-syncer:v1 "}, []string{`--syncer-image "reg.example/edge-syncer:v1 " is not an image reference`}},
		{[]string{"remove", "location", "edge-1"}, []string{`required flag(s) "imw" not set`}},
		{[]string{"prep-for-syncer", "edge-1", "--imw", "root:imw", "-o", "edge-1-syncer.yaml"}, []string{`-o "edge-1-syncer.yaml"`, "output format", "--output-file edge-1-syncer.yaml"}},
		{[]string{"prep-for-syncer", "edge-1", "--imw", "root:imw", "-o", "json"}, []string{"-o json", "prints YAML only (-o yaml)"}},
		{[]string{"init", "--controller-token-file", tokenFile}, []string{"--controller-kubeconfig and --controller-token-file go together"}},
		{[]string{"init", "--controller-token-file", tokenFile, "--controller-kubeconfig", filepath.Join(t.TempDir(), "k")}, []string{"--controller-token-file", "is empty"}},
		{[]string{"init", "--controller-token-file", "/nonexistent/token", "--controller-kubeconfig", filepath.Join(t.TempDir(), "k")}, []string{"--controller-token-file", "/nonexistent/token"}},
		{[]string{"init", "--timeout", "0"}, []string{"--timeout 0s", "give a positive duration"}},
		{[]string{"ensure", "wmw", "root:wmw", "--timeout", "-1m"}, []string{"--timeout -1m0s", "give a positive duration"}},
		{[]string{"ensure", "wmw", "root:wmw", "--timeout", "soon"}, []string{`invalid argument "soon" for "--timeout"`}},
		{[]string{"status", "--target"}, []string{"flag needs an argument: --target"}},
		{[]string{"status", "-o", "table"}, []string{"-o table", "json, yaml, wide and name"}},
		{[]string{"status", "--target", "edge-1", "-o", "wide"}, []string{"-o wide with --target", "json and yaml"}},
		{[]string{"ensure", "cluster", "root:c"}, []string{"kubectl edge ensure", `unknown command "cluster"`, "imw, location, wmw"}},
		{[]string{"ensure", "locaton", "edge-1", "--imw", "root:imw"}, []string{`unknown command "locaton"`, "did you mean location?"}},
		{[]string{"remove", "synctarget", "edge-1"}, []string{"kubectl edge remove", `unknown command "synctarget"`, "location"}},
		{[]string{"rollout", "undo", "web"}, []string{"kubectl edge rollout", `unknown command "undo"`, "history, pause, resume, status"}},
		{[]string{"deploy"}, []string{`unknown command "deploy"`}},
		// kcp not reachable: the error says where the command went.
		{[]string{"ensure", "wmw", "root:wmw"}, []string{"root:espw", "127.0.0.1:1", "connection refused"}},
		{[]string{"ensure", "location", "edge-1", "env=prod", "--imw", "root:imw"}, []string{"root:imw", "127.0.0.1:1", "connection refused"}},
		{[]string{"prep-for-syncer", "edge-1", "--imw", "root:imw", "-o", "yaml", "--syncer-image", "reg.example/edge-syncer:v1"}, []string{"root:imw", "127.0.0.1:1", "connection refused"}},
		{[]string{"prep-for-syncer", "edge-1", "--imw", "root:imw", "--kubeconfig-only"}, []string{"root:imw", "127.0.0.1:1", "connection refused"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			cmd := NewCommand(genericiooptions.IOStreams{Out: &out, ErrOut: &errOut})
			cmd.SetArgs(append([]string{"--kubeconfig", kubeconfig}, tc.args...))
			err := cmd.Execute()
			if err == nil {
				t.Fatalf("kubectl edge %s succeeded; output: %s", strings.Join(tc.args, " "), out.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestNamespaceFlag: kubectl's -n means nothing to kubectl edge, whose objects are cluster-scoped.
// It is out of the help, and given anyway, the command says so on stderr and goes on.
func TestNamespaceFlag(t *testing.T) {
	var help, helpErr bytes.Buffer
	cmd := NewCommand(genericiooptions.IOStreams{Out: &help, ErrOut: &helpErr})
	cmd.SetArgs([]string{"status", "--help"})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("kubectl edge status --help: %v", err)
	}
	if strings.Contains(help.String(), "--namespace") {
		t.Errorf("kubectl edge status --help shows --namespace:\n%s", help.String())
	}

	kubeconfig := unreachableKubeconfig(t, "https://127.0.0.1:1/clusters/root:wmw")
	var out, errOut bytes.Buffer
	cmd = NewCommand(genericiooptions.IOStreams{Out: &out, ErrOut: &errOut})
	cmd.SetArgs([]string{"--kubeconfig", kubeconfig, "status", "-n", "team-a"})
	err := cmd.Execute()
	if err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("kubectl edge status -n team-a: want the command to go on to kcp (connection refused), got %v", err)
	}
	for _, want := range []string{"warning: -n/--namespace team-a has no effect", "cluster-scoped", "--wmw"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr does not say %q: %s", want, errOut.String())
		}
	}
}

// TestIMWDefaultsToCurrentWorkspace: without --imw, ensure location and prep-for-syncer use the
// kubeconfig's current workspace, as status does for --wmw, and an error says where it went and
// why; remove location still needs --imw.
func TestIMWDefaultsToCurrentWorkspace(t *testing.T) {
	kubeconfig := unreachableKubeconfig(t, "https://127.0.0.1:1/clusters/root:edge:imw")
	for _, args := range [][]string{{"ensure", "location", "edge-1"}, {"prep-for-syncer", "edge-1", "--kubeconfig-only"}, {"status", "--target", "edge-1"}} {
		var out, errOut bytes.Buffer
		cmd := NewCommand(genericiooptions.IOStreams{Out: &out, ErrOut: &errOut})
		cmd.SetArgs(append([]string{"--kubeconfig", kubeconfig}, args...))
		err := cmd.Execute()
		if err == nil {
			t.Fatalf("kubectl edge %s succeeded with no kcp", strings.Join(args, " "))
		}
		for _, want := range []string{"root:edge:imw", "connection refused", "the kubeconfig's current workspace, as no --imw was given"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("kubectl edge %s: error %q does not say %q", strings.Join(args, " "), err, want)
			}
		}
	}
	var out, errOut bytes.Buffer
	cmd := NewCommand(genericiooptions.IOStreams{Out: &out, ErrOut: &errOut})
	cmd.SetArgs([]string{"--kubeconfig", kubeconfig, "remove", "location", "edge-1"})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), `required flag(s) "imw" not set`) {
		t.Errorf("kubectl edge remove location edge-1 without --imw: want it refused for the missing --imw, got %v", err)
	}
}

// unreachableKubeconfig writes a kubeconfig whose server, at the given URL, is a port where
// nothing listens (127.0.0.1:1): what a command asks of kcp fails at once, with "connection
// refused", and a test sees what was checked before and what the error says.
func unreachableKubeconfig(t *testing.T, server string) string {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "`+server+`"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	return kubeconfig
}
