package rootpolicy

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/client-go/rest"

	"github.com/kcp-dev/edge-mc/test/framework"
)

// rootAccessBinding is root's ClusterRoleBinding by which kcp's default policy lets every
// authenticated identity into root (the verb access on /): without it, nobody but kcp's admins
// and those root's RBAC names reaches anything there. kcp's bootstrap re-applies it at every
// start unless it carries the annotation bootstrap.kcp.io/create-only.
const rootAccessBinding = "system:kcp:tenancy:authenticated:access"

// rootReaders is the group that the closed binding names instead of system:authenticated: the
// operator's choice of who may still look into root (here nobody is in it).
const rootReaders = "root-readers"

// closeRoot runs, as an operator would, the two commands of docs/reliability.md that close root:
// keep kcp's bootstrap from restoring the binding, then bind it to rootReaders only.
func closeRoot(t *testing.T) {
	t.Helper()
	root := framework.KCP(t).ServerURL(logicalcluster.NewPath("root"))
	framework.Kubectl(t, "--server", root, "annotate", "clusterrolebinding", rootAccessBinding,
		"bootstrap.kcp.io/create-only=true").MustSucceed(t)
	framework.Kubectl(t, "--server", root, "patch", "clusterrolebinding", rootAccessBinding, "--type=json", "-p",
		fmt.Sprintf(`[{"op": "replace", "path": "/subjects", "value": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": %q}]}]`, rootReaders),
	).MustSucceed(t)
}

// rootRequests are what kcp's default policy allows every authenticated identity in root.
func rootRequests() (workspaces, logicalClusters, discovery framework.Request) {
	root := logicalcluster.NewPath("root")
	return framework.Get("list root's workspaces", root, "/apis/tenancy.kcp.io/v1alpha1/workspaces"),
		framework.Get("list root's LogicalCluster", root, "/apis/core.kcp.io/v1alpha1/logicalclusters"),
		framework.Get("read root's API discovery", root, "/apis")
}

// TestRootListingClosedByRootRBAC shows what kcp v0.31's default policy lets every
// authenticated identity read in root, with a person's token (alice, who has rights only in a
// workload workspace) and with a syncer's credential; then closes it with root's RBAC, as
// docs/reliability.md says, and shows it closed, edge-mc unaffected (alice's workspace, the
// syncer's mailbox, a new mailbox for a new SyncTarget), and still closed after kcp restarts.
func TestRootListingClosedByRootRBAC(t *testing.T) {
	s := framework.KCP(t)
	f := framework.NewFleet(t, map[string]string{"edge1": "east"})
	f.Apply(t, f.WMW, `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: alice-admin}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}]
`)
	alice := s.UserConfig(t, "alice", f.WMW)
	syncer, mailbox := f.SyncerCredential(t, "edge1")
	listWorkspaces, listLogicalClusters, discovery := rootRequests()
	aliceWorks := framework.Get("list ConfigMaps in her workload workspace", f.WMW, "/api/v1/configmaps")
	syncerWorks := framework.Get("list the Assemblages in its mailbox", mailbox, "/apis/edge.kcp.io/v1alpha1/assemblages")

	// kcp's default: a person reads root's listing, its LogicalCluster and its discovery; a
	// ServiceAccount of another workspace (the syncer) is refused the listing but reads the rest.
	framework.ExpectAllowed(t, "alice, by default", alice, listWorkspaces, listLogicalClusters, discovery)
	framework.ExpectRefused(t, "the syncer, by default", syncer, listWorkspaces)
	framework.ExpectAllowed(t, "the syncer, by default", syncer, listLogicalClusters, discovery)

	closeRoot(t)
	closed := func(when string) {
		t.Helper()
		framework.Eventually(t, framework.Converge, func() (bool, string) {
			code, body := framework.Send(t, alice, listLogicalClusters)
			return code == http.StatusForbidden, fmt.Sprintf("alice %s: %s: %d %s", when, listLogicalClusters.What, code, body)
		})
		for who, cfg := range map[string]*rest.Config{"alice " + when: alice, "the syncer " + when: syncer} {
			framework.ExpectRefused(t, who, cfg, listWorkspaces, listLogicalClusters, discovery)
		}
		framework.ExpectAllowed(t, "alice "+when, alice, aliceWorks)
		framework.ExpectAllowed(t, "the syncer "+when, syncer, syncerWorks)
	}
	closed("with root closed")
	bindTenancy := framework.Create("bind kcp's tenancy.kcp.io from root into its mailbox", mailbox, "/apis/apis.kcp.io/v1alpha2/apibindings",
		`{"apiVersion": "apis.kcp.io/v1alpha2", "kind": "APIBinding", "metadata": {"name": "tenancy"}, "spec": {"reference": {"export": {"path": "root", "name": "tenancy.kcp.io"}}}}`)
	// Root's own binding (system:kcp:authenticated:apiexport:tenancy:bind) still lets anyone bind
	// root's tenancy.kcp.io, closed or not; what stops the syncer is its mailbox's RBAC, which
	// grants it no APIBinding.
	framework.ExpectRefused(t, "the syncer with root closed", syncer, bindTenancy)

	// edge-mc works on: a new SyncTarget gets its mailbox and a syncer credential that works.
	framework.KubectlEdge(t, "ensure", "location", "edge2", "region=west", "--imw", f.IMW.String(), "--espw", f.ESPW.String()).MustSucceed(t)
	syncer2, mailbox2 := f.SyncerCredential(t, "edge2")
	framework.ExpectAllowed(t, "edge2's syncer with root closed", syncer2,
		framework.Get("list the Assemblages in its mailbox", mailbox2, "/apis/edge.kcp.io/v1alpha1/assemblages"))

	t.Log("restarting kcp: its bootstrap must leave the closed binding alone")
	s.Kill()
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	closed("after kcp restarted")
	res := framework.Kubectl(t, "--server", s.ServerURL(logicalcluster.NewPath("root")), "get", "clusterrolebinding", rootAccessBinding,
		"-o", "jsonpath={.subjects[*].name}").MustSucceed(t)
	if got := strings.TrimSpace(res.Stdout); got != rootReaders {
		t.Errorf("after the restart %s binds %q, want only %q", rootAccessBinding, got, rootReaders)
	}
}
