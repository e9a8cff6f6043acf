// Package rollout tests spec.rollout and spec.dependsOn with real syncers: every delivery and
// readiness is read from the assemblages in the mailboxes (when the translator delivered each
// version, when the syncer reported it ready), and the bounds are checked on that record.
package rollout

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	placementtranslator "github.com/kcp-dev/edge-mc/pkg/placement-translator"
	"github.com/kcp-dev/edge-mc/pkg/transport"
	"github.com/kcp-dev/edge-mc/test/framework"
)

func TestMain(m *testing.M) {
	os.Exit(framework.RunWithKCP(m))
}

var (
	placementsGVR = edgev1alpha1.SchemeGroupVersion.WithResource("edgeplacements")
	configMaps    = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	deployments   = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)

// edgeFleet is a fleet of n logical-cluster edges e00..e(n-1), each with a syncer; the first
// `canary` are labelled ring=canary, the others ring=main; all region=north.
type edgeFleet struct {
	*framework.Fleet
	names     []string
	edges     map[string]*framework.PCluster
	mailboxes map[string]logicalcluster.Path
	syncers   map[string]*framework.Syncer
}

func newEdgeFleet(t *testing.T, n, canary int) *edgeFleet {
	t.Helper()
	regions := map[string]string{}
	f := &edgeFleet{mailboxes: map[string]logicalcluster.Path{}, syncers: map[string]*framework.Syncer{}}
	for i := range n {
		name := fmt.Sprintf("e%02d", i)
		f.names = append(f.names, name)
		regions[name] = "north"
	}
	edges := framework.StartLogicalPClusters(t, f.names...)
	f.Fleet = framework.NewFleet(t, regions)
	f.edges = edges()
	for i, name := range f.names {
		ring := "main"
		if i < canary {
			ring = "canary"
		}
		framework.KubectlEdge(t, "ensure", "location", name, "ring="+ring, "--imw", f.IMW.String(), "--espw", f.ESPW.String()).MustSucceed(t)
		f.syncers[name] = framework.StartSyncer(t, f.ESPW, f.IMW, name, f.edges[name])
		f.mailboxes[name] = f.Mailbox(t, name)
	}
	return f
}

// settingsManifest is a namespace and a ConfigMap whose value marks the version.
func settingsManifest(value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata: {name: app}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: app}\ndata: {value: %q}\n", value)
}

func placementWith(name, rollout string) string {
	return `apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: ` + name + `}
spec:
  locationSelectors: [{matchLabels: {region: north}}]
  downsync: [{namespaces: [app]}]
  rollout:
` + rollout
}

// waitValue waits until the ConfigMap at every named edge holds value.
func (f *edgeFleet) waitValue(t *testing.T, value string, names ...string) {
	t.Helper()
	for _, n := range names {
		framework.EventuallyObject(t, n, f.edges[n].DynamicClient(t), configMaps, "app", "settings", framework.FieldIs(value, "data", "value"))
	}
}

// valueAt reads the ConfigMap's value at an edge ("" if absent).
func (f *edgeFleet) valueAt(t *testing.T, name string) string {
	u := framework.GetObject(t, f.edges[name].DynamicClient(t), configMaps, "app", "settings")
	if u == nil {
		return ""
	}
	v, _, _ := unstructured.NestedString(u.Object, "data", "value")
	return v
}

// delivery is one version of a placement's assemblage at one destination: when the translator
// delivered it and when the destination was done with it (zero: not yet).
type delivery struct {
	dest, version string
	delivered     time.Time
	done          time.Time
	// redelivered counts later delivery times seen for the same version: written again.
	redelivered int
}

// recorder keeps, from polls of every mailbox, every version delivered to each destination.
type recorder struct {
	mu         sync.Mutex
	deliveries map[string]*delivery // by dest/version
	stop       chan struct{}
	stopped    sync.WaitGroup
}

// record polls the placement's assemblage in every mailbox every 200 ms until stopped.
func (f *edgeFleet) record(t *testing.T, placement string, minReady time.Duration) *recorder {
	r := &recorder{deliveries: map[string]*delivery{}, stop: make(chan struct{})}
	name := transport.AssemblageName(logicalClusterOf(t, f.WMW), placement)
	r.stopped.Add(1)
	go func() {
		defer r.stopped.Done()
		for {
			for _, d := range f.names {
				u := framework.GetObject(t, framework.KCP(t).DynamicClient(t, f.mailboxes[d]), framework.AssemblagesGVR, "", name)
				if u == nil {
					continue
				}
				r.observe(d, u, minReady)
			}
			select {
			case <-r.stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(r.end)
	return r
}

func (r *recorder) end() {
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	r.stopped.Wait()
}

func (r *recorder) observe(dest string, u *unstructured.Unstructured, minReady time.Duration) {
	version, _, _ := unstructured.NestedString(u.Object, "spec", "version")
	at, err := time.Parse(time.RFC3339, u.GetAnnotations()[placementtranslator.AnnotationDeliveredAt])
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	key := dest + "/" + version
	d := r.deliveries[key]
	if d == nil {
		d = &delivery{dest: dest, version: version, delivered: at}
		r.deliveries[key] = d
	} else if at.After(d.delivered) {
		d.delivered = at
		d.redelivered++
	}
	applied, _, _ := unstructured.NestedString(u.Object, "status", "appliedVersion")
	if !d.done.IsZero() || applied != version {
		return
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == edgev1alpha1.AssemblageReady && m["status"] == "True" {
			since, err := time.Parse(time.RFC3339, fmt.Sprint(m["lastTransitionTime"]))
			if err != nil {
				return
			}
			if since.Before(at) {
				since = at
			}
			d.done = since.Add(minReady)
		}
	}
}

// maxInFlight is the largest number of destinations that, at one moment, had a version delivered
// and not done, over the record; and the deliveries of the given version.
func (r *recorder) maxInFlight(now time.Time) (int, []*delivery) {
	r.mu.Lock()
	defer r.mu.Unlock()
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	var all []*delivery
	for _, d := range r.deliveries {
		all = append(all, d)
		end := d.done
		if end.IsZero() {
			end = now
		}
		edges = append(edges, edge{d.delivered, +1}, edge{end, -1})
	}
	// At equal times, ends first: a destination done at the second another gets its delivery
	// was not in flight with it.
	sort.Slice(edges, func(i, j int) bool {
		if !edges[i].at.Equal(edges[j].at) {
			return edges[i].at.Before(edges[j].at)
		}
		return edges[i].delta < edges[j].delta
	})
	cur, peak := 0, 0
	for _, e := range edges {
		cur += e.delta
		peak = max(peak, cur)
	}
	return peak, all
}

// logicalClusterOf is the logical cluster name of a workspace, from its Workspace object in its
// parent.
func logicalClusterOf(t *testing.T, ws logicalcluster.Path) string {
	t.Helper()
	parent, name := ws.Split()
	return strings.TrimSpace(framework.Kubectl(t, "--server", framework.KCP(t).ServerURL(parent), "get", "workspace", name,
		"-o", "jsonpath={.spec.cluster}").MustSucceed(t).Stdout)
}

// placement reads an EdgePlacement.
func (f *edgeFleet) placement(t *testing.T, name string) *edgev1alpha1.EdgePlacement {
	u := framework.GetObject(t, framework.KCP(t).DynamicClient(t, f.WMW), placementsGVR, "", name)
	if u == nil {
		t.Fatalf("no EdgePlacement %s", name)
	}
	p := &edgev1alpha1.EdgePlacement{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// eventuallyCondition waits until the placement's condition has the status, and its message
// every fragment.
func (f *edgeFleet) eventuallyCondition(t *testing.T, name, condType string, status metav1.ConditionStatus, fragments ...string) *metav1.Condition {
	t.Helper()
	var cond *metav1.Condition
	framework.Eventually(t, 3*time.Minute, func() (bool, string) {
		p := f.placement(t, name)
		cond = meta.FindStatusCondition(p.Status.Conditions, condType)
		if cond == nil || cond.Status != status {
			return false, fmt.Sprintf("%s is %+v, want %s", condType, cond, status)
		}
		for _, frag := range fragments {
			if !strings.Contains(cond.Message, frag) {
				return false, fmt.Sprintf("%s message %q lacks %q", condType, cond.Message, frag)
			}
		}
		return true, ""
	})
	return cond
}

// TestMaxInFlight: 10 destinations, maxInFlight 2, a soak of 4 s: never more than 2 destinations
// mid-update; every destination gets the edit; the rollout completes.
func TestMaxInFlight(t *testing.T) {
	t.Parallel()
	f := newEdgeFleet(t, 10, 0)
	f.Apply(t, f.WMW, settingsManifest("v1"))
	f.Apply(t, f.WMW, placementWith("app", "    maxInFlight: 2\n    minReadySeconds: 4\n"))
	f.waitValue(t, "v1", f.names...)
	f.eventuallyCondition(t, "app", edgev1alpha1.PlacementRolloutComplete, metav1.ConditionTrue)
	rec := f.record(t, "app", 4*time.Second)
	start := time.Now()
	f.Apply(t, f.WMW, settingsManifest("v2"))
	f.waitValue(t, "v2", f.names...)
	f.eventuallyCondition(t, "app", edgev1alpha1.PlacementRolloutComplete, metav1.ConditionTrue)
	took := time.Since(start)
	rec.end()
	peak, all := rec.maxInFlight(time.Now())
	t.Logf("the edit reached 10 destinations, 2 at a time with a 4 s soak, in %s (%d deliveries recorded)", took.Round(100*time.Millisecond), len(all))
	if peak > 2 {
		t.Errorf("%d destinations were mid-update at once, more than maxInFlight 2: %s", peak, describe(all))
	}
	if took < 15*time.Second {
		t.Errorf("10 destinations in waves of 2 with a 4 s soak took only %s: the waves did not wait", took)
	}
	if got := f.placement(t, "app").Status.Rollout; got == nil || len(got.History) < 2 || got.History[0].CompletedTime == nil {
		t.Errorf("status.rollout history %+v, want the new revision completed and the old one", got)
	}
}

func describe(all []*delivery) string {
	sort.Slice(all, func(i, j int) bool { return all[i].delivered.Before(all[j].delivered) })
	var parts []string
	for _, d := range all {
		parts = append(parts, fmt.Sprintf("%s %s delivered %s done %s", d.dest, d.version[:6], d.delivered.Format("15:04:05"), d.done.Format("15:04:05")))
	}
	return strings.Join(parts, "; ")
}

// TestCanaryGateAndPause: nothing beyond the canary until resumed; paused, nothing goes; resumed,
// everything does.
func TestCanaryGateAndPause(t *testing.T) {
	t.Parallel()
	f := newEdgeFleet(t, 4, 1)
	f.Apply(t, f.WMW, settingsManifest("v1"))
	f.Apply(t, f.WMW, placementWith("app", `    stages:
    - name: canary
      selector: {matchLabels: {ring: canary}}
      pause: true
`))
	// The first version stops at the gate too: the canary gets it, the others wait.
	f.waitValue(t, "v1", "e00")
	f.eventuallyCondition(t, "app", edgev1alpha1.PlacementProgressing, metav1.ConditionFalse, "pause gate after stage canary")
	time.Sleep(5 * time.Second)
	for _, n := range f.names[1:] {
		if v := f.valueAt(t, n); v != "" {
			t.Fatalf("%s got %q past the canary's gate", n, v)
		}
	}
	framework.KubectlEdge(t, "rollout", "resume", "app", "--wmw", f.WMW.String()).MustSucceed(t)
	f.waitValue(t, "v1", f.names...)

	t.Run("pause and resume", func(t *testing.T) {
		framework.KubectlEdge(t, "rollout", "pause", "app", "--wmw", f.WMW.String()).MustSucceed(t)
		f.eventuallyCondition(t, "app", edgev1alpha1.PlacementProgressing, metav1.ConditionFalse)
		f.Apply(t, f.WMW, settingsManifest("v2"))
		f.eventuallyCondition(t, "app", edgev1alpha1.PlacementProgressing, metav1.ConditionFalse, "paused")
		// A paused rollout does not complete: rollout status -w --timeout gives up after 5 s (the
		// wait this check needs anyway), exit 1 as kubectl rollout status.
		res := framework.KubectlEdge(t, "rollout", "status", "app", "-w", "--timeout", "5s", "--wmw", f.WMW.String()).MustFail(t)
		if !strings.Contains(res.Stderr, "timed out waiting for the rollout of EdgePlacement app") {
			t.Errorf("rollout status -w --timeout 5s on a paused rollout: stderr %q", res.Stderr)
		}
		var view struct {
			Spec struct{ Paused bool }
		}
		js := framework.KubectlEdge(t, "rollout", "status", "app", "-o", "json", "--wmw", f.WMW.String()).MustSucceed(t).Stdout
		if err := json.Unmarshal([]byte(js), &view); err != nil || !view.Spec.Paused {
			t.Errorf("rollout status -o json of the paused rollout: %v\n%s", err, js)
		}
		for _, n := range f.names {
			if v := f.valueAt(t, n); v != "v1" {
				t.Errorf("%s has %q while the rollout is paused, want v1", n, v)
			}
		}
		out := framework.KubectlEdge(t, "rollout", "resume", "app", "--wmw", f.WMW.String()).MustSucceed(t).Stdout
		if !strings.Contains(out, "unpaused") {
			t.Errorf("resume said %q", out)
		}
		f.waitValue(t, "v2", "e00")
		// The canary gate holds the new revision again.
		f.eventuallyCondition(t, "app", edgev1alpha1.PlacementProgressing, metav1.ConditionFalse, "pause gate after stage canary")
		framework.KubectlEdge(t, "rollout", "resume", "app", "--wmw", f.WMW.String()).MustSucceed(t)
		f.waitValue(t, "v2", f.names...)
		out = framework.KubectlEdge(t, "rollout", "status", "app", "-w", "--wmw", f.WMW.String()).MustSucceed(t).Stdout
		if !strings.Contains(out, "4/4 updated") {
			t.Errorf("rollout status -w ended with %q", out)
		}
		if hist := framework.KubectlEdge(t, "rollout", "history", "app", "--wmw", f.WMW.String()).MustSucceed(t).Stdout; strings.Count(hist, "\n") < 3 {
			t.Errorf("rollout history lists fewer than 2 revisions:\n%s", hist)
		}
		var hist struct {
			History []edgev1alpha1.RevisionHistory
		}
		js = framework.KubectlEdge(t, "rollout", "history", "app", "-o", "json", "--wmw", f.WMW.String()).MustSucceed(t).Stdout
		if err := json.Unmarshal([]byte(js), &hist); err != nil || len(hist.History) < 2 {
			t.Errorf("rollout history -o json: want 2 revisions or more: %v\n%s", err, js)
		}

		// Shell completion, as kubectl runs it through kubectl_complete-edge: the placement, the
		// SyncTargets and the workload workspace's path, read from kcp.
		complete := func(args ...string) []string {
			out := framework.KubectlEdge(t, append([]string{"__complete"}, args...)...).MustSucceed(t).Stdout
			return strings.Split(strings.TrimSpace(out), "\n")
		}
		if got := complete("rollout", "status", "--wmw", f.WMW.String(), ""); !slices.Contains(got, "app") {
			t.Errorf("completing rollout status <placement>: %q, want app among them", got)
		}
		if got := complete("prep-for-syncer", "--imw", f.IMW.String(), "e0"); !slices.Equal(got[:len(got)-1], f.names) {
			t.Errorf("completing prep-for-syncer e0<TAB>: %q, want %q", got, f.names)
		}
		if out := framework.KubectlEdge(t, "status", "--wmw", f.WMW.String(), "-o", "name").MustSucceed(t).Stdout; out != "edgeplacement.edge.kcp.io/app\n" {
			t.Errorf("kubectl edge status -o name: %q", out)
		}
		if out := framework.KubectlEdge(t, "status", "--wmw", f.WMW.String(), "-o", "wide").MustSucceed(t).Stdout; !strings.Contains(out, "REVISION") || !strings.Contains(out, "\napp ") {
			t.Errorf("kubectl edge status -o wide:\n%s", out)
		}
		parent, _ := f.WMW.Parent()
		if got := complete("status", "--wmw", parent.String()+":"); !slices.Contains(got, f.WMW.String()) {
			t.Errorf("completing --wmw %s:<TAB>: %q, want %s among them", parent, got, f.WMW)
		}
	})
}

const deploymentManifest = `apiVersion: v1
kind: Namespace
metadata: {name: app}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: app}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}, annotations: {version: %q}}
    spec: {containers: [{name: web, image: registry.example/web:1}]}
`

// makeReady writes, at a logical edge (which runs no controllers), the status a Deployment
// controller writes once the Deployment's one replica is available.
func (f *edgeFleet) makeReady(t *testing.T, name string) {
	t.Helper()
	client := f.edges[name].DynamicClient(t).Resource(deployments).Namespace("app")
	framework.Eventually(t, time.Minute, func() (bool, string) {
		dep, err := client.Get(framework.Context(t, 10*time.Second), "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		now := time.Now().UTC().Format(time.RFC3339)
		cond := func(condType, reason string) map[string]any {
			return map[string]any{"type": condType, "status": "True", "reason": reason, "lastUpdateTime": now, "lastTransitionTime": now}
		}
		dep.Object["status"] = map[string]any{"observedGeneration": dep.GetGeneration(), "replicas": int64(1), "updatedReplicas": int64(1),
			"readyReplicas": int64(1), "availableReplicas": int64(1),
			"conditions": []any{cond("Available", "MinimumReplicasAvailable"), cond("Progressing", "NewReplicaSetAvailable")}}
		_, err = client.UpdateStatus(framework.Context(t, 10*time.Second), dep, metav1.UpdateOptions{})
		return err == nil, fmt.Sprint(err)
	})
}

// TestProgressDeadlineStallsAndRecovers: a destination that never becomes ready fails at the
// progress deadline, the rollout stalls naming it, and goes on once it recovers.
func TestProgressDeadlineStallsAndRecovers(t *testing.T) {
	t.Parallel()
	f := newEdgeFleet(t, 3, 0)
	f.Apply(t, f.WMW, fmt.Sprintf(deploymentManifest, "v1"))
	f.Apply(t, f.WMW, placementWith("app", "    maxInFlight: 1\n    progressDeadlineSeconds: 15\n    maxFailures: 0\n"))
	// e00 goes first (destinations go in name order); it never becomes ready by itself.
	framework.EventuallyObject(t, "e00", f.edges["e00"].DynamicClient(t), deployments, "app", "web", framework.Present)
	cond := f.eventuallyCondition(t, "app", edgev1alpha1.PlacementRolloutStalled, metav1.ConditionTrue, "e00", "progress deadline")
	t.Logf("stalled: %s", cond.Message)
	for _, n := range []string{"e01", "e02"} {
		if framework.GetObject(t, f.edges[n].DynamicClient(t), deployments, "app", "web") != nil {
			t.Errorf("%s got the Deployment while the rollout was stalled", n)
		}
	}
	f.makeReady(t, "e00")
	f.eventuallyCondition(t, "app", edgev1alpha1.PlacementRolloutStalled, metav1.ConditionFalse)
	framework.EventuallyObject(t, "e01", f.edges["e01"].DynamicClient(t), deployments, "app", "web", framework.Present)
}

// TestDeletedMidRollout: a destination whose SyncTarget is deleted while the rollout waits for it
// does not hold the rollout up (the next destination gets the workload long before the progress
// deadline); the EdgePlacement deleted mid-rollout takes its assemblage out of every mailbox, and
// applied again it is delivered afresh, with no rollout state left behind to hold it.
func TestDeletedMidRollout(t *testing.T) {
	t.Parallel()
	f := newEdgeFleet(t, 3, 0)
	f.Apply(t, f.WMW, fmt.Sprintf(deploymentManifest, "v1"))
	f.Apply(t, f.WMW, placementWith("app", "    maxInFlight: 1\n    progressDeadlineSeconds: 600\n"))
	// e00 goes first (name order), and its Deployment never becomes ready by itself: e01 waits.
	framework.EventuallyObject(t, "e00", f.edges["e00"].DynamicClient(t), deployments, "app", "web", framework.Present)
	time.Sleep(3 * time.Second)
	if framework.GetObject(t, f.edges["e01"].DynamicClient(t), deployments, "app", "web") != nil {
		t.Fatal("e01 got the Deployment while e00, in flight, was not ready: the test cannot show what deleting e00 does")
	}
	start := time.Now()
	framework.Kubectl(t, "--server", framework.KCP(t).ServerURL(f.IMW), "delete", "synctarget", "e00").MustSucceed(t)
	framework.EventuallyObject(t, "e01, after e00's SyncTarget was deleted", f.edges["e01"].DynamicClient(t), deployments, "app", "web", framework.Present)
	t.Logf("e00's SyncTarget deleted while in flight: e01 got the Deployment %.1fs later (progress deadline 600 s)", time.Since(start).Seconds())

	// The placement deleted while e01 is in flight: its assemblage leaves every mailbox.
	start = time.Now()
	f.Kubectl(t, f.WMW, "delete", "edgeplacement", "app").MustSucceed(t)
	name := transport.AssemblageName(logicalClusterOf(t, f.WMW), "app")
	for _, n := range []string{"e01", "e02"} {
		framework.EventuallyObject(t, "the assemblage of the deleted placement in "+n+"'s mailbox", framework.KCP(t).DynamicClient(t, f.mailboxes[n]),
			framework.AssemblagesGVR, "", name, framework.Absent)
	}
	t.Logf("placement deleted mid-rollout: its assemblage gone from the mailboxes %.1fs later", time.Since(start).Seconds())

	// Applied again, without a rollout: both remaining destinations get it at once (e02 never had
	// it: the rollout had not reached it).
	start = time.Now()
	f.Apply(t, f.WMW, `apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: app}
spec:
  locationSelectors: [{matchLabels: {region: north}}]
  downsync: [{namespaces: [app]}]
`)
	for _, n := range []string{"e01", "e02"} {
		framework.EventuallyObject(t, n+", the placement applied again", f.edges[n].DynamicClient(t), deployments, "app", "web", framework.Present)
	}
	t.Logf("placement applied again: the Deployment at e01 and e02 %.1fs later", time.Since(start).Seconds())
}

// TestNewerVersionSupersedes: an edit published mid-rollout replaces the one in flight; no
// destination gets the first edit after the second was published.
func TestNewerVersionSupersedes(t *testing.T) {
	t.Parallel()
	f := newEdgeFleet(t, 5, 0)
	f.Apply(t, f.WMW, settingsManifest("v1"))
	f.Apply(t, f.WMW, placementWith("app", "    maxInFlight: 1\n    minReadySeconds: 8\n"))
	f.waitValue(t, "v1", f.names...)
	f.eventuallyCondition(t, "app", edgev1alpha1.PlacementRolloutComplete, metav1.ConditionTrue)
	rec := f.record(t, "app", 8*time.Second)
	f.Apply(t, f.WMW, settingsManifest("v2"))
	f.waitValue(t, "v2", "e00") // e00 goes first, and soaks for 8 s
	published := time.Now().Truncate(time.Second)
	f.Apply(t, f.WMW, settingsManifest("v3"))
	f.waitValue(t, "v3", f.names...)
	f.eventuallyCondition(t, "app", edgev1alpha1.PlacementRolloutComplete, metav1.ConditionTrue)
	rec.end()
	_, all := rec.maxInFlight(time.Now())
	// What each destination has at the end is its v3 version: anything else delivered after v3
	// was published is v2, which it must not have got.
	name := transport.AssemblageName(logicalClusterOf(t, f.WMW), "app")
	final := map[string]string{}
	for _, n := range f.names {
		final[n] = framework.GetAssemblage(t, framework.KCP(t).DynamicClient(t, f.mailboxes[n]), name).Spec.Version
	}
	// Delivery times are whole seconds (the annotation is RFC 3339), and so is published: a
	// delivery in the same second as the publication cannot be placed, one in a later second
	// was decided after it.
	for _, d := range all {
		if d.delivered.After(published) && d.version != final[d.dest] {
			t.Errorf("%s got version %s at %s, after v3 was published at %s: a superseded version went out", d.dest, d.version, d.delivered, published)
		}
	}
	for _, n := range f.names[1:] {
		if v := f.valueAt(t, n); v != "v3" {
			t.Errorf("%s has %q, want v3", n, v)
		}
	}
	t.Logf("%d deliveries recorded; after v3 was published, only v3 went out", len(all))
}

// TestControllerRestartMidRollout: edge-controller-manager killed mid-rollout goes on after a
// restart without exceeding maxInFlight and without delivering again to destinations done.
func TestControllerRestartMidRollout(t *testing.T) {
	t.Parallel()
	f := newEdgeFleet(t, 6, 0)
	f.Apply(t, f.WMW, settingsManifest("v1"))
	f.Apply(t, f.WMW, placementWith("app", "    maxInFlight: 2\n    minReadySeconds: 6\n"))
	f.waitValue(t, "v1", f.names...)
	f.eventuallyCondition(t, "app", edgev1alpha1.PlacementRolloutComplete, metav1.ConditionTrue)
	rec := f.record(t, "app", 6*time.Second)
	edited := time.Now().Truncate(time.Second)
	f.Apply(t, f.WMW, settingsManifest("v2"))
	f.waitValue(t, "v2", "e00", "e01")
	f.ECM.Kill()
	time.Sleep(3 * time.Second)
	f.ECM.Restart()
	f.waitValue(t, "v2", f.names...)
	f.eventuallyCondition(t, "app", edgev1alpha1.PlacementRolloutComplete, metav1.ConditionTrue)
	rec.end()
	peak, all := rec.maxInFlight(time.Now())
	if peak > 2 {
		t.Errorf("%d destinations mid-update at once across the restart: %s", peak, describe(all))
	}
	// The record holds each destination's v1 too (delivered before the edit), and a delivery of
	// a version again would show as a new delivery time of it (see observe).
	perDest := map[string]int{}
	for _, d := range all {
		if !d.delivered.Before(edited) {
			perDest[d.dest] += 1 + d.redelivered
		}
	}
	for dest, n := range perDest {
		if n > 1 {
			t.Errorf("%s got %d deliveries of the one edit: delivered again after the restart", dest, n)
		}
	}
}

// TestDependsOnRealKubernetes: at a real Kubernetes edge, the app's placement is delivered only
// once the database's Deployment is ready there, from the real controllers and kwok.
func TestDependsOnRealKubernetes(t *testing.T) {
	t.Parallel()
	startingKube := framework.StartKubeClusterInBackground(t, "kube1")
	fl := framework.NewFleet(t, map[string]string{"kube1": "north"})
	kube := startingKube()
	framework.StartSyncer(t, fl.ESPW, fl.IMW, "kube1", kube.PCluster())
	fl.Apply(t, fl.WMW, `apiVersion: v1
kind: Namespace
metadata: {name: db}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: db, namespace: db}
spec:
  replicas: 1
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: registry.example/db:1}]}
---
apiVersion: v1
kind: Namespace
metadata: {name: app}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: app}
data: {db: "db.db"}
---
apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: app}
spec:
  locationSelectors: [{matchLabels: {region: north}}]
  downsync: [{namespaces: [app]}]
  dependsOn: [db]
`)
	// Without its dependency, the app waits, and says why.
	f := &edgeFleet{Fleet: fl, edges: map[string]*framework.PCluster{"kube1": kube.PCluster()}}
	f.eventuallyCondition(t, "app", edgev1alpha1.PlacementDependenciesReady, metav1.ConditionFalse, "db")
	time.Sleep(3 * time.Second)
	if framework.GetObject(t, kube.DynamicClient(t), configMaps, "app", "settings") != nil {
		t.Fatal("the app was delivered before its dependency exists")
	}
	fl.Apply(t, fl.WMW, `apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: db}
spec:
  locationSelectors: [{matchLabels: {region: north}}]
  downsync: [{namespaces: [db]}]
`)
	framework.EventuallyObject(t, "kube1", kube.DynamicClient(t), deployments, "db", "db", framework.FieldIs("1", "status", "readyReplicas"))
	readyAt := time.Now()
	framework.EventuallyObject(t, "kube1", kube.DynamicClient(t), configMaps, "app", "settings", framework.Present)
	mb := framework.KCP(t).DynamicClient(t, fl.Mailbox(t, "kube1"))
	wmw := logicalClusterOf(t, fl.WMW)
	app := framework.GetAssemblage(t, mb, transport.AssemblageName(wmw, "app"))
	db := framework.GetAssemblage(t, mb, transport.AssemblageName(wmw, "db"))
	dbCond := framework.AssemblageCondition(db, edgev1alpha1.AssemblageReady)
	delivered, err := time.Parse(time.RFC3339, app.Annotations[placementtranslator.AnnotationDeliveredAt])
	if err != nil || dbCond == nil || delivered.Before(dbCond.LastTransitionTime.Time) {
		t.Errorf("the app was delivered at %s, before the database was ready at the edge (%v; seen ready by the test at %s)", delivered, dbCond, readyAt)
	}
	f.eventuallyCondition(t, "app", edgev1alpha1.PlacementDependenciesReady, metav1.ConditionTrue)
}
