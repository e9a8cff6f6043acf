package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func TestVersionClient(t *testing.T) {
	out, err := runEdge(t, "version", "--client")
	if err != nil || !strings.HasPrefix(out, "kubectl-edge: dev (go") || strings.Count(out, "\n") != 1 {
		t.Errorf("version --client: %v\n%s", err, out)
	}
	out, err = runEdge(t, "version", "--client", "-o", "json")
	var view versionView
	if err != nil || json.Unmarshal([]byte(out), &view) != nil || view.Client.Version != "dev" || view.Controllers != nil || view.Syncers != nil {
		t.Errorf("version --client -o json: %v\n%s", err, out)
	}
}

// TestVersionWithoutKCP: kcp unreachable, version still prints the client's, and fails naming
// what it could not read.
func TestVersionWithoutKCP(t *testing.T) {
	kubeconfig := unreachableKubeconfig(t, "https://127.0.0.1:1/clusters/root:imw")
	var out, errOut bytes.Buffer
	cmd := NewCommand(genericiooptions.IOStreams{Out: &out, ErrOut: &errOut})
	cmd.SetArgs([]string{"--kubeconfig", kubeconfig, "version"})
	err := cmd.Execute()
	if !strings.HasPrefix(out.String(), "kubectl-edge: dev") {
		t.Errorf("version without kcp printed no client version:\n%s", out.String())
	}
	for _, want := range []string{"leader Lease in the ESPW root:espw", "SyncTargets of root:imw", "connection refused"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("version without kcp: error %v does not say %q", err, want)
		}
	}
}

// TestPrintVersions: the most common syncer version first, the SyncTargets of the others named
// (five at most), those that have not reported named too.
func TestPrintVersions(t *testing.T) {
	names := func(prefix string, n int) []string {
		var out []string
		for i := range n {
			out = append(out, prefix+string(rune('a'+i)))
		}
		return out
	}
	view := versionView{
		Client:      clientVersion{Version: "v0.3.0", Go: "go1.26.8", Platform: "linux/amd64"},
		Controllers: []controllerVersion{{Lease: "default/edge-controller-manager", Holder: "vm-1", Version: "v0.3.0", RenewTime: "2026-11-28T20:00:00Z"}},
		Syncers: &syncerVersions{Workspace: "root:imw", Versions: sortVersions(map[string][]string{
			"v0.3.0": names("new-", 9), "v0.2.0": names("old-", 7), "": {"quiet"},
		})},
	}
	var out bytes.Buffer
	printVersions(&out, view, false)
	want := `kubectl-edge: v0.3.0 (go1.26.8 linux/amd64)
edge-controller-manager: v0.3.0 (leader vm-1, Lease default/edge-controller-manager, renewed 2026-11-28T20:00:00Z)
edge-syncer, the 17 SyncTargets of root:imw:
  v0.3.0: 9
  v0.2.0: 7 (old-a, old-b, old-c, old-d, old-e, and 2 more)
  not reported yet: 1 (quiet)
`
	if out.String() != want {
		t.Errorf("printVersions:\n%s\nwant:\n%s", out.String(), want)
	}
	out.Reset()
	printVersions(&out, versionView{Client: view.Client, Controllers: []controllerVersion{}, Syncers: &syncerVersions{Workspace: "root:imw", Versions: sortVersions(nil)}}, false)
	if !strings.Contains(out.String(), "no leader Lease in the ESPW") || !strings.Contains(out.String(), "no SyncTargets in root:imw") {
		t.Errorf("printVersions of an empty fleet:\n%s", out.String())
	}
}
