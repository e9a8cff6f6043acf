package security

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kcp-dev/edge-mc/test/framework"
)

var (
	workspacesGVR = schema.GroupVersionResource{Group: "tenancy.kcp.io", Version: "v1alpha1", Resource: "workspaces"}
	configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
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

// TestWorkloadAuthorCannotMakeInventory: a workload workspace binds edge.kcp.io, which also
// serves SyncTargets and Locations, so its admin can create a SyncTarget there, and the mailbox
// controller makes a mailbox workspace in the ESPW for it. That is a known gap
// (docs/reliability.md): only inventory admins should make SyncTargets, and so mailboxes.
func TestWorkloadAuthorCannotMakeInventory(t *testing.T) {
	f := framework.NewFleet(t, map[string]string{"edge1": "east"})
	grantAdmin(t, f, f.WMW, "alice")
	alice := framework.KCP(t).UserConfig(t, "alice", f.WMW)
	const why = "edge.kcp.io serves SyncTargets and Locations in every workspace that binds it, and the mailbox controller serves SyncTargets of every such workspace"
	espw := framework.KCP(t).DynamicClient(t, f.ESPW)
	before := len(list(t, espw, workspacesGVR))
	expectGap(t, "alice", alice, why, []gap{
		{create("create a SyncTarget in her workload workspace", f.WMW, "/apis/edge.kcp.io/v1alpha1/synctargets",
			`{"apiVersion": "edge.kcp.io/v1alpha1", "kind": "SyncTarget", "metadata": {"name": "hers", "labels": {"region": "east"}}}`), 201},
		{create("create a Location in her workload workspace", f.WMW, "/apis/edge.kcp.io/v1alpha1/locations",
			`{"apiVersion": "edge.kcp.io/v1alpha1", "kind": "Location", "metadata": {"name": "hers", "labels": {"region": "east"}}, "spec": {"instanceSelector": {}}}`), 201},
	})
	// What her SyncTarget made: a mailbox in the ESPW, within a few seconds.
	var after int
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if after = len(list(t, espw, workspacesGVR)); after > before {
			break
		}
		time.Sleep(time.Second)
	}
	switch {
	case after > before && strictGaps():
		t.Errorf("alice's SyncTarget made %d mailbox workspace(s) in the ESPW (known gap: %s)", after-before, why)
	case after > before:
		t.Logf("known gap (%s): alice's SyncTarget made %d mailbox workspace(s) in the ESPW", why, after-before)
	case !strictGaps():
		t.Errorf("alice's SyncTarget made no mailbox: the gap (%s) is closed; make that this test's expectation and update docs/reliability.md", why)
	}
}

// TestUpsyncStaysWithinTheWorkspace: two workload workspaces place on one edge cluster, a's
// namespace a-app and b's b-app. a's placement asks for ConfigMaps of b-app and of the edge's
// kube-system back as well as of its own. What workloads make at the edge comes back to the
// workspace whose namespace it is: a gets a-app's, b gets b-app's, and a gets neither b-app's nor
// kube-system's, with an UpsyncConflict condition that says why.
func TestUpsyncStaysWithinTheWorkspace(t *testing.T) {
	f := framework.NewFleet(t, map[string]string{"edge1": "east"})
	edge := framework.NewLogicalPCluster(t, "edge1")
	framework.StartSyncer(t, f.ESPW, f.IMW, "edge1", edge)
	parent, _ := f.WMW.Parent()
	wmwB := parent.Join("wmw-b")
	framework.KubectlEdge(t, "ensure", "wmw", wmwB.String(), "--espw", f.ESPW.String()).MustSucceed(t)
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
