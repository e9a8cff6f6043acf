// Command release lays out what a release of edge-mc would upload, into one directory; `make
// release` runs it after make images. Nothing is published.
//
//	go run ./hack/release --version v0.1.0 --bin-dir _output/bin --images _output/images --out _output/release \
//	  --platforms linux/amd64,linux/arm64 --url https://github.com/kcp-dev/edge-mc/releases/download/v0.1.0
//
// It writes:
//
//	<command>_<version>_<os>_<arch>.tar.gz   each command's static binary, alone at the archive's top
//	<image>_<version>.oci.tar                  each image's OCI image layout, as a tar (an OCI archive)
//	edge-controller-manager.yaml               config/deploy rendered, with the release's image
//	kubectl-edge.krew.yaml                     a krew plugin manifest for `kubectl edge`, pointing at
//	                                           the kubectl-edge archives under --url
//	SHA256SUMS                                 the sha256 of every other file, as sha256sum -c reads it
//
// The same binaries, layouts, version and --created make the same bytes.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Commands are edge-mc's commands, each released as a binary per platform.
var Commands = []string{"kubectl-edge", "edge-controller-manager", "edge-syncer"}

// Images are the commands that have an image (hack/images).
var Images = []string{"edge-syncer", "edge-controller-manager"}

// Platform is an os/arch pair.
type Platform struct{ OS, Arch string }

func (p Platform) String() string { return p.OS + "/" + p.Arch }

func main() {
	version := flag.String("version", "dev", "edge-mc's version")
	binDir := flag.String("bin-dir", "_output/bin", "directory with the binaries, in <os>_<arch>/ subdirectories (make binaries)")
	imagesDir := flag.String("images", "_output/images", "directory with an OCI image layout per image (make images)")
	deployDir := flag.String("deploy", "config/deploy", "the kustomize base of edge-controller-manager")
	imageRepo := flag.String("image-repo", "ghcr.io/kcp-dev/edge-mc", "repository of the images that the rendered manifests name: <repo>/<image>:<version>")
	out := flag.String("out", "_output/release", "directory to lay the release out in; it is replaced")
	platformList := flag.String("platforms", "linux/amd64,linux/arm64", "platforms, os/arch, comma- or space-separated")
	url := flag.String("url", "", "where the release's files will be downloadable from, for the krew manifest (default: GitHub's release download URL of --version)")
	created := flag.Int64("created", 0, "time of the files in the archives, in Unix seconds (make passes the last commit's)")
	flag.Parse()

	if *url == "" {
		*url = "https://github.com/kcp-dev/edge-mc/releases/download/" + *version
	}
	platforms, err := parsePlatforms(*platformList)
	if err == nil {
		err = run(release{
			version: *version, binDir: *binDir, imagesDir: *imagesDir, deployDir: *deployDir, imageRepo: *imageRepo,
			out: *out, platforms: platforms, url: strings.TrimSuffix(*url, "/"), created: time.Unix(*created, 0).UTC(),
		})
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(1)
	}
}

type release struct {
	version, binDir, imagesDir, deployDir, imageRepo, out, url string
	platforms                                                  []Platform
	created                                                    time.Time
}

func run(r release) error {
	if strings.HasSuffix(r.version, "-dirty") {
		fmt.Fprintf(os.Stderr, "warning: version %s: the work tree has uncommitted changes; a real release is made from a clean checkout of its tag\n", r.version)
	}
	if err := os.RemoveAll(r.out); err != nil {
		return err
	}
	if err := os.MkdirAll(r.out, 0o755); err != nil {
		return err
	}
	krewArchives := map[Platform]string{}
	for _, c := range Commands {
		for _, p := range r.platforms {
			name := archiveName(c, r.version, p)
			bin := filepath.Join(r.binDir, p.OS+"_"+p.Arch, c)
			data, err := os.ReadFile(bin)
			if err != nil {
				return fmt.Errorf("the %s binary of %s: %w (make release builds it first)", p, c, err)
			}
			archive, err := tarGz([]tarFile{{name: c, mode: 0o755, data: data}}, r.created)
			if err != nil {
				return fmt.Errorf("archiving %s: %w", name, err)
			}
			if err := os.WriteFile(filepath.Join(r.out, name), archive, 0o644); err != nil {
				return err
			}
			if c == "kubectl-edge" {
				krewArchives[p] = name
			}
		}
	}
	for _, img := range Images {
		files, err := dirFiles(filepath.Join(r.imagesDir, img))
		if err != nil {
			return fmt.Errorf("the image layout of %s: %w (make release runs make images first)", img, err)
		}
		data, err := tarOf(files, r.created)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(r.out, img+"_"+r.version+".oci.tar"), data, 0o644); err != nil {
			return err
		}
	}
	manifests, err := renderDeploy(r.deployDir, r.imageRepo, r.version)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(r.out, "edge-controller-manager.yaml"), manifests, 0o644); err != nil {
		return err
	}
	krew, err := krewManifest(r.version, r.url, r.out, krewArchives)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(r.out, "kubectl-edge.krew.yaml"), krew, 0o644); err != nil {
		return err
	}
	sums, err := checksums(r.out)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(r.out, "SHA256SUMS"), sums, 0o644); err != nil {
		return err
	}
	fmt.Printf("release %s in %s:\n%s", r.version, r.out, sums)
	return nil
}

// archiveName names the archive of a command's binary for a platform.
func archiveName(command, version string, p Platform) string {
	return fmt.Sprintf("%s_%s_%s_%s.tar.gz", command, version, p.OS, p.Arch)
}

// tarFile is a regular file to archive.
type tarFile struct {
	name string
	mode int64
	data []byte
}

// tarOf writes files, in the order given, as a tar, each with the time modTime and owned by
// root.
func tarOf(files []tarFile, modTime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: modTime, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// tarGz is tarOf, gzipped (with no name or time in the gzip header).
func tarGz(files []tarFile, modTime time.Time) ([]byte, error) {
	raw, err := tarOf(files, modTime)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(raw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// dirFiles returns the regular files under dir, named relative to it with slashes, sorted.
func dirFiles(dir string) ([]tarFile, error) {
	var files []tarFile
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", path)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		files = append(files, tarFile{name: filepath.ToSlash(rel), mode: 0o644, data: data})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s holds no file", dir)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	return files, nil
}

// checksums returns the sha256 of every file in dir, in the format of sha256sum.
func checksums(dir string) ([]byte, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	for _, e := range entries {
		if e.IsDir() || e.Name() == "SHA256SUMS" {
			continue
		}
		sum, err := fileSHA256(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&out, "%s  %s\n", sum, e.Name())
	}
	return out.Bytes(), nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// parsePlatforms parses a comma- or space-separated list of os/arch platforms.
func parsePlatforms(s string) ([]Platform, error) {
	var out []Platform
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		os, arch, ok := strings.Cut(f, "/")
		if !ok || os == "" || arch == "" || strings.Contains(arch, "/") {
			return nil, fmt.Errorf("platform %q: want os/arch, such as linux/arm64", f)
		}
		out = append(out, Platform{OS: os, Arch: arch})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no platform in %q: want os/arch,..., such as linux/amd64,linux/arm64", s)
	}
	return out, nil
}
