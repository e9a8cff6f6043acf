// Command bench is edge-mc's fleet benchmark: the whole system at scale, measured against the
// server's own limit in the same run. It starts two kcp servers, a center and an "edge" one
// whose logical clusters simulate the edge clusters (pclusters), and builds a fleet of N
// destinations: N SyncTargets and Locations (kubectl edge ensure location), their mailboxes
// (edge-controller-manager with every controller), N pclusters (lean workspaces of the edge kcp
// serving Deployments), and N syncers, each with its own mailbox credential (kubectl edge
// prep-for-syncer --kubeconfig-only), all in one child process (test/bench/syncers) so that
// their CPU and memory are theirs alone. The set-up is timed and reported but is not part of
// any figure. Then it measures:
//
//   - fan-out: P EdgePlacements, each selecting N/P destinations (by a Location label) and a
//     namespace of K objects of the workload workspace (one Deployment, K-1 ConfigMaps, each
//     carrying -object-size bytes), are created. The mailbox phase runs until every
//     destination's Assemblage of its placement carries all K objects in its mailbox: the bench
//     watches Assemblages and AssemblageParts across all mailboxes (the virtual workspace of the
//     mailbox.edge.kcp.io export) and decodes each with package transport, as a syncer does.
//     The edge phase runs until all N*K objects are at the edges, per destination too (watches
//     on the pclusters). The center kcp's writes (apiserver_request_total) are counted by verb
//     and resource: during the mailbox phase, and the Assemblage writes of the whole fan-out,
//     one per destination when the transport works as designed;
//   - update: the Deployment of the first placement gets a new image; the time until each of its
//     destinations' assemblages carries it, and until each of their edges has it, and the
//     center's writes meanwhile;
//   - status: at -status-destinations of its destinations, one after the other, the bench makes
//     the Deployment at the edge ready (status subresource, as no controller runs there) and
//     times until the EdgePlacement's status.summary.ready counts it (the syncer reports it in
//     the assemblage's status, the summarizer rolls it up). Without a status summarizer this
//     phase ends after -status-timeout, reported as not measured, with why;
//     With -collect, every placement names a StatusCollector (the sum of the Deployments'
//     status.availableReplicas, and their count) and a HealthRule decides when Deployments are
//     ready; once the Deployments turned ready show in the summary, the bench waits for the
//     placements' status.collected to hold the right sum and count, and for the assemblages'
//     status to show the rule's verdict at every destination, and reports both;
//   - idle: CPU of edge-controller-manager, of the syncers' process and of both kcp servers
//     over -idle with nothing changing, and every request the center kcp served meanwhile, by
//     verb, resource and subresource, the most frequent first;
//   - memory: RSS of the same processes; each kcp's RSS with the fleet minus its RSS when fresh,
//     over N;
//   - raw: a plain client, -parallel at a time, writes N*K objects of the same sizes into a
//     namespace of their own in every mailbox (K ConfigMaps each: mailboxes serve no
//     Deployments), then the workload's N*K objects (Deployments and ConfigMaps) into every
//     pcluster, then updates one ConfigMap in every mailbox (N writes). They stay there; no
//     syncer or controller looks at that namespace;
//   - bare: the fleet is stopped, and a fresh kcp started with the center's arguments gets N
//     bare workspaces and no client; its CPU over the same -idle window is what the center's
//     idle CPU is compared with. Then it is stopped.
//
// With -shards 2 (or more) the center is a sharded kcp, started as test/e2e/sharded starts one
// (framework.StartShardedKCP): a root shard, further shards, a cache server and a front-proxy.
// Every client (kubectl edge, edge-controller-manager, the syncers, the bench's watches and its
// raw client) reaches it through the front-proxy only. kcp places the mailboxes on the shards;
// the bench reports how many each holds, and each shard's writes (its own
// apiserver_request_total) and CPU during the fan-out and the idle window, and its RSS, in a
// section of their own; the center kcp's figures elsewhere are the shards' sums. Running
// -shards 1 and -shards 2 one after the other on the same machine compares the two centers.
//
// The ratios of issue 17 compare the mailbox phase's rate with the raw rate of the same N*K
// writes, the edge phase's time with the raw time of 2*N*K writes, the update's p90 with the raw
// time of N writes, and the idle center kcp with the bare kcp. -no-webhook-admission starts the
// center kcp (and the bare one) with --disable-admission-plugins for kcp's webhook admission
// plugins, so that both configurations can be compared; the bench first checks that bin/kcp
// takes that flag (kcp v0.31.2 does not: its start command refuses the admission flags).
//
// It prints the figures as a markdown table on stdout (progress goes to stderr) and writes
// them as JSON with -json. Figures are reported, never asserted. Run it with `make bench`
// (N=300, K=10; BENCH_ARGS passes more flags) or `go run ./test/bench -n 300 -k 10`; it needs
// bin/kcp (make tools) and builds edge-mc's commands from the current tree. -keep leaves the
// fleet running for profiling until interrupted (the bare kcp is then not measured); -profile
// DIR saves CPU profiles of both kcp servers, edge-controller-manager and the syncers'
// process, taken from the start of the fan-out, of the update and of the idle window. See docs/dev/performance.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// config is the benchmark's shape, from the flags.
type config struct {
	N          int `json:"n"`
	K          int `json:"k"`
	P          int `json:"p"`
	ObjectSize int `json:"objectSize"`
	// Secrets makes the k-1 objects beside each Deployment Secrets, which travel sealed for each
	// destination's key, in place of ConfigMaps.
	Secrets  bool `json:"secrets"`
	Parallel int  `json:"parallel"`
	Workers  int  `json:"workers"`
	// StatusDestinations is how many destinations the status phase changes, one at a time.
	StatusDestinations   int     `json:"statusDestinations"`
	StatusTimeoutSeconds float64 `json:"statusTimeoutSeconds"`
	IdleSeconds          float64 `json:"idleSeconds"`
	ProfileSeconds       int     `json:"profileSeconds"`
	// NoWebhookAdmission starts the center kcp, and the bare kcp it is compared with, without
	// kcp's webhook admission plugins; CenterKCPArgs are the arguments that adds.
	NoWebhookAdmission bool     `json:"noWebhookAdmission"`
	CenterKCPArgs      []string `json:"centerKCPArgs"`
	// Shards is how many kcp shards the center has: 1, one kcp; more, a sharded kcp behind a
	// front-proxy, with a cache server.
	Shards int `json:"shards"`
	// EdgeKCPAdmin: the syncers and the raw client reach the pclusters as kcp-admin, not as the
	// edge kcp's shard admin (system:masters, exempt from kcp's API priority and fairness).
	EdgeKCPAdmin bool `json:"edgeKCPAdmin"`
	// Push runs every destination in push mode: edge-controller-manager's push host runs the
	// syncers (kubectl edge ensure location --push), and no syncers' process is started; the
	// controllers' CPU and memory then include the syncers'.
	Push bool `json:"push"`
	// Collect adds a StatusCollector (the sum of the Deployments' availableReplicas, and their
	// count) named in every placement's spec.statusCollectors, and a HealthRule for Deployments;
	// the status phase checks that status.collected holds the right sum and that the rule
	// decided at every destination.
	Collect bool `json:"collect"`

	statusTimeout, idle time.Duration
	jsonOut             string
	profileDir          string
	keep                bool
}

// maxObjectSize keeps every object well under etcd's request limit.
const maxObjectSize = 512 * 1024

func (c config) validate() error {
	switch {
	case c.N < 1:
		return errors.New("-n must be at least 1")
	case c.K < 1:
		return errors.New("-k must be at least 1 (object 1 is a Deployment, the others ConfigMaps)")
	case c.P < 1 || c.P > c.N:
		return fmt.Errorf("-p must be from 1 to -n (%d): each placement needs a destination", c.N)
	case c.ObjectSize < 0 || c.ObjectSize > maxObjectSize:
		return fmt.Errorf("-object-size must be from 0 to %d bytes", maxObjectSize)
	case c.Parallel < 1 || c.Workers < 1:
		return errors.New("-parallel and -workers must be at least 1")
	case c.StatusDestinations < 1:
		return errors.New("-status-destinations must be at least 1")
	case c.statusTimeout <= 0 || c.idle <= 0:
		return errors.New("-status-timeout and -idle must be positive")
	case c.profileDir != "" && c.ProfileSeconds < 1:
		return errors.New("-profile-seconds must be at least 1")
	case c.Shards < 1:
		return errors.New("-shards must be at least 1 (1: the center is one kcp; 2 or more: a sharded kcp behind a front-proxy)")
	}
	return nil
}

func main() {
	var c config
	flag.IntVar(&c.N, "n", 300, "destinations: SyncTargets, mailboxes, syncers and pclusters")
	flag.IntVar(&c.K, "k", 10, "objects per placement: one Deployment and k-1 ConfigMaps")
	flag.IntVar(&c.P, "p", 1, "EdgePlacements; placement j selects destinations i with i%p == j, so each destination gets k objects")
	flag.BoolVar(&c.Secrets, "secrets", false, "the k-1 objects beside each Deployment are Secrets, sealed for each destination's key, instead of ConfigMaps (compare a run with and without)")
	flag.IntVar(&c.ObjectSize, "object-size", 1024, "bytes of payload in each object (ConfigMap data, Deployment pod template annotation)")
	flag.IntVar(&c.Parallel, "parallel", 16, "requests at once of the set-up and of the raw client")
	flag.IntVar(&c.Workers, "workers", 8, "edge-controller-manager --workers")
	flag.IntVar(&c.StatusDestinations, "status-destinations", 20, "destinations whose Deployment the status phase turns ready, one at a time")
	flag.DurationVar(&c.statusTimeout, "status-timeout", time.Minute, "how long the status phase waits for the summary to appear, and for each change to show in it")
	flag.DurationVar(&c.idle, "idle", time.Minute, "the window over which idle CPU is measured")
	flag.StringVar(&c.jsonOut, "json", "", "also write the figures as JSON to this file")
	flag.StringVar(&c.profileDir, "profile", "", "save CPU profiles of both kcp servers, edge-controller-manager and the syncers' process, taken from the start of the fan-out, the update and the idle window, into this directory")
	flag.IntVar(&c.ProfileSeconds, "profile-seconds", 30, "length of the -profile CPU profiles")
	flag.BoolVar(&c.NoWebhookAdmission, "no-webhook-admission", false,
		"start the center kcp (and the bare kcp it is compared with) with "+noWebhookAdmission+": no admission webhooks in that kcp")
	flag.IntVar(&c.Shards, "shards", 1, "kcp shards of the center: 1 is one kcp; 2 or more start a sharded kcp (root shard, further shards, a cache server, a front-proxy that every client goes through) and report each shard's writes, CPU and mailboxes")
	flag.BoolVar(&c.EdgeKCPAdmin, "edge-kcp-admin", false, "the syncers and the raw client reach the pclusters as kcp-admin, whose requests all share the edge kcp's one priority level (catch-all), which refuses with 429 what exceeds its concurrency; by default they reach them as the edge kcp's shard admin (system:masters), which API priority and fairness exempts, since the edge kcp stands in for as many edge clusters as destinations, each of which serves one syncer")
	flag.BoolVar(&c.Push, "push", false, "push mode: every destination's syncer runs in edge-controller-manager (kubectl edge ensure location --push with the pcluster's kubeconfig), not in the syncers' process, which is not started; compare with a run without it for the cost of a push target")
	flag.BoolVar(&c.Collect, "collect", false, "add a StatusCollector (sum of the Deployments' status.availableReplicas and their count) named by every EdgePlacement, and a HealthRule for Deployments (ready when availableReplicas reaches spec.replicas); the status phase checks the placement's status.collected and the rule's verdicts (compare a run with and without)")
	flag.BoolVar(&c.keep, "keep", false, "leave the fleet running after the run, until interrupted (for profiling and poking); the bare kcp is then not measured")
	flag.Parse()
	if err := c.validate(); err != nil {
		fmt.Fprintf(os.Stderr, "fleet benchmark: %v\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if _, err := run(ctx, c, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "fleet benchmark: %v\n", err)
		os.Exit(1)
	}
}

func say(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s  "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}
