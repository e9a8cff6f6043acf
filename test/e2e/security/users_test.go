package security

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	apisv1alpha2 "github.com/kcp-dev/sdk/apis/apis/v1alpha2"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/espw"
	"github.com/kcp-dev/edge-mc/pkg/transport"
	"github.com/kcp-dev/edge-mc/test/framework"
)

var (
	workspacesGVR = schema.GroupVersionResource{Group: "tenancy.kcp.io", Version: "v1alpha1", Resource: "workspaces"}
	configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	placementsGVR = schema.GroupVersionResource{Group: "edge.kcp.io", Version: "v1alpha1", Resource: "edgeplacements"}
)

// grantAdmin makes user an admin of the workspace ws (cluster-admin there, which includes kcp's
// access to the workspace), as its owner would be, and waits until kcp's authorizer has the
// binding: kcp answers from an RBAC cache that follows writes with a delay, a few seconds on a
// loaded machine (CI saw alice refused right after the grant).
func grantAdmin(t *testing.T, f *framework.Fleet, ws logicalcluster.Path, user string) {
	t.Helper()
	f.Apply(t, ws, fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: %[1]s-admin}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: %[1]s}]
`, user))
	cfg := framework.KCP(t).UserConfig(t, user, ws)
	probe := get("list Namespaces in "+ws.String(), ws, "/api/v1/namespaces")
	framework.Eventually(t, framework.Converge, func() (bool, string) {
		code, body := framework.Send(t, cfg, probe)
		return code == 200, fmt.Sprintf("%s, just made admin: %s: %d %s", user, probe.What, code, body)
	})
}

// TestWorkloadAuthorStaysInTheirWorkspace: alice administers one workload workspace. There she
// can write workload objects and EdgePlacements; everywhere else her requests are refused with
// 403: the other workload workspace, the mailboxes (by path and by logical cluster), the
// inventory workspace (she cannot make SyncTargets or Locations there), the ESPW (she cannot make
// mailboxes), root, all workspaces at once, and the virtual workspaces of edge-mc's exports. bob,
// who was granted nothing, cannot read her workspace.
func TestWorkloadAuthorStaysInTheirWorkspace(t *testing.T) {
	t.Parallel()
	f := framework.NewFleet(t, map[string]string{"edge1": "east", "edge2": "west"})
	wmwB := secondWMW(t, f)
	grantAdmin(t, f, f.WMW, "alice")
	s := framework.KCP(t)
	alice, bob := s.UserConfig(t, "alice", f.WMW), s.UserConfig(t, "bob", f.WMW)

	expectAllowed(t, "alice", alice,
		get("list ConfigMaps in her workspace", f.WMW, "/api/v1/configmaps"),
		get("read her Secret", f.WMW, "/api/v1/namespaces/app/secrets/creds"),
		create("write a ConfigMap into her workspace", f.WMW, "/api/v1/namespaces/app/configmaps", configMap("hers")),
		create("create an EdgePlacement in her workspace", f.WMW, "/apis/edge.kcp.io/v1alpha1/edgeplacements",
			`{"apiVersion": "edge.kcp.io/v1alpha1", "kind": "EdgePlacement", "metadata": {"name": "hers"},
				"spec": {"locationSelectors": [{"matchLabels": {"region": "east"}}], "downsync": [{"namespaces": ["app"]}]}}`),
	)
	others := outsideRequests(t, f, f.Mailbox(t, "edge1"), mailboxCluster(t, f, "edge2"), wmwB)
	others = append(others,
		get("list ConfigMaps in edge2's mailbox", f.Mailbox(t, "edge2"), "/api/v1/configmaps"),
		create("create a SyncTarget in the inventory workspace", f.IMW, "/apis/edge.kcp.io/v1alpha1/synctargets",
			`{"apiVersion": "edge.kcp.io/v1alpha1", "kind": "SyncTarget", "metadata": {"name": "hers"}}`),
	)
	expectRefused(t, "alice", alice, others...)
	expectRefused(t, "bob", bob,
		get("list ConfigMaps in alice's workspace", f.WMW, "/api/v1/configmaps"),
		get("read alice's Secret", f.WMW, "/api/v1/namespaces/app/secrets/creds"),
	)

	// The command-line client says the same as the API.
	kubeconfig := s.UserKubeconfig(t, "alice", f.WMW)
	res := framework.Kubectl(t, "--kubeconfig", kubeconfig, "--server", s.ServerURL(wmwB), "get", "secrets", "-n", "app").MustFail(t)
	if !strings.Contains(res.Stderr, "Forbidden") && !strings.Contains(res.Stderr, "forbidden") {
		t.Errorf("kubectl get secrets in another workload workspace as alice: want a Forbidden error, got:\n%s", res.Stderr)
	}
}

// TestOnlyInventoryAdminsMakeInventory: a workspace that binds edge.kcp.io gets SyncTargets and
// Locations with it, and the mailbox controller makes a mailbox for a SyncTarget wherever it is.
// edge.kcp.io's maximal permission policy keeps those kinds to inventory admins: alice, admin of a
// workload workspace and of the inventory workspace, can use placements and Customizers and read
// SyncTargets, but making a SyncTarget or a Location is refused in either; carol, of the group
// edge-mc:inventory-admins, makes a SyncTarget in the inventory workspace, and it gets a mailbox;
// dave, admin of the inventory workspace alone, is refused until an operator adds him, by his
// prefixed name, to the ClusterRoleBinding of inventory admins in the ESPW.
func TestOnlyInventoryAdminsMakeInventory(t *testing.T) {
	t.Parallel()
	f := framework.NewFleet(t, map[string]string{"edge1": "east"})
	for _, u := range []string{"alice", "carol", "dave"} {
		grantAdmin(t, f, f.IMW, u)
	}
	grantAdmin(t, f, f.WMW, "alice")
	s := framework.KCP(t)
	syncTarget := func(ws logicalcluster.Path, name string) request {
		return create("create a SyncTarget in "+ws.String(), ws, "/apis/edge.kcp.io/v1alpha1/synctargets",
			fmt.Sprintf(`{"apiVersion": "edge.kcp.io/v1alpha1", "kind": "SyncTarget", "metadata": {"name": %q, "labels": {"region": "east"}}}`, name))
	}
	location := func(ws logicalcluster.Path, name string) request {
		return create("create a Location in "+ws.String(), ws, "/apis/edge.kcp.io/v1alpha1/locations",
			fmt.Sprintf(`{"apiVersion": "edge.kcp.io/v1alpha1", "kind": "Location", "metadata": {"name": %q, "labels": {"region": "east"}}, "spec": {"instanceSelector": {}}}`, name))
	}
	alice := s.UserConfig(t, "alice", f.WMW)
	expectAllowed(t, "alice", alice,
		get("list SyncTargets in her workload workspace", f.WMW, "/apis/edge.kcp.io/v1alpha1/synctargets"),
		get("list Locations in the inventory workspace", f.IMW, "/apis/edge.kcp.io/v1alpha1/locations"),
		create("create a Customizer in her workload workspace", f.WMW, "/apis/edge.kcp.io/v1alpha1/namespaces/default/customizers",
			`{"apiVersion": "edge.kcp.io/v1alpha1", "kind": "Customizer", "metadata": {"name": "hers"}}`),
	)
	expectRefused(t, "alice", alice,
		syncTarget(f.WMW, "hers"), location(f.WMW, "hers"),
		syncTarget(f.IMW, "hers"), location(f.IMW, "hers"),
	)
	dave := s.UserConfig(t, "dave", f.IMW)
	expectRefused(t, "dave (not an inventory admin)", dave, syncTarget(f.IMW, "his"))
	// kubectl edge, run as dave, says who may and how to become one.
	res := framework.KubectlEdge(t, "ensure", "location", "his", "region=east", "--imw", f.IMW.String(), "--espw", f.ESPW.String(),
		"--kubeconfig", s.UserKubeconfig(t, "dave", f.IMW)).MustFail(t)
	for _, want := range []string{"ensuring SyncTarget his", "only inventory admins may write SyncTargets and Locations", espw.InventoryAdminsGroup, espw.InventoryAdminRole} {
		if !strings.Contains(res.Stderr, want) {
			t.Errorf("kubectl edge ensure location as dave: stderr does not say %q: %s", want, res.Stderr)
		}
	}

	carol := s.UserConfig(t, "carol", f.IMW)
	expectAllowed(t, "carol (group "+espw.InventoryAdminsGroup+")", carol, syncTarget(f.IMW, "hers"), location(f.IMW, "hers"))
	// Her SyncTarget gets its mailbox: a workspace of the ESPW named after the inventory's logical
	// cluster and the SyncTarget's UID. (Not a count of the ESPW's workspaces: the package's tests
	// share ESPWs, and an earlier test's mailboxes may still be going away.)
	hers := framework.GetObject(t, s.DynamicClient(t, f.IMW), syncTargetsGVR, "", "hers")
	if hers == nil {
		t.Fatalf("carol's SyncTarget hers is not in %s", f.IMW)
	}
	mailbox := transport.MailboxName(logicalcluster.From(hers), hers.GetUID())
	espwClient := s.DynamicClient(t, f.ESPW)
	framework.EventuallyObject(t, "the mailbox of carol's SyncTarget hers", espwClient, workspacesGVR, "", mailbox, framework.Present)

	// The operator's way to make one more person an inventory admin: a subject, by the name kcp
	// checks the policy against, in the ClusterRoleBinding of the ESPW.
	kube := s.KubeClient(t, f.ESPW)
	ctx := framework.Context(t, 30*time.Second)
	crb, err := kube.RbacV1().ClusterRoleBindings().Get(ctx, espw.InventoryAdminRole, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the ClusterRoleBinding %s in the ESPW: %v", espw.InventoryAdminRole, err)
	}
	crb.Subjects = append(crb.Subjects, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: espw.PolicyName("dave")})
	if _, err := kube.RbacV1().ClusterRoleBindings().Update(ctx, crb, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("adding dave to %s: %v", espw.InventoryAdminRole, err)
	}
	// The package's tests share ESPWs: the next test on this one gets it without dave.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		crb, err := kube.RbacV1().ClusterRoleBindings().Get(ctx, espw.InventoryAdminRole, metav1.GetOptions{})
		if err != nil {
			t.Errorf("reading %s to take dave out again: %v", espw.InventoryAdminRole, err)
			return
		}
		crb.Subjects = slices.DeleteFunc(crb.Subjects, func(s rbacv1.Subject) bool { return s.Name == espw.PolicyName("dave") })
		if _, err := kube.RbacV1().ClusterRoleBindings().Update(ctx, crb, metav1.UpdateOptions{}); err != nil {
			t.Errorf("taking dave out of %s again: %v", espw.InventoryAdminRole, err)
		}
	})
	framework.Eventually(t, framework.Converge, func() (bool, string) {
		code, body := framework.Send(t, dave, syncTarget(f.IMW, "his"))
		return code == 201, fmt.Sprintf("dave, added to %s: %d %s", espw.InventoryAdminRole, code, body)
	})
}

// sharedEdge makes a fleet with one edge cluster, edge1 (region east), its syncer, and a second
// workload workspace, wmw-b, beside the fleet's: two teams whose placements share the edge.
func sharedEdge(t *testing.T) (*framework.Fleet, *framework.PCluster, logicalcluster.Path) {
	t.Helper()
	pending := framework.StartLogicalPClusters(t, "edge1")
	f := framework.NewFleet(t, map[string]string{"edge1": "east"})
	edge := pending()["edge1"]
	framework.StartSyncer(t, f.ESPW, f.IMW, "edge1", edge)
	parent, _ := f.WMW.Parent()
	wmwB := parent.Join("wmw-b")
	framework.KubectlEdge(t, "ensure", "wmw", wmwB.String(), "--espw", f.ESPW.String()).MustSucceed(t)
	return f, edge, wmwB
}

// TestUpsyncStaysWithinTheWorkspace: two workload workspaces place on one edge cluster, a's
// namespace a-app and b's b-app. a's placement asks for ConfigMaps of b-app and of the edge's
// kube-system back as well as of its own. What workloads make at the edge comes back to the
// workspace whose namespace it is: a gets a-app's, b gets b-app's, and a gets neither b-app's nor
// kube-system's, with an UpsyncConflict condition that says why.
func TestUpsyncStaysWithinTheWorkspace(t *testing.T) {
	t.Parallel()
	f, edge, wmwB := sharedEdge(t)
	placement := func(ns string, upsync ...string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata: {name: %s}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: %s}
data: {mode: fast}
---
apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: app}
spec:
  locationSelectors: [{matchLabels: {region: east}}]
  downsync: [{namespaces: [%s]}]
  upsync: [{resources: [configmaps], namespaces: [%s]}]
`, ns, ns, ns, strings.Join(upsync, ", "))
	}
	f.Apply(t, f.WMW, placement("a-app", "a-app", "b-app", "kube-system"))
	f.Apply(t, wmwB, placement("b-app", "b-app"))
	ec := edge.DynamicClient(t)
	for _, ns := range []string{"a-app", "b-app"} {
		framework.EventuallyObject(t, "namespace "+ns+" at the edge", ec, namespacesGVR, "", ns, framework.Present)
	}
	if r := framework.Kubectl(t, "--kubeconfig", edge.KubeconfigPath, "create", "namespace", "kube-system"); r.Err != nil && !strings.Contains(r.Stderr, "AlreadyExists") {
		t.Fatalf("creating kube-system at the edge: %v: %s", r.Err, r.Stderr)
	}
	for _, ns := range []string{"a-app", "b-app", "kube-system"} {
		framework.Kubectl(t, "--kubeconfig", edge.KubeconfigPath, "create", "configmap", "made-at-the-edge", "-n", ns, "--from-literal=of="+ns).MustSucceed(t)
	}
	a, b := framework.KCP(t).DynamicClient(t, f.WMW), framework.KCP(t).DynamicClient(t, wmwB)
	framework.EventuallyObject(t, "a-app's ConfigMap back in workspace a", a, configMapsGVR, "a-app", "made-at-the-edge", framework.FieldIs("a-app", "data", "of"))
	framework.EventuallyObject(t, "b-app's ConfigMap back in workspace b", b, configMapsGVR, "b-app", "made-at-the-edge", framework.FieldIs("b-app", "data", "of"))
	msg := framework.EventuallyPlacementCondition(t, a, "app", "UpsyncConflict", "True", "configmaps/b-app/made-at-the-edge is not returned",
		"another workspace delivers that namespace there", "configmaps/kube-system/made-at-the-edge is not returned", "a namespace of the edge cluster itself")
	t.Logf("workspace a's placement: UpsyncConflict: %s", msg)
	// By now a's return path has judged both; neither ever arrives.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		for _, ns := range []string{"b-app", "kube-system"} {
			if framework.GetObject(t, a, configMapsGVR, ns, "made-at-the-edge") != nil {
				t.Fatalf("workspace a got the ConfigMap made at the edge in %s, which is not a's", ns)
			}
		}
		time.Sleep(time.Second)
	}
}

// TestPlacementReachesOnlyItsWorkspace: workspace b places its namespace b-team, with a
// ConfigMap of b's, on edge1. alice, admin of workspace a only, makes a placement there that
// names b-team as well as her own a-app, for the same edge. A placement selects in its own
// workspace only: a's assemblage carries a-app and nothing of b's; b's ConfigMap at the edge is
// not written by it (same UID, resourceVersion and data), nor is anything outside alice's a-app,
// at the edge (every namespace and ConfigMap) or in workspace b (its ConfigMap and placement). What alice can read through
// edge-mc says nothing of b's either: her placement's status, and `kubectl edge status` run as
// her; `kubectl edge status --target`, which reads the mailbox, is refused to her.
func TestPlacementReachesOnlyItsWorkspace(t *testing.T) {
	t.Parallel()
	f, edge, wmwB := sharedEdge(t)
	const bValue = "b-only-7f3a"
	f.Apply(t, wmwB, `apiVersion: v1
kind: Namespace
metadata: {name: b-team}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: b-data, namespace: b-team}
data: {value: `+bValue+`}
---
apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: b-place}
spec:
  locationSelectors: [{matchLabels: {region: east}}]
  downsync: [{namespaces: [b-team]}]
`)
	ec := edge.DynamicClient(t)
	before := framework.EventuallyObject(t, "b's ConfigMap at the edge", ec, configMapsGVR, "b-team", "b-data", framework.FieldIs(bValue, "data", "value"))
	b := framework.KCP(t).DynamicClient(t, wmwB)
	framework.EventuallyPlacementCondition(t, b, "b-place", "Ready", "True")
	// b's placement may get a status write or two after it turned Ready (a controller that lost
	// the race to write first writes again): those are not alice's doing.
	framework.EventuallyQuiet(t, "b's placement", b, placementsGVR, "", "b-place", 5*time.Second)
	// Everything edge-mc may write outside alice's selection, as it is before her placement:
	// the edge's namespaces and ConfigMaps, and workspace b's ConfigMap and placement.
	outside := func() map[string]string {
		out := map[string]string{}
		for _, gvr := range []schema.GroupVersionResource{namespacesGVR, configMapsGVR} {
			for _, u := range list(t, ec, gvr) {
				if u.GetNamespace() != "a-app" && !(gvr == namespacesGVR && u.GetName() == "a-app") {
					out["edge "+gvr.Resource+" "+u.GetNamespace()+"/"+u.GetName()] = u.GetResourceVersion()
				}
			}
		}
		for _, o := range []struct {
			gvr             schema.GroupVersionResource
			namespace, name string
		}{{configMapsGVR, "b-team", "b-data"}, {placementsGVR, "", "b-place"}} {
			if u := framework.GetObject(t, b, o.gvr, o.namespace, o.name); u != nil {
				out["workspace b "+o.gvr.Resource+" "+o.name] = u.GetResourceVersion()
			}
		}
		return out
	}
	untouched := outside()

	grantAdmin(t, f, f.WMW, "alice")
	s := framework.KCP(t)
	alice := s.UserConfig(t, "alice", f.WMW)
	expectAllowed(t, "alice", alice,
		create("create namespace a-app in her workspace", f.WMW, "/api/v1/namespaces", `{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a-app"}}`),
		create("create a ConfigMap in a-app", f.WMW, "/api/v1/namespaces/a-app/configmaps", configMap("a-data")),
		create("create a placement naming b's namespace and hers", f.WMW, "/apis/edge.kcp.io/v1alpha1/edgeplacements",
			`{"apiVersion": "edge.kcp.io/v1alpha1", "kind": "EdgePlacement", "metadata": {"name": "greedy"},
				"spec": {"locationSelectors": [{"matchLabels": {"region": "east"}}], "downsync": [{"namespaces": ["a-app", "b-team"]}]}}`),
	)
	framework.EventuallyObject(t, "alice's ConfigMap at the edge", ec, configMapsGVR, "a-app", "a-data", framework.Present)
	a := s.DynamicClient(t, f.WMW)
	framework.EventuallyPlacementCondition(t, a, "greedy", "Ready", "True")

	// Nothing outside alice's selection was written, at the edge or in workspace b.
	if now := outside(); !reflect.DeepEqual(now, untouched) {
		t.Errorf("edge-mc wrote outside alice's selection after her placement:\nbefore %v\nafter  %v", untouched, now)
	}
	// What the edge received of b-team came from b alone, and was not written again.
	after := framework.GetObject(t, ec, configMapsGVR, "b-team", "b-data")
	switch {
	case after == nil:
		t.Fatal("b's ConfigMap is gone from the edge")
	case after.GetUID() != before.GetUID() || after.GetResourceVersion() != before.GetResourceVersion():
		t.Errorf("b's ConfigMap at the edge was rewritten after alice's placement: uid %s rv %s, before uid %s rv %s",
			after.GetUID(), after.GetResourceVersion(), before.GetUID(), before.GetResourceVersion())
	}
	// What each placement delivers there, as an operator reads it from the mailbox.
	out := framework.KubectlEdge(t, "status", "--target", "edge1", "--imw", f.IMW.String(), "--espw", f.ESPW.String(), "-o", "json").MustSucceed(t).Stdout
	var target struct {
		Placements []struct {
			Placement string `json:"placement"`
			Objects   []struct {
				Object string `json:"object"`
			} `json:"objects"`
		} `json:"placements"`
	}
	if err := json.Unmarshal([]byte(out), &target); err != nil {
		t.Fatalf("kubectl edge status --target edge1 -o json: %v:\n%s", err, out)
	}
	carried := map[string][]string{}
	for _, p := range target.Placements {
		for _, o := range p.Objects {
			carried[p.Placement] = append(carried[p.Placement], o.Object)
		}
	}
	var greedy, bPlace []string
	for name, objects := range carried {
		switch {
		case strings.HasSuffix(name, "greedy"):
			greedy = objects
		case strings.HasSuffix(name, "b-place"):
			bPlace = objects
		}
	}
	if !slices.Contains(greedy, "configmaps/a-app/a-data") || slices.ContainsFunc(greedy, func(o string) bool { return strings.Contains(o, "b-team") }) {
		t.Errorf("alice's placement carries %v to edge1, want a-app's objects and nothing of b-team", greedy)
	}
	if !slices.Contains(bPlace, "configmaps/b-team/b-data") {
		t.Errorf("b's placement carries %v to edge1, want b-team's ConfigMap", bPlace)
	}

	// What alice reads through edge-mc.
	aliceClient, err := dynamic.NewForConfig(alice)
	if err != nil {
		t.Fatal(err)
	}
	u := framework.GetObject(t, aliceClient, placementsGVR, "", "greedy")
	if u == nil {
		t.Fatal("alice cannot read her own placement")
	}
	status, _ := json.Marshal(u.Object["status"])
	for _, leak := range []string{"b-data", bValue, "b-place"} {
		if strings.Contains(string(status), leak) {
			t.Errorf("alice's placement's status mentions %q, of workspace b: %s", leak, status)
		}
	}
	kubeconfig := s.UserKubeconfig(t, "alice", f.WMW)
	for _, args := range [][]string{{"status"}, {"status", "greedy", "-o", "json"}} {
		res := framework.KubectlEdge(t, append(args, "--kubeconfig", kubeconfig)...).MustSucceed(t)
		if !strings.Contains(res.Stdout, "greedy") {
			t.Errorf("kubectl edge %s as alice does not show her placement:\n%s", strings.Join(args, " "), res.Stdout)
		}
		for _, leak := range []string{"b-data", bValue, "b-place"} {
			if strings.Contains(res.Stdout+res.Stderr, leak) {
				t.Errorf("kubectl edge %s as alice mentions %q, of workspace b:\n%s%s", strings.Join(args, " "), leak, res.Stdout, res.Stderr)
			}
		}
	}
	res := framework.KubectlEdge(t, "status", "--target", "edge1", "--imw", f.IMW.String(), "--espw", f.ESPW.String(), "--kubeconfig", kubeconfig).MustFail(t)
	if !strings.Contains(strings.ToLower(res.Stderr), "forbidden") || strings.Contains(res.Stdout, "b-data") {
		t.Errorf("kubectl edge status --target edge1 as alice: want a Forbidden error and nothing of the mailbox, got:\n%s%s", res.Stdout, res.Stderr)
	}
}

// TestUpsyncNeedsConsent: a workload workspace's owner consents to edge-mc reading and writing
// objects of a kind there by accepting edge.kcp.io's permission claim on it in the workspace's
// APIBinding. With the claim on ConfigMaps accepted, a ConfigMap made at the edge comes back.
// Once the owner rejects that claim: one made afterwards does not come back, and the placement
// says why (UpsyncConflict); what the placement delivered stays at the edge as it was, its
// namespace too, and the placement says that (Projected False), since edge-mc no longer sees
// those objects, which is not their deletion. Accepted again, the ConfigMap comes back.
func TestUpsyncNeedsConsent(t *testing.T) {
	t.Parallel()
	pending := framework.StartLogicalPClusters(t, "edge1")
	f := framework.NewFleet(t, map[string]string{"edge1": "east"})
	edge := pending()["edge1"]
	framework.StartSyncer(t, f.ESPW, f.IMW, "edge1", edge)
	f.Apply(t, f.WMW, `apiVersion: v1
kind: Namespace
metadata: {name: a-app}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: a-app}
data: {mode: fast}
---
apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: app}
spec:
  locationSelectors: [{matchLabels: {region: east}}]
  downsync: [{namespaces: [a-app]}]
  upsync: [{resources: [configmaps], namespaces: [a-app]}]
`)
	ec := edge.DynamicClient(t)
	settings := framework.EventuallyObject(t, "the placed ConfigMap at the edge", ec, configMapsGVR, "a-app", "settings", framework.Present)
	ns := framework.GetObject(t, ec, namespacesGVR, "", "a-app")
	a := framework.KCP(t).DynamicClient(t, f.WMW)
	framework.Kubectl(t, "--kubeconfig", edge.KubeconfigPath, "create", "configmap", "made-before", "-n", "a-app", "--from-literal=k=v").MustSucceed(t)
	framework.EventuallyObject(t, "a ConfigMap made at the edge, back in the workspace", a, configMapsGVR, "a-app", "made-before", framework.Present)

	setConsent := func(state apisv1alpha2.AcceptablePermissionClaimState) {
		t.Helper()
		bindings := framework.KCP(t).KCP.Cluster(f.WMW).ApisV1alpha2().APIBindings()
		b, err := bindings.Get(framework.Context(t, time.Minute), edgev1alpha1.EdgeAPIExportName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for i, c := range b.Spec.PermissionClaims {
			if c.Group == "" && c.Resource == "configmaps" {
				b.Spec.PermissionClaims[i].State = state
				found = true
			}
		}
		if !found {
			t.Fatalf("the workspace's APIBinding edge.kcp.io has no claim on ConfigMaps: %+v", b.Spec.PermissionClaims)
		}
		if _, err := bindings.Update(framework.Context(t, time.Minute), b, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Logf("the workspace's owner set edge.kcp.io's claim on ConfigMaps to %s", state)
	}
	setConsent(apisv1alpha2.ClaimRejected)
	msg := framework.EventuallyPlacementCondition(t, a, "app", edgev1alpha1.PlacementProjected, metav1.ConditionFalse,
		"does not accept the permission claims on configmaps (claim rejected", "kept")
	t.Logf("Projected: %s", msg)
	framework.Kubectl(t, "--kubeconfig", edge.KubeconfigPath, "create", "configmap", "made-after", "-n", "a-app", "--from-literal=k=v").MustSucceed(t)
	msg = framework.EventuallyPlacementCondition(t, a, "app", "UpsyncConflict", metav1.ConditionTrue,
		"configmaps/a-app/made-after is not returned", "does not accept the permission claim on configmaps")
	t.Logf("UpsyncConflict: %s", msg)
	for _, check := range []struct {
		what   string
		gvr    schema.GroupVersionResource
		ns     string
		before *unstructured.Unstructured
	}{{"the placed ConfigMap", configMapsGVR, "a-app", settings}, {"its namespace", namespacesGVR, "", ns}} {
		now := framework.GetObject(t, ec, check.gvr, check.ns, check.before.GetName())
		if now == nil || now.GetUID() != check.before.GetUID() || now.GetResourceVersion() != check.before.GetResourceVersion() {
			t.Errorf("%s at the edge was deleted or rewritten after the claim was rejected: %v", check.what, now)
		}
	}
	// edge-mc cannot see ConfigMaps of the workspace now: the admin's read shows it did not
	// write one.
	if framework.GetObject(t, a, configMapsGVR, "a-app", "made-after") != nil {
		t.Error("a ConfigMap made at the edge came back into the workspace after its owner rejected edge.kcp.io's claim on ConfigMaps")
	}

	setConsent(apisv1alpha2.ClaimAccepted)
	framework.EventuallyObject(t, "the ConfigMap made at the edge while the claim was rejected, back once it is accepted", a, configMapsGVR, "a-app", "made-after", framework.Present)
	framework.EventuallyPlacementCondition(t, a, "app", edgev1alpha1.PlacementProjected, metav1.ConditionTrue)
	if now := framework.GetObject(t, ec, configMapsGVR, "a-app", "settings"); now == nil || now.GetUID() != settings.GetUID() {
		t.Errorf("the placed ConfigMap at the edge was recreated: %v", now)
	}
}
