package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// User is the numeric user and group that the images run as: non-root, and the one that the
// Deployments of prep-for-syncer and config/deploy ask for. No /etc/passwd names it; none is
// needed for a numeric user.
const User = "65532:65532"

// CABundlePath is where the images hold the certificate authorities, the first place Go's
// crypto/x509 looks on Linux.
const CABundlePath = "etc/ssl/certs/ca-certificates.crt"

// sourceURL is the images' org.opencontainers.image.source label.
const sourceURL = "https://github.com/kcp-dev/edge-mc"

// Command is one of edge-mc's commands that gets an image.
type Command struct {
	// Name is the command's name: that of its binary, its image and its entrypoint (/<Name>).
	Name string
	// Port is the port of its /healthz, /readyz and /metrics, as the image exposes it.
	Port string
	// Description is the image's org.opencontainers.image.description label.
	Description string
}

// Commands are the commands that get an image.
var Commands = []Command{
	{Name: "edge-syncer", Port: "8080/tcp", Description: "edge-mc's agent in an edge cluster: it applies what its mailbox workspace in kcp holds"},
	{Name: "edge-controller-manager", Port: "8090/tcp", Description: "edge-mc's center controllers, run against kcp"},
}

// file is a regular file or a directory of an image's one layer.
type file struct {
	name string // without a leading slash; a directory's ends with a slash
	mode int64
	data []byte
}

// layerFiles returns the files of the image of a command: its binary as /<name>, the CA bundle
// if there is one, and an empty /tmp that anyone may write to, with their parent directories.
// Everything belongs to root and only the binary is executable.
func layerFiles(name string, binary, caBundle []byte) []file {
	files := []file{
		{name: "tmp/", mode: 0o1777},
		{name: name, mode: 0o755, data: binary},
	}
	if caBundle != nil {
		files = append(files,
			file{name: "etc/", mode: 0o755},
			file{name: "etc/ssl/", mode: 0o755},
			file{name: "etc/ssl/certs/", mode: 0o755},
			file{name: CABundlePath, mode: 0o644, data: caBundle})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	return files
}

// layerTar writes files as an uncompressed tar, every entry with the time modTime, so that the
// same files make the same bytes.
func layerTar(files []file, modTime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, ModTime: modTime, Format: tar.FormatPAX}
		if strings.HasSuffix(f.name, "/") {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("tar header of %s: %w", f.name, err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, fmt.Errorf("tar data of %s: %w", f.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ImageSpec is what buildImage makes one image of.
type ImageSpec struct {
	Command  Command
	Platform v1.Platform
	// Binary is the command's static binary for Platform.
	Binary []byte
	// CABundle is the PEM bundle of certificate authorities to include; nil for none.
	CABundle []byte
	Version  string
	// Created is the image's creation time and the time of every file in it.
	Created time.Time
}

// buildImage makes the image of one command for one platform: an OCI image of one layer on no
// base image, whose entrypoint is the binary and whose user is User.
func buildImage(s ImageSpec) (v1.Image, error) {
	files := layerFiles(s.Command.Name, s.Binary, s.CABundle)
	raw, err := layerTar(files, s.Created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(raw)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("layer of %s: %w", s.Command.Name, err)
	}
	labels := map[string]string{
		"org.opencontainers.image.title":       s.Command.Name,
		"org.opencontainers.image.description": s.Command.Description,
		"org.opencontainers.image.version":     s.Version,
		"org.opencontainers.image.source":      sourceURL,
	}
	cfg := &v1.ConfigFile{
		Architecture: s.Platform.Architecture,
		OS:           s.Platform.OS,
		Variant:      s.Platform.Variant,
		Created:      v1.Time{Time: s.Created},
		Config: v1.Config{
			Entrypoint:   []string{"/" + s.Command.Name},
			User:         User,
			WorkingDir:   "/",
			ExposedPorts: map[string]struct{}{s.Command.Port: {}},
			Labels:       labels,
		},
		RootFS: v1.RootFS{Type: "layers"},
	}
	img, err := mutate.ConfigFile(mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON), cfg)
	if err != nil {
		return nil, err
	}
	return mutate.Append(img, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Created:   v1.Time{Time: s.Created},
			CreatedBy: fmt.Sprintf("hack/images: %s %s for %s, static, user %s", s.Command.Name, s.Version, s.Platform.String(), User),
			Comment:   "built by edge-mc's make images, without a container engine",
		},
	})
}

// buildIndex makes the multi-platform image of one command: an OCI image index with an image
// per platform, the binary of each read from binDir/<os>_<arch>/<name>.
func buildIndex(c Command, platforms []v1.Platform, binDir string, caBundle []byte, version string, created time.Time) (v1.ImageIndex, error) {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var adds []mutate.IndexAddendum
	for _, p := range platforms {
		binPath := path.Join(binDir, platformDir(p), c.Name)
		binary, err := os.ReadFile(binPath)
		if err != nil {
			return nil, fmt.Errorf("the %s binary of %s: %w (make images builds it first; run it, or go build it into %s)",
				p.String(), c.Name, err, path.Dir(binPath))
		}
		img, err := buildImage(ImageSpec{Command: c, Platform: p, Binary: binary, CABundle: caBundle, Version: version, Created: created})
		if err != nil {
			return nil, fmt.Errorf("image of %s for %s: %w", c.Name, p.String(), err)
		}
		platform := p
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &platform}})
	}
	return mutate.AppendManifests(idx, adds...), nil
}

// platformDir is the directory name of a platform's binaries: <os>_<arch>.
func platformDir(p v1.Platform) string { return p.OS + "_" + p.Architecture }

// parsePlatforms parses a comma- or space-separated list of os/arch platforms.
func parsePlatforms(s string) ([]v1.Platform, error) {
	var out []v1.Platform
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		p, err := v1.ParsePlatform(f)
		if err != nil {
			return nil, fmt.Errorf("platform %q: %w", f, err)
		}
		if p.OS == "" || p.Architecture == "" {
			return nil, fmt.Errorf("platform %q: want os/arch, such as linux/arm64", f)
		}
		out = append(out, *p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no platform in %q: want os/arch,..., such as linux/amd64,linux/arm64", s)
	}
	return out, nil
}
