package crash

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/kcp-dev/edge-mc/test/framework"
)

const (
	// destinations is the size of the fleet: edge clusters, each with its SyncTarget, Location,
	// mailbox and edge-syncer process.
	destinations = 50
	// edited is how many ConfigMaps every round edits; each round also adds one.
	edited = 10
	// namespace holds the workload, in the workload workspace and at every edge.
	namespace = "fleet"
	// converge bounds each round, from the kill to every edge holding the round's workload:
	// after kcp's restart the controllers and 50 syncers reconnect and resync on two cores.
	converge = 5 * time.Minute
)

var (
	configMaps  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	assemblages = schema.GroupVersionResource{Group: "edge.kcp.io", Version: "v1alpha1", Resource: "assemblages"}
	placements  = schema.GroupVersionResource{Group: "edge.kcp.io", Version: "v1alpha1", Resource: "edgeplacements"}
)

// workload is round r's desired state, by ConfigMap name to its data.version: the ConfigMaps
// cm-00... at version r+1, and added-01... added-r, one added by each round at the version of
// its number.
func workload(r int) map[string]string {
	want := map[string]string{}
	for i := range edited {
		want[fmt.Sprintf("cm-%02d", i)] = fmt.Sprint(r + 1)
	}
	for k := 1; k <= r; k++ {
		want[fmt.Sprintf("added-%02d", k)] = fmt.Sprint(k)
	}
	return want
}

// manifest is round r's workload, with the EdgePlacement that places it on every destination.
func manifest(r int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n", namespace)
	want := workload(r)
	names := make([]string, 0, len(want))
	for name := range want {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: %s}\ndata: {version: %q}\n", name, namespace, want[name])
	}
	fmt.Fprintf(&b, `---
apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: fleet}
spec:
  locationSelectors: [{matchLabels: {region: fleet}}]
  downsync: [{namespaces: [%s]}]
`, namespace)
	return b.String()
}

// held is one ConfigMap as an edge holds it.
type held struct{ uid, version string }

// edgeView is what one edge cluster holds in the workload's namespace, kept by an informer, with
// every deletion and every recreation (a name coming back with another UID) it saw.
type edgeView struct {
	name               string
	mu                 sync.Mutex
	objects            map[string]held
	deleted, recreated []string
}

func (v *edgeView) set(obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	version, _, _ := unstructured.NestedString(u.Object, "data", "version")
	v.mu.Lock()
	defer v.mu.Unlock()
	if before, ok := v.objects[u.GetName()]; ok && before.uid != string(u.GetUID()) {
		v.recreated = append(v.recreated, fmt.Sprintf("%s (uid %s, then %s)", u.GetName(), before.uid, u.GetUID()))
	}
	v.objects[u.GetName()] = held{uid: string(u.GetUID()), version: version}
}

func (v *edgeView) remove(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.objects, u.GetName())
	v.deleted = append(v.deleted, u.GetName())
}

// has says whether the edge holds every ConfigMap of want at its version, and if not, what
// differs first.
func (v *edgeView) has(want map[string]string) (bool, string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for name, version := range want {
		got, ok := v.objects[name]
		if !ok {
			return false, fmt.Sprintf("%s has no ConfigMap %s", v.name, name)
		}
		if got.version != version {
			return false, fmt.Sprintf("%s has %s at version %s, want %s", v.name, name, got.version, version)
		}
	}
	return true, ""
}

// uids returns the UID of each ConfigMap the edge holds.
func (v *edgeView) uids() map[string]string {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := map[string]string{}
	for name, h := range v.objects {
		out[name] = h.uid
	}
	return out
}

// watchEdge keeps a view of the edge's ConfigMaps in the workload's namespace until the test
// ends.
func watchEdge(t *testing.T, name string, client dynamic.Interface) *edgeView {
	t.Helper()
	v := &edgeView{name: name, objects: map[string]held{}}
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(client, 0, namespace, nil)
	informer := factory.ForResource(configMaps).Informer()
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    v.set,
		UpdateFunc: func(_, obj any) { v.set(obj) },
		DeleteFunc: v.remove,
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory.Start(ctx.Done())
	return v
}

// fleet is the test's 50 destinations as the test sees them.
type fleet struct {
	*framework.Fleet
	names     []string
	mailboxes []logicalcluster.Path
	views     []*edgeView
	edges     []*framework.PCluster
	syncers   []*framework.Syncer
}

// reached counts the edges that hold want.
func (f *fleet) reached(want map[string]string) int {
	n := 0
	for _, v := range f.views {
		if ok, _ := v.has(want); ok {
			n++
		}
	}
	return n
}

// awaitAll waits until every edge holds want, and returns how long that took from since.
func (f *fleet) awaitAll(t *testing.T, want map[string]string, since time.Time) time.Duration {
	t.Helper()
	framework.Eventually(t, converge, func() (bool, string) {
		n, why := 0, ""
		for _, v := range f.views {
			if ok, w := v.has(want); ok {
				n++
			} else if why == "" {
				why = w
			}
		}
		return n == len(f.views), fmt.Sprintf("%d of %d edges hold the workload; %s", n, len(f.views), why)
	})
	return time.Since(since)
}

// awaitSummary waits until the placement's summary counts every destination applied or ready,
// none pending, failed or stale, and returns how long that took from since. If it does not, the
// failure names the destinations whose assemblages report an older version applied.
func (f *fleet) awaitSummary(t *testing.T, since time.Time) time.Duration {
	t.Helper()
	client := framework.KCP(t).DynamicClient(t, f.WMW)
	deadline := time.Now().Add(converge)
	for {
		why := "no EdgePlacement fleet"
		if u := framework.GetObject(t, client, placements, "", "fleet"); u != nil {
			summary, _, _ := unstructured.NestedMap(u.Object, "status", "summary")
			count := func(field string) int64 { n, _, _ := unstructured.NestedInt64(summary, field); return n }
			if count("applied")+count("ready") == destinations && count("pending")+count("failed")+count("stale") == 0 {
				return time.Since(since)
			}
			why = fmt.Sprintf("summary %v", summary)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the placement's summary does not count all %d destinations applied after %s: %s; %s", destinations, converge, why, f.behind(t))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// behind says which destinations' assemblages report an applied version other than their latest.
func (f *fleet) behind(t *testing.T) string {
	t.Helper()
	var out []string
	for i, mailbox := range f.mailboxes {
		list, err := framework.KCP(t).DynamicClient(t, mailbox).Resource(assemblages).List(framework.Context(t, 10*time.Second), metav1.ListOptions{})
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", f.names[i], err))
			continue
		}
		for _, a := range list.Items {
			version, _, _ := unstructured.NestedString(a.Object, "spec", "version")
			applied, _, _ := unstructured.NestedString(a.Object, "status", "appliedVersion")
			if applied != version {
				out = append(out, fmt.Sprintf("%s: assemblage %s at version %s reports %q applied", f.names[i], a.GetName(), version, applied))
			}
		}
	}
	if len(out) == 0 {
		return "every assemblage reports its latest version applied"
	}
	return strings.Join(out, "; ")
}

// setUp makes the fleet: 50 Locations and SyncTargets, their edge clusters (logical clusters
// of the edge kcp with no workload CRDs, since the workload is ConfigMaps), one edge-syncer
// process each, with the fleet's default heartbeat (one write per edge every 30 s), and a view
// of each edge.
func setUp(t *testing.T) *fleet {
	t.Helper()
	start := time.Now()
	regions := map[string]string{}
	f := &fleet{}
	for i := range destinations {
		name := fmt.Sprintf("d%02d", i)
		f.names = append(f.names, name)
		regions[name] = "fleet"
	}
	f.Fleet = framework.NewFleetWithArgs(t, regions, "--heartbeat-interval=30s", "--heartbeat-grace-period=2m")
	edgeKCP := framework.EdgeKCP(t)
	ctx := framework.Context(t, 10*time.Minute)
	lean, err := framework.PClusterWorkspaceType(ctx, edgeKCP)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	f.edges = make([]*framework.PCluster, destinations)
	// Each edge cluster is deleted when the test ends, if the run shares the edge kcp.
	edgePath := func(name string) logicalcluster.Path { return logicalcluster.NewPath("root").Join("crash-" + name) }
	for _, name := range f.names {
		edgeKCP.DeleteAfter(t, edgePath(name))
	}
	if err := framework.ForEach(destinations, 8, func(i int) error {
		p, err := framework.CreateLogicalPCluster(ctx, edgeKCP, f.names[i], edgePath(f.names[i]),
			framework.LogicalPClusterOptions{Type: lean, CRDs: []string{}, KubeconfigDir: dir})
		f.edges[i] = p
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for i, p := range f.edges {
		f.views = append(f.views, watchEdge(t, f.names[i], p.DynamicClient(t)))
	}
	for _, name := range f.names {
		f.mailboxes = append(f.mailboxes, f.Mailbox(t, name))
	}
	f.syncers = framework.StartSyncers(t, f.ESPW, f.IMW, f.names, f.edges, 8)
	for _, s := range f.syncers {
		s.WaitReady(t, 3*time.Minute)
	}
	t.Logf("fleet of %d destinations up in %s: SyncTargets, mailboxes, edge clusters, and an edge-syncer process each", destinations, time.Since(start).Round(time.Second))
	return f
}

// killRoundsEnv sets how many times TestKilledMidFanOut kills each process: 1 unless set (each
// kill of kcp and its round cost the suite about a minute; the points are drawn anew in every
// run, so runs add up; EDGE_E2E_KILL_ROUNDS=2 or more for a longer look).
const killRoundsEnv = "EDGE_E2E_KILL_ROUNDS"

// TestKilledMidFanOut kills (kill -9) each of the processes that carry a fan-out to 50
// destinations, the center kcp, edge-controller-manager and one syncer, each at a seeded random
// point of a fan-out (when a drawn number of the edges hold the round's change; more points with
// EDGE_E2E_KILL_ROUNDS) and starts it again at once. Each round edits ten ConfigMaps and adds one. After each: every edge holds the
// round's workload and the placement's summary counts every destination applied; no edge object
// was deleted or recreated (the edges' informers see every event; UIDs are compared with the
// first round's); no edge holds a ConfigMap it should not; every other process kept running, and
// no syncer was given a new credential. The time from the kill to convergence is logged.
func TestKilledMidFanOut(t *testing.T) {
	rng := framework.Rand(t)
	f := setUp(t)

	applied := time.Now()
	f.Apply(t, f.WMW, manifest(0))
	fanOut := f.awaitAll(t, workload(0), applied)
	t.Logf("round 0, no fault: the workload reached all %d edges %s after the apply", destinations, fanOut.Round(100*time.Millisecond))
	f.awaitSummary(t, applied)
	first := map[string]map[string]string{}
	for i, v := range f.views {
		first[f.names[i]] = v.uids()
	}

	type figure struct {
		what                    string
		atEdges                 int
		afterApply, toConverge  time.Duration
		toSummary, kcpStartedIn time.Duration
	}
	var figures []figure
	rounds := 1
	if v := os.Getenv(killRoundsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a number of rounds, at least 1", killRoundsEnv, v)
		}
		rounds = n
	}
	var victims []string
	for range rounds {
		victims = append(victims, "kcp", "edge-controller-manager", "syncer")
	}
	for r, victim := range victims {
		r++
		want := workload(r)
		strikeAt := rng.IntN(destinations)
		applied := time.Now()
		f.Apply(t, f.WMW, manifest(r))
		framework.Eventually(t, converge, func() (bool, string) {
			n := f.reached(want)
			return n >= strikeAt, fmt.Sprintf("%d of %d edges hold round %d's workload, waiting for %d", n, destinations, r, strikeAt)
		})
		fig := figure{what: victim, atEdges: f.reached(want), afterApply: time.Since(applied)}
		killed := time.Now()
		switch victim {
		case "kcp":
			kcp := framework.KCP(t)
			kcp.Kill()
			t.Logf("round %d: kill -9 kcp (drawn point: %d edges hold the change; %d did, %s after the apply)", r, strikeAt, fig.atEdges, fig.afterApply.Round(time.Millisecond))
			if err := kcp.Restart(); err != nil {
				t.Fatal(err)
			}
			fig.kcpStartedIn = time.Since(killed)
		case "edge-controller-manager":
			f.ECM.Crash()
			t.Logf("round %d: kill -9 edge-controller-manager (drawn point: %d edges hold the change; %d did, %s after the apply)", r, strikeAt, fig.atEdges, fig.afterApply.Round(time.Millisecond))
			f.ECM.Restart()
		case "syncer":
			i := rng.IntN(destinations)
			victim = "the syncer of " + f.names[i]
			fig.what = victim
			f.syncers[i].Crash()
			t.Logf("round %d: kill -9 %s (drawn point: %d edges hold the change; %d did, %s after the apply)", r, victim, strikeAt, fig.atEdges, fig.afterApply.Round(time.Millisecond))
			f.syncers[i].Restart()
		}
		fig.toConverge = f.awaitAll(t, want, killed)
		fig.toSummary = f.awaitSummary(t, killed)
		t.Logf("round %d: every edge holds the change %s after the kill of %s; the summary counts them all applied %s after it",
			r, fig.toConverge.Round(100*time.Millisecond), victim, fig.toSummary.Round(100*time.Millisecond))
		figures = append(figures, fig)
		f.checkNothingLost(t, first)
	}
	f.checkEdgesHoldOnly(t, workload(len(figures)))

	var report strings.Builder
	fmt.Fprintf(&report, "fan-out of %d ConfigMaps to %d destinations, no fault: %s\n", edited, destinations, fanOut.Round(100*time.Millisecond))
	for _, fig := range figures {
		fmt.Fprintf(&report, "kill -9 %s with %d of %d edges holding the change (%s after the apply): every edge had it %s after the kill, the summary %s",
			fig.what, fig.atEdges, destinations, fig.afterApply.Round(time.Millisecond), fig.toConverge.Round(100*time.Millisecond), fig.toSummary.Round(100*time.Millisecond))
		if fig.kcpStartedIn > 0 {
			fmt.Fprintf(&report, " (kcp ready again %s after the kill)", fig.kcpStartedIn.Round(100*time.Millisecond))
		}
		report.WriteString("\n")
	}
	t.Logf("figures:\n%s", report.String())
}

// checkNothingLost fails the test if any edge saw a ConfigMap deleted or recreated, holds one
// of first (the UIDs after the first round) under another UID, or if a process that was not
// killed has exited.
func (f *fleet) checkNothingLost(t *testing.T, first map[string]map[string]string) {
	t.Helper()
	for i, v := range f.views {
		v.mu.Lock()
		deleted, recreated := slices.Clone(v.deleted), slices.Clone(v.recreated)
		v.mu.Unlock()
		if len(deleted) > 0 {
			t.Errorf("%s: ConfigMaps deleted at the edge: %v", v.name, deleted)
		}
		if len(recreated) > 0 {
			t.Errorf("%s: ConfigMaps recreated at the edge: %v", v.name, recreated)
		}
		now := v.uids()
		for name, uid := range first[v.name] {
			if now[name] != uid {
				t.Errorf("%s: ConfigMap %s has uid %q, had %s after the first round", v.name, name, now[name], uid)
			}
		}
		if f.syncers[i].Exited() {
			t.Errorf("the syncer of %s exited", v.name)
		}
	}
	if f.ECM.Exited() {
		t.Error("edge-controller-manager exited")
	}
	if t.Failed() {
		t.FailNow()
	}
}

// checkEdgesHoldOnly reads each edge (not the informers' views) and fails the test unless it
// holds exactly want in the workload's namespace, under the UIDs the views saw: nothing
// duplicated, nothing extra, nothing missing.
func (f *fleet) checkEdgesHoldOnly(t *testing.T, want map[string]string) {
	t.Helper()
	for i, v := range f.views {
		list, err := f.edges[i].DynamicClient(t).Resource(configMaps).Namespace(namespace).List(framework.Context(t, time.Minute), metav1.ListOptions{})
		if err != nil {
			t.Fatalf("%s: listing ConfigMaps: %v", v.name, err)
		}
		seen := v.uids()
		got := map[string]string{}
		for _, cm := range list.Items {
			if cm.GetName() == "kube-root-ca.crt" {
				continue
			}
			version, _, _ := unstructured.NestedString(cm.Object, "data", "version")
			got[cm.GetName()] = version
			if seen[cm.GetName()] != string(cm.GetUID()) {
				t.Errorf("%s: ConfigMap %s has uid %s; the edge's watch saw %q", v.name, cm.GetName(), cm.GetUID(), seen[cm.GetName()])
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s holds %v, want exactly %v", v.name, got, want)
		}
	}
}
