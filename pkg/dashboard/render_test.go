package dashboard

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/fleetview"
)

func testServer(t *testing.T, now time.Time) *Server {
	t.Helper()
	s, err := New(Config{Base: &rest.Config{Host: "https://127.0.0.1:1"}, WorkloadWorkspaces: []logicalcluster.Path{logicalcluster.NewPath("root:wmw")}, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func get(t *testing.T, s *Server, page, title, target string, read func(context.Context) (any, []error, error)) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	s.render(rec, httptest.NewRequest(http.MethodGet, target, nil), page, title, read)
	return rec.Code, rec.Body.String()
}

func samplePlacement() *edgev1alpha1.EdgePlacement {
	p := &edgev1alpha1.EdgePlacement{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	p.Status.MatchingSyncTargetCount = 3
	p.Status.Summary = &edgev1alpha1.DestinationCounts{Ready: 1, Applied: 1, Failed: 1}
	p.Status.Broken = []edgev1alpha1.BrokenEntry{{Destination: "root:imw:edge-2", Object: "deployments.apps/app/web", Reason: "ImagePullBackOff"}}
	p.Status.BrokenCount = 1
	p.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: "DestinationsFailing", Message: "1 of 3 failed"}}
	return p
}

// Every page renders, with each state written as text, and the tables with their headers'
// scope; a page that cannot be read shows the error and when it was last current, not its data.
var fixedNow = time.Date(2026, 11, 29, 4, 0, 0, 0, time.UTC)

func TestPagesRender(t *testing.T) {
	now := fixedNow
	s := testServer(t, now)
	row := newPlacementRow("root:wmw", samplePlacement())
	f := &fleet{Workspaces: []workloadWorkspace{{Path: "root:wmw", Placements: []placementRow{row}}}, Broken: []placementRow{row},
		StaleEdges: []edgeRow{{Inventory: "root:imw", Name: "edge-3", SyncerReady: "Unknown", Reason: "HeartbeatStale", Message: "silent for 2m"}}, StaleCount: 1, EdgeCount: 3}
	code, body := get(t, s, "fleet", "Fleet", "/", func(context.Context) (any, []error, error) { return f, nil, nil })
	for _, want := range []string{`<th scope="row"><a href="/placement/root:wmw/web">web</a></th>`, "1 ready", "1 applied", "1 failed", "Failing", "edge-3", "HeartbeatStale", "not ready: 1 of 3</caption>", "ImagePullBackOff", `<nav aria-label="Dashboard">`, "Read from kcp at 04:00:00 UTC"} {
		if !strings.Contains(body, want) {
			t.Errorf("fleet page (%d) lacks %q:\n%s", code, want, body)
		}
	}
	if strings.Contains(body, "<th>") {
		t.Errorf("a table header without scope on the fleet page")
	}

	dests := parseDestinationQuery(nil).apply([]destination{{Inventory: "root:imw", SyncTarget: "edge-1", Location: "east", State: "Ready", Version: "abcdef0123456789"}, {Inventory: "root:imw", SyncTarget: "edge-2", State: "Failed", Reason: "ImagePullBackOff"}})
	pp := &placementPage{Row: row, Placement: samplePlacement(), Destinations: dests}
	_, body = get(t, s, "placement", "Placement web", "/placement/root:wmw/web?fragment=1", func(context.Context) (any, []error, error) { return pp, nil, nil })
	if strings.Contains(body, "<html") {
		t.Error("?fragment=1 returned the whole page")
	}
	for _, want := range []string{"DestinationsFailing", "1 of 3 failed", `<label for="f-state">`, "Destinations 1–2 of 2", `<a href="/edge/root:imw/edge-1">edge-1</a>`, "abcdef012345", ">Failed</span>"} {
		if !strings.Contains(body, want) {
			t.Errorf("placement fragment lacks %q:\n%s", want, body)
		}
	}

	st := &edgev1alpha1.SyncTarget{ObjectMeta: metav1.ObjectMeta{Name: "edge-1", Labels: map[string]string{"region": "east"}}}
	st.Status.SyncerVersion, st.Status.MailboxWorkspace = "v0.9.0", "root:espw:x-mb-1"
	beat := metav1.NewMicroTime(now.Add(-5 * time.Second))
	ep := &edgePage{Inventory: "root:imw", SyncTarget: st, Row: edgeRow{SyncerReady: "True", Reason: "HeartbeatCurrent"}, Labels: labelPairs(st.Labels), Heartbeat: &beat,
		Assemblages: []fleetview.Assemblage{{Workspace: "2x8k", Placement: "web", Version: "v1", State: "Ready", Objects: []fleetview.Object{{Object: "configmaps/app/settings", State: "Ready"}}}}}
	_, body = get(t, s, "edge", "Edge cluster edge-1", "/edge/root:imw/edge-1", func(context.Context) (any, []error, error) { return ep, nil, nil })
	for _, want := range []string{"v0.9.0", "region", "east", "5s ago", "configmaps/app/settings", "root:espw:x-mb-1"} {
		if !strings.Contains(body, want) {
			t.Errorf("edge page lacks %q", want)
		}
	}

	// kcp goes away: the fleet page, read at 04:00, is read again at 04:01 and fails.
	s.now = func() time.Time { return now.Add(time.Minute) }
	code, body = get(t, s, "fleet", "Fleet", "/?fragment=1", func(context.Context) (any, []error, error) {
		return nil, nil, errors.New("cannot reach kcp reading EdgePlacements in root:wmw: connection refused")
	})
	if code != http.StatusServiceUnavailable {
		t.Errorf("status %d, want 503", code)
	}
	for _, want := range []string{"connection refused", "last current at <strong><time datetime=\"2026-11-29T04:00:00Z\">04:00:00 UTC</time></strong> (1m0s ago)", "data-error"} {
		if !strings.Contains(body, want) {
			t.Errorf("error fragment lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "edge-3") || strings.Contains(body, "1 ready") {
		t.Errorf("the error page shows old data:\n%s", body)
	}
}

// The placement's collected status: each collector of spec.statusCollectors as a table with its
// columns, the rows' values as kubectl edge status --collect shows them, how many destinations
// reported, the run-time errors with their example, and a collector that yields nothing or has
// no results yet said in words.
func TestCollectedRenders(t *testing.T) {
	s := testServer(t, fixedNow)
	p := samplePlacement()
	p.Spec.StatusCollectors = []string{"available", "images", "missing", "later"}
	p.Status.Collected = []edgev1alpha1.CollectedStatus{
		{Name: "available", Columns: []string{"available", "deployments"}, Rows: []edgev1alpha1.CollectedRow{{Values: []apiextensionsv1.JSON{{Raw: []byte("6")}, {Raw: []byte("3")}}}}, RowCount: 1, Destinations: 3, Matched: 3},
		{Name: "images", Columns: []string{"image", "deployments"}, Rows: []edgev1alpha1.CollectedRow{{Values: []apiextensionsv1.JSON{{Raw: []byte(`"nginx:1"`)}, {Raw: []byte("2")}}}, {Values: []apiextensionsv1.JSON{{Raw: []byte("null")}, {Raw: []byte("1")}}}},
			RowCount: 3, Omitted: 1, Destinations: 2, Matched: 3, Errors: 2, ErrorExample: &edgev1alpha1.CollectorError{Destination: "root:imw:edge-2", Object: "deployments.apps/app/web", Error: "select[image]: no such key: containers"}},
		{Name: "missing", Problem: `there is no StatusCollector "missing" in this workspace`},
	}
	pp := &placementPage{Row: newPlacementRow("root:wmw", p), Placement: p, Destinations: parseDestinationQuery(nil).apply(nil), Collected: collectedViews(p)}
	_, body := get(t, s, "placement", "Placement web", "/placement/root:wmw/web?fragment=1", func(context.Context) (any, []error, error) { return pp, nil, nil })
	for _, want := range []string{
		`<h2 id="collected">Collected status</h2>`,
		`<div class="collector" data-collector="available">`,
		`<caption>1 of 1 row; 3 destinations reported, 3 objects matched</caption>`,
		`<thead><tr><th scope="col">available</th><th scope="col">deployments</th></tr></thead>`,
		`<tr><th scope="row">6</th><td>3</td></tr>`,
		`<caption>2 of 3 rows; 2 destinations reported, 3 objects matched; 1 left out at the edges`,
		`<tr><th scope="row">nginx:1</th><td>2</td></tr>`,
		`<tr><th scope="row">&lt;none&gt;</th><td>1</td></tr>`,
		`<strong>2 errors at run time</strong>; for example at root:imw:edge-2, deployments.apps/app/web: select[image]: no such key: containers`,
		`<strong>Yields nothing:</strong> there is no StatusCollector &#34;missing&#34; in this workspace`,
		`<div class="collector" data-collector="later">`,
		`No results yet`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("placement fragment lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "<th>") {
		t.Errorf("a table header without scope on the placement page")
	}

	// No collectors: no section.
	pp.Placement, pp.Collected = samplePlacement(), collectedViews(samplePlacement())
	_, body = get(t, s, "placement", "Placement web", "/placement/root:wmw/web?fragment=1", func(context.Context) (any, []error, error) { return pp, nil, nil })
	if strings.Contains(body, "Collected status") {
		t.Errorf("a placement without collectors shows a collected status section:\n%s", body)
	}
}
