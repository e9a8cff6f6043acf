// Package ship tests what edge-mc ships, as an operator receives it: `make release` (which runs
// `make images`) into a directory of the test's own, then
//   - the images: their config (entrypoint, user, platform), their content (a static binary, the
//     CA bundle, no shell), pushed with `make images PUSH=` to a registry on loopback and pulled
//     back, and the binary taken out of the pulled layer run with --help and --version;
//   - the release: its checksums (sha256sum -c), the binaries of every archive, kubectl edge
//     installed by krew from the release's krew manifest and archive, offline;
//   - the manifests: config/deploy with a Secret and an image tag, as an operator's overlay sets
//     them, applied to a real Kubernetes cluster of the harness, every object accepted and the
//     Deployment's pods admitted under the restricted Pod Security level. kwok, which stands in for
//     the kubelet, runs no container: it reports the pods Running and Ready. So the test also runs
//     the image's edge-controller-manager binary as a process, with the Deployment's arguments and
//     the Secret's kubeconfig, against the harness's kcp, and asks its probes what the kubelet
//     would.
package ship

import (
	"os"
	"testing"

	"github.com/kcp-dev/edge-mc/test/framework"
)

func TestMain(m *testing.M) {
	code := framework.RunWithKCP(m)
	removeRelease()
	os.Exit(code)
}
