package translator

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/test/framework"
)

var (
	deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	customizersGVR = edgev1alpha1.SchemeGroupVersion.WithResource("customizers")
)

// edgeDiff runs `kubectl edge diff -f <manifest> --wmw <wmw-a>` and returns its output and exit
// status.
func (f *fleet) edgeDiff(t *testing.T, manifest string) (framework.Result, int) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "change.yaml")
	if err := os.WriteFile(file, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	r := framework.KubectlEdge(t, "diff", "-f", file, "--wmw", f.wmwA.String())
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(r.Err, &exit):
		code = exit.ExitCode()
	case r.Err != nil:
		t.Fatalf("kubectl edge diff did not run: %v", r.Err)
	}
	return r, code
}

// testDiff checks kubectl edge diff against the fleet of TestProjection, whose placement app
// delivers the Deployment web, customised by the Customizer web with the destination's region,
// to two east and two west destinations: an edit and a new Customizer are shown per destination,
// grouped where the change is the same, and nothing is applied; exit statuses as kubectl diff's.
func testDiff(t *testing.T, f *fleet) {
	deployment := func(replicas, customizer string) string {
		return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: app
  annotations: {edge.kcp.io/customizer: ` + customizer + `}
spec:
  replicas: ` + replicas + `
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
`
	}
	wmw := framework.KCP(t).DynamicClient(t, f.wmwA)
	generation := framework.GetObject(t, wmw, deploymentsGVR, "app", "web").GetGeneration()

	// An edited Deployment: the same change at all four destinations, shown once.
	r, code := f.edgeDiff(t, deployment("3", "web"))
	if code != 1 {
		t.Errorf("kubectl edge diff of an edit exited %d, want 1 (changes)", code)
	}
	for _, want := range []string{"EdgePlacement app: 4 of 4 destinations change", "== 4 destination(s): ", "changed deployments.apps/app/web",
		"--- deployments.apps/app/web (now)", "-  replicas: 2", "+  replicas: 3"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("kubectl edge diff of an edit does not show %q", want)
		}
	}

	// A new Customizer, named by the Deployment: a change per region, each at two destinations.
	r, code = f.edgeDiff(t, `apiVersion: edge.kcp.io/v1alpha1
kind: Customizer
metadata: {name: web-httpd, namespace: app}
replacements:
- path: $.spec.template.spec.containers[0].image
  value: "httpd:%(region)"
---
`+deployment("2", "web-httpd"))
	if code != 1 {
		t.Errorf("kubectl edge diff of a new Customizer exited %d, want 1 (changes)", code)
	}
	if n := strings.Count(r.Stdout, "== 2 destination(s): "); n != 2 {
		t.Errorf("kubectl edge diff of a new Customizer shows %d groups of 2 destinations, want 2 (east and west)", n)
	}
	for _, region := range []string{"east", "west"} {
		for _, want := range []string{"-      - image: nginx:" + region, "+      - image: httpd:" + region} {
			if !strings.Contains(r.Stdout, want) {
				t.Errorf("kubectl edge diff of a new Customizer does not show %q", want)
			}
		}
	}

	// Nothing was applied.
	if got := framework.GetObject(t, wmw, deploymentsGVR, "app", "web"); got.GetGeneration() != generation ||
		got.GetAnnotations()["edge.kcp.io/customizer"] != "web" {
		t.Errorf("kubectl edge diff changed the Deployment: generation %d (was %d), annotations %v", got.GetGeneration(), generation, got.GetAnnotations())
	}
	if framework.GetObject(t, wmw, customizersGVR, "app", "web-httpd") != nil {
		t.Error("kubectl edge diff created the Customizer web-httpd")
	}

	// No change: exit 0. A kind the workspace does not serve: exit 2, with the reason.
	r, code = f.edgeDiff(t, deployment("2", "web"))
	if code != 0 || !strings.Contains(r.Stdout, "EdgePlacement app: 0 of 4 destinations change") {
		t.Errorf("kubectl edge diff of what is there exited %d, want 0, and printed:\n%s", code, r.Stdout)
	}
	r, code = f.edgeDiff(t, "apiVersion: apps/v1\nkind: Deploymnt\nmetadata: {name: web, namespace: app}\n")
	if code != 2 || !strings.Contains(r.Stderr, "Deploymnt web: workspace "+f.wmwA.String()+" does not serve this kind") {
		t.Errorf("kubectl edge diff of an unknown kind exited %d, want 2, and said:\n%s", code, r.Stderr)
	}
}
