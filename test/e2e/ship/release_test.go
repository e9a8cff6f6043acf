package ship

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/kcp-dev/edge-mc/test/framework"
)

// testVersion is the version the test builds the release at, as VERSION= of make.
const testVersion = "v0.0.0-e2e"

var (
	commands  = []string{"kubectl-edge", "edge-controller-manager", "edge-syncer"}
	platforms = []string{"linux/amd64", "linux/arm64"}
)

var (
	releaseOnce sync.Once
	releaseDir  string
	releaseErr  error
)

// madeRelease returns the OUTPUT directory of `make release`, which it runs once per package,
// at testVersion, into a directory of its own: bin/, images/ and release/.
func madeRelease(t *testing.T) string {
	t.Helper()
	releaseOnce.Do(func() {
		releaseDir, releaseErr = os.MkdirTemp("", "edge-mc-ship-")
		if releaseErr != nil {
			return
		}
		start := time.Now()
		var out string
		out, releaseErr = runMake("release", "OUTPUT="+releaseDir)
		t.Logf("make release took %s:\n%s", time.Since(start).Round(time.Second), out)
	})
	if releaseErr != nil {
		t.Fatalf("make release: %v", releaseErr)
	}
	return releaseDir
}

// runMake runs make with the targets and variables given, and VERSION=testVersion, from the
// repository's root.
func runMake(args ...string) (string, error) {
	root, err := framework.RepoFile()
	if err != nil {
		return "", err
	}
	cmd := exec.Command("make", append(args, "VERSION="+testVersion, "RELEASE_URL=https://downloads.example/edge-mc/"+testVersion)...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("make %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

func removeRelease() {
	if releaseDir != "" {
		_ = os.RemoveAll(releaseDir)
	}
}

// TestRelease checks the release directory as an operator would use it: checksums, every
// archive's binary, the image archives, the manifests, and kubectl edge installed by krew.
func TestRelease(t *testing.T) {
	out := madeRelease(t)
	dir := filepath.Join(out, "release")

	// sha256sum -c checks every file the release lists, and the list names every other file.
	check := exec.Command("sha256sum", "--check", "--strict", "SHA256SUMS")
	check.Dir = dir
	if o, err := check.CombinedOutput(); err != nil {
		t.Fatalf("sha256sum --check SHA256SUMS: %v\n%s", err, o)
	}
	var want []string
	for _, c := range commands {
		for _, p := range platforms {
			want = append(want, fmt.Sprintf("%s_%s_%s.tar.gz", c, testVersion, strings.ReplaceAll(p, "/", "_")))
		}
	}
	for _, img := range []string{"edge-syncer", "edge-controller-manager"} {
		want = append(want, img+"_"+testVersion+".oci.tar")
	}
	want = append(want, "edge-controller-manager.yaml", "kubectl-edge.krew.yaml")
	sort.Strings(want)
	sums, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, line := range strings.Split(strings.TrimSpace(string(sums)), "\n") {
		_, name, _ := strings.Cut(line, "  ")
		listed = append(listed, name)
	}
	sort.Strings(listed)
	if strings.Join(listed, " ") != strings.Join(want, " ") {
		t.Errorf("SHA256SUMS lists\n  %s\nwant\n  %s", strings.Join(listed, "\n  "), strings.Join(want, "\n  "))
	}

	// Each archive holds its command's static binary for its platform; those for this machine
	// run and say the release's version.
	for _, c := range commands {
		for _, p := range platforms {
			name := fmt.Sprintf("%s_%s_%s.tar.gz", c, testVersion, strings.ReplaceAll(p, "/", "_"))
			files := readTarGz(t, filepath.Join(dir, name))
			if len(files) != 1 || files[c] == nil {
				t.Errorf("%s holds %v, want %s alone", name, names(files), c)
				continue
			}
			checkStaticBinary(t, name, files[c].data, p)
			if files[c].mode&0o111 == 0 {
				t.Errorf("%s: %s is not executable (mode %o)", name, c, files[c].mode)
			}
			if p == runtime.GOOS+"/"+runtime.GOARCH {
				path := writeExecutable(t, c, files[c].data)
				checkVersion(t, path, c)
			}
		}
	}

	// Each image archive is the image's layout, as make images wrote it.
	for _, img := range []string{"edge-syncer", "edge-controller-manager"} {
		untarred := t.TempDir()
		f, err := os.Open(filepath.Join(dir, img+"_"+testVersion+".oci.tar"))
		if err != nil {
			t.Fatal(err)
		}
		extractTar(t, f, untarred)
		f.Close()
		got, want := layoutDigest(t, untarred), layoutDigest(t, filepath.Join(out, "images", img))
		if got != want {
			t.Errorf("%s_%s.oci.tar holds the index %s, the layout of make images %s", img, testVersion, got, want)
		}
	}

	// The manifests name the release's image.
	manifests, err := os.ReadFile(filepath.Join(dir, "edge-controller-manager.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	d := deploymentOf(t, manifests)
	if got, want := d.Spec.Template.Spec.Containers[0].Image, "ghcr.io/kcp-dev/edge-mc/edge-controller-manager:"+testVersion; got != want {
		t.Errorf("edge-controller-manager.yaml runs the image %s, want %s", got, want)
	}

	t.Run("krew", func(t *testing.T) { testKrewInstall(t, dir) })
}

// testKrewInstall installs kubectl edge with krew from the release's krew manifest and the
// archive for this machine, offline, as a user without an index would, and runs it as a kubectl
// plugin.
func testKrewInstall(t *testing.T, dir string) {
	root, err := framework.RepoFile()
	if err != nil {
		t.Fatal(err)
	}
	tools := t.TempDir()
	build := exec.Command("go", "build", "-o", tools+"/", "sigs.k8s.io/krew/cmd/krew")
	build.Dir = filepath.Join(root, "hack", "tools", "krew")
	build.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	if o, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building krew from hack/tools/krew: %v\n%s", err, o)
	}
	krewRoot := filepath.Join(t.TempDir(), "krew")
	archive := fmt.Sprintf("kubectl-edge_%s_%s_%s.tar.gz", testVersion, runtime.GOOS, runtime.GOARCH)
	env := append(os.Environ(), "KREW_ROOT="+krewRoot, "HOME="+t.TempDir(), "PATH="+filepath.Join(krewRoot, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	install := exec.Command(filepath.Join(tools, "krew"), "install", "--manifest", filepath.Join(dir, "kubectl-edge.krew.yaml"), "--archive", filepath.Join(dir, archive))
	install.Env = env
	o, err := install.CombinedOutput()
	t.Logf("$ krew install --manifest kubectl-edge.krew.yaml --archive %s\n%s", archive, o)
	if err != nil {
		t.Fatalf("krew install: %v", err)
	}
	kubectl := exec.Command("kubectl", "edge", "--version")
	kubectl.Env = env
	o, err = kubectl.CombinedOutput()
	want := fmt.Sprintf("kubectl-edge %s (%s %s/%s)\n", testVersion, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	if err != nil || string(o) != want {
		t.Errorf("kubectl edge --version, installed by krew: %v %q, want %q", err, o, want)
	}
}

// deploymentOf returns the one Deployment of a multi-document YAML file.
func deploymentOf(t *testing.T, manifests []byte) *appsv1.Deployment {
	t.Helper()
	var found *appsv1.Deployment
	for _, doc := range strings.Split(string(manifests), "\n---\n") {
		var meta struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("a document of the manifests: %v", err)
		}
		if meta.Kind != "Deployment" {
			continue
		}
		if found != nil {
			t.Fatal("the manifests hold two Deployments")
		}
		found = &appsv1.Deployment{}
		if err := yaml.UnmarshalStrict([]byte(doc), found); err != nil {
			t.Fatal(err)
		}
	}
	if found == nil {
		t.Fatal("the manifests hold no Deployment")
	}
	return found
}

// tarEntry is a file read from a tar.
type tarEntry struct {
	mode     int64
	uid, gid int
	dir      bool
	data     []byte
}

func readTar(t *testing.T, r io.Reader) map[string]*tarEntry {
	t.Helper()
	files := map[string]*tarEntry{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = &tarEntry{mode: h.Mode, uid: h.Uid, gid: h.Gid, dir: h.Typeflag == tar.TypeDir, data: data}
	}
}

func readTarGz(t *testing.T, path string) map[string]*tarEntry {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return readTar(t, zr)
}

func extractTar(t *testing.T, r io.Reader, dir string) {
	t.Helper()
	for name, f := range readTar(t, r) {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if f.dir {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, f.data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func names(files map[string]*tarEntry) []string {
	var out []string
	for n := range files {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// layoutDigest returns the digest of the one image index an OCI image layout holds.
func layoutDigest(t *testing.T, dir string) string {
	t.Helper()
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatalf("%s is not an OCI image layout: %v", dir, err)
	}
	m, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 {
		t.Fatalf("the layout %s holds %d entries, want 1", dir, len(m.Manifests))
	}
	return m.Manifests[0].Digest.String()
}

// checkStaticBinary checks that data is an ELF executable for platform (os/arch) with no
// interpreter: statically linked, so that it runs on an empty image.
func checkStaticBinary(t *testing.T, what string, data []byte, platform string) {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Errorf("%s: not an ELF executable: %v", what, err)
		return
	}
	want := map[string]elf.Machine{"linux/amd64": elf.EM_X86_64, "linux/arm64": elf.EM_AARCH64}[platform]
	if f.Machine != want {
		t.Errorf("%s: built for %s, want %s (%s)", what, f.Machine, want, platform)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s: dynamically linked (it has an interpreter), want a static binary", what)
		}
	}
}

func writeExecutable(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkVersion runs `path --version` and checks that it prints the command's name and the
// version make built it at.
func checkVersion(t *testing.T, path, command string) {
	t.Helper()
	out, err := exec.Command(path, "--version").CombinedOutput()
	want := fmt.Sprintf("%s %s (%s %s/%s)\n", command, testVersion, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	if err != nil || string(out) != want {
		t.Errorf("%s --version: %v %q, want %q", command, err, out, want)
	}
}
