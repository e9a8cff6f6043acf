package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/cli"
	"github.com/kcp-dev/edge-mc/pkg/workspaces"
	"github.com/kcp-dev/edge-mc/test/bench/syncerhost"
	"github.com/kcp-dev/edge-mc/test/framework"
)

// destination is one edge cluster of the fleet: its SyncTarget and Location (named alike), its
// mailbox, its pcluster and its syncer's mailbox credential.
type destination struct {
	index, group      int
	name, uid         string
	mailbox           logicalcluster.Path
	mailboxCluster    logicalcluster.Name
	pcluster          *framework.PCluster
	mailboxKubeconfig string
	// shard is the name of the shard that holds the mailbox, on a sharded center.
	shard string
}

// fleet is everything the benchmark set up, and how to take it down.
type fleet struct {
	cfg config
	// feed holds the mailboxes' assemblages as the bench's watch sees them.
	feed *assemblageFeed
	// dir holds the kubeconfigs, the syncers' spec and the processes' logs.
	dir, binDir string
	// center is what every client reaches the center by: the center kcp, or the front-proxy
	// of a sharded center (then sharded). shards are its kcp processes, measured one by one.
	center, edge   *framework.Server
	sharded        *framework.ShardedCenter
	shards         []centerShard
	espw, imw, wmw logicalcluster.Path
	// wmwCluster is the workload workspace's logical cluster, which names its assemblages.
	wmwCluster   logicalcluster.Name
	ecm, syncers *framework.Command

	ecmAddress, ecmPprofAddress, syncersAddress, syncersPprofAddress string

	dests []*destination
	// Each kcp's RSS when fresh: started, nothing created in it yet.
	centerRSSFresh, edgeRSSFresh int64
	// centerRSSSetUp is the center kcp's RSS once the ESPW, the inventory and workload
	// workspaces and edge-controller-manager are up, before any destination exists.
	centerRSSSetUp int64
}

// setUp builds the fleet, timing each step into fig. It returns the fleet, as far as it got,
// even with an error, so that the caller can stop it.
func setUp(ctx context.Context, c config, fig *setupFigures) (*fleet, error) {
	start := time.Now()
	base := logicalcluster.NewPath("root:bench")
	f := &fleet{cfg: c, espw: base.Join("espw"), imw: base.Join("imw"), wmw: base.Join("wmw")}
	var err error
	if f.dir, err = os.MkdirTemp("", "edge-mc-bench-"); err != nil {
		return f, err
	}

	step := time.Now()
	if c.Shards > 1 {
		say("starting the center (a sharded kcp: %d shards, a cache server, a front-proxy) and the edge kcp, and building edge-mc's commands", c.Shards)
	} else {
		say("starting the center and the edge kcp, and building edge-mc's commands")
	}
	var wg sync.WaitGroup
	var centerErr, edgeErr, buildErr error
	wg.Add(3)
	go func() {
		defer wg.Done()
		f.center, f.sharded, centerErr = startCenter(c)
	}()
	go func() { defer wg.Done(); f.edge, edgeErr = framework.StartKCP() }()
	go func() {
		defer wg.Done()
		f.binDir, buildErr = framework.BuildPackages("./cmd/...", "./test/bench/syncers")
	}()
	wg.Wait()
	if err := errors.Join(centerErr, edgeErr, buildErr); err != nil {
		return f, err
	}
	fig.KCPStartSeconds = time.Since(step).Seconds()
	f.shards = shardsOf(f.center, f.sharded)
	f.centerRSSFresh = f.centerRSS()
	f.edgeRSSFresh, _, _ = framework.RSS(f.edge.PID())

	step = time.Now()
	if err := f.setUpCenter(ctx); err != nil {
		return f, err
	}
	fig.CenterSeconds = time.Since(step).Seconds()
	f.centerRSSSetUp = f.centerRSS()

	if err := f.setUpDestinations(ctx, fig); err != nil {
		return f, err
	}

	step = time.Now()
	if c.Push {
		say("credentials: kubectl edge ensure location --push --edge-kubeconfig for %d SyncTargets, %d at a time", c.N, c.Parallel)
	} else {
		say("credentials: kubectl edge prep-for-syncer --kubeconfig-only for %d SyncTargets, %d at a time", c.N, c.Parallel)
	}
	if err := f.writeCredentials(ctx); err != nil {
		return f, err
	}
	fig.CredentialsSeconds = time.Since(step).Seconds()

	step = time.Now()
	if err := f.startSyncers(ctx); err != nil {
		return f, err
	}
	fig.SyncersSeconds = time.Since(step).Seconds()

	step = time.Now()
	say("workload: %d namespaces of %d objects in %s", c.P, c.K, f.wmw)
	if err := f.createWorkload(ctx); err != nil {
		return f, err
	}
	fig.WorkloadSeconds = time.Since(step).Seconds()
	fig.TotalSeconds = time.Since(start).Seconds()
	say("set-up done in %.0fs", fig.TotalSeconds)
	return f, nil
}

// stopProcesses stops the fleet's processes: the syncers, edge-controller-manager and both kcp
// servers (every process of a sharded center). Stopping them again does nothing.
func (f *fleet) stopProcesses() {
	for _, c := range []*framework.Command{f.syncers, f.ecm} {
		if c != nil {
			c.Stop()
		}
	}
	for _, s := range []*framework.Server{f.center, f.edge} {
		if s != nil {
			s.Stop()
		}
	}
	if f.sharded != nil {
		f.sharded.Stop()
	}
}

// stop takes the fleet down. The working directory goes too, unless keepFiles.
func (f *fleet) stop(keepFiles bool) {
	f.stopProcesses()
	if f.binDir != "" {
		os.RemoveAll(f.binDir)
	}
	if f.dir == "" {
		return
	}
	if keepFiles {
		say("kept the benchmark's files (logs, kubeconfigs) in %s", f.dir)
		return
	}
	os.RemoveAll(f.dir)
}

// kubectlEdge runs `kubectl edge args...` in this process (package cli, which the plugin runs)
// against the center, with the admin kubeconfig and the fleet's ESPW.
func (f *fleet) kubectlEdge(ctx context.Context, args ...string) error {
	var out bytes.Buffer
	cmd := cli.NewCommand(genericclioptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out})
	cmd.SetArgs(append([]string{"--kubeconfig", f.center.KubeconfigPath, "--espw", f.espw.String()}, args...))
	if err := cmd.ExecuteContext(ctx); err != nil {
		return fmt.Errorf("kubectl edge %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	return nil
}

// setUpCenter installs the ESPW, makes the inventory and workload workspaces, and starts
// edge-controller-manager with every controller it has.
func (f *fleet) setUpCenter(ctx context.Context) error {
	say("center: kubectl edge init, ensure imw %s, ensure wmw %s", f.imw, f.wmw)
	for _, args := range [][]string{{"init"}, {"ensure", "imw", f.imw.String()}, {"ensure", "wmw", f.wmw.String()}} {
		if err := f.kubectlEdge(ctx, args...); err != nil {
			return err
		}
	}
	ports, err := framework.FreePorts(2)
	if err != nil {
		return err
	}
	f.ecmAddress = "127.0.0.1:" + strconv.Itoa(ports[0])
	f.ecmPprofAddress = "127.0.0.1:" + strconv.Itoa(ports[1])
	f.ecm, err = framework.StartCommand(filepath.Join(f.binDir, "edge-controller-manager"), filepath.Join(f.dir, "edge-controller-manager.log"),
		"--kubeconfig", f.center.KubeconfigPath, "--espw", f.espw.String(), "--workers", strconv.Itoa(f.cfg.Workers),
		"--http-address", f.ecmAddress, "--profiler-address", f.ecmPprofAddress)
	if err != nil {
		return err
	}
	say("center: edge-controller-manager started (--workers %d, log %s); waiting until it is ready", f.cfg.Workers, f.ecm.LogPath())
	if err := framework.WaitReadyz(ctx, f.ecmAddress, 3*time.Minute, f.ecm.Exited); err != nil {
		return fmt.Errorf("edge-controller-manager: %w (log: %s)", err, f.ecm.LogPath())
	}
	parent, _ := f.wmw.Parent()
	ws, err := f.center.KCP.Cluster(parent).TenancyV1alpha1().Workspaces().Get(ctx, f.wmw.Base(), metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading the workload workspace %s: %w", f.wmw, err)
	}
	if f.wmwCluster = logicalcluster.Name(ws.Spec.Cluster); f.wmwCluster == "" {
		return fmt.Errorf("the workload workspace %s has no logical cluster yet", f.wmw)
	}
	return nil
}

// setUpDestinations creates, at the same time, a SyncTarget and a Location per destination in
// the center (kubectl edge ensure location), which get their mailboxes from
// edge-controller-manager, and a pcluster per destination in the edge kcp; and waits until every
// mailbox is ready.
func (f *fleet) setUpDestinations(ctx context.Context, fig *setupFigures) error {
	c := f.cfg
	for i := range c.N {
		f.dests = append(f.dests, &destination{index: i, group: i % c.P, name: destinationName(i)})
	}
	lean, err := framework.PClusterWorkspaceType(ctx, f.edge)
	if err != nil {
		return err
	}
	say("destinations: %d SyncTargets and Locations (center) and %d pclusters (edge kcp), each %d at a time", c.N, c.N, c.Parallel)
	start := time.Now()
	var locations, pclusters, mailboxes atomic.Int64
	var wg sync.WaitGroup
	var locationsErr, pclustersErr error
	locationsDone := make(chan struct{})
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer close(locationsDone)
		locationsErr = framework.ForEach(c.N, c.Parallel, func(i int) error {
			d := f.dests[i]
			if err := f.kubectlEdge(ctx, "ensure", "location", d.name, groupLabel+"="+groupName(d.group), "--imw", f.imw.String()); err != nil {
				return err
			}
			locations.Add(1)
			return nil
		})
		fig.LocationsSeconds = time.Since(start).Seconds()
	}()
	// The edge kcp stands in for N edge clusters, each serving one syncer. As kcp-admin, all the
	// syncers' requests would share its one priority level (kcp serves no FlowSchemas, so all
	// but system:masters fall into catch-all), which refuses with 429 beyond its concurrency.
	edgeContext := framework.ShardAdminContext
	if c.EdgeKCPAdmin {
		edgeContext = ""
	}
	go func() {
		defer wg.Done()
		pclustersErr = framework.ForEach(c.N, c.Parallel, func(i int) error {
			d := f.dests[i]
			pctx, cancel := context.WithTimeout(ctx, stall)
			defer cancel()
			p, err := framework.CreateLogicalPCluster(pctx, f.edge, d.name, logicalcluster.NewPath("root").Join("pc-"+d.name),
				framework.LogicalPClusterOptions{Type: lean, CRDs: []string{pclusterCRD}, KubeconfigDir: f.dir, Context: edgeContext})
			if err != nil {
				return err
			}
			d.pcluster = p
			pclusters.Add(1)
			return nil
		})
		fig.PClustersSeconds = time.Since(start).Seconds()
	}()
	stopProgress := every(10*time.Second, func() string {
		return fmt.Sprintf("destinations: %d of %d locations created, %d mailboxes ready, %d pclusters ready (%.0fs)",
			locations.Load(), c.N, mailboxes.Load(), pclusters.Load(), time.Since(start).Seconds())
	})
	defer stopProgress()

	imw, err := dynamic.NewForConfig(f.center.ConfigFor(f.imw))
	if err != nil {
		return err
	}
	lastReady, lastChange := -1, time.Now()
	for {
		ready, err := countReadyMailboxes(ctx, imw)
		if err != nil {
			return err
		}
		mailboxes.Store(int64(ready))
		select {
		case <-locationsDone:
			if locationsErr != nil {
				return locationsErr
			}
		default:
		}
		if ready == c.N {
			break
		}
		if ready > lastReady {
			lastReady, lastChange = ready, time.Now()
		} else if time.Since(lastChange) >= stall {
			return fmt.Errorf("only %d of %d mailboxes ready after %s, none more for %s (edge-controller-manager's log: %s)",
				ready, c.N, time.Since(start).Round(time.Second), stall, f.ecm.LogPath())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
	fig.MailboxesSeconds = time.Since(start).Seconds()
	wg.Wait()
	if err := errors.Join(locationsErr, pclustersErr); err != nil {
		return err
	}
	say("destinations: %d mailboxes ready after %.0fs, %d pclusters after %.0fs", c.N, fig.MailboxesSeconds, c.N, fig.PClustersSeconds)
	return nil
}

// countReadyMailboxes counts the SyncTargets of the inventory workspace that say MailboxReady.
func countReadyMailboxes(ctx context.Context, imw dynamic.Interface) (int, error) {
	list, err := imw.Resource(syncTargetsGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, fmt.Errorf("listing the SyncTargets: %w", err)
	}
	ready := 0
	for _, item := range list.Items {
		st := &edgev1alpha1.SyncTarget{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, st); err != nil {
			return 0, err
		}
		if meta.IsStatusConditionTrue(st.Status.Conditions, edgev1alpha1.SyncTargetMailboxReady) {
			ready++
		}
	}
	return ready, nil
}

// writeCredentials writes each syncer's mailbox kubeconfig with kubectl edge prep-for-syncer
// --kubeconfig-only, and learns each destination's SyncTarget UID and mailbox.
func (f *fleet) writeCredentials(ctx context.Context) error {
	if err := framework.ForEach(len(f.dests), f.cfg.Parallel, func(i int) error {
		d := f.dests[i]
		if f.cfg.Push {
			return f.kubectlEdge(ctx, "ensure", "location", d.name, "--push", "--edge-kubeconfig", d.pcluster.KubeconfigPath, "--imw", f.imw.String())
		}
		d.mailboxKubeconfig = filepath.Join(f.dir, "mailbox-"+d.name+".kubeconfig")
		return f.kubectlEdge(ctx, "prep-for-syncer", d.name, "--imw", f.imw.String(), "--kubeconfig-only", "--output-file", d.mailboxKubeconfig)
	}); err != nil {
		return err
	}
	imw, err := dynamic.NewForConfig(f.center.ConfigFor(f.imw))
	if err != nil {
		return err
	}
	list, err := imw.Resource(syncTargetsGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing the SyncTargets: %w", err)
	}
	byName := map[string]*edgev1alpha1.SyncTarget{}
	for _, item := range list.Items {
		st := &edgev1alpha1.SyncTarget{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, st); err != nil {
			return err
		}
		byName[st.Name] = st
	}
	mailboxes, err := f.center.KCP.Cluster(f.espw).TenancyV1alpha1().Workspaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing the mailbox workspaces: %w", err)
	}
	clusterOf, shardOf := map[string]logicalcluster.Name{}, map[string]string{}
	for _, ws := range mailboxes.Items {
		clusterOf[ws.Name] = logicalcluster.Name(ws.Spec.Cluster)
		shardOf[ws.Name] = ws.Annotations[workspaces.ShardAnnotation]
	}
	var shardNames []string
	for _, s := range f.shards {
		shardNames = append(shardNames, s.name)
	}
	for _, d := range f.dests {
		st := byName[d.name]
		if st == nil || st.Status.MailboxWorkspace == "" {
			return fmt.Errorf("SyncTarget %s has no mailbox", d.name)
		}
		d.uid = string(st.UID)
		d.mailbox = logicalcluster.NewPath(st.Status.MailboxWorkspace)
		if d.mailboxCluster = clusterOf[d.mailbox.Base()]; d.mailboxCluster == "" {
			return fmt.Errorf("no workspace %s in %s for the mailbox of SyncTarget %s", d.mailbox.Base(), f.espw, d.name)
		}
		if f.sharded != nil {
			d.shard = shardNameOf(shardOf[d.mailbox.Base()], shardNames)
		}
	}
	return nil
}

// startSyncers starts the process that runs every destination's syncer, and waits until all are
// ready.
func (f *fleet) startSyncers(ctx context.Context) error {
	if f.cfg.Push {
		return f.waitForPushSyncers(ctx)
	}
	var specs []syncerhost.Spec
	for _, d := range f.dests {
		specs = append(specs, syncerhost.Spec{Name: d.name, UID: d.uid, MailboxKubeconfig: d.mailboxKubeconfig, EdgeKubeconfig: d.pcluster.KubeconfigPath})
	}
	raw, err := json.MarshalIndent(specs, "", "  ")
	if err != nil {
		return err
	}
	specPath := filepath.Join(f.dir, "syncers.json")
	if err := os.WriteFile(specPath, raw, 0o600); err != nil {
		return err
	}
	ports, err := framework.FreePorts(2)
	if err != nil {
		return err
	}
	f.syncersAddress = "127.0.0.1:" + strconv.Itoa(ports[0])
	f.syncersPprofAddress = "127.0.0.1:" + strconv.Itoa(ports[1])
	f.syncers, err = framework.StartCommand(filepath.Join(f.binDir, "syncers"), filepath.Join(f.dir, "syncers.log"),
		"-spec", specPath, "-http-address", f.syncersAddress, "-pprof-address", f.syncersPprofAddress)
	if err != nil {
		return err
	}
	say("syncers: %d syncers started in one process (log %s); waiting until all are ready", len(specs), f.syncers.LogPath())
	timeout := stall + time.Duration(len(specs))*time.Second
	stopProgress := every(10*time.Second, func() string {
		_, body, _ := framework.Readyz(f.syncersAddress)
		return "syncers: " + body
	})
	defer stopProgress()
	if err := framework.WaitReadyz(ctx, f.syncersAddress, timeout, f.syncers.Exited); err != nil {
		return fmt.Errorf("the syncers: %w (log: %s)", err, f.syncers.LogPath())
	}
	return nil
}

// createWorkload creates each placement's namespace and objects in the workload workspace.
func (f *fleet) createWorkload(ctx context.Context) error {
	wmw, err := dynamic.NewForConfig(f.center.ConfigFor(f.wmw))
	if err != nil {
		return err
	}
	if f.cfg.Collect {
		if err := createStatusRules(ctx, wmw, f.wmw); err != nil {
			return err
		}
	}
	for j := range f.cfg.P {
		ns := groupNamespace(j)
		if _, err := wmw.Resource(namespacesGVR).Create(ctx, namespaceObject(ns), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating namespace %s in %s: %w", ns, f.wmw, err)
		}
		for _, u := range workloadObjects(ns, f.cfg.K, f.cfg.ObjectSize, f.cfg.Secrets) {
			if _, err := wmw.Resource(gvrOf(u)).Namespace(ns).Create(ctx, u, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating %s %s/%s in %s: %w", u.GetKind(), ns, u.GetName(), f.wmw, err)
			}
		}
	}
	return nil
}

// createStatusRules creates the StatusCollector and the HealthRule of -collect in the workload
// workspace, and waits until the placement translator has accepted both (their CEL compiles),
// so that the destinations' SyncerConfigs carry them from the fan-out on.
func createStatusRules(ctx context.Context, wmw dynamic.Interface, where logicalcluster.Path) error {
	rules := []struct {
		gvr  schema.GroupVersionResource
		name string
		obj  *unstructured.Unstructured
	}{{collectorsGVR, collectorName, collectorObject()}, {healthRulesGVR, healthRuleName, healthRuleObject()}}
	say("workload: StatusCollector %s (sum of the Deployments' availableReplicas, and their count) and HealthRule %s (Deployments ready when availableReplicas reaches spec.replicas) in %s",
		collectorName, healthRuleName, where)
	for _, r := range rules {
		if _, err := wmw.Resource(r.gvr).Create(ctx, r.obj, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating %s %s in %s: %w", r.obj.GetKind(), r.name, where, err)
		}
	}
	deadline := time.Now().Add(2 * time.Minute)
	for _, r := range rules {
		for {
			u, err := wmw.Resource(r.gvr).Get(ctx, r.name, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("reading %s %s in %s: %w", r.obj.GetKind(), r.name, where, err)
			}
			status, reason, msg := framework.ConditionStatus(u, edgev1alpha1.RuleAccepted)
			if status == metav1.ConditionTrue {
				break
			}
			if status == metav1.ConditionFalse || time.Now().After(deadline) {
				return fmt.Errorf("%s %s in %s is not accepted (Accepted %q, %s: %s): is edge-controller-manager's placement translator running?",
					r.obj.GetKind(), r.name, where, status, reason, msg)
			}
			if err := sleep(ctx, 200*time.Millisecond); err != nil {
				return err
			}
		}
	}
	return nil
}

// destinationsOf returns the indexes of the destinations of placement j.
func (f *fleet) destinationsOf(j int) []int {
	var out []int
	for _, d := range f.dests {
		if d.group == j {
			out = append(out, d.index)
		}
	}
	return out
}

// every says what() on stderr every interval until the returned stop is called.
func every(interval time.Duration, what func() string) (stop func()) {
	return framework.Every(interval, func() { say("%s", what()) })
}

// waitForPushSyncers waits until the push host's syncer of every destination heartbeats
// (SyncerReady True on every SyncTarget).
func (f *fleet) waitForPushSyncers(ctx context.Context) error {
	imw, err := dynamic.NewForConfig(f.center.ConfigFor(f.imw))
	if err != nil {
		return err
	}
	say("syncers: %d push syncers in edge-controller-manager; waiting until all heartbeat", len(f.dests))
	deadline := time.Now().Add(stall + time.Duration(len(f.dests))*time.Second)
	for {
		list, err := imw.Resource(syncTargetsGVR).List(ctx, metav1.ListOptions{})
		ready := 0
		if err == nil {
			for _, item := range list.Items {
				st := &edgev1alpha1.SyncTarget{}
				if runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, st) == nil &&
					meta.IsStatusConditionTrue(st.Status.Conditions, edgev1alpha1.SyncTargetSyncerReady) {
					ready++
				}
			}
		}
		if ready == len(f.dests) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d push syncers heartbeat after %s (log: %s)", ready, len(f.dests), stall, f.ecm.LogPath())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

// syncersPID is the syncers' process's pid, 0 in push mode (no such process).
func (f *fleet) syncersPID() int {
	if f.syncers == nil {
		return 0
	}
	return f.syncers.PID()
}
