package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/semver"
	"sigs.k8s.io/yaml"
)

func TestKrewVersion(t *testing.T) {
	for version, want := range map[string]string{
		"v0.1.0":                  "v0.1.0",
		"v0.1.0-rc.1":             "v0.1.0-rc.1",
		"v0.1.0-3-gabc1234":       "v0.1.0-3-gabc1234",
		"v0.1.0-3-gabc1234-dirty": "v0.1.0-3-gabc1234-dirty",
		"dev":                     "v0.0.0-dev",
		"f236d28":                 "v0.0.0-f236d28",
		"f236d28-dirty":           "v0.0.0-f236d28-dirty",
		"0123456":                 "v0.0.0-g0123456",
		"v1.2":                    "v0.0.0-v1-2",
		"":                        "v0.0.0-dev",
	} {
		got := krewVersion(version)
		if got != want {
			t.Errorf("krewVersion(%q) = %q, want %q", version, got, want)
		}
		if !semver.IsValid(got) {
			t.Errorf("krewVersion(%q) = %q is not a semantic version", version, got)
		}
	}
}

func readTarGz(t *testing.T, data []byte) map[string]*tar.Header {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	out := map[string]*tar.Header{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = h
	}
}

// TestRun lays a release out from fake binaries and layouts and checks every file of it.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	bin, images, out := filepath.Join(dir, "bin"), filepath.Join(dir, "images"), filepath.Join(dir, "release")
	platforms := []Platform{{"linux", "amd64"}, {"linux", "arm64"}}
	for _, p := range platforms {
		for _, c := range Commands {
			write(t, filepath.Join(bin, p.OS+"_"+p.Arch, c), c+" for "+p.Arch)
		}
	}
	for _, img := range Images {
		write(t, filepath.Join(images, img, "oci-layout"), `{"imageLayoutVersion":"1.0.0"}`)
		write(t, filepath.Join(images, img, "index.json"), `{}`)
		write(t, filepath.Join(images, img, "blobs", "sha256", "aa"), "blob")
	}
	created := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	r := release{version: "v0.1.0", binDir: bin, imagesDir: images, deployDir: "../../config/deploy",
		imageRepo: "registry.example/edge-mc", out: out, platforms: platforms,
		url: "https://example.com/dl/v0.1.0", created: created}
	if err := run(r); err != nil {
		t.Fatal(err)
	}

	entries, _ := os.ReadDir(out)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := []string{
		"SHA256SUMS",
		"edge-controller-manager.yaml",
		"edge-controller-manager_v0.1.0.oci.tar",
		"edge-controller-manager_v0.1.0_linux_amd64.tar.gz",
		"edge-controller-manager_v0.1.0_linux_arm64.tar.gz",
		"edge-syncer_v0.1.0.oci.tar",
		"edge-syncer_v0.1.0_linux_amd64.tar.gz",
		"edge-syncer_v0.1.0_linux_arm64.tar.gz",
		"kubectl-edge.krew.yaml",
		"kubectl-edge_v0.1.0_linux_amd64.tar.gz",
		"kubectl-edge_v0.1.0_linux_arm64.tar.gz",
	}
	if strings.Join(names, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the release holds\n%s\nwant\n%s", strings.Join(names, "\n"), strings.Join(want, "\n"))
	}

	archive := readFile(t, filepath.Join(out, "kubectl-edge_v0.1.0_linux_arm64.tar.gz"))
	hs := readTarGz(t, []byte(archive))
	if h := hs["kubectl-edge"]; len(hs) != 1 || h == nil || h.Mode != 0o755 || !h.ModTime.Equal(created) || h.Size != int64(len("kubectl-edge for arm64")) {
		t.Errorf("the kubectl-edge archive holds %v, want kubectl-edge alone, executable, of %s", hs, created)
	}

	sums := readFile(t, filepath.Join(out, "SHA256SUMS"))
	for _, n := range want[1:] {
		sum, err := fileSHA256(filepath.Join(out, n))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(sums, sum+"  "+n+"\n") {
			t.Errorf("SHA256SUMS lacks %s  %s", sum, n)
		}
	}

	var plugin krewPlugin
	if err := yaml.UnmarshalStrict([]byte(readFile(t, filepath.Join(out, "kubectl-edge.krew.yaml"))), &plugin); err != nil {
		t.Fatal(err)
	}
	if plugin.Metadata.Name != "edge" || plugin.Spec.Version != "v0.1.0" || len(plugin.Spec.Platforms) != 2 {
		t.Fatalf("krew manifest %+v", plugin)
	}
	amd64 := plugin.Spec.Platforms[0]
	sum, _ := fileSHA256(filepath.Join(out, "kubectl-edge_v0.1.0_linux_amd64.tar.gz"))
	if amd64.Selector.MatchLabels["arch"] != "amd64" || amd64.URI != "https://example.com/dl/v0.1.0/kubectl-edge_v0.1.0_linux_amd64.tar.gz" ||
		amd64.Sha256 != sum || amd64.Bin != "kubectl-edge" {
		t.Errorf("krew platform %+v", amd64)
	}

	manifests := readFile(t, filepath.Join(out, "edge-controller-manager.yaml"))
	if !strings.Contains(manifests, "image: registry.example/edge-mc/edge-controller-manager:v0.1.0\n") {
		t.Errorf("the rendered manifests do not name the release's image:\n%s", manifests)
	}

	// The same inputs make the same bytes.
	first := sums
	if err := run(r); err != nil {
		t.Fatal(err)
	}
	if again := readFile(t, filepath.Join(out, "SHA256SUMS")); again != first {
		t.Errorf("a second run made other files:\n%s\nthen\n%s", first, again)
	}
}

func TestRunMissingBinary(t *testing.T) {
	dir := t.TempDir()
	err := run(release{version: "v0.1.0", binDir: filepath.Join(dir, "bin"), out: filepath.Join(dir, "out"),
		platforms: []Platform{{"linux", "arm64"}}})
	if err == nil || !strings.Contains(err.Error(), "linux/arm64 binary of kubectl-edge") {
		t.Errorf("error %v, want one naming the platform and the command", err)
	}
}

func TestParsePlatforms(t *testing.T) {
	got, err := parsePlatforms("linux/amd64 linux/arm64")
	if err != nil || len(got) != 2 || got[1] != (Platform{"linux", "arm64"}) {
		t.Errorf("parsePlatforms: %v %v", got, err)
	}
	for _, bad := range []string{"", "linux", "linux/arm/v7", "/amd64"} {
		if _, err := parsePlatforms(bad); err == nil {
			t.Errorf("parsePlatforms(%q) accepted it", bad)
		}
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestRenderDeployNumericVersion: a version that YAML would read as a number (a commit hash of
// digits only) still renders, as the image's tag.
func TestRenderDeployNumericVersion(t *testing.T) {
	out, err := renderDeploy("../../config/deploy", "registry.example/edge-mc", "6556114")
	if err != nil {
		t.Fatalf("rendering with version 6556114: %v", err)
	}
	if want := "image: registry.example/edge-mc/edge-controller-manager:6556114"; !strings.Contains(string(out), want) {
		t.Errorf("the rendered Deployment lacks %q:\n%s", want, out)
	}
}
