package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/test/framework"
)

// ScreenshotsEnv names the directory that the test saves its screenshots into (default: the
// test's temporary directory).
const ScreenshotsEnv = "EDGE_DASHBOARD_SCREENSHOTS"

// liveBound is how soon after kcp has a change the open page must show it.
const liveBound = 2 * time.Second

var (
	deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	placements  = edgev1alpha1.SchemeGroupVersion.WithResource("edgeplacements")
)

const workload = `apiVersion: v1
kind: Namespace
metadata: {name: app}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: app}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: app}
data: {mode: edge}
---
apiVersion: v1
kind: Namespace
metadata: {name: local}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: greeting, namespace: local}
data: {text: hello}
---
apiVersion: edge.kcp.io/v1alpha1
kind: StatusCollector
metadata: {name: kinds}
spec:
  groupBy: [{name: kind, expression: object.kind}]
  combine: [{name: objects, type: count}]
---
apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: app}
spec:
  locationSelectors: [{matchExpressions: [{key: region, operator: In, values: [east, west, north]}]}]
  downsync: [{namespaces: [app]}]
  statusCollectors: [kinds]
---
apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: east-only}
spec:
  locationSelectors: [{matchLabels: {region: east}}]
  downsync: [{namespaces: [local]}]
`

const westPlacement = `apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: west-only}
spec:
  locationSelectors: [{matchLabels: {region: west}}]
  downsync: [{namespaces: [local]}]
`

// chromium finds Debian's Chromium; the test fails, not skips, without it: CI installs it.
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	t.Fatal("the dashboard is tested in headless Chromium, and there is none on the PATH: install Debian's package with `apt-get install chromium` (.ci/run does)")
	return ""
}

// TestDashboard serves the dashboard of a fleet of three edges with real syncers, and checks in
// headless Chromium, as a user would read them: the fleet page's placements and counts, a new
// placement and a change of state showing within 2 s, a placement's destinations and the status
// its StatusCollector collected, an edge's objects; a user whom kcp forbids the workspace, and
// one whose token it refuses, each get the error and none of the data; and, kcp killed, the
// error in place of the data. It saves a screenshot of each page.
func TestDashboard(t *testing.T) {
	browserPath := chromium(t)
	shots := os.Getenv(ScreenshotsEnv)
	if shots == "" {
		shots = t.TempDir()
	}
	regions := map[string]string{"edge-east": "east", "edge-west": "west", "edge-north": "north"}
	made := framework.StartLogicalPClusters(t, "edge-east", "edge-west", "edge-north")
	f := framework.NewFleet(t, regions)
	edges := map[string]dynamic.Interface{}
	for name, p := range made() {
		framework.StartSyncer(t, f.ESPW, f.IMW, name, p)
		edges[name] = p.DynamicClient(t)
	}
	kcp := framework.KCP(t)
	wmw := kcp.DynamicClient(t, f.WMW)
	f.Apply(t, f.WMW, workload)
	framework.EventuallyObject(t, "app applied at three destinations", wmw, placements, "", "app", summaryIs(edgev1alpha1.DestinationCounts{Applied: 3}))
	framework.EventuallyObject(t, "east-only ready at one", wmw, placements, "", "east-only", summaryIs(edgev1alpha1.DestinationCounts{Ready: 1}))

	ports, err := framework.FreePorts(3)
	if err != nil {
		t.Fatal(err)
	}
	// The admin's dashboard, mallory's (no rights in the workspace), and mallory's with a token
	// that kcp does not know, as an expired one.
	base := startDashboard(t, ports[0], "--kubeconfig", kcp.KubeconfigPath, "--server", kcp.ServerURL(f.WMW))
	forbidden := startDashboard(t, ports[1], "--kubeconfig", kcp.UserKubeconfig(t, mallory, f.WMW))
	unauthorized := startDashboard(t, ports[2], "--kubeconfig", kcp.UserKubeconfig(t, mallory, f.WMW), "--token", "an-expired-token")

	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browserPath), chromedp.NoSandbox, chromedp.WindowSize(1280, 900))...)
	defer cancelAlloc()
	browser, cancelBrowser := chromedp.NewContext(alloc)
	defer cancelBrowser()
	// The first action on the tab's context starts Chromium, which lives as long as that
	// context: not one of the steps' contexts with a timeout.
	if err := chromedp.Do(browser); err != nil {
		t.Fatalf("starting %s: %v", browserPath, err)
	}
	b := &page{t: t, ctx: browser, shots: shots}
	var edgePage string

	t.Run("fleet page lists the placements with their counts", func(t *testing.T) {
		b.t = t
		b.do(chromedp.Navigate(base + "/"))
		b.eventuallyText(`table.placements tr[data-placement="app"] .counts`, 10*time.Second, "0 ready, 3 applied, 0 pending, 0 failed, 0 stale")
		b.eventuallyText(`table.placements tr[data-placement="app"] .n-destinations`, time.Second, "3")
		b.eventuallyText(`table.placements tr[data-placement="east-only"] .counts`, time.Second, "1 ready, 0 applied, 0 pending, 0 failed, 0 stale")
		b.eventuallyText(`table.placements tr[data-placement="east-only"] .n-destinations`, time.Second, "1")
		// The keyboard reaches the page: the first Tab lands on the link that skips to the content.
		b.do(chromedp.KeyEvent("\t"))
		if got := b.eval(`document.activeElement.textContent`); got != "Skip to the content" {
			t.Errorf("the first Tab focuses %q, not the skip link", got)
		}
	})

	t.Run("an edit shows within 2 s", func(t *testing.T) {
		b.t = t
		// A new placement: a write to kcp that the page's watch sees at once. A keyboard user
		// on a link of the table keeps their place when the page updates.
		b.eval(`document.querySelector('table.placements tr[data-placement="app"] th a').focus(), ""`)
		framework.KubectlApply(t, kcp.ServerURL(f.WMW), westPlacement).MustSucceed(t)
		applied := time.Now()
		b.eventuallyText(`table.placements tr[data-placement="west-only"] th`, liveBound, "west-only")
		t.Logf("the new placement showed %s after kubectl apply returned", time.Since(applied).Round(10*time.Millisecond))
		if got := b.eval(`document.activeElement.getAttribute("href") || document.activeElement.tagName`); !strings.HasSuffix(got, "/app") {
			t.Errorf("after the update the focus is on %q, not on the link to placement app it was on", got)
		}

		// States change at the edges: the page follows within 2 s of the placement's status
		// in kcp saying so (what comes before, the syncers and the summarizer, is theirs).
		setEdgeStatus(t, edges["edge-east"], true)
		setEdgeStatus(t, edges["edge-north"], true)
		setEdgeStatus(t, edges["edge-west"], false)
		framework.Eventually(t, framework.Converge, func() (bool, string) {
			why := summaryIs(edgev1alpha1.DestinationCounts{Ready: 2, Failed: 1})(framework.GetObject(t, wmw, placements, "", "app"))
			return why == "", "app's summary: " + why
		})
		inKCP := time.Now()
		b.eventuallyText(`table.placements tr[data-placement="app"] .counts`, liveBound, "2 ready, 0 applied, 0 pending, 1 failed, 0 stale")
		t.Logf("the new counts showed %s after kcp had them", time.Since(inKCP).Round(10*time.Millisecond))
		b.eventuallyText(`table#broken`, liveBound, "deployments.apps/app/web")
		b.screenshot("dashboard-fleet.png")
	})

	t.Run("placement page lists the destinations", func(t *testing.T) {
		b.t = t
		b.do(chromedp.Click(chromedp.CSS(`table.placements tr[data-placement="app"] th a`)), chromedp.WaitVisible(chromedp.CSS(`#destination-table`)))
		b.eventuallyText(`#destination-table caption`, 5*time.Second, "Destinations 1–3 of 3")
		b.eventuallyText(`#destination-table tr[data-destination="edge-west"]`, time.Second, "Failed")
		b.eventuallyText(`#destination-table tr[data-destination="edge-east"]`, time.Second, "Ready")
		// The collected status: StatusCollector kinds counts the placement's objects by kind
		// at the edges, one ConfigMap at each of the three.
		b.eventuallyText(`div.collector[data-collector="kinds"] table.collected caption`, 10*time.Second, "3 of 3 rows; 3 destinations reported, 9 objects matched")
		want := "kind | objects\nConfigMap | 3\nDeployment | 3\nNamespace | 3"
		if got := b.eval(`Array.from(document.querySelectorAll('div.collector[data-collector="kinds"] table.collected tr')).map(r => Array.from(r.cells).map(c => c.textContent.trim()).join(" | ")).join("\n")`); got != want {
			t.Errorf("the collected status of StatusCollector kinds reads\n%s\nwant\n%s", got, want)
		}
		b.screenshot("dashboard-placement.png")
		// Filtered by the server, from the form's query: the page works without the script.
		b.do(chromedp.Navigate(b.url() + "?state=Failed"))
		b.eventuallyText(`#destination-table caption`, 5*time.Second, "Destinations 1–1 of 1 matching (3 in all)")
	})

	t.Run("edge page lists the objects", func(t *testing.T) {
		b.t = t
		b.do(chromedp.Click(chromedp.CSS(`#destination-table tr[data-destination="edge-west"] th a`)), chromedp.WaitVisible(chromedp.CSS(`#assemblage-table`)))
		for _, object := range []string{"namespaces/app", "deployments.apps/app/web", "configmaps/app/settings"} {
			b.eventuallyText(fmt.Sprintf(`table.objects[data-placement="app"] tr[data-object=%q]`, object), 5*time.Second, object)
		}
		b.eventuallyText(`table.objects[data-placement="app"] tr[data-object="deployments.apps/app/web"]`, time.Second, "Failed")
		b.eventuallyText(`table.objects[data-placement="west-only"] tr[data-object="configmaps/local/greeting"]`, 10*time.Second, "Ready")
		b.eventuallyText(`#heartbeat`, time.Second, "renewed")
		b.eventuallyText(`#syncer-ready`, time.Second, "True")
		b.screenshot("dashboard-edge.png")
		edgePage = b.url()
	})

	t.Run("credentials forbidden or refused, the page says so", func(t *testing.T) {
		b.t = t
		b.do(chromedp.Navigate(forbidden + "/"))
		b.eventuallyText(`[data-error]`, 5*time.Second, "may not read EdgePlacements in workspace "+f.WMW.String()+" (403 Forbidden)")
		if main := b.text("main"); strings.Contains(main, "east-only") {
			t.Errorf("mallory's dashboard shows a placement mallory may not read:\n%s", main)
		}
		b.do(chromedp.Navigate(unauthorized + "/"))
		b.eventuallyText(`[data-error]`, 5*time.Second, "kcp refused your credentials reading EdgePlacements in "+f.WMW.String()+" (401 Unauthorized)")
		// Back to the admin's edge page, for the last step.
		b.do(chromedp.Navigate(edgePage), chromedp.WaitVisible(chromedp.CSS(`#assemblage-table`)))
	})

	t.Run("kcp stopped, the page says so", func(t *testing.T) {
		b.t = t
		kcp.Kill()
		b.eventuallyText(`[data-error]`, 20*time.Second, "cannot reach kcp")
		text := b.text(`[data-error]`)
		if !strings.Contains(text, "last current at") {
			t.Errorf("the error banner does not say when the page was last current:\n%s", text)
		}
		if got := b.text(`#assemblage-table`); got != "" {
			t.Errorf("the page still shows the assemblages with kcp down:\n%s", got)
		}
		b.screenshot("dashboard-error.png")
	})
}

// startDashboard runs kubectl edge dashboard on port with args, and returns its URL once it
// answers.
func startDashboard(t *testing.T, port int, args ...string) string {
	t.Helper()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	framework.StartProcess(t, "kubectl-edge", append([]string{"dashboard", "--port", strconv.Itoa(port)}, args...)...)
	framework.Eventually(t, 30*time.Second, func() (bool, string) {
		resp, err := http.Get(base + "/static/style.css")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, "GET /static/style.css answered " + resp.Status
	})
	return base
}

// page is the browser's tab.
type page struct {
	t     *testing.T
	ctx   context.Context
	shots string
}

func (p *page) do(actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		p.t.Fatalf("in the browser: %v", err)
	}
}

func (p *page) url() string {
	p.t.Helper()
	u, err := chromedp.Run(p.ctx, chromedp.Evaluate[string](`location.origin + location.pathname`))
	if err != nil {
		p.t.Fatal(err)
	}
	return u
}

func (p *page) eval(js string) string {
	p.t.Helper()
	s, err := chromedp.Run(p.ctx, chromedp.Evaluate[string](js))
	if err != nil {
		p.t.Fatalf("evaluating %s in the browser: %v", js, err)
	}
	return s
}

// text is the text of the first element that sel (a CSS selector) matches, "" for none.
func (p *page) text(sel string) string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`(function(){ var e = document.querySelector(%q); return e ? e.textContent.replace(/\s+/g, " ").trim() : ""; })()`, sel)))
	if err != nil {
		p.t.Fatalf("reading %s in the browser: %v", sel, err)
	}
	return s
}

// eventuallyText waits, at most within, until the element sel shows want in its text.
func (p *page) eventuallyText(sel string, within time.Duration, want string) {
	p.t.Helper()
	deadline := time.Now().Add(within)
	for {
		got := p.text(sel)
		if strings.Contains(got, want) {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("after %s, %s shows %q, not %q; the page:\n%s", within, sel, got, want, p.text("main"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (p *page) screenshot(name string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(p.shots, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		p.t.Fatal(err)
	}
	p.t.Logf("saved %s (%d bytes)", path, len(png))
}

// summaryIs checks an EdgePlacement's destination counts.
func summaryIs(want edgev1alpha1.DestinationCounts) func(*unstructured.Unstructured) string {
	return func(u *unstructured.Unstructured) string {
		if u == nil {
			return "absent"
		}
		p := &edgev1alpha1.EdgePlacement{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
			return err.Error()
		}
		if p.Status.Summary == nil {
			return "no summary yet"
		}
		if *p.Status.Summary != want {
			return fmt.Sprintf("summary %+v, want %+v", *p.Status.Summary, want)
		}
		return ""
	}
}

// setEdgeStatus writes the status of the Deployment app/web at a logical-cluster edge, where no
// controller does, ready or failed (its rollout past its deadline).
func setEdgeStatus(t *testing.T, edge dynamic.Interface, ready bool) {
	t.Helper()
	framework.Eventually(t, framework.Converge, func() (bool, string) {
		dep := framework.GetObject(t, edge, deployments, "app", "web")
		if dep == nil {
			return false, "not at the edge yet"
		}
		status := map[string]any{"observedGeneration": dep.GetGeneration(), "replicas": int64(2), "updatedReplicas": int64(2),
			"readyReplicas": int64(2), "availableReplicas": int64(2),
			"conditions": []any{
				map[string]any{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable", "message": "ok"},
				map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "message": "ok"},
			}}
		if !ready {
			status = map[string]any{"observedGeneration": dep.GetGeneration(), "replicas": int64(2), "updatedReplicas": int64(2),
				"conditions": []any{
					map[string]any{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded", "message": "image pull back-off"},
					map[string]any{"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable", "message": "no pod ready"},
				}}
		}
		dep.Object["status"] = status
		_, err := edge.Resource(deployments).Namespace("app").UpdateStatus(framework.Context(t, 10*time.Second), dep, metav1.UpdateOptions{})
		if err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}
