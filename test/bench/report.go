package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
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
	// Collect is what -collect's status collector and health rule showed.
	Collect collectFigures `json:"collect"`
	Idle    idleFigures    `json:"idle"`
	Memory  memoryFigures  `json:"memory"`
	// Bare is the idle kcp that the center's idle CPU is compared with.
	Bare bareFigures `json:"bare"`
	// Sharded is the center's figures by shard, with -shards 2 or more; absent otherwise.
	Sharded *shardedFigures `json:"sharded,omitempty"`
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

// rawFigures: a plain parallel client writes N*K objects of the workload's sizes into a
// namespace of their own in every mailbox (K ConfigMaps each: mailboxes serve no Deployments),
// then the workload's N*K objects (a Deployment and K-1 ConfigMaps each) into every edge
// cluster; then N writes, one object updated in every mailbox.
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
	// Updates (N) is how many writes the last step makes, one per mailbox, and UpdateSeconds
	// how long they took: what the update phase's p90 is compared with.
	Updates       int     `json:"updates"`
	UpdateSeconds float64 `json:"updateSeconds"`
}

// fanoutFigures: from the creation of the EdgePlacements until every destination's assemblage
// in its mailbox carries all its objects, and until every object is at every edge.
type fanoutFigures struct {
	// Objects is N*K: the objects that reach the edges, K in each of N assemblages.
	Objects     int `json:"objects"`
	Assemblages int `json:"assemblages"`
	// MailboxSeconds: until every destination's assemblage carries all K objects.
	MailboxSeconds          float64 `json:"mailboxSeconds"`
	MailboxObjectsPerSecond float64 `json:"mailboxObjectsPerSecond"`
	// MailboxRatioToRaw is the mailbox phase's rate of objects over the raw client's rate of the
	// same N*K objects into the mailboxes (the raw time over the mailbox phase's time).
	MailboxRatioToRaw float64 `json:"mailboxRatioToRaw"`
	MailboxP50Seconds float64 `json:"mailboxPerDestinationP50Seconds"`
	MailboxP99Seconds float64 `json:"mailboxPerDestinationP99Seconds"`
	EdgeSeconds       float64 `json:"edgeSeconds"`
	// EdgeRatioToRaw is EdgeSeconds over the raw time of 2*N*K writes: the raw client's time into
	// the mailboxes plus its time into the edge clusters.
	EdgeRatioToRaw float64 `json:"edgeRatioToRaw"`
	EdgeP50Seconds float64 `json:"edgePerDestinationP50Seconds"`
	EdgeP99Seconds float64 `json:"edgePerDestinationP99Seconds"`
	// EdgeDestinations is how many destinations held all K objects at their edge at the end.
	EdgeDestinations int `json:"edgeDestinations"`
	// CPU seconds each process used during the fan-out, for where the time goes.
	ControllerCPUSeconds float64 `json:"controllerCPUSeconds"`
	SyncersCPUSeconds    float64 `json:"syncersCPUSeconds"`
	CenterKCPCPUSeconds  float64 `json:"centerKCPCPUSeconds"`
	EdgeKCPCPUSeconds    float64 `json:"edgeKCPCPUSeconds"`
	BenchCPUSeconds      float64 `json:"benchCPUSeconds"`
	// MailboxPhaseCenterWrites is every write the center kcp served during the mailbox phase,
	// by verb and resource, the most frequent first; MailboxPhaseCenterWritesTotal their sum.
	MailboxPhaseCenterWrites      []requestRate `json:"mailboxPhaseCenterWrites"`
	MailboxPhaseCenterWritesTotal float64       `json:"mailboxPhaseCenterWritesTotal"`
	// AssemblageWrites counts the writes of Assemblages and AssemblageParts (not their status)
	// over the whole fan-out, and per destination; AssemblageStatusWrites the syncers' reports.
	AssemblageWrites               float64 `json:"assemblageWrites"`
	AssemblageWritesPerDestination float64 `json:"assemblageWritesPerDestination"`
	AssemblageStatusWrites         float64 `json:"assemblageStatusWrites"`
	// CenterWritesTotal is every write the center kcp served over the whole fan-out.
	CenterWritesTotal float64 `json:"centerWritesTotal"`
	// AssemblageBytes is the JSON size of every destination's assemblage and parts once all are
	// complete (what kcp stores, and each syncer reads); AssemblageBytesPerDestination per
	// destination.
	AssemblageBytes               int     `json:"assemblageBytes"`
	AssemblageBytesPerDestination float64 `json:"assemblageBytesPerDestination"`
	// The most frequent requests each kcp served during the fan-out.
	CenterKCPRequests []requestRate `json:"centerKCPRequests"`
	EdgeKCPRequests   []requestRate `json:"edgeKCPRequests"`
	// The requests each kcp refused with 429 (Too Many Requests) during the fan-out, to be sent
	// again after the server's Retry-After.
	CenterKCPRefused float64 `json:"centerKCPRefused"`
	EdgeKCPRefused   float64 `json:"edgeKCPRefused"`
}

// updateFigures: one workload object edited, the time until each destination's assemblage
// carries the change, and until its edge has it.
type updateFigures struct {
	Destinations      int     `json:"destinations"`
	MailboxP50Seconds float64 `json:"mailboxP50Seconds"`
	MailboxP90Seconds float64 `json:"mailboxP90Seconds"`
	MailboxMaxSeconds float64 `json:"mailboxMaxSeconds"`
	P50Seconds        float64 `json:"p50Seconds"`
	P90Seconds        float64 `json:"p90Seconds"`
	P99Seconds        float64 `json:"p99Seconds"`
	MaxSeconds        float64 `json:"maxSeconds"`
	// P90RatioToRaw is P90Seconds over the raw time of N writes (raw.updateSeconds).
	P90RatioToRaw float64 `json:"p90RatioToRaw"`
	// AssemblageWrites counts the writes of Assemblages and parts until every edge had the
	// change: one per destination of the edited object when only what changed is written.
	AssemblageWrites float64 `json:"assemblageWrites"`
	// CenterWrites is every write the center kcp served meanwhile, by verb and resource; the
	// counts include the attempts it refused with 429, CenterKCPRefused in all.
	CenterWrites     []requestRate `json:"centerWrites"`
	CenterKCPRefused float64       `json:"centerKCPRefused"`
	// CenterWritesTotal is their sum.
	CenterWritesTotal float64 `json:"centerWritesTotal"`
}

// statusFigures: a Deployment turned ready at an edge, the time until its EdgePlacement's
// status.summary.ready counts it; then turned not ready again, in a stream of changes. Null
// figures and a NotMeasured reason when it could not be measured.
type statusFigures struct {
	Destinations int    `json:"destinations"`
	Measured     bool   `json:"measured"`
	NotMeasured  string `json:"notMeasured"`
	// P50Seconds, P99Seconds and MaxSeconds are of isolated changes: each made once the
	// summarizer's coalescing period has passed since the summary last changed.
	P50Seconds *float64 `json:"p50Seconds"`
	P99Seconds *float64 `json:"p99Seconds"`
	MaxSeconds *float64 `json:"maxSeconds"`
	// StreamP50Seconds and StreamP99Seconds are of as many changes made one right after the
	// other (each Deployment turned not ready again): each waits for the end of the period
	// that the one before began, CoalescePeriodSeconds.
	StreamP50Seconds      float64 `json:"streamP50Seconds"`
	StreamP99Seconds      float64 `json:"streamP99Seconds"`
	CoalescePeriodSeconds float64 `json:"coalescePeriodSeconds"`
	// Over the whole phase (Seconds, with -collect's check): every write the center kcp served,
	// the syncers' status writes among them, and the CPU seconds of edge-controller-manager and
	// of the syncers' process.
	Seconds                float64 `json:"seconds"`
	CenterWritesTotal      float64 `json:"centerWritesTotal"`
	AssemblageStatusWrites float64 `json:"assemblageStatusWrites"`
	ControllerCPUSeconds   float64 `json:"controllerCPUSeconds"`
	SyncersCPUSeconds      float64 `json:"syncersCPUSeconds"`
}

// idleFigures: CPU use over a window with nothing changing, in percent of one core.
type idleFigures struct {
	WindowSeconds        float64 `json:"windowSeconds"`
	ControllerCPUPercent float64 `json:"controllerCPUPercent"`
	// SyncersCPUPercent is the process hosting all N syncers.
	SyncersCPUPercent   float64 `json:"syncersCPUPercent"`
	CenterKCPCPUPercent float64 `json:"centerKCPCPUPercent"`
	EdgeKCPCPUPercent   float64 `json:"edgeKCPCPUPercent"`
	// CenterKCPRatioToBare is the center kcp's idle CPU over that of the same kcp holding as
	// many bare workspaces with no clients (the bare section); 0 when that was not measured.
	CenterKCPRatioToBare float64 `json:"centerKCPRatioToBare"`
	// Every request the center kcp served while idle, by verb, resource and subresource, the
	// most frequent first: what keeps an idle center busy.
	CenterKCPRequests []requestRate `json:"centerKCPRequests"`
	// The most frequent requests the edge kcp served while idle.
	EdgeKCPRequests []requestRate `json:"edgeKCPRequests"`
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
	// Each kcp's RSS when fresh: once started, before anything was created in it.
	CenterKCPFreshRSSMB float64 `json:"centerKCPFreshRSSMB"`
	EdgeKCPFreshRSSMB   float64 `json:"edgeKCPFreshRSSMB"`
	// Each kcp's RSS with the fleet minus its fresh RSS, over N: per destination, a mailbox (and
	// its SyncTarget, Location, syncer watches and assemblage), and an edge cluster (a lean
	// workspace with the Deployment CRD, and the objects).
	CenterKCPMBPerDestination float64 `json:"centerKCPMBPerDestination"`
	EdgeKCPMBPerPCluster      float64 `json:"edgeKCPMBPerPCluster"`
	// CenterKCPSetUpRSSMB is the center kcp's RSS once the ESPW, the inventory and workload
	// workspaces and edge-controller-manager were up, before any destination existed; the growth
	// from there over N is a destination's own cost, without the fixed cost that
	// CenterKCPMBPerDestination spreads over N.
	CenterKCPSetUpRSSMB                float64 `json:"centerKCPSetUpRSSMB"`
	CenterKCPMBPerDestinationFromSetUp float64 `json:"centerKCPMBPerDestinationFromSetUp"`
}

// bareFigures: after the fleet is stopped, a fresh kcp started as the center was (same binary,
// same arguments) gets N bare workspaces (kcp's default type) and no client; its idle CPU is
// measured over the same window as the fleet's, then it is stopped.
type bareFigures struct {
	Measured    bool   `json:"measured"`
	NotMeasured string `json:"notMeasured"`
	Workspaces  int    `json:"workspaces"`
	// SetupSeconds: the workspaces created and ready, 'parallel' at a time.
	SetupSeconds  float64 `json:"setupSeconds"`
	WindowSeconds float64 `json:"windowSeconds"`
	CPUPercent    float64 `json:"cpuPercent"`
	FreshRSSMB    float64 `json:"freshRSSMB"`
	RSSMB         float64 `json:"rssMB"`
	// MBPerWorkspace is its RSS growth per workspace.
	MBPerWorkspace float64 `json:"mbPerWorkspace"`
	// Every request it served while idle, the most frequent first.
	Requests []requestRate `json:"requests"`
}

func writeJSON(path string, r *result) error {
	raw, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(raw, '\n'), 0o644)
}

// printTable prints the figures as a markdown table, with the targets of issue 17 beside them.
func printTable(w io.Writer, r *result) {
	c := r.Config
	admission := "stock kcp settings"
	if c.NoWebhookAdmission {
		admission = "center kcp " + strings.Join(c.CenterKCPArgs, " ")
	}
	edgeUser := "the pclusters reached as the edge kcp's shard admin (system:masters, exempt from API priority and fairness)"
	if c.EdgeKCPAdmin {
		edgeUser = "the pclusters reached as kcp-admin (the edge kcp's catch-all priority level)"
	}
	fmt.Fprintf(w, "\nfleet benchmark: N=%d destinations, K=%d objects per placement, P=%d placements, %d-byte objects; %s; %s; %d cores, load average before %.2f %.2f %.2f\n\n",
		c.N, c.K, c.P, c.ObjectSize, admission, edgeUser, r.Machine.Cores, r.Machine.LoadAverage[0], r.Machine.LoadAverage[1], r.Machine.LoadAverage[2])
	if c.Collect {
		fmt.Fprintf(w, "status you define: every EdgePlacement names StatusCollector %s (filter: Deployments; sum of status.availableReplicas and count), and HealthRule %s decides when Deployments are ready (availableReplicas >= spec.replicas) in place of kstatus\n\n",
			collectorName, healthRuleName)
	}
	if c.Push {
		fmt.Fprintf(w, "push mode: every syncer runs in edge-controller-manager (its push host), so the controllers' CPU and RSS below include the %d syncers', and there is no syncers' process (its figures are 0)\n\n", c.N)
	}
	if r.Sharded != nil {
		fmt.Fprintf(w, "center: a sharded kcp of %d shards with a cache server, reached through its front-proxy by every client, the raw client too (its writes are the front-proxy's and the shards' work); the center kcp's CPU, RSS and requests below are the shards' sums, per shard in the section after the table; the bare kcp is one kcp, not sharded\n\n",
			r.Sharded.Shards)
	}
	fmt.Fprintf(w, "| measure | value | target |\n|---|---|---|\n")
	s := r.Setup
	fmt.Fprintf(w, "| set-up, not counted: kcp start / center / %d locations / mailboxes ready / pclusters / credentials / syncers ready / workload | %.0f / %.0f / %.0f / %.0f / %.0f / %.0f / %.0f / %.0f s (total %.0f s) | |\n",
		c.N, s.KCPStartSeconds, s.CenterSeconds, s.LocationsSeconds, s.MailboxesSeconds, s.PClustersSeconds, s.CredentialsSeconds, s.SyncersSeconds, s.WorkloadSeconds, s.TotalSeconds)
	raw := r.Raw
	fmt.Fprintf(w, "| raw: %d ConfigMaps into the mailboxes, %d at a time (center kcp CPU) | %.1f s (%.1f/s; %.1f s) | |\n",
		raw.Objects, raw.Parallelism, raw.MailboxSeconds, raw.MailboxObjectsPerSecond, raw.MailboxCenterKCPCPUSeconds)
	fmt.Fprintf(w, "| raw: %d objects (Deployments, ConfigMaps) into the edge clusters, %d at a time (edge kcp CPU) | %.1f s (%.1f/s; %.1f s) | |\n",
		raw.Objects, raw.Parallelism, raw.EdgeSeconds, raw.EdgeObjectsPerSecond, raw.EdgeKCPCPUSeconds)
	fmt.Fprintf(w, "| raw: %d writes, one object updated in every mailbox | %.2f s | |\n", raw.Updates, raw.UpdateSeconds)
	f := r.Fanout
	fmt.Fprintf(w, "| mailbox phase: EdgePlacements created to every assemblage in its mailbox with all %d objects (%d assemblages, %d objects) | %.1f s (%.1f objects/s) | |\n",
		c.K, f.Assemblages, f.Objects, f.MailboxSeconds, f.MailboxObjectsPerSecond)
	fmt.Fprintf(w, "| mailbox phase rate / raw rate of the same N·K writes | %.2fx | >= 3x |\n", f.MailboxRatioToRaw)
	fmt.Fprintf(w, "| mailbox phase: one destination's assemblage complete, p50 / p99 | %.1f / %.1f s | |\n", f.MailboxP50Seconds, f.MailboxP99Seconds)
	fmt.Fprintf(w, "| center writes during the mailbox phase (%.0f), most frequent | %s | |\n", f.MailboxPhaseCenterWritesTotal, describeRequests(f.MailboxPhaseCenterWrites, false, 8))
	fmt.Fprintf(w, "| assemblage writes (Assemblages and parts) during the fan-out, per destination; syncers' status writes | %.0f, %.2f; %.0f | 1 per destination |\n",
		f.AssemblageWrites, f.AssemblageWritesPerDestination, f.AssemblageStatusWrites)
	fmt.Fprintf(w, "| fan-out: EdgePlacements created to all %d objects at the edges (%d destinations complete) | %.1f s | |\n", f.Objects, f.EdgeDestinations, f.EdgeSeconds)
	fmt.Fprintf(w, "| center writes over the whole fan-out | %.0f | |\n", f.CenterWritesTotal)
	fmt.Fprintf(w, "| edge time / raw time of 2·N·K writes (mailboxes + edges) | %.2fx | <= 0.7x |\n", f.EdgeRatioToRaw)
	fmt.Fprintf(w, "| fan-out: one destination complete at its edge, p50 / p99 | %.1f / %.1f s | |\n", f.EdgeP50Seconds, f.EdgeP99Seconds)
	fmt.Fprintf(w, "| CPU during the fan-out: controllers / syncers / center kcp / edge kcp / bench | %.1f / %.1f / %.1f / %.1f / %.1f s | |\n",
		f.ControllerCPUSeconds, f.SyncersCPUSeconds, f.CenterKCPCPUSeconds, f.EdgeKCPCPUSeconds, f.BenchCPUSeconds)
	fmt.Fprintf(w, "| requests the center kcp served during the fan-out, most frequent | %s | |\n", describeRequests(f.CenterKCPRequests, false, 6))
	fmt.Fprintf(w, "| requests the edge kcp served during the fan-out, most frequent | %s | |\n", describeRequests(f.EdgeKCPRequests, false, 6))
	fmt.Fprintf(w, "| requests refused with 429 during the fan-out: center kcp / edge kcp | %.0f / %.0f | |\n", f.CenterKCPRefused, f.EdgeKCPRefused)
	u := r.Update
	fmt.Fprintf(w, "| update: one object edited to its %d assemblages, p50 / p90 / max | %.2f / %.2f / %.2f s | |\n", u.Destinations, u.MailboxP50Seconds, u.MailboxP90Seconds, u.MailboxMaxSeconds)
	fmt.Fprintf(w, "| update: one object edited to its %d edges, p50 / p90 / p99 / max | %.2f / %.2f / %.2f / %.2f s | |\n", u.Destinations, u.P50Seconds, u.P90Seconds, u.P99Seconds, u.MaxSeconds)
	fmt.Fprintf(w, "| update p90 / raw time of N writes | %.2fx | <= 1.3x |\n", u.P90RatioToRaw)
	fmt.Fprintf(w, "| update: assemblage writes; center writes (%.0f), most frequent (each with the attempts refused with 429: %.0f in all) | %.0f; %s | %d |\n", u.CenterWritesTotal, u.CenterKCPRefused, u.AssemblageWrites, describeRequests(u.CenterWrites, false, 5), u.Destinations)
	if st := r.Status; st.Measured {
		fmt.Fprintf(w, "| status: a Deployment turned ready at an edge to status.summary.ready, %d destinations one at a time, each once the summary was quiet for %.0f s, p50 / p99 / max | %.2f / %.2f / %.2f s | p99 < 1 s |\n",
			st.Destinations, st.CoalescePeriodSeconds, *st.P50Seconds, *st.P99Seconds, *st.MaxSeconds)
		fmt.Fprintf(w, "| status: the same Deployments turned not ready, one right after the other (each waits for the summarizer's %.0f s window begun by the one before), p50 / p99 | %.2f / %.2f s | |\n",
			st.CoalescePeriodSeconds, st.StreamP50Seconds, st.StreamP99Seconds)
	} else {
		fmt.Fprintf(w, "| status: a Deployment turned ready at an edge to status.summary.ready | not measured: %s | p99 < 1 s |\n", cell(st.NotMeasured))
	}
	st := r.Status
	fmt.Fprintf(w, "| status phase (%.0f s): center writes (syncers' status writes); CPU of edge-controller-manager / the syncers' process | %.0f (%.0f); %.1f / %.1f s | |\n",
		st.Seconds, st.CenterWritesTotal, st.AssemblageStatusWrites, st.ControllerCPUSeconds, st.SyncersCPUSeconds)
	if col := r.Collect; col.Enabled && col.Measured {
		fmt.Fprintf(w, "| status collector %s: %s's status.collected, sum of availableReplicas (want: the %d Deployments turned ready); Deployments counted from destinations over every placement; errors; seconds after the summary | %.0f (want %d); %d from %d (want %d); %d; %.2f s | |\n",
			col.Collector, placementName(0), col.ReadyDeployments, col.Available, col.WantAvailable, col.Deployments, col.Destinations, c.N, col.Errors, col.Seconds)
		fmt.Fprintf(w, "| health rule %s: destinations whose assemblage reports the Deployment ready / not ready by the rule | %d / %d (want %d / %d) | |\n",
			col.HealthRule, col.RuleReady, col.RuleNotReady, col.ReadyDeployments, c.N-col.ReadyDeployments)
	} else if col.Enabled {
		fmt.Fprintf(w, "| status collector %s and health rule %s | FAILED: %s | |\n", col.Collector, col.HealthRule, cell(col.NotMeasured))
	}
	i := r.Idle
	fmt.Fprintf(w, "| idle %.0f s: CPU of edge-controller-manager / the syncers' process (all %d) | %.1f%% / %.1f%% of a core | < 5%% each |\n", i.WindowSeconds, c.N, i.ControllerCPUPercent, i.SyncersCPUPercent)
	fmt.Fprintf(w, "| idle %.0f s: CPU of the center kcp / the edge kcp | %.1f%% / %.1f%% of a core | |\n", i.WindowSeconds, i.CenterKCPCPUPercent, i.EdgeKCPCPUPercent)
	if b := r.Bare; b.Measured {
		fmt.Fprintf(w, "| idle %.0f s: CPU of the same kcp holding %d bare workspaces, no clients (separate, after the fleet stopped) | %.1f%% of a core | |\n", b.WindowSeconds, b.Workspaces, b.CPUPercent)
		fmt.Fprintf(w, "| idle center kcp / bare kcp | %.2fx | <= 2x |\n", i.CenterKCPRatioToBare)
	} else {
		fmt.Fprintf(w, "| idle center kcp / the same kcp holding %d bare workspaces | not measured: %s | <= 2x |\n", c.N, cell(b.NotMeasured))
	}
	fmt.Fprintf(w, "| idle: requests the center kcp served, most frequent | %s | |\n", describeRequests(i.CenterKCPRequests, true, 10))
	if b := r.Bare; b.Measured {
		fmt.Fprintf(w, "| idle: requests the bare kcp served, most frequent | %s | |\n", describeRequests(b.Requests, true, 5))
	}
	fmt.Fprintf(w, "| idle: requests the edge kcp served, most frequent | %s | |\n", describeRequests(i.EdgeKCPRequests, true, 5))
	m := r.Memory
	fmt.Fprintf(w, "| edge-controller-manager RSS, peak | %.0f MB, %.0f MB | < 300 MB |\n", m.ControllerRSSMB, m.ControllerPeakRSSMB)
	fmt.Fprintf(w, "| syncers' process RSS, per syncer | %.0f MB, %.1f MB | |\n", m.SyncersRSSMB, m.SyncersRSSPerSyncerMB)
	fmt.Fprintf(w, "| kcp RSS: center / edge (fresh: %.0f / %.0f MB) | %.0f / %.0f MB | |\n", m.CenterKCPFreshRSSMB, m.EdgeKCPFreshRSSMB, m.CenterKCPRSSMB, m.EdgeKCPRSSMB)
	fmt.Fprintf(w, "| center kcp memory per destination (RSS with the fleet minus fresh, over N) | %.1f MB | < 6 MB |\n", m.CenterKCPMBPerDestination)
	fmt.Fprintf(w, "| center kcp RSS growth per destination from the center's set-up (%.0f MB: ESPW, IMW, WMW, edge-controller-manager) | %.1f MB | |\n",
		m.CenterKCPSetUpRSSMB, m.CenterKCPMBPerDestinationFromSetUp)
	fmt.Fprintf(w, "| edge kcp memory per pcluster | %.1f MB | |\n", m.EdgeKCPMBPerPCluster)
	if b := r.Bare; b.Measured {
		fmt.Fprintf(w, "| bare kcp RSS: fresh / with %d workspaces, per workspace | %.0f / %.0f MB, %.1f MB | |\n", b.Workspaces, b.FreshRSSMB, b.RSSMB, b.MBPerWorkspace)
	}
}

// cell makes text fit in one cell of a markdown table.
func cell(s string) string {
	return strings.NewReplacer("\n", " / ", "|", "\\|").Replace(s)
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
