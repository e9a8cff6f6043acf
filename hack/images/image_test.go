package main

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

var created = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func testSpec() ImageSpec {
	return ImageSpec{
		Command:  Commands[0],
		Platform: v1.Platform{OS: "linux", Architecture: "arm64"},
		Binary:   []byte("\x7fELF not really"),
		CABundle: []byte("-----BEGIN CERTIFICATE-----\n"),
		Version:  "v1.2.3",
		Created:  created,
	}
}

// tarEntry is what the test reads back of a layer's entry.
type tarEntry struct {
	Mode     int64
	Dir      bool
	UID, GID int
	Data     string
}

func readLayer(t *testing.T, img v1.Image) map[string]tarEntry {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("%d layers, want 1", len(layers))
	}
	if mt, _ := layers[0].MediaType(); mt != types.OCILayer {
		t.Errorf("layer media type %s, want %s", mt, types.OCILayer)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	entries := map[string]tarEntry{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		if !h.ModTime.Equal(created) {
			t.Errorf("%s has time %s, want %s", h.Name, h.ModTime, created)
		}
		entries[h.Name] = tarEntry{Mode: h.Mode, Dir: h.Typeflag == tar.TypeDir, UID: h.Uid, GID: h.Gid, Data: string(data)}
	}
	return entries
}

func TestImageContents(t *testing.T) {
	s := testSpec()
	img, err := buildImage(s)
	if err != nil {
		t.Fatal(err)
	}
	got := readLayer(t, img)
	want := map[string]tarEntry{
		"edge-syncer":                       {Mode: 0o755, Data: string(s.Binary)},
		"etc/":                              {Mode: 0o755, Dir: true},
		"etc/ssl/":                          {Mode: 0o755, Dir: true},
		"etc/ssl/certs/":                    {Mode: 0o755, Dir: true},
		"etc/ssl/certs/ca-certificates.crt": {Mode: 0o644, Data: string(s.CABundle)},
		"tmp/":                              {Mode: 0o1777, Dir: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("layer holds\n%v\nwant\n%v", got, want)
	}

	s.CABundle = nil
	img, err = buildImage(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := readLayer(t, img); len(got) != 2 || got["edge-syncer"].Data != string(s.Binary) {
		t.Errorf("without a CA bundle the layer holds %v, want the binary and /tmp only", got)
	}
}

func TestImageConfig(t *testing.T) {
	img, err := buildImage(testSpec())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.OS != "linux" || cfg.Architecture != "arm64" {
		t.Errorf("platform %s/%s, want linux/arm64", cfg.OS, cfg.Architecture)
	}
	if !reflect.DeepEqual(cfg.Config.Entrypoint, []string{"/edge-syncer"}) || cfg.Config.Cmd != nil {
		t.Errorf("entrypoint %v, cmd %v; want [/edge-syncer] and no cmd", cfg.Config.Entrypoint, cfg.Config.Cmd)
	}
	if cfg.Config.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532", cfg.Config.User)
	}
	if _, ok := cfg.Config.ExposedPorts["8080/tcp"]; !ok {
		t.Errorf("exposed ports %v, want 8080/tcp", cfg.Config.ExposedPorts)
	}
	if v := cfg.Config.Labels["org.opencontainers.image.version"]; v != "v1.2.3" {
		t.Errorf("version label %q, want v1.2.3", v)
	}
	if !cfg.Created.Time.Equal(created) {
		t.Errorf("created %s, want %s", cfg.Created.Time, created)
	}
	if mt, _ := img.MediaType(); mt != types.OCIManifestSchema1 {
		t.Errorf("manifest media type %s, want %s", mt, types.OCIManifestSchema1)
	}
}

// TestReproducible: the same inputs make the same digest; another version makes another.
func TestReproducible(t *testing.T) {
	digest := func(s ImageSpec) v1.Hash {
		img, err := buildImage(s)
		if err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	a, b := digest(testSpec()), digest(testSpec())
	if a != b {
		t.Errorf("two builds of the same inputs: %s and %s", a, b)
	}
	other := testSpec()
	other.Version = "v1.2.4"
	if digest(other) == a {
		t.Error("another version made the same digest")
	}
}

func TestBuildIndex(t *testing.T) {
	dir := t.TempDir()
	platforms := []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}
	for _, p := range platforms {
		if err := os.MkdirAll(filepath.Join(dir, platformDir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, platformDir(p), "edge-syncer"), []byte("binary for "+p.Architecture), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	idx, err := buildIndex(Commands[0], platforms, dir, nil, "v1.2.3", created)
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != types.OCIImageIndex || len(m.Manifests) != 2 {
		t.Fatalf("index %s with %d manifests, want an OCI index of 2", m.MediaType, len(m.Manifests))
	}
	for i, d := range m.Manifests {
		if d.Platform == nil || !d.Platform.Equals(platforms[i]) {
			t.Errorf("manifest %d is for %v, want %v", i, d.Platform, platforms[i])
			continue
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		if got := readLayer(t, img)["edge-syncer"].Data; got != "binary for "+platforms[i].Architecture {
			t.Errorf("the %s image holds the binary %q", platforms[i].Architecture, got)
		}
	}

	_, err = buildIndex(Commands[1], platforms, dir, nil, "v1.2.3", created)
	if err == nil || !strings.Contains(err.Error(), "edge-controller-manager") || !strings.Contains(err.Error(), "make images") {
		t.Errorf("a missing binary: error %v, want one naming the command and make images", err)
	}
}

func TestParsePlatforms(t *testing.T) {
	got, err := parsePlatforms("linux/amd64, linux/arm64")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Architecture != "amd64" || got[1].Architecture != "arm64" {
		t.Errorf("parsed %v", got)
	}
	for _, bad := range []string{"", "linux", " , "} {
		if _, err := parsePlatforms(bad); err == nil {
			t.Errorf("parsePlatforms(%q) accepted it", bad)
		}
	}
}

func TestCheckTag(t *testing.T) {
	if err := checkTag("ghcr.io/kcp-dev/edge-mc", "v0.1.0-3-gabc1234-dirty"); err != nil {
		t.Errorf("a git describe version: %v", err)
	}
	err := checkTag("ghcr.io/kcp-dev/edge-mc", "v0.1.0+build")
	if err == nil || !strings.Contains(err.Error(), "v0.1.0+build") {
		t.Errorf("a version with '+': error %v, want one naming it", err)
	}
}

func TestLayerTarIsDeterministic(t *testing.T) {
	files := layerFiles("x", []byte("b"), []byte("c"))
	a, err := layerTar(files, created)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := layerTar(files, created)
	if !bytes.Equal(a, b) {
		t.Error("the same files made different tars")
	}
}
