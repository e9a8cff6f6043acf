package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kcp-dev/edge-mc/test/framework"
)

// TestSmallFleet runs the whole benchmark on a small fleet, as a user would, and checks what a
// user would check of its output: every phase completed, every figure is there and sane (the
// objects reached every edge, the center's writes were counted, each ratio was computed), and
// the table says the same. How fast is the benchmark's to report, not this test's to judge. It
// runs with -collect, whose status collector and health rule the run itself checks against what
// the edges hold (a run whose collector showed the wrong sum fails); the test checks that the
// figures say so.
func TestSmallFleet(t *testing.T) {
	if os.Getenv("EDGE_E2E_KUBECONFIG") != "" {
		t.Skip("the fleet benchmark starts kcp servers of its own; unset EDGE_E2E_KUBECONFIG to run it")
	}
	dir := t.TempDir()
	c := config{
		// Six destinations: enough for every phase (three for the status phase, a placement
		// each for two), and the fleet of 20 it had took 108 of its 423 s to make under load.
		N: 6, K: 3, P: 2, ObjectSize: 256, Parallel: 16, Workers: 8,
		StatusDestinations: 3, statusTimeout: time.Minute, idle: 5 * time.Second, ProfileSeconds: 3, Shards: 1, Collect: true,
		jsonOut: filepath.Join(dir, "bench.json"), profileDir: filepath.Join(dir, "profiles"),
	}
	if err := c.validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	var table bytes.Buffer
	if _, err := run(ctx, c, &table); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", table.String())

	raw, err := os.ReadFile(c.jsonOut)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("the JSON is not an object of sections: %v\n%s", err, raw)
	}
	// Every figure the benchmark documents; those that a completed phase must have made
	// positive are marked, and lists that must have been read (not null).
	const positive, anything, list = "positive", "anything", "list"
	want := map[string]map[string]string{
		"config": {"n": positive, "k": positive, "p": positive, "objectSize": positive, "parallel": positive, "workers": positive,
			"statusDestinations": positive, "statusTimeoutSeconds": positive, "idleSeconds": positive, "profileSeconds": positive,
			"noWebhookAdmission": anything, "centerKCPArgs": list, "shards": positive, "edgeKCPAdmin": anything, "secrets": anything, "collect": anything},
		"machine": {"cores": positive, "loadAverageBefore": anything, "memTotalGB": positive, "memAvailableGBBefore": positive},
		"setup": {"kcpStartSeconds": positive, "centerSeconds": positive, "locationsSeconds": positive, "mailboxesSeconds": positive,
			"pclustersSeconds": positive, "credentialsSeconds": positive, "syncersSeconds": anything, "workloadSeconds": positive, "totalSeconds": positive},
		"raw": {"objects": positive, "parallelism": positive, "mailboxSeconds": positive, "mailboxObjectsPerSecond": positive,
			"edgeSeconds": positive, "edgeObjectsPerSecond": positive, "mailboxCenterKCPCPUSeconds": positive, "edgeKCPCPUSeconds": positive,
			"updates": positive, "updateSeconds": positive},
		"fanout": {"objects": positive, "assemblages": positive, "mailboxSeconds": positive, "mailboxObjectsPerSecond": positive,
			"mailboxRatioToRaw": positive, "mailboxPerDestinationP50Seconds": positive, "mailboxPerDestinationP99Seconds": positive,
			"edgeSeconds": positive, "edgeRatioToRaw": positive, "edgePerDestinationP50Seconds": positive, "edgePerDestinationP99Seconds": positive,
			"edgeDestinations": positive, "controllerCPUSeconds": anything, "syncersCPUSeconds": anything, "centerKCPCPUSeconds": positive, "edgeKCPCPUSeconds": positive, "benchCPUSeconds": anything,
			"mailboxPhaseCenterWrites": list, "mailboxPhaseCenterWritesTotal": positive,
			"assemblageWrites": positive, "assemblageWritesPerDestination": positive, "assemblageStatusWrites": anything, "centerWritesTotal": positive,
			"assemblageBytes": positive, "assemblageBytesPerDestination": positive,
			"centerKCPRequests": list, "edgeKCPRequests": list, "centerKCPRefused": anything, "edgeKCPRefused": anything},
		"update": {"destinations": positive, "mailboxP50Seconds": positive, "mailboxP90Seconds": positive, "mailboxMaxSeconds": positive,
			"p50Seconds": positive, "p90Seconds": positive, "p99Seconds": positive, "maxSeconds": positive, "p90RatioToRaw": positive,
			"assemblageWrites": positive, "centerWrites": list, "centerKCPRefused": anything, "centerWritesTotal": positive},
		"status": {"destinations": positive, "measured": anything, "notMeasured": anything, "p50Seconds": anything, "p99Seconds": anything, "maxSeconds": anything,
			"streamP50Seconds": anything, "streamP99Seconds": anything, "coalescePeriodSeconds": anything,
			"seconds": positive, "centerWritesTotal": positive, "assemblageStatusWrites": positive, "controllerCPUSeconds": anything, "syncersCPUSeconds": anything},
		"collect": {"enabled": anything, "collector": anything, "healthRule": anything, "measured": anything, "notMeasured": anything,
			"readyDeployments": positive, "wantAvailable": positive, "available": positive, "deployments": positive, "destinations": positive,
			"errors": anything, "seconds": anything, "ruleReady": positive, "ruleNotReady": positive},
		"idle": {"windowSeconds": positive, "controllerCPUPercent": anything, "syncersCPUPercent": anything, "centerKCPCPUPercent": positive,
			"edgeKCPCPUPercent": anything, "centerKCPRatioToBare": positive, "centerKCPRequests": list, "edgeKCPRequests": list},
		"memory": {"controllerRSSMB": positive, "controllerPeakRSSMB": positive, "syncersRSSMB": positive, "syncersRSSPerSyncerMB": positive,
			"centerKCPRSSMB": positive, "edgeKCPRSSMB": positive, "centerKCPFreshRSSMB": positive, "edgeKCPFreshRSSMB": positive,
			"centerKCPMBPerDestination": positive, "edgeKCPMBPerPCluster": positive, "centerKCPSetUpRSSMB": positive,
			"centerKCPMBPerDestinationFromSetUp": anything},
		"bare": {"measured": anything, "notMeasured": anything, "workspaces": positive, "setupSeconds": positive, "windowSeconds": positive,
			"cpuPercent": positive, "freshRSSMB": positive, "rssMB": positive, "mbPerWorkspace": anything, "requests": list},
	}
	for section, fields := range want {
		for field, kind := range fields {
			v, ok := got[section][field]
			if !ok {
				t.Errorf("the JSON has no %s.%s", section, field)
				continue
			}
			switch n, isNumber := v.(float64); kind {
			case positive:
				if !isNumber || n <= 0 {
					t.Errorf("%s.%s is %v, want a positive number", section, field, v)
				}
			case list:
				if _, isList := v.([]any); !isList {
					t.Errorf("%s.%s is %v, want a list (null: the figures were not read)", section, field, v)
				}
			}
		}
	}
	if _, ok := got["sharded"]; ok {
		t.Errorf("a center of one kcp has a sharded section: %v", got["sharded"])
	}
	number := func(section, field string) float64 { n, _ := got[section][field].(float64); return n }
	// The fan-out carried N*K objects in N assemblages, and all of them reached every edge.
	if n := number("fanout", "objects"); n != float64(c.N*c.K) {
		t.Errorf("fanout.objects is %v, want N*K = %d", n, c.N*c.K)
	}
	if n := number("fanout", "assemblages"); n != float64(c.N) {
		t.Errorf("fanout.assemblages is %v, want N = %d", n, c.N)
	}
	if n := number("fanout", "edgeDestinations"); n != float64(c.N) {
		t.Errorf("fanout.edgeDestinations is %v: not every destination held all %d objects at its edge", n, c.K)
	}
	// Every destination's assemblage was written at least once, and the counts add up: the
	// mailbox phase's writes include the assemblage writes it listed.
	if n := number("fanout", "assemblageWrites"); n < float64(c.N) {
		t.Errorf("fanout.assemblageWrites is %v, fewer than the %d destinations: kcp's writes were not counted", n, c.N)
	}
	if got, want := number("fanout", "assemblageWritesPerDestination"), number("fanout", "assemblageWrites")/float64(c.N); got != want {
		t.Errorf("fanout.assemblageWritesPerDestination is %v, want assemblageWrites/N = %v", got, want)
	}
	writes, _ := got["fanout"]["mailboxPhaseCenterWrites"].([]any)
	sum, assemblages := 0.0, 0.0
	for _, w := range writes {
		r, _ := w.(map[string]any)
		request, _ := r["request"].(string)
		count, _ := r["count"].(float64)
		sum += count
		if isAssemblageWrite(request) {
			assemblages += count
		}
		if !framework.IsWrite(request) {
			t.Errorf("fanout.mailboxPhaseCenterWrites lists %q, which is not a write", request)
		}
	}
	if sum != number("fanout", "mailboxPhaseCenterWritesTotal") || assemblages == 0 {
		t.Errorf("the mailbox phase's writes add up to %v (%v of assemblages), its total says %v; want equal, with assemblages among them",
			sum, assemblages, number("fanout", "mailboxPhaseCenterWritesTotal"))
	}
	// The update reached the first placement's destinations, each assemblage rewritten. (The
	// times the benchmark saw an assemblage and an edge object change come from two watches with
	// their own delays, so the last assemblage may be seen after the last edge object: no order
	// between the two is asserted.)
	if dests := number("update", "destinations"); dests != float64(c.N/c.P) {
		t.Errorf("update.destinations is %v, want the %d destinations of the first placement", dests, c.N/c.P)
	}
	if n := number("update", "assemblageWrites"); n < float64(c.N/c.P) {
		t.Errorf("update.assemblageWrites is %v, fewer than the %d assemblages the edit changes", n, c.N/c.P)
	}
	// The ratios are what they say.
	for _, r := range []struct {
		name      string
		got, want float64
	}{
		{"fanout.mailboxRatioToRaw", number("fanout", "mailboxRatioToRaw"), number("raw", "mailboxSeconds") / number("fanout", "mailboxSeconds")},
		{"fanout.edgeRatioToRaw", number("fanout", "edgeRatioToRaw"), number("fanout", "edgeSeconds") / (number("raw", "mailboxSeconds") + number("raw", "edgeSeconds"))},
		{"update.p90RatioToRaw", number("update", "p90RatioToRaw"), number("update", "p90Seconds") / number("raw", "updateSeconds")},
		{"idle.centerKCPRatioToBare", number("idle", "centerKCPRatioToBare"), number("idle", "centerKCPCPUPercent") / number("bare", "cpuPercent")},
	} {
		if r.got != r.want {
			t.Errorf("%s is %v, want %v", r.name, r.got, r.want)
		}
	}
	if got["bare"]["measured"] != true || number("bare", "workspaces") != float64(c.N) {
		t.Errorf("the bare kcp was not measured with %d workspaces: %v", c.N, got["bare"])
	}
	// The status phase either measured (numbers) or says why not (null figures).
	status := got["status"]
	if status["measured"] == true {
		for _, field := range []string{"p50Seconds", "p99Seconds", "maxSeconds", "streamP50Seconds", "streamP99Seconds", "coalescePeriodSeconds"} {
			if n, ok := status[field].(float64); !ok || n <= 0 {
				t.Errorf("status was measured but status.%s is %v", field, status[field])
			}
		}
	} else if why, _ := status["notMeasured"].(string); why == "" || status["p50Seconds"] != nil {
		t.Errorf("status was not measured but says neither why nor null figures: %v", status)
	}
	// -collect: the collector's sum over the first placement is the number of Deployments the
	// status phase turned ready (one replica each), every placement counted its destinations'
	// Deployments, and the health rule, not kstatus, decided at every destination.
	if got["collect"]["measured"] != true {
		t.Errorf("the status collector and health rule were not checked: %v", got["collect"])
	}
	if a, want := number("collect", "available"), number("status", "destinations"); a != want || number("collect", "wantAvailable") != want {
		t.Errorf("collect.available is %v (want %v), the %v Deployments turned ready", a, number("collect", "wantAvailable"), want)
	}
	if d, n := number("collect", "deployments"), number("collect", "destinations"); d != float64(c.N) || n != float64(c.N) {
		t.Errorf("the collector counted %v Deployments from %v destinations over the placements, want %d from %d", d, n, c.N, c.N)
	}
	if r, n := number("collect", "ruleReady"), number("collect", "ruleNotReady"); r != float64(c.StatusDestinations) || r+n != float64(c.N) {
		t.Errorf("the health rule decided ready at %v and not ready at %v destinations, want %d and %d", r, n, c.StatusDestinations, c.N-c.StatusDestinations)
	}
	// The table says the same as the JSON.
	for _, row := range []string{"mailbox phase rate / raw rate", "edge time / raw time", "update p90 / raw time of N writes",
		"idle center kcp / bare kcp", "center kcp memory per destination", "assemblage writes", "status collector " + collectorName, "health rule " + healthRuleName} {
		if !strings.Contains(table.String(), "| "+row) {
			t.Errorf("the table has no row %q", row)
		}
	}
	// The profiles of -profile.
	for _, phase := range []string{"fanout", "update", "idle"} {
		for _, name := range []string{"kcp-center", "kcp-edge", "edge-controller-manager", "syncers"} {
			if st, err := os.Stat(filepath.Join(c.profileDir, name+"-"+phase+".cpu.pprof")); err != nil || st.Size() == 0 {
				t.Errorf("no CPU profile of %s during the %s: %v", name, phase, err)
			}
		}
	}
}
