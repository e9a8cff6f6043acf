package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/kcp-dev/edge-mc/test/framework"
)

// requestCount is how many requests of one kind kcp served in a phase: the verb and the
// resource (with its subresource), as apiserver_request_total labels them.
type requestCount struct {
	Request string  `json:"request"`
	Count   float64 `json:"count"`
}

// requestCounts sums kcp's apiserver_request_total series (Prometheus text) by verb and
// resource, with the subresource after a slash, as framework.RequestCounts does, but keeps
// requests answered with a code other than 2xx apart, the code after the resource:
// "PUT edgeplacements/status 409".
func requestCounts(metrics string) map[string]float64 {
	counts := map[string]float64{}
	framework.EachRequestSeries(metrics, func(verb, resource string, labels map[string]string, value float64) {
		key := verb + " " + resource
		if code := labels["code"]; code != "" && !strings.HasPrefix(code, "2") {
			key += " " + code
		}
		counts[key] += value
	})
	return counts
}

// requestDiff is what the counters grew by, the most frequent first; nil if either reading
// failed.
func requestDiff(before, after map[string]float64) []requestCount {
	if before == nil || after == nil {
		return nil
	}
	out := []requestCount{}
	for r, n := range after {
		if d := n - before[r]; d > 0 {
			out = append(out, requestCount{Request: r, Count: d})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Request < out[j].Request
	})
	return out
}

// sumRequests sums the writes and the other requests.
func sumRequests(rs []requestCount) (writes, reads float64) {
	for _, r := range rs {
		if framework.IsWrite(r.Request) {
			writes += r.Count
		} else {
			reads += r.Count
		}
	}
	return writes, reads
}

// countOf is the count of one kind of request, 0 if absent.
func countOf(rs []requestCount, request string) float64 {
	for _, r := range rs {
		if r.Request == request {
			return r.Count
		}
	}
	return 0
}

// describeWrites says the writes of a phase in a table cell.
func describeWrites(rs []requestCount) string {
	if rs == nil {
		return "not read"
	}
	var parts []string
	for _, r := range rs {
		if framework.IsWrite(r.Request) {
			parts = append(parts, fmt.Sprintf("%s %.0f", r.Request, r.Count))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func seconds(v []float64) string {
	parts := make([]string, len(v))
	for i, s := range v {
		parts[i] = fmt.Sprintf("%.1f", s)
	}
	return strings.Join(parts, ", ")
}

func printTables(w io.Writer, r *result) {
	c := r.Config
	wave := c.ReadyAfterSeconds + float64(c.MinReadySeconds)
	fmt.Fprintf(w, "\nrollout benchmark: %d destinations, maxInFlight %s (%d destinations), minReadySeconds %d; the edge player reports a new version applied after %.1f s and ready after %.1f s; %d cores\n\n",
		c.N, c.MaxInFlight, c.WaveSize, c.MinReadySeconds, c.AppliedAfterSeconds, c.ReadyAfterSeconds, r.Cores)
	fmt.Fprintf(w, "| measure | value |\n|---|---|\n")
	fmt.Fprintf(w, "| set-up (not counted): %d SyncTargets and Locations to MailboxReady | %.0f s |\n", c.N, r.MailboxesSeconds)
	fmt.Fprintf(w, "| first delivery (not counted): unbounded placement, creation to every destination ready | %.1f s |\n", r.FirstFlatSeconds)
	fmt.Fprintf(w, "| first delivery (not counted): paced placement, creation to RolloutComplete | %.1f s |\n", r.FirstPacedSeconds)
	p := r.Paced
	fmt.Fprintf(w, "| paced: one ConfigMap edit to %d destinations, edit to RolloutComplete | %.1f s |\n", p.Destinations, p.Seconds)
	fmt.Fprintf(w, "| ideal: %d waves x (ready after %.1f s + minReadySeconds %d s = %.1f s) | %.1f s |\n", p.Waves, c.ReadyAfterSeconds, c.MinReadySeconds, wave, p.IdealSeconds)
	fmt.Fprintf(w, "| paced / ideal | %.2f |\n", p.Ratio)
	fmt.Fprintf(w, "| per wave of %d, as the edge player saw them (start to next start; last: start to done) | %s s |\n", c.WaveSize, seconds(p.WaveSeconds))
	fmt.Fprintf(w, "| paced: edit to first delivery / to last destination reported ready | %.1f s / %.1f s |\n", p.FirstDeliverySeconds, p.LastReadySeconds)
	fmt.Fprintf(w, "| paced: most destinations in flight at once, as the edge player saw them (bound %d) | %d |\n", c.WaveSize, p.MaxInFlight)
	u := r.Unbounded
	fmt.Fprintf(w, "| unbounded: the same edit of the other placement, edit to every destination reported ready | %.1f s (first delivery %.1f s) |\n", u.Seconds, u.FirstDeliverySeconds)
	fmt.Fprintf(w, "| unbounded: most destinations in flight at once | %d |\n", u.MaxInFlight)
	g := r.AfterGate
	fmt.Fprintf(w, "| after the canary's pause gate: resume to RolloutComplete, %d destinations / ideal (%d waves) | %.1f s / %.1f s (%.2f) |\n", g.Destinations, g.Waves, g.Seconds, g.IdealSeconds, g.Ratio)
	fmt.Fprintf(w, "| after the gate: per wave; most in flight at once | %s s; %d |\n", seconds(g.WaveSeconds), g.MaxInFlight)
	fmt.Fprintf(w, "| center CPU, edit until %.0f s after complete: kcp / edge-controller-manager, paced | %.1f s / %.1f s |\n", c.SettleSeconds, p.KCPCPUSeconds, p.ControllerCPUSeconds)
	fmt.Fprintf(w, "| center CPU, same, unbounded | %.1f s / %.1f s |\n", u.KCPCPUSeconds, u.ControllerCPUSeconds)
	for _, i := range []idle{r.IdleNoRollout, r.IdleWaiting} {
		fmt.Fprintf(w, "| idle CPU over %.0f s, %s: kcp / edge-controller-manager | %.1f%% / %.1f%% of a core |\n", i.Seconds, i.State, i.KCPCPUPercent, i.ControllerCPUPercent)
		fmt.Fprintf(w, "| requests in that window: writes / reads; new versions delivered | %.0f (%s) / %.0f; %d |\n", i.Writes, describeWrites(i.Requests), i.Reads, i.Deliveries)
	}
	fmt.Fprintf(w, "| edge-controller-manager RSS / kcp RSS at the end | %.0f MB / %.0f MB |\n", r.ControllerRSSMB, r.KCPRSSMB)
	fmt.Fprintf(w, "| load average (1, 5, 15 min) | %s |\n", strings.Join(r.LoadAverages, "; "))

	fmt.Fprintf(w, "\ncenter requests for one edit to %d destinations, from the edit until %.0f s after it is complete (kcp's apiserver_request_total; the edge player's status writes are the syncers')\n\n", c.N, c.SettleSeconds)
	fmt.Fprintf(w, "| request | paced (maxInFlight %s) | unbounded |\n|---|---|---|\n", c.MaxInFlight)
	kinds := map[string]bool{}
	var order []string
	for _, rs := range [][]requestCount{p.Requests, u.Requests} {
		for _, q := range rs {
			if framework.IsWrite(q.Request) && !kinds[q.Request] {
				kinds[q.Request] = true
				order = append(order, q.Request)
			}
		}
	}
	for _, k := range order {
		fmt.Fprintf(w, "| %s | %.0f | %.0f |\n", k, countOf(p.Requests, k), countOf(u.Requests, k))
	}
	fmt.Fprintf(w, "| all writes | %.0f | %.0f |\n", p.Writes, u.Writes)
	fmt.Fprintf(w, "| of which the edge player's status writes | %d | %d |\n", p.PlayerWrites, u.PlayerWrites)
	fmt.Fprintf(w, "| all reads (GET, LIST, WATCH) | %.0f | %.0f |\n", p.Reads, u.Reads)
	fmt.Fprintf(w, "| changes of the edited placement's status seen by a watch, by whose part changed: translator / summarizer / both / neither | %s | %s |\n", p.PlacementChanges, u.PlacementChanges)
	fmt.Fprintf(w, "| changes of the other placement's status (not edited) | %s | %s |\n", p.OtherPlacementChanges, u.OtherPlacementChanges)
	fmt.Fprintf(w, "| duration counted | %.1f s | %.1f s |\n", p.Seconds+c.SettleSeconds, u.Seconds+c.SettleSeconds)

	fmt.Fprintf(w, "\nNo syncer heartbeats are played: every SyncTarget's SyncerReady stays Unknown (HeartbeatMissing), which the rollout does not count as stale; heartbeats would add N/interval Lease writes a second to every window alike.\n")
}

func (c statusChanges) String() string {
	return fmt.Sprintf("%d / %d / %d / %d", c.Translator, c.Summarizer, c.Both, c.Neither)
}

// printCenter prints the -center run.
func printCenter(w io.Writer, r *result) {
	c := r.Config
	fmt.Fprintf(w, "\ncenter benchmark: %d destinations, one ConfigMap placed on all, edge-controller-manager --workers %d (at most %d writes in flight); %d cores\n\n", c.N, c.Workers, c.ControllerCap, r.Cores)
	fmt.Fprintf(w, "| measure | value |\n|---|---|\n")
	fmt.Fprintf(w, "| set-up (not counted): %d SyncTargets and Locations to MailboxReady | %.0f s |\n", c.N, r.MailboxesSeconds)
	f := r.CenterCreate
	fmt.Fprintf(w, "| first delivery: %d assemblages created, creation of the placement to the last in its mailbox | %.1f s: %.0f/s (p50 %.1f s, p90 %.1f s) |\n", f.Deliveries, f.Seconds, f.PerSecond, f.P50Seconds, f.P90Seconds)
	for i, raw := range r.Raw {
		when := "before the edits"
		if i > 0 {
			when = "after the edits"
		}
		fmt.Fprintf(w, "| raw, %s: %d ConfigMaps of %d bytes (an assemblage's size) created, then updated, %d at a time | %.2f s: %.0f/s; %.2f s: %.0f/s |\n",
			when, raw.Writes, raw.Bytes, raw.Parallel, raw.CreateSeconds, raw.CreatesPerSecond, raw.UpdateSeconds, raw.UpdatesPerSecond)
	}
	rawCreates, rawUpdates := rawMean(r.Raw)
	if rawCreates > 0 {
		fmt.Fprintf(w, "| assemblage creates/s / raw creates/s (mean of the raw runs) | %.2f |\n", f.PerSecond/rawCreates)
	}
	for i, u := range r.CenterUpdates {
		fo := u.FanOut
		ratio := 0.0
		if rawUpdates > 0 {
			ratio = fo.PerSecond / rawUpdates
		}
		fmt.Fprintf(w, "| edit %d: edit to the last new version in its mailbox; updates/s / raw updates/s (mean) | %.1f s: %.0f/s (p50 %.1f s, p90 %.1f s, max/p90 %.2f); %.2f |\n",
			i+1, fo.Seconds, fo.PerSecond, fo.P50Seconds, fo.P90Seconds, fo.MaxSeconds/max(fo.P90Seconds, 0.001), ratio)
		fmt.Fprintf(w, "| edit %d: center writes (kcp's count, edit until %.0f s after the last ready; the edge player's %d among them); kcp / edge-controller-manager CPU | %.0f (%s); %.1f s / %.1f s |\n",
			i+1, c.SettleSeconds, u.PlayerWrites, u.Writes, describeWrites(u.Requests), u.KCPCPUSeconds, u.ControllerCPUSeconds)
	}
	fmt.Fprintf(w, "| edge-controller-manager at the end: limit of writes in flight to kcp; 429/503 answers met; retries | %.1f; %.0f; %.0f |\n", r.WriteLimit, r.WriteRefusals, r.Retries)
	fmt.Fprintf(w, "| edge-controller-manager RSS / kcp RSS at the end | %.0f MB / %.0f MB |\n", r.ControllerRSSMB, r.KCPRSSMB)
	fmt.Fprintf(w, "| load average (1, 5, 15 min) | %s |\n", strings.Join(r.LoadAverages, "; "))
}
