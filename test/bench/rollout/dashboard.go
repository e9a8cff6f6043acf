package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"sort"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/kcp-dev/edge-mc/pkg/dashboard"
	"github.com/kcp-dev/edge-mc/test/framework"
)

// dashboardRounds is how many times each page is loaded; the figures are the first load, the
// median and the slowest.
const dashboardRounds = 5

// extraGroups is how many groups -placements' extra placements split the destinations into:
// each extra placement goes to one group, a tenth of the destinations.
const extraGroups = 10

// extraPlacement names the i-th extra placement (from 1), of its namespace's ConfigMap.
func extraPlacement(i int) string { return fmt.Sprintf("extra-%03d", i) }

// extraPlacements creates the -placements extra placements, each of one ConfigMap in a namespace
// of its own, to the destinations of group g<i mod 10>, and waits until each is ready at all of
// them.
func (b *bench) extraPlacements(ctx context.Context) error {
	extra := b.cfg.Placements - 1
	if extra < 1 {
		return nil
	}
	start := time.Now()
	say("dashboard: %d more placements, each to a tenth of the %d destinations", extra, b.cfg.N)
	if err := framework.ForEach(extra, b.cfg.Parallel, func(j int) error {
		i := j + 1
		name := extraPlacement(i)
		if err := b.createSettings(ctx, name); err != nil {
			return err
		}
		return b.createPlacementOn(ctx, name, map[string]any{"group": fmt.Sprintf("g%d", i%extraGroups)}, nil)
	}); err != nil {
		return err
	}
	for i := 1; i <= extra; i++ {
		if _, err := b.waitAllReady(ctx, extraPlacement(i), start, groupSize(b.cfg.N, i%extraGroups)); err != nil {
			return err
		}
	}
	say("dashboard: the %d more placements ready everywhere after %.1fs", extra, time.Since(start).Seconds())
	return nil
}

// groupSize is the number of destinations i (0 <= i < n) with i mod extraGroups == g.
func groupSize(n, g int) int {
	return n/extraGroups + btoi(g < n%extraGroups)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// dashboardFigures are what kubectl edge dashboard's pages cost at N destinations (-dashboard).
type dashboardFigures struct {
	Pages []pageFigures `json:"pages"`
	// AssetBytes is the stylesheet and script that every page loads once (then cached).
	AssetBytes int `json:"assetBytes"`
	// Browser is the headless Chromium that loaded the pages ("" when there was none).
	Browser string `json:"browser,omitempty"`
	// KCPRSSBeforeMB and KCPRSSAfterMB are kcp's memory before the first page and after the
	// last (the dashboard's watches included).
	KCPRSSBeforeMB float64 `json:"kcpRSSBeforeMB,omitempty"`
	KCPRSSAfterMB  float64 `json:"kcpRSSAfterMB,omitempty"`
}

// pageFigures are one page's: its HTML's size and the time to read it in full, from the
// dashboard's HTTP server (which reads kcp for every request), and, in a browser, the time until
// the page was loaded (navigation start to the load event, assets included).
type pageFigures struct {
	Page      string `json:"page"`
	HTMLBytes int    `json:"htmlBytes"`
	// ServeFirstMs is the first load's, which starts the page's watches (a placement's page:
	// one per destination).
	ServeFirstMs     float64 `json:"serveFirstMs"`
	ServeMedianMs    float64 `json:"serveMedianMs"`
	ServeMaxMs       float64 `json:"serveMaxMs"`
	BrowserMedianMs  float64 `json:"browserLoadMedianMs,omitempty"`
	BrowserMaxMs     float64 `json:"browserLoadMaxMs,omitempty"`
	BrowserDOMReady  float64 `json:"browserDOMContentLoadedMedianMs,omitempty"`
	DestinationsRows int     `json:"destinationRows,omitempty"`
}

// runDashboard serves the dashboard of the benchmark's fleet, once the unbounded placement is
// ready everywhere, and loads each page: the fleet, the placement's first page and a filtered,
// sorted later page of its N destinations, and one edge cluster.
func (b *bench) runDashboard(ctx context.Context, res *result) error {
	server, err := dashboard.New(dashboard.Config{Base: b.s.Base, WorkloadWorkspaces: []logicalcluster.Path{b.wmw}})
	if err != nil {
		return err
	}
	l, err := dashboard.Listen(0)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { _ = server.Serve(ctx, l) }()
	base := "http://" + l.Addr().String()
	wmw := b.wmw.String()
	pages := []string{
		"/",
		"/placement/" + wmw + "/" + flatPlacement,
		"/placement/" + wmw + "/" + flatPlacement + "?state=Ready&sort=name&page=3",
	}
	if b.cfg.Placements > 1 {
		pages = append(pages, "/placement/"+wmw+"/"+extraPlacement(1))
	}
	pages = append(pages, "/edge/"+b.imw.String()+"/edge-00000")
	figures := &dashboardFigures{}
	if cur, _, err := framework.RSS(b.s.PID()); err == nil {
		figures.KCPRSSBeforeMB = float64(cur) / 1e6
	}
	for _, asset := range []string{"/static/style.css", "/static/live.js"} {
		body, _, err := get(ctx, base+asset)
		if err != nil {
			return err
		}
		figures.AssetBytes += len(body)
	}
	for _, p := range pages {
		f := pageFigures{Page: p}
		var times []float64
		for i := 0; i < dashboardRounds; i++ {
			body, took, err := get(ctx, base+p)
			if err != nil {
				return err
			}
			f.HTMLBytes = len(body)
			times = append(times, took.Seconds()*1000)
		}
		f.ServeFirstMs = times[0]
		f.ServeMedianMs, f.ServeMaxMs = medianMax(times)
		say("dashboard %s: %d bytes of HTML, served in %.0f ms (median of %d; first %.0f ms, slowest %.0f ms)", p, f.HTMLBytes, f.ServeMedianMs, dashboardRounds, f.ServeFirstMs, f.ServeMaxMs)
		figures.Pages = append(figures.Pages, f)
	}
	if path := chromiumPath(); path != "" {
		figures.Browser = path
		if err := browserLoads(ctx, path, base, figures); err != nil {
			return err
		}
	} else {
		say("no chromium on the PATH: the load times in a browser are not measured (apt-get install chromium)")
	}
	if cur, _, err := framework.RSS(b.s.PID()); err == nil {
		figures.KCPRSSAfterMB = float64(cur) / 1e6
	}
	res.Dashboard = figures
	return nil
}

func get(ctx context.Context, url string) ([]byte, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, 0, err
	}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	took := time.Since(start)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s: %.300s", url, resp.Status, body)
	}
	return body, took, err
}

func chromiumPath() string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// browserLoads loads each page dashboardRounds times in headless Chromium (the assets cached
// after the first) and reads the Navigation Timing of each load.
func browserLoads(ctx context.Context, path, base string, figures *dashboardFigures) error {
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.WindowSize(1280, 900))...)
	defer cancelAlloc()
	tab, cancelTab := chromedp.NewContext(alloc)
	defer cancelTab()
	if err := chromedp.Do(tab); err != nil {
		return fmt.Errorf("starting %s: %w", path, err)
	}
	type timing struct {
		DOMContentLoaded float64 `json:"dcl"`
		Load             float64 `json:"load"`
		Rows             int     `json:"rows"`
	}
	for i := range figures.Pages {
		f := &figures.Pages[i]
		var loads, dcls []float64
		for r := 0; r < dashboardRounds; r++ {
			if err := chromedp.Do(tab, chromedp.Navigate(base+f.Page)); err != nil {
				return fmt.Errorf("loading %s in the browser: %w", f.Page, err)
			}
			t, err := chromedp.Run(tab, chromedp.Evaluate[timing](`(function(){
				var n = performance.getEntriesByType("navigation")[0];
				return {dcl: n.domContentLoadedEventEnd, load: n.loadEventEnd,
					rows: document.querySelectorAll("#destination-table tbody tr").length};
			})()`))
			if err != nil {
				return err
			}
			loads, dcls = append(loads, t.Load), append(dcls, t.DOMContentLoaded)
			f.DestinationsRows = t.Rows
		}
		f.BrowserMedianMs, f.BrowserMaxMs = medianMax(loads)
		f.BrowserDOMReady, _ = medianMax(dcls)
		say("dashboard %s in Chromium: loaded in %.0f ms (median of %d; slowest %.0f ms), DOM ready at %.0f ms", f.Page, f.BrowserMedianMs, dashboardRounds, f.BrowserMaxMs, f.BrowserDOMReady)
	}
	return nil
}

func medianMax(v []float64) (float64, float64) {
	if len(v) == 0 {
		return 0, 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2], s[len(s)-1]
}

// printDashboard prints the dashboard's figures as a markdown table.
func printDashboard(out io.Writer, res *result) {
	d := res.Dashboard
	if d == nil {
		return
	}
	fmt.Fprintf(out, "\nkubectl edge dashboard at %d destinations, %d placements (%d loads of each page; stylesheet and script: %d bytes, loaded once)\n\n", res.Config.N, res.Config.Placements, dashboardRounds, d.AssetBytes)
	fmt.Fprintln(out, "| page | HTML | served: first / median / slowest | loaded in Chromium (median / slowest) | DOM ready (median) |")
	fmt.Fprintln(out, "|---|---|---|---|---|")
	for _, p := range d.Pages {
		browser, dom := "-", "-"
		if d.Browser != "" {
			browser, dom = fmt.Sprintf("%.0f / %.0f ms", p.BrowserMedianMs, p.BrowserMaxMs), fmt.Sprintf("%.0f ms", p.BrowserDOMReady)
		}
		fmt.Fprintf(out, "| `%s` | %.1f KB | %.0f / %.0f / %.0f ms | %s | %s |\n", p.Page, float64(p.HTMLBytes)/1000, p.ServeFirstMs, p.ServeMedianMs, p.ServeMaxMs, browser, dom)
	}
	fmt.Fprintln(out)
	fmt.Fprintf(out, "kcp's RSS: %.0f MB before the pages, %.0f MB after\n", d.KCPRSSBeforeMB, d.KCPRSSAfterMB)
	fmt.Fprintf(out, "load averages: %v\n", res.LoadAverages)
}
