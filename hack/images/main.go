// Command images builds edge-mc's container images, of edge-syncer and edge-controller-manager,
// as multi-platform OCI image layouts, and pushes them; no container engine takes part. `make
// images` runs it after building the static binaries:
//
//	go run ./hack/images build --bin-dir _output/bin --out _output/images --version v0.1.0 \
//	  --platforms linux/amd64,linux/arm64 [--ca-bundle /etc/ssl/certs/ca-certificates.crt] [--created <unix time>]
//	go run ./hack/images push --dir _output/images --version v0.1.0 --registry ghcr.io/kcp-dev/edge-mc
//
// Each image has one layer on no base image: the command's static binary as /<command> (the
// entrypoint), the build machine's CA bundle as /etc/ssl/certs/ca-certificates.crt and an empty
// /tmp; it runs as the numeric user 65532:65532 and holds no shell. The layout of each command,
// <out>/<command>, holds one image index with an image per platform, and names it
// <repository>/<command>:<version>. The same binaries, version and creation time make the same
// digests. See docs/development.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Annotations of the index in a layout's index.json that name the image: the OCI one (its tag)
// and containerd's (the whole reference), which `ctr images import` reads.
const (
	refNameAnnotation    = "org.opencontainers.image.ref.name"
	containerdAnnotation = "io.containerd.image.name"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var err error
	switch os.Args[1] {
	case "build":
		err = buildCommand(os.Args[2:])
	case "push":
		err = pushCommand(ctx, os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: go run ./hack/images build|push [flags] (see make images; -h for the flags)")
	os.Exit(2)
}

func buildCommand(args []string) error {
	fs := flag.NewFlagSet("build", flag.ExitOnError)
	binDir := fs.String("bin-dir", "_output/bin", "directory with the binaries, in <os>_<arch>/ subdirectories")
	out := fs.String("out", "_output/images", "directory to write an OCI image layout per command into; each is replaced")
	platformList := fs.String("platforms", "linux/amd64,linux/arm64", "platforms, os/arch, comma-separated")
	version := fs.String("version", "dev", "edge-mc's version: the images' tag and org.opencontainers.image.version")
	repository := fs.String("repository", "ghcr.io/kcp-dev/edge-mc", "repository the layouts name the images in: <repository>/<command>:<version>")
	caBundle := fs.String("ca-bundle", "/etc/ssl/certs/ca-certificates.crt", "PEM bundle of certificate authorities to include (Debian's ca-certificates); empty for none")
	created := fs.Int64("created", 0, "creation time of the images and their files, in Unix seconds (make passes the last commit's); 0 is 1970")
	_ = fs.Parse(args)

	platforms, err := parsePlatforms(*platformList)
	if err != nil {
		return fmt.Errorf("--platforms: %w", err)
	}
	if err := checkTag(*repository, *version); err != nil {
		return err
	}
	var bundle []byte
	if *caBundle != "" {
		if bundle, err = os.ReadFile(*caBundle); err != nil {
			return fmt.Errorf("--ca-bundle: %w (on Debian: apt-get install ca-certificates; or --ca-bundle= for images without one)", err)
		}
	}
	when := time.Unix(*created, 0).UTC()
	for _, c := range Commands {
		start := time.Now()
		idx, err := buildIndex(c, platforms, *binDir, bundle, *version, when)
		if err != nil {
			return err
		}
		dir := filepath.Join(*out, c.Name)
		if err := writeLayout(dir, idx, *repository+"/"+c.Name, *version); err != nil {
			return fmt.Errorf("writing the layout of %s into %s: %w", c.Name, dir, err)
		}
		digest, err := idx.Digest()
		if err != nil {
			return err
		}
		fmt.Printf("%s: %s/%s:%s@%s (%s) in %s\n", dir, *repository, c.Name, *version, digest, describeSizes(idx), time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// writeLayout replaces dir with an OCI image layout holding idx, named ref:tag.
func writeLayout(dir string, idx v1.ImageIndex, ref, tag string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	return p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		refNameAnnotation:    tag,
		containerdAnnotation: ref + ":" + tag,
	}))
}

// describeSizes says how large each platform's image is, compressed, as a registry stores it.
func describeSizes(idx v1.ImageIndex) string {
	m, err := idx.IndexManifest()
	if err != nil {
		return err.Error()
	}
	s := ""
	for _, d := range m.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			return err.Error()
		}
		size, err := compressedSize(img)
		if err != nil {
			return err.Error()
		}
		if s != "" {
			s += ", "
		}
		s += fmt.Sprintf("%s %.1f MB", d.Platform.String(), float64(size)/1e6)
	}
	return s
}

// compressedSize is the size of an image's manifest, config and layers as a registry stores them.
func compressedSize(img v1.Image) (int64, error) {
	total, err := img.Size() // the manifest's
	if err != nil {
		return 0, err
	}
	m, err := img.Manifest()
	if err != nil {
		return 0, err
	}
	total += m.Config.Size
	for _, l := range m.Layers {
		total += l.Size
	}
	return total, nil
}

func pushCommand(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("push", flag.ExitOnError)
	dir := fs.String("dir", "_output/images", "directory with the layouts that build wrote")
	registry := fs.String("registry", "", "where to push: <registry>/<command>:<version>, e.g. ghcr.io/kcp-dev/edge-mc or localhost:5000")
	version := fs.String("version", "dev", "the tag to push")
	_ = fs.Parse(args)
	if *registry == "" {
		return errors.New("--registry is required: make images PUSH=<registry>, e.g. PUSH=ghcr.io/<you>/edge-mc")
	}
	for _, c := range Commands {
		ref, err := name.NewTag(*registry + "/" + c.Name + ":" + *version)
		if err != nil {
			return fmt.Errorf("PUSH=%s: %s/%s:%s is not an image reference: %w", *registry, *registry, c.Name, *version, err)
		}
		idx, err := readLayout(filepath.Join(*dir, c.Name))
		if err != nil {
			return err
		}
		if err := remote.WriteIndex(ref, idx, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
			return fmt.Errorf("pushing %s: %w", ref, err)
		}
		digest, err := idx.Digest()
		if err != nil {
			return err
		}
		fmt.Printf("pushed %s@%s\n", ref, digest)
	}
	return nil
}

// readLayout returns the one image index of the layout in dir.
func readLayout(dir string) (v1.ImageIndex, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("%s is not an OCI image layout (run make images first): %w", dir, err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		return nil, fmt.Errorf("reading the layout %s: %w", dir, err)
	}
	m, err := top.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("reading the layout %s: %w", dir, err)
	}
	if len(m.Manifests) != 1 {
		return nil, fmt.Errorf("the layout %s holds %d entries, want the one image index that make images writes", dir, len(m.Manifests))
	}
	return top.ImageIndex(m.Manifests[0].Digest)
}

// checkTag checks that <repository>/<command>:<version> is an image reference for every command.
func checkTag(repository, version string) error {
	for _, c := range Commands {
		if _, err := name.NewTag(repository + "/" + c.Name + ":" + version); err != nil {
			return fmt.Errorf("%s/%s:%s is not an image reference (a version must be a tag: letters, digits, '_', '.' and '-', at most 128): %w",
				repository, c.Name, version, err)
		}
	}
	return nil
}
