package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestSmallFleet runs the whole benchmark on a small fleet, to keep the harness working: every
// phase must complete and the JSON must hold every figure. What the figures are is the
// benchmark's to report, not this test's to judge.
func TestSmallFleet(t *testing.T) {
	if os.Getenv("EDGE_E2E_KUBECONFIG") != "" {
		t.Skip("the fleet benchmark starts two kcp servers of its own; unset EDGE_E2E_KUBECONFIG to run it")
	}
	dir := t.TempDir()
	c := config{
		N: 20, K: 3, P: 2, ObjectSize: 256, Parallel: 16, Workers: 8,
		StatusDestinations: 3, statusTimeout: time.Minute, idle: 5 * time.Second, ProfileSeconds: 3,
		jsonOut: filepath.Join(dir, "bench.json"), profileDir: filepath.Join(dir, "profiles"),
	}
	if err := c.validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
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
	// positive are marked.
	const positive, anything = true, false
	want := map[string]map[string]bool{
		"config": {"n": positive, "k": positive, "p": positive, "objectSize": positive, "parallel": positive, "workers": positive,
			"statusDestinations": positive, "statusTimeoutSeconds": positive, "idleSeconds": positive, "profileSeconds": positive},
		"machine": {"cores": positive, "loadAverageBefore": anything, "memTotalGB": positive, "memAvailableGBBefore": positive},
		"setup": {"kcpStartSeconds": positive, "centerSeconds": positive, "locationsSeconds": positive, "mailboxesSeconds": positive,
			"pclustersSeconds": positive, "credentialsSeconds": positive, "syncersSeconds": anything, "workloadSeconds": positive, "totalSeconds": positive},
		"raw": {"objects": positive, "parallelism": positive, "mailboxSeconds": positive, "mailboxObjectsPerSecond": positive,
			"edgeSeconds": positive, "edgeObjectsPerSecond": positive, "mailboxCenterKCPCPUSeconds": positive, "edgeKCPCPUSeconds": positive},
		"fanout": {"copies": positive, "mailboxSeconds": positive, "mailboxObjectsPerSecond": positive, "mailboxRatioToRaw": positive,
			"mailboxPerDestinationP50Seconds": positive, "mailboxPerDestinationP99Seconds": positive, "edgeSeconds": positive,
			"edgeRatioToRaw": positive, "edgePerDestinationP50Seconds": positive, "edgePerDestinationP99Seconds": positive,
			"controllerCPUSeconds": anything, "syncersCPUSeconds": anything, "centerKCPCPUSeconds": positive, "edgeKCPCPUSeconds": positive, "benchCPUSeconds": anything,
			"centerKCPRequests": anything, "edgeKCPRequests": anything},
		"update": {"destinations": positive, "p50Seconds": positive, "p90Seconds": positive, "p99Seconds": positive, "maxSeconds": positive},
		"status": {"destinations": positive, "measured": anything, "notMeasured": anything, "p50Seconds": anything, "p99Seconds": anything, "maxSeconds": anything},
		"idle":   {"windowSeconds": positive, "controllerCPUPercent": anything, "syncersCPUPercent": anything, "centerKCPCPUPercent": anything, "edgeKCPCPUPercent": anything},
		"memory": {"controllerRSSMB": positive, "controllerPeakRSSMB": positive, "syncersRSSMB": positive, "syncersRSSPerSyncerMB": positive,
			"centerKCPRSSMB": positive, "edgeKCPRSSMB": positive, "centerKCPMBPerDestination": anything, "edgeKCPMBPerPCluster": anything},
	}
	for section, fields := range want {
		for field, mustBePositive := range fields {
			v, ok := got[section][field]
			if !ok {
				t.Errorf("the JSON has no %s.%s", section, field)
				continue
			}
			if n, isNumber := v.(float64); mustBePositive && (!isNumber || n <= 0) {
				t.Errorf("%s.%s is %v, want a positive number", section, field, v)
			}
		}
	}
	if copies := got["fanout"]["copies"]; copies != float64(c.N*c.K) {
		t.Errorf("fanout.copies is %v, want N*K = %d", copies, c.N*c.K)
	}
	if dests := got["update"]["destinations"]; dests != float64(c.N/c.P) {
		t.Errorf("update.destinations is %v, want the %d destinations of the first placement", dests, c.N/c.P)
	}
	// The status phase either measured (numbers) or says why not (null figures).
	status := got["status"]
	if status["measured"] == true {
		for _, field := range []string{"p50Seconds", "p99Seconds", "maxSeconds"} {
			if n, ok := status[field].(float64); !ok || n <= 0 {
				t.Errorf("status was measured but status.%s is %v", field, status[field])
			}
		}
	} else if why, _ := status["notMeasured"].(string); why == "" || status["p50Seconds"] != nil {
		t.Errorf("status was not measured but says neither why nor null figures: %v", status)
	}
	// What the center kcp served during the fan-out names the copies' resources.
	if requests, _ := got["fanout"]["centerKCPRequests"].([]any); len(requests) == 0 {
		t.Errorf("fanout.centerKCPRequests is empty: kcp's request counters were not read")
	}
	// The profiles of -profile.
	for _, phase := range []string{"fanout", "idle"} {
		for _, name := range []string{"kcp-center", "kcp-edge", "syncers"} {
			if st, err := os.Stat(filepath.Join(c.profileDir, name+"-"+phase+".cpu.pprof")); err != nil || st.Size() == 0 {
				t.Errorf("no CPU profile of %s during the %s: %v", name, phase, err)
			}
		}
	}
}
