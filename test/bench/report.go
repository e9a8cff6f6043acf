package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/kcp-dev/edge-mc/test/framework"
)

// result is every figure of a run; it is printed as a table and written as JSON. Durations are
// in seconds from the start of the phase (for fan-out and update, the write that starts it).
type result struct {
	Config  config        `json:"config"`
	Machine machine       `json:"machine"`
	Setup   setupFigures  `json:"setup"`
	Raw     rawFigures    `json:"raw"`
	Fanout  fanoutFigures `json:"fanout"`
	Update  updateFigures `json:"update"`
	Status  statusFigures `json:"status"`
	Idle    idleFigures   `json:"idle"`
	Memory  memoryFigures `json:"memory"`
}

type machine struct {
	Cores int `json:"cores"`
	// LoadAverage is /proc/loadavg's 1, 5 and 15 minute figures before the run: the machine may
	// be shared.
	LoadAverage         [3]float64 `json:"loadAverageBefore"`
	MemTotalGB          float64    `json:"memTotalGB"`
	MemAvailableGBStart float64    `json:"memAvailableGBBefore"`
}

// setupFigures time the set-up, which is not part of any other figure.
type setupFigures struct {
	KCPStartSeconds float64 `json:"kcpStartSeconds"`
	// CenterSeconds: the ESPW, inventory and workload workspaces, edge-controller-manager ready.
	CenterSeconds float64 `json:"centerSeconds"`
	// LocationsSeconds: every SyncTarget and Location created (kubectl edge ensure location).
	LocationsSeconds float64 `json:"locationsSeconds"`
	// MailboxesSeconds: every SyncTarget MailboxReady, from the first ensure location.
	MailboxesSeconds float64 `json:"mailboxesSeconds"`
	// PClustersSeconds: every edge workspace ready with its CRD established, alongside.
	PClustersSeconds float64 `json:"pclustersSeconds"`
	// CredentialsSeconds: kubectl edge prep-for-syncer --kubeconfig-only for every SyncTarget.
	CredentialsSeconds float64 `json:"credentialsSeconds"`
	// SyncersSeconds: the syncers' process started until every syncer is ready.
	SyncersSeconds float64 `json:"syncersSeconds"`
	// WorkloadSeconds: the workload objects created in the workload workspace.
	WorkloadSeconds float64 `json:"workloadSeconds"`
	TotalSeconds    float64 `json:"totalSeconds"`
}

// rawFigures: a plain parallel client writes the same N*K objects into a namespace of their own
// in every mailbox, then into every edge cluster.
type rawFigures struct {
	Objects                 int     `json:"objects"`
	Parallelism             int     `json:"parallelism"`
	MailboxSeconds          float64 `json:"mailboxSeconds"`
	MailboxObjectsPerSecond float64 `json:"mailboxObjectsPerSecond"`
	EdgeSeconds             float64 `json:"edgeSeconds"`
	EdgeObjectsPerSecond    float64 `json:"edgeObjectsPerSecond"`
	// The CPU time of the kcp written to, during each.
	MailboxCenterKCPCPUSeconds float64 `json:"mailboxCenterKCPCPUSeconds"`
	EdgeKCPCPUSeconds          float64 `json:"edgeKCPCPUSeconds"`
}

// fanoutFigures: from the creation of the EdgePlacements until every copy is in its mailbox,
// and until every object is at every edge.
type fanoutFigures struct {
	Copies                  int     `json:"copies"`
	MailboxSeconds          float64 `json:"mailboxSeconds"`
	MailboxObjectsPerSecond float64 `json:"mailboxObjectsPerSecond"`
	// MailboxRatioToRaw is the mailbox-write rate over the raw client's rate into the mailboxes.
	MailboxRatioToRaw float64 `json:"mailboxRatioToRaw"`
	MailboxP50Seconds float64 `json:"mailboxPerDestinationP50Seconds"`
	MailboxP99Seconds float64 `json:"mailboxPerDestinationP99Seconds"`
	EdgeSeconds       float64 `json:"edgeSeconds"`
	// EdgeRatioToRaw is EdgeSeconds over the raw time of 2*N*K writes: the raw client's time into
	// the mailboxes plus its time into the edge clusters.
	EdgeRatioToRaw float64 `json:"edgeRatioToRaw"`
	EdgeP50Seconds float64 `json:"edgePerDestinationP50Seconds"`
	EdgeP99Seconds float64 `json:"edgePerDestinationP99Seconds"`
	// CPU seconds each process used during the fan-out, for where the time goes.
	ControllerCPUSeconds float64 `json:"controllerCPUSeconds"`
	SyncersCPUSeconds    float64 `json:"syncersCPUSeconds"`
	CenterKCPCPUSeconds  float64 `json:"centerKCPCPUSeconds"`
	EdgeKCPCPUSeconds    float64 `json:"edgeKCPCPUSeconds"`
	BenchCPUSeconds      float64 `json:"benchCPUSeconds"`
	// The most frequent requests each kcp served during the fan-out.
	CenterKCPRequests []requestRate `json:"centerKCPRequests"`
	EdgeKCPRequests   []requestRate `json:"edgeKCPRequests"`
}

// updateFigures: one workload object edited, the time until each destination's edge has it.
type updateFigures struct {
	Destinations int     `json:"destinations"`
	P50Seconds   float64 `json:"p50Seconds"`
	P90Seconds   float64 `json:"p90Seconds"`
	P99Seconds   float64 `json:"p99Seconds"`
	MaxSeconds   float64 `json:"maxSeconds"`
}

// statusFigures: a Deployment turned ready at an edge, the time until its EdgePlacement's
// status.summary.ready counts it. Null figures and a NotMeasured reason when it could not be
// measured.
type statusFigures struct {
	Destinations int      `json:"destinations"`
	Measured     bool     `json:"measured"`
	NotMeasured  string   `json:"notMeasured"`
	P50Seconds   *float64 `json:"p50Seconds"`
	P99Seconds   *float64 `json:"p99Seconds"`
	MaxSeconds   *float64 `json:"maxSeconds"`
}

// idleFigures: CPU use over a window with nothing changing, in percent of one core.
type idleFigures struct {
	WindowSeconds        float64 `json:"windowSeconds"`
	ControllerCPUPercent float64 `json:"controllerCPUPercent"`
	// SyncersCPUPercent is the process hosting all N syncers.
	SyncersCPUPercent   float64 `json:"syncersCPUPercent"`
	CenterKCPCPUPercent float64 `json:"centerKCPCPUPercent"`
	EdgeKCPCPUPercent   float64 `json:"edgeKCPCPUPercent"`
	// The most frequent requests each kcp served while idle.
	CenterKCPRequests []requestRate `json:"centerKCPRequests"`
	EdgeKCPRequests   []requestRate `json:"edgeKCPRequests"`
}

// memoryFigures: resident set sizes after the fan-out, update and status phases.
type memoryFigures struct {
	ControllerRSSMB     float64 `json:"controllerRSSMB"`
	ControllerPeakRSSMB float64 `json:"controllerPeakRSSMB"`
	// SyncersRSSMB is the process hosting all N syncers, and nothing else.
	SyncersRSSMB          float64 `json:"syncersRSSMB"`
	SyncersRSSPerSyncerMB float64 `json:"syncersRSSPerSyncerMB"`
	CenterKCPRSSMB        float64 `json:"centerKCPRSSMB"`
	EdgeKCPRSSMB          float64 `json:"edgeKCPRSSMB"`
	// The growth of each kcp's RSS from before the fleet existed to after the fan-out, per
	// destination: a mailbox (and its SyncTarget, Location, syncer watches and copies), and an
	// edge cluster (a lean workspace with the Deployment CRD, and the objects).
	CenterKCPMBPerDestination float64 `json:"centerKCPMBPerDestination"`
	EdgeKCPMBPerPCluster      float64 `json:"edgeKCPMBPerPCluster"`
}

func writeJSON(path string, r *result) error {
	raw, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(raw, '\n'), 0o644)
}

// printTable prints the figures as a markdown table, with the targets of the issue beside them.
func printTable(w io.Writer, r *result) {
	c := r.Config
	fmt.Fprintf(w, "\nfleet benchmark: N=%d destinations, K=%d objects per placement, P=%d placements, %d-byte objects; %d cores, load average before %.2f %.2f %.2f\n\n",
		c.N, c.K, c.P, c.ObjectSize, r.Machine.Cores, r.Machine.LoadAverage[0], r.Machine.LoadAverage[1], r.Machine.LoadAverage[2])
	fmt.Fprintf(w, "| measure | value | target |\n|---|---|---|\n")
	s := r.Setup
	fmt.Fprintf(w, "| set-up, not counted: kcp start / center / %d locations / mailboxes ready / pclusters / credentials / syncers ready / workload | %.0f / %.0f / %.0f / %.0f / %.0f / %.0f / %.0f / %.0f s (total %.0f s) | |\n",
		c.N, s.KCPStartSeconds, s.CenterSeconds, s.LocationsSeconds, s.MailboxesSeconds, s.PClustersSeconds, s.CredentialsSeconds, s.SyncersSeconds, s.WorkloadSeconds, s.TotalSeconds)
	fmt.Fprintf(w, "| raw: %d objects into the mailboxes, %d at a time (center kcp CPU) | %.1f s (%.0f/s; %.1f s) | |\n",
		r.Raw.Objects, r.Raw.Parallelism, r.Raw.MailboxSeconds, r.Raw.MailboxObjectsPerSecond, r.Raw.MailboxCenterKCPCPUSeconds)
	fmt.Fprintf(w, "| raw: %d objects into the edge clusters, %d at a time (edge kcp CPU) | %.1f s (%.0f/s; %.1f s) | |\n",
		r.Raw.Objects, r.Raw.Parallelism, r.Raw.EdgeSeconds, r.Raw.EdgeObjectsPerSecond, r.Raw.EdgeKCPCPUSeconds)
	f := r.Fanout
	fmt.Fprintf(w, "| fan-out: EdgePlacements created to all %d copies in the mailboxes | %.1f s (%.0f/s) | |\n", f.Copies, f.MailboxSeconds, f.MailboxObjectsPerSecond)
	fmt.Fprintf(w, "| mailbox-write rate / raw rate | %.0f%% | >= 70%% |\n", 100*f.MailboxRatioToRaw)
	fmt.Fprintf(w, "| fan-out: one destination's mailbox complete, p50 / p99 | %.1f / %.1f s | |\n", f.MailboxP50Seconds, f.MailboxP99Seconds)
	fmt.Fprintf(w, "| fan-out: EdgePlacements created to all %d objects at the edges | %.1f s | |\n", f.Copies, f.EdgeSeconds)
	fmt.Fprintf(w, "| edge time / raw time of 2*N*K writes (mailboxes + edges) | %.2f | <= 2 |\n", f.EdgeRatioToRaw)
	fmt.Fprintf(w, "| fan-out: one destination complete at its edge, p50 / p99 | %.1f / %.1f s | |\n", f.EdgeP50Seconds, f.EdgeP99Seconds)
	fmt.Fprintf(w, "| CPU during the fan-out: controllers / syncers / center kcp / edge kcp / bench | %.1f / %.1f / %.1f / %.1f / %.1f s | |\n",
		f.ControllerCPUSeconds, f.SyncersCPUSeconds, f.CenterKCPCPUSeconds, f.EdgeKCPCPUSeconds, f.BenchCPUSeconds)
	fmt.Fprintf(w, "| requests the center kcp served during the fan-out, most frequent | %s | |\n", describeRequests(f.CenterKCPRequests, false))
	fmt.Fprintf(w, "| requests the edge kcp served during the fan-out, most frequent | %s | |\n", describeRequests(f.EdgeKCPRequests, false))
	u := r.Update
	fmt.Fprintf(w, "| update: one object edited to its %d edges, p50 / p90 / p99 / max | %.2f / %.2f / %.2f / %.2f s | p90 < 5 s |\n", u.Destinations, u.P50Seconds, u.P90Seconds, u.P99Seconds, u.MaxSeconds)
	if st := r.Status; st.Measured {
		fmt.Fprintf(w, "| status: a Deployment turned ready at an edge to status.summary.ready, %d destinations, p50 / p99 / max | %.2f / %.2f / %.2f s | p99 < 2 s |\n",
			st.Destinations, *st.P50Seconds, *st.P99Seconds, *st.MaxSeconds)
	} else {
		fmt.Fprintf(w, "| status: a Deployment turned ready at an edge to status.summary.ready | not measured: %s | p99 < 2 s |\n", st.NotMeasured)
	}
	i := r.Idle
	fmt.Fprintf(w, "| idle %.0f s: CPU of edge-controller-manager / the syncers' process (all %d) | %.1f%% / %.1f%% of a core | < 5%% each |\n", i.WindowSeconds, c.N, i.ControllerCPUPercent, i.SyncersCPUPercent)
	fmt.Fprintf(w, "| idle %.0f s: CPU of the center kcp / the edge kcp | %.1f%% / %.1f%% of a core | |\n", i.WindowSeconds, i.CenterKCPCPUPercent, i.EdgeKCPCPUPercent)
	fmt.Fprintf(w, "| idle: requests the center kcp served, most frequent | %s | |\n", describeRequests(i.CenterKCPRequests, true))
	fmt.Fprintf(w, "| idle: requests the edge kcp served, most frequent | %s | |\n", describeRequests(i.EdgeKCPRequests, true))
	m := r.Memory
	fmt.Fprintf(w, "| edge-controller-manager RSS, peak | %.0f MB, %.0f MB | < 300 MB |\n", m.ControllerRSSMB, m.ControllerPeakRSSMB)
	fmt.Fprintf(w, "| syncers' process RSS, per syncer | %.0f MB, %.1f MB | |\n", m.SyncersRSSMB, m.SyncersRSSPerSyncerMB)
	fmt.Fprintf(w, "| kcp RSS: center / edge | %.0f / %.0f MB | |\n", m.CenterKCPRSSMB, m.EdgeKCPRSSMB)
	fmt.Fprintf(w, "| kcp RSS growth per destination: center (mailbox and its contents) / edge (pcluster) | %.1f / %.1f MB | |\n", m.CenterKCPMBPerDestination, m.EdgeKCPMBPerPCluster)
}

// seconds returns the durations from t0 to each time, sorted.
func seconds(t0 time.Time, times []time.Time) []float64 {
	out := make([]float64, 0, len(times))
	for _, t := range times {
		out = append(out, t.Sub(t0).Seconds())
	}
	sort.Float64s(out)
	return out
}

// percentile is framework.Percentile of sorted, 0 for none.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return framework.Percentile(sorted, p)
}
