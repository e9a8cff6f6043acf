// Package version holds edge-mc's version, which the build sets, and what each command's
// --version prints. make build and make release set it from `git describe --tags --always
// --dirty`:
//
//	go build -ldflags "-X github.com/kcp-dev/edge-mc/pkg/version.Version=v0.1.0" ./cmd/...
//
// A plain `go build` leaves it "dev".
package version

import (
	"fmt"
	"regexp"
	"runtime"
)

// Version is edge-mc's version: a release tag such as v0.1.0, `git describe` output between
// releases (v0.1.0-3-gabc1234, with -dirty for uncommitted changes), or "dev" when the build did
// not set it.
var Version = "dev"

// String is what a command's --version prints: its name, edge-mc's version, and the Go release
// and platform it was built for, e.g. "edge-syncer v0.1.0 (go1.26.8 linux/arm64)".
func String(program string) string {
	return fmt.Sprintf("%s %s (%s %s/%s)", program, Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// ImageRepo is the repository of edge-mc's images (<ImageRepo>/edge-syncer:<Version>): make's
// IMAGE_REPO, which the build sets.
var ImageRepo = "ghcr.io/kcp-dev/edge-mc"

// releaseTag is a release's version: vMAJOR.MINOR.PATCH, with a pre-release such as -rc.1, and
// none of what `git describe` adds between releases (-<commits>-g<hash>, -dirty).
var releaseTag = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-(alpha|beta|rc)(\.?[0-9]+)*)?$`)

// IsRelease says whether v (Version, by default) is a release's tag, for which images are published.
func IsRelease(v string) bool { return releaseTag.MatchString(v) }

// Image is the image of one of edge-mc's commands for version v, and whether there is one to
// pull: only a release's images are published.
func Image(command, v string) (string, bool) {
	if !IsRelease(v) {
		return "", false
	}
	return ImageRepo + "/" + command + ":" + v, true
}
