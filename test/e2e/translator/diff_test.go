package translator

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
	return exitStatus(t, framework.KubectlEdge(t, "diff", "-f", file, "--wmw", f.wmwA.String()))
}

// edgeDiffPlacement runs `kubectl edge diff <placement> --wmw <wmw-a>`.
func (f *fleet) edgeDiffPlacement(t *testing.T, placement string) (framework.Result, int) {
	t.Helper()
	return exitStatus(t, framework.KubectlEdge(t, "diff", placement, "--wmw", f.wmwA.String()))
}

func exitStatus(t *testing.T, r framework.Result) (framework.Result, int) {
	t.Helper()
	var exit *exec.ExitError
	switch {
	case errors.As(r.Err, &exit):
		return r, exit.ExitCode()
	case r.Err != nil:
		t.Fatalf("kubectl edge diff did not run: %v", r.Err)
	}
	return r, 0
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

	// What the mailboxes hold is what the workspace holds, computed by the CLI with the
	// translator's code: byte for byte, no change.
	r, code := f.edgeDiffPlacement(t, "app")
	if code != 0 || !strings.Contains(r.Stdout, "EdgePlacement app: 0 of 4 destinations change") {
		t.Errorf("kubectl edge diff app, with every destination up to date, exited %d, want 0, and printed:\n%s", code, r.Stdout)
	}

	// An edited Deployment: the same change at all four destinations, shown once.
	r, code = f.edgeDiff(t, deployment("3", "web"))
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

	// A paused rollout holds an edit back: diff of the placement shows what each destination
	// still waits for; resumed, the edit arrives, and there is nothing left to show.
	f.kubectl(t, f.wmwA, "patch", "edgeplacement", "app", "--type=merge", "-p", `{"spec":{"rollout":{"paused":true}}}`)
	framework.Eventually(t, framework.Converge, func() (bool, string) {
		// The translator has seen the pause once its Projected condition observes the generation.
		u := framework.GetObject(t, wmw, placementsGVR, "", "app")
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			if m, _ := c.(map[string]any); m["type"] == edgev1alpha1.PlacementProjected {
				observed, _, _ := unstructured.NestedInt64(m, "observedGeneration")
				return observed == u.GetGeneration(), fmt.Sprintf("Projected observes generation %d, not %d", observed, u.GetGeneration())
			}
		}
		return false, "no Projected condition"
	})
	f.kubectl(t, f.wmwA, "patch", "configmap", "settings", "-n", "app", "--type=merge", "-p", `{"data":{"held":"back"}}`)
	framework.Eventually(t, framework.Converge, func() (bool, string) {
		r, code = f.edgeDiffPlacement(t, "app")
		return code == 1 && strings.Contains(r.Stdout, "EdgePlacement app: 4 of 4 destinations change") && strings.Contains(r.Stdout, "+  held: back"),
			fmt.Sprintf("kubectl edge diff app of a paused rollout exited %d and printed:\n%s", code, r.Stdout)
	})
	f.kubectl(t, f.wmwA, "patch", "edgeplacement", "app", "--type=merge", "-p", `{"spec":{"rollout":{"paused":false}}}`)
	f.expectEverywhere(t, "the edit held back, once resumed", func(_, _ string, _ []string, objs map[string]*unstructured.Unstructured) string {
		if got := field(objs, "configmaps/app/settings", "data", "held"); got != "back" {
			return "held is " + got
		}
		return ""
	})
	if r, code = f.edgeDiffPlacement(t, "app"); code != 0 {
		t.Errorf("kubectl edge diff app after the rollout exited %d, want 0, and printed:\n%s", code, r.Stdout)
	}
}
