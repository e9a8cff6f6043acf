package ship

import (
	"crypto/x509"
	"io"
	"log"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// image is what the test expects of one of edge-mc's images.
type image struct {
	name string
	// port is the port of /healthz, /readyz and /metrics that the image exposes.
	port string
	// helpMentions is a flag that --help must list.
	helpMentions string
}

var images = []image{
	{name: "edge-syncer", port: "8080/tcp", helpMentions: "--from-kubeconfig"},
	{name: "edge-controller-manager", port: "8090/tcp", helpMentions: "--leader-elect"},
}

// TestImages reads each image of make images as an operator's tools would: the layout's index,
// one image per platform, their config and their one layer; then pushes them with make images
// PUSH= to a registry on loopback, pulls them back, and runs the binary of the pulled image for
// this machine with --help and --version.
func TestImages(t *testing.T) {
	out := madeRelease(t)
	layoutDigests := map[string]v1.Hash{}
	for _, img := range images {
		idx := layoutIndex(t, filepath.Join(out, "images", img.name))
		digest, err := idx.Digest()
		if err != nil {
			t.Fatal(err)
		}
		layoutDigests[img.name] = digest
		checkIndex(t, img, idx)
	}

	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	repo := strings.TrimPrefix(reg.URL, "http://") + "/edge-mc"
	// make images again, with PUSH: the same commit and version make the same images, which it
	// pushes.
	pushOut, err := runMake("images", "OUTPUT="+out, "PUSH="+repo)
	t.Logf("make images PUSH=%s:\n%s", repo, pushOut)
	if err != nil {
		t.Fatal(err)
	}
	for _, img := range images {
		ref, err := name.NewTag(repo + "/" + img.name + ":" + testVersion)
		if err != nil {
			t.Fatal(err)
		}
		pulled, err := remote.Index(ref)
		if err != nil {
			t.Fatalf("pulling %s: %v", ref, err)
		}
		digest, err := pulled.Digest()
		if err != nil {
			t.Fatal(err)
		}
		if digest != layoutDigests[img.name] {
			t.Errorf("pulled %s@%s; make release's layout held %s (a rebuild of the same commit must make the same image)", ref, digest, layoutDigests[img.name])
		}
		checkIndex(t, img, pulled)
		here := imageFor(t, pulled, v1.Platform{OS: runtime.GOOS, Architecture: runtime.GOARCH})
		binary := writeExecutable(t, img.name, layerFiles(t, here)[img.name].data)
		help, err := exec.Command(binary, "--help").CombinedOutput()
		if err != nil || !strings.Contains(string(help), img.helpMentions) || !strings.Contains(string(help), "--version") {
			t.Errorf("%s --help, from the pulled image: %v\n%s\nwant it to list %s and --version", img.name, err, help, img.helpMentions)
		}
		checkVersion(t, binary, img.name)
	}
}

// checkIndex checks a multi-platform image: an image for linux/amd64 and one for linux/arm64,
// each running its static binary as 65532:65532, with nothing else in it but the CA bundle and
// /tmp.
func checkIndex(t *testing.T, img image, idx v1.ImageIndex) {
	t.Helper()
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range m.Manifests {
		if d.Platform != nil {
			got = append(got, d.Platform.String())
		}
	}
	if !reflect.DeepEqual(got, platforms) {
		t.Errorf("%s is for the platforms %v, want %v", img.name, got, platforms)
	}
	for _, p := range platforms {
		platform, err := v1.ParsePlatform(p)
		if err != nil {
			t.Fatal(err)
		}
		i := imageFor(t, idx, *platform)
		what := img.name + " for " + p
		cfg, err := i.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.OS+"/"+cfg.Architecture != p {
			t.Errorf("%s: its config says %s/%s", what, cfg.OS, cfg.Architecture)
		}
		if want := []string{"/" + img.name}; !reflect.DeepEqual(cfg.Config.Entrypoint, want) || len(cfg.Config.Cmd) != 0 {
			t.Errorf("%s: entrypoint %q, cmd %q; want %q and no cmd", what, cfg.Config.Entrypoint, cfg.Config.Cmd, want)
		}
		if cfg.Config.User != "65532:65532" {
			t.Errorf("%s: user %q, want 65532:65532 (non-root, numeric)", what, cfg.Config.User)
		}
		if _, ok := cfg.Config.ExposedPorts[img.port]; !ok || len(cfg.Config.ExposedPorts) != 1 {
			t.Errorf("%s: exposes %v, want %s", what, cfg.Config.ExposedPorts, img.port)
		}
		if v := cfg.Config.Labels["org.opencontainers.image.version"]; v != testVersion {
			t.Errorf("%s: version label %q, want %q", what, v, testVersion)
		}

		files := layerFiles(t, i)
		var listed []string
		for n, f := range files {
			listed = append(listed, n)
			if f.uid != 0 || f.gid != 0 {
				t.Errorf("%s: %s belongs to %d:%d, want root, so that the user 65532 cannot change it", what, n, f.uid, f.gid)
			}
			if base := filepath.Base(n); base == "sh" || base == "bash" || base == "busybox" {
				t.Errorf("%s: holds a shell, %s", what, n)
			}
			if !f.dir && n != img.name && f.mode&0o111 != 0 {
				t.Errorf("%s: %s is executable; only the binary should be", what, n)
			}
		}
		wantFiles := sortedCopy([]string{"etc/", "etc/ssl/", "etc/ssl/certs/", "etc/ssl/certs/ca-certificates.crt", img.name, "tmp/"})
		if strings.Join(sortedCopy(listed), " ") != strings.Join(wantFiles, " ") {
			t.Errorf("%s holds %v, want %v", what, sortedCopy(listed), wantFiles)
		}
		if bin := files[img.name]; bin != nil {
			checkStaticBinary(t, what, bin.data, p)
			if bin.mode != 0o755 {
				t.Errorf("%s: the binary has mode %o, want 755", what, bin.mode)
			}
		}
		if ca := files["etc/ssl/certs/ca-certificates.crt"]; ca != nil {
			if pool := x509.NewCertPool(); !pool.AppendCertsFromPEM(ca.data) {
				t.Errorf("%s: /etc/ssl/certs/ca-certificates.crt holds no certificate", what)
			}
		}
		if tmp := files["tmp/"]; tmp != nil && tmp.mode != 0o1777 {
			t.Errorf("%s: /tmp has mode %o, want 1777", what, tmp.mode)
		}
	}
}

// layoutIndex returns the image index that an OCI image layout of make images holds.
func layoutIndex(t *testing.T, dir string) v1.ImageIndex {
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
		t.Fatalf("the layout %s holds %d entries, want the image index alone", dir, len(m.Manifests))
	}
	if ref := m.Manifests[0].Annotations["io.containerd.image.name"]; !strings.HasSuffix(ref, "/"+filepath.Base(dir)+":"+testVersion) {
		t.Errorf("the layout %s names its image %q, want .../%s:%s", dir, ref, filepath.Base(dir), testVersion)
	}
	idx, err := top.ImageIndex(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

// imageFor returns the image of idx for a platform.
func imageFor(t *testing.T, idx v1.ImageIndex, p v1.Platform) v1.Image {
	t.Helper()
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range m.Manifests {
		if d.Platform != nil && d.Platform.Satisfies(p) {
			img, err := idx.Image(d.Digest)
			if err != nil {
				t.Fatal(err)
			}
			return img
		}
	}
	t.Fatalf("no image for %s", p.String())
	return nil
}

// layerFiles returns the files of an image, which must have exactly one layer.
func layerFiles(t *testing.T, img v1.Image) map[string]*tarEntry {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("the image has %d layers, want 1", len(layers))
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	return readTar(t, rc)
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
