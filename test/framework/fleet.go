package framework

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	kcpdynamic "github.com/kcp-dev/client-go/dynamic"
	"github.com/kcp-dev/logicalcluster/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/workspaces"
)

// Converge is how long the controllers and the syncers may take to reflect a change.
const Converge = 90 * time.Second

var syncTargetsGVR = schema.GroupVersionResource{Group: "edge.kcp.io", Version: "v1alpha1", Resource: "synctargets"}

// Fleet is one test's center: an ESPW, a workload workspace, an inventory workspace, and
// edge-controller-manager.
type Fleet struct {
	ESPW, WMW, IMW logicalcluster.Path
	ECM            *ControllerManager
}

// NewFleet makes the ESPW, a workload workspace and an inventory workspace with a Location and
// SyncTarget per entry of regions (name to region label), and starts edge-controller-manager
// with the mailbox controller, the scheduler, the placement translator, the status summarizer and
// the push host.
// The fleet's heartbeat is faster than the default (FleetHeartbeatArgs), so that a test sees a
// silent syncer go stale in seconds.
func NewFleet(t *testing.T, regions map[string]string) *Fleet {
	t.Helper()
	return newFleet(t, regions, "mailbox,scheduler,placement-translator,upsync,status-summarizer,push-host")
}

// NewFleetWithArgs is NewFleet with more arguments for edge-controller-manager, such as -v=10.
func NewFleetWithArgs(t *testing.T, regions map[string]string, ecmArgs ...string) *Fleet {
	t.Helper()
	return newFleet(t, regions, "mailbox,scheduler,placement-translator,upsync,status-summarizer,push-host", ecmArgs...)
}

// NewMailboxFleet is NewFleet with edge-controller-manager running the mailbox controller only:
// mailboxes, syncer identities and heartbeats, but nothing writes assemblages or SyncerConfigs
// into the mailboxes, so that a test can write them itself (see WriteAssemblage).
func NewMailboxFleet(t *testing.T, regions map[string]string) *Fleet {
	t.Helper()
	return newFleet(t, regions, "mailbox")
}

// NewFleetThrough is NewFleet with edge-controller-manager reaching kcp through what through
// makes of its kubeconfig (a RefusingProxy's Through, say).
func NewFleetThrough(t *testing.T, regions map[string]string, through func(t testing.TB, kubeconfig string) string) *Fleet {
	t.Helper()
	return newFleetThrough(t, regions, "mailbox,scheduler,placement-translator,upsync,status-summarizer", through)
}

func newFleet(t *testing.T, regions map[string]string, controllers string, ecmArgs ...string) *Fleet {
	t.Helper()
	return newFleetThrough(t, regions, controllers, nil, ecmArgs...)
}

func newFleetThrough(t *testing.T, regions map[string]string, controllers string, through func(t testing.TB, kubeconfig string) string, ecmArgs ...string) *Fleet {
	t.Helper()
	base := NewWorkspace(t)
	f := &Fleet{ESPW: takeESPW(t), WMW: base.Join("wmw"), IMW: base.Join("imw")}
	KubectlEdge(t, "ensure", "wmw", f.WMW.String(), "--espw", f.ESPW.String()).MustSucceed(t)
	KubectlEdge(t, "ensure", "imw", f.IMW.String(), "--espw", f.ESPW.String()).MustSucceed(t)
	// Eight at a time: crash's fleet of 50 took 25 s one after the other, a kubectl process each.
	names := make([]string, 0, len(regions))
	for name := range regions {
		names = append(names, name)
	}
	sort.Strings(names)
	if err := ForEach(len(names), 8, func(i int) error {
		r := KubectlEdge(t, "ensure", "location", names[i], "region="+regions[names[i]], "--imw", f.IMW.String(), "--espw", f.ESPW.String())
		if r.Err != nil {
			return fmt.Errorf("kubectl edge ensure location %s: %v\nstdout:\n%s\nstderr:\n%s", names[i], r.Err, r.Stdout, r.Stderr)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	args := []string{"--controllers", controllers}
	if strings.Contains(controllers, "placement-translator") {
		// The translator tells the syncers the interval; without it they keep the default.
		args = append(args, FleetHeartbeatArgs...)
	}
	if through != nil {
		args = append(args, "--kubeconfig", through(t, ControllerKubeconfig(t, f.ESPW)))
	}
	f.ECM = StartControllerManager(t, f.ESPW, append(args, ecmArgs...)...)
	// Registered after the controllers started, so run before they stop, and after the test's
	// syncers and edge clusters (started later) have stopped.
	t.Cleanup(func() { f.release(t) })
	return f
}

// A package's fleets share ESPWs, one test at a time each. An ESPW costs kcp about 10 s of CPU
// to make on two cores, its exports and their schemas, and kcp then makes a CRD for each schema
// that a workload workspace binds, established 5 s after it is made (kcp runs Kubernetes' CRD
// machinery as one of three servers): a test that finds an ESPW whose schemas some workspace
// already binds pays neither. A test takes a free ESPW or makes one, and gives it back when it
// ends, once it has deleted what an edge-controller-manager acts on, in every workspace that
// binds the ESPW's export (see release). The next test's edge-controller-manager then finds no
// placement or destination of the last one; its mailbox controller deletes the mailboxes whose
// SyncTarget is gone, as it would in production. Tests that run side by side (-parallel) each
// get an ESPW of their own. What a test's own objects in the ESPW were, it had alone: mailboxes
// are named by their SyncTarget's UID.
var espwPool struct {
	sync.Mutex
	free []logicalcluster.Path
}

// takeESPW returns a free ESPW of the package, or makes one with kubectl edge init.
func takeESPW(t *testing.T) logicalcluster.Path {
	t.Helper()
	espwPool.Lock()
	if n := len(espwPool.free); n > 0 {
		p := espwPool.free[n-1]
		espwPool.free = espwPool.free[:n-1]
		espwPool.Unlock()
		t.Logf("the fleet's ESPW is %s, used by an earlier test of the package (its destinations deleted)", p)
		return p
	}
	espwPool.Unlock()
	// A workspace of the package's, not the test's: it outlives the test.
	s := KCP(t)
	p := logicalcluster.NewPath("root").Join("e2e-espws-" + randomHex(3)).Join("espw")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	parent, _ := p.Parent()
	if _, err := (&workspaces.Ensurer{KCP: s.KCP}).Workspace(ctx, parent); err != nil {
		t.Fatalf("creating the workspace of a new ESPW: %v", err)
	}
	KubectlEdge(t, "init", "--espw", p.String()).MustSucceed(t)
	return p
}

// release deletes what an edge-controller-manager of the ESPW acts on, in every workspace that
// binds its export edge.kcp.io (a test may have made more than the fleet's: a second workload
// workspace), found through the export's virtual workspace: placements, placement slices,
// Locations and SyncTargets. It waits until the mailbox controller, still running, has deleted
// the mailboxes, and then gives the ESPW back to the package's pool; if any of that fails, the
// ESPW is left to this test alone.
func (f *Fleet) release(t *testing.T) {
	if t.Failed() || f.ECM.Exited() {
		return // a failed test's ESPW stays as it left it, to look at; without controllers no mailbox goes
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := f.clearESPW(ctx, KCP(t)); err != nil {
		t.Logf("the ESPW %s is not used again: %v", f.ESPW, err)
		return
	}
	espwPool.Lock()
	espwPool.free = append(espwPool.free, f.ESPW)
	espwPool.Unlock()
}

func (f *Fleet) clearESPW(ctx context.Context, s *Server) error {
	slice, err := s.KCP.Cluster(f.ESPW).ApisV1alpha1().APIExportEndpointSlices().Get(ctx, edgev1alpha1.EdgeAPIExportName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading the APIExportEndpointSlice %s: %w", edgev1alpha1.EdgeAPIExportName, err)
	}
	// Found through the export's virtual workspaces, deleted through kcp as the admin.
	admin, err := kcpdynamic.NewForConfig(s.Base)
	if err != nil {
		return err
	}
	var mailboxes []logicalcluster.Path
	for _, resource := range []string{"edgeplacements", "singleplacementslices", "locations", "synctargets"} {
		gvr := edgev1alpha1.SchemeGroupVersion.WithResource(resource)
		for _, endpoint := range slice.Status.APIExportEndpoints {
			cfg := rest.CopyConfig(s.Base)
			cfg.Host = endpoint.URL
			all, err := kcpdynamic.NewForConfig(cfg)
			if err != nil {
				return err
			}
			list, err := all.Resource(gvr).List(ctx, metav1.ListOptions{})
			if err != nil {
				return fmt.Errorf("listing the %s of every workspace through %s: %w", resource, endpoint.URL, err)
			}
			for _, u := range list.Items {
				if p, _, _ := unstructured.NestedString(u.Object, "status", "mailboxWorkspace"); p != "" {
					mailboxes = append(mailboxes, logicalcluster.NewPath(p))
				}
				cluster := logicalcluster.From(&u)
				if err := admin.Cluster(cluster.Path()).Resource(gvr).Delete(ctx, u.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					return fmt.Errorf("deleting %s %s|%s: %w", resource, cluster, u.GetName(), err)
				}
			}
		}
	}
	for _, mb := range mailboxes {
		parent, name := mb.Split()
		if err := workspaces.Poll(ctx, time.Minute, func(ctx context.Context) (bool, error) {
			ws, err := s.KCP.Cluster(parent).TenancyV1alpha1().Workspaces().Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err) || (err == nil && ws.DeletionTimestamp != nil), nil
		}, "the mailbox %s to be deleted after its SyncTarget", mb); err != nil {
			return err
		}
	}
	return nil
}

// FleetHeartbeatArgs are the heartbeat flags of the test fleets' edge-controller-manager: a
// heartbeat every 5 s, stale after 20 s of silence.
var FleetHeartbeatArgs = []string{"--heartbeat-interval=5s", "--heartbeat-grace-period=20s"}

// Apply applies manifest to the workspace ws with kubectl.
func (f *Fleet) Apply(t *testing.T, ws logicalcluster.Path, manifest string) {
	t.Helper()
	KubectlApply(t, KCP(t).ServerURL(ws), manifest).MustSucceed(t)
}

// Kubectl runs kubectl against the workspace ws and fails the test if it fails.
func (f *Fleet) Kubectl(t *testing.T, ws logicalcluster.Path, args ...string) Result {
	t.Helper()
	return Kubectl(t, append([]string{"--server", KCP(t).ServerURL(ws)}, args...)...).MustSucceed(t)
}

// Mailbox returns the mailbox path of a SyncTarget of the fleet, once it has one.
func (f *Fleet) Mailbox(t *testing.T, syncTarget string) logicalcluster.Path {
	t.Helper()
	var path string
	Eventually(t, Converge, func() (bool, string) {
		st := GetObject(t, KCP(t).DynamicClient(t, f.IMW), syncTargetsGVR, "", syncTarget)
		if st == nil {
			return false, "no SyncTarget " + syncTarget
		}
		path, _, _ = unstructured.NestedString(st.Object, "status", "mailboxWorkspace")
		return path != "", "SyncTarget " + syncTarget + " has no mailbox yet"
	})
	return logicalcluster.NewPath(path)
}

// EventuallyObject waits until check, given the object (nil if absent), says nothing is wrong,
// and returns the object.
func EventuallyObject(t *testing.T, what string, client dynamic.Interface, gvr schema.GroupVersionResource, namespace, name string, check func(u *unstructured.Unstructured) string) *unstructured.Unstructured {
	t.Helper()
	var last *unstructured.Unstructured
	Eventually(t, Converge, func() (bool, string) {
		last = GetObject(t, client, gvr, namespace, name)
		if why := check(last); why != "" {
			return false, fmt.Sprintf("%s: %s %s/%s: %s", what, gvr.Resource, namespace, name, why)
		}
		return true, ""
	})
	return last
}

// EventuallyQuiet waits until the object has not changed (same resourceVersion, or absent) for
// quiet, so that a test comparing it before and after something sees only what that something
// did, not the end of the object's own settling (a placement that turned Ready may still get a
// status write from a controller that lost a race to write first).
func EventuallyQuiet(t *testing.T, what string, client dynamic.Interface, gvr schema.GroupVersionResource, namespace, name string, quiet time.Duration) {
	t.Helper()
	version := func() string {
		if u := GetObject(t, client, gvr, namespace, name); u != nil {
			return u.GetResourceVersion()
		}
		return ""
	}
	last, since := version(), time.Now()
	Eventually(t, Converge, func() (bool, string) {
		if v := version(); v != last {
			last, since = v, time.Now()
		}
		return time.Since(since) >= quiet, fmt.Sprintf("%s: %s %s/%s changed within the last %s", what, gvr.Resource, namespace, name, quiet)
	})
}

// EventuallyPlacementCondition waits until the EdgePlacement's condition of condType has the
// given status and its message contains every fragment, and returns the message.
func EventuallyPlacementCondition(t *testing.T, client dynamic.Interface, placement, condType string, status metav1.ConditionStatus, fragments ...string) string {
	t.Helper()
	gvr := schema.GroupVersionResource{Group: "edge.kcp.io", Version: "v1alpha1", Resource: "edgeplacements"}
	var msg string
	EventuallyObject(t, "condition "+condType, client, gvr, "", placement, func(u *unstructured.Unstructured) string {
		if u == nil {
			return "absent"
		}
		s, reason, m := ConditionStatus(u, condType)
		msg = m
		if s != status {
			return fmt.Sprintf("%s is %q (%s: %s), want %s", condType, s, reason, m, status)
		}
		for _, frag := range fragments {
			if !strings.Contains(m, frag) {
				return fmt.Sprintf("%s message %q lacks %q", condType, m, frag)
			}
		}
		return ""
	})
	return msg
}

// Present is a check for EventuallyObject: the object exists.
func Present(u *unstructured.Unstructured) string {
	if u == nil {
		return "absent"
	}
	return ""
}

// Absent is a check for EventuallyObject: the object does not exist.
func Absent(u *unstructured.Unstructured) string {
	if u != nil {
		return "still there"
	}
	return ""
}

// FieldIs is a check for EventuallyObject: the field at path, printed, is want.
func FieldIs(want string, path ...string) func(u *unstructured.Unstructured) string {
	return func(u *unstructured.Unstructured) string {
		if u == nil {
			return "absent"
		}
		if got := FieldOf(u, path...); got != want {
			return fmt.Sprintf("%v is %v, want %s", path, got, want)
		}
		return ""
	}
}

// FieldOf is the value at path in u, printed with fmt.Sprint ("<absent>" if u is nil).
func FieldOf(u *unstructured.Unstructured, path ...string) string {
	if u == nil {
		return "<absent>"
	}
	v, _, _ := unstructured.NestedFieldNoCopy(u.Object, path...)
	return fmt.Sprint(v)
}

// NestedInt is the integer at path in u, 0 if there is none.
func NestedInt(u *unstructured.Unstructured, path ...string) int64 {
	v, _, _ := unstructured.NestedInt64(u.Object, path...)
	return v
}

// SyncerCredential is the credential that `kubectl edge prep-for-syncer --kubeconfig-only` gives
// for a SyncTarget of the fleet, loaded from the kubeconfig file it writes, and the mailbox that
// the kubeconfig points at.
func (f *Fleet) SyncerCredential(t *testing.T, syncTarget string) (*rest.Config, logicalcluster.Path) {
	t.Helper()
	file := filepath.Join(t.TempDir(), syncTarget+".kubeconfig")
	KubectlEdge(t, "prep-for-syncer", syncTarget, "--imw", f.IMW.String(), "--espw", f.ESPW.String(),
		"--kubeconfig-only", "--output-file", file).MustSucceed(t)
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: file}, nil).ClientConfig()
	if err != nil {
		t.Fatalf("loading the syncer kubeconfig of %s: %v", syncTarget, err)
	}
	_, mailbox := workspaces.Split(cfg)
	if mailbox.Empty() {
		t.Fatalf("the syncer kubeconfig of %s points at %s, not at a workspace", syncTarget, cfg.Host)
	}
	return cfg, mailbox
}

// ManyConfigMaps returns a manifest for a workload workspace: the namespace many, count
// ConfigMaps cm-00, cm-01... in it (data i, their number, and version "1"), and the EdgePlacement
// many, which places that namespace on the Locations labelled region.
func ManyConfigMaps(count int, region string) string {
	var manifest strings.Builder
	manifest.WriteString("apiVersion: v1\nkind: Namespace\nmetadata: {name: many}\n")
	for i := 0; i < count; i++ {
		fmt.Fprintf(&manifest, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%02d, namespace: many}\ndata: {i: \"%d\", version: \"1\"}\n", i, i)
	}
	fmt.Fprintf(&manifest, `---
apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: many}
spec:
  locationSelectors: [{matchLabels: {region: %s}}]
  downsync: [{namespaces: [many]}]
`, region)
	return manifest.String()
}
