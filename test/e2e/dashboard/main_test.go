// Package dashboard tests kubectl edge dashboard in a real browser: the kubectl-edge binary of
// this tree serves the pages with the admin's kubeconfig, against a real kcp and edge-controller-
// manager, three logical-cluster edges and real edge-syncers, and headless Chromium (Debian's
// chromium package, which .ci/run installs) loads them, runs their script and follows the live
// updates, as a user's browser would.
//
// The browser is driven with github.com/chromedp/chromedp: pure Go, it starts Chromium and
// speaks the DevTools protocol to it over a pipe, so the test needs no node, Selenium or
// WebDriver, and runs with go test like every other.
//
// Screenshots of each page go to the directory that EDGE_DASHBOARD_SCREENSHOTS names (make
// screenshots sets docs/images, where the docs show them), or else to the test's temporary
// directory. The package has a kcp of its own because its last step kills it, and it knows one
// user beside the admin, with no rights, whose dashboard must show what they may see: nothing.
package dashboard

import (
	"os"
	"testing"

	"github.com/kcp-dev/edge-mc/test/framework"
)

// mallory is a user of the package's kcp with no rights in the test's workspaces.
const mallory = "mallory"

func TestMain(m *testing.M) {
	os.Exit(framework.RunWithKCP(m, framework.WithUsers(framework.User{Name: mallory})))
}
