package security

import (
	"fmt"
	"testing"

	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/test/framework"
)

var syncTargetsGVR = schema.GroupVersionResource{Group: "edge.kcp.io", Version: "v1alpha1", Resource: "synctargets"}

// mailboxCluster is the logical cluster name of a SyncTarget's mailbox, as its status says.
func mailboxCluster(t *testing.T, f *framework.Fleet, syncTarget string) logicalcluster.Path {
	t.Helper()
	// status.mailboxWorkspace is set as soon as the mailbox is being made; status.mailboxCluster
	// once it is ready.
	var name string
	framework.Eventually(t, framework.Converge, func() (bool, string) {
		st := framework.GetObject(t, framework.KCP(t).DynamicClient(t, f.IMW), syncTargetsGVR, "", syncTarget)
		if st != nil {
			name, _, _ = unstructured.NestedString(st.Object, "status", "mailboxCluster")
		}
		return name != "", fmt.Sprintf("SyncTarget %s has no status.mailboxCluster", syncTarget)
	})
	return logicalcluster.NewPath(name)
}

// binding is an APIBinding of the export name in the workspace at exportPath.
func binding(name string, exportPath logicalcluster.Path, export string) string {
	return fmt.Sprintf(`{"apiVersion": "apis.kcp.io/v1alpha2", "kind": "APIBinding", "metadata": {"name": %q},
		"spec": {"reference": {"export": {"path": %q, "name": %q}}}}`, name, exportPath.String(), export)
}

// outsideRequests are reads and writes of workspaces that neither a syncer's credential nor a
// workload author may reach: the other mailbox (by path and by logical cluster), the inventory
// workspace, the workload workspaces, the ESPW, root, every workspace at once, and the
// virtual workspaces of edge-mc's exports.
func outsideRequests(t *testing.T, f *framework.Fleet, otherMailbox, otherMailboxCluster logicalcluster.Path, wmws ...logicalcluster.Path) []request {
	t.Helper()
	root := logicalcluster.NewPath("root")
	reqs := []request{
		get("list ConfigMaps in another mailbox", otherMailbox, "/api/v1/configmaps"),
		get("read another mailbox's syncer token", otherMailbox, "/api/v1/namespaces/default/secrets/edge-syncer-token"),
		get("list Secrets in another mailbox by its logical cluster", otherMailboxCluster, "/api/v1/secrets"),
		get("read another mailbox's SyncerConfig", otherMailbox, "/apis/edge.kcp.io/v1alpha1/syncerconfigs/"+edgev1alpha1.SyncerConfigName),
		create("write a ConfigMap into another mailbox", otherMailbox, "/api/v1/namespaces/default/configmaps", configMap("intruder")),
		get("list SyncTargets in the inventory workspace", f.IMW, "/apis/edge.kcp.io/v1alpha1/synctargets"),
		get("read the SyncTarget edge1", f.IMW, "/apis/edge.kcp.io/v1alpha1/synctargets/edge1"),
		create("create a Location in the inventory workspace", f.IMW, "/apis/edge.kcp.io/v1alpha1/locations",
			`{"apiVersion": "edge.kcp.io/v1alpha1", "kind": "Location", "metadata": {"name": "intruder"}, "spec": {"instanceSelector": {}}}`),
		get("list Workspaces (the mailboxes) in the ESPW", f.ESPW, "/apis/tenancy.kcp.io/v1alpha1/workspaces"),
		get("read the APIExport edge.kcp.io in the ESPW", f.ESPW, "/apis/apis.kcp.io/v1alpha2/apiexports/edge.kcp.io"),
		get("list Secrets in the ESPW", f.ESPW, "/api/v1/secrets"),
		create("create a Workspace in the ESPW", f.ESPW, "/apis/tenancy.kcp.io/v1alpha1/workspaces",
			`{"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": "intruder"}}`),
		create("create a Workspace in root", root, "/apis/tenancy.kcp.io/v1alpha1/workspaces",
			`{"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": "intruder"}}`),
		get("list Namespaces in root", root, "/api/v1/namespaces"),
		get("list Secrets in every workspace at once", logicalcluster.NewPath("*"), "/api/v1/secrets"),
	}
	for _, ws := range wmws {
		reqs = append(reqs,
			get("list ConfigMaps in workload workspace "+ws.String(), ws, "/api/v1/configmaps"),
			get("read a Secret in workload workspace "+ws.String(), ws, "/api/v1/namespaces/app/secrets/creds"),
			get("list EdgePlacements in workload workspace "+ws.String(), ws, "/apis/edge.kcp.io/v1alpha1/edgeplacements"),
			create("write a ConfigMap into workload workspace "+ws.String(), ws, "/api/v1/namespaces/default/configmaps", configMap("intruder")))
	}
	s := framework.KCP(t)
	for _, export := range []string{edgev1alpha1.EdgeAPIExportName, edgev1alpha1.MailboxAPIExportName, edgev1alpha1.WorkloadsAPIExportName} {
		url := exportURL(t, s, f.ESPW, export)
		reqs = append(reqs,
			request{What: "list SyncTargets everywhere through the virtual workspace of " + export, Verb: "GET", Server: url,
				Path: "/clusters/*/apis/edge.kcp.io/v1alpha1/synctargets"},
			request{What: "list Secrets everywhere through the virtual workspace of " + export, Verb: "GET", Server: url,
				Path: "/clusters/*/api/v1/secrets"})
	}
	return reqs
}

// secondWMW makes another workload workspace beside the fleet's, with a Secret app/creds.
func secondWMW(t *testing.T, f *framework.Fleet) logicalcluster.Path {
	t.Helper()
	parent, _ := f.WMW.Parent()
	wmw := parent.Join("wmw-b")
	framework.KubectlEdge(t, "ensure", "wmw", wmw.String(), "--espw", f.ESPW.String()).MustSucceed(t)
	f.Apply(t, wmw, "apiVersion: v1\nkind: Namespace\nmetadata: {name: app}\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: creds, namespace: app}\nstringData: {password: b-secret}\n")
	f.Apply(t, f.WMW, "apiVersion: v1\nkind: Namespace\nmetadata: {name: app}\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: creds, namespace: app}\nstringData: {password: a-secret}\n")
	return wmw
}

// TestSyncerCredentialReachesOnlyItsMailbox takes the credential that prep-for-syncer gives
// for edge1, checks that it works in edge1's mailbox, and that every request outside it is
// refused with 403: edge2's mailbox, the inventory and workload workspaces, the ESPW, root, all
// workspaces at once, and edge-mc's virtual workspaces. Within its mailbox it cannot bind
// edge-mc's other exports, which would widen what it sees.
func TestSyncerCredentialReachesOnlyItsMailbox(t *testing.T) {
	t.Parallel()
	f := framework.NewFleet(t, map[string]string{"edge1": "east", "edge2": "west"})
	wmwB := secondWMW(t, f)
	cred, mailbox := f.SyncerCredential(t, "edge1")
	const who = "edge1's syncer credential"
	// The translator writes the SyncerConfig once the mailbox is ready: wait for it, so that
	// reading it tests the credential, not the timing.
	framework.EventuallyObject(t, "the SyncerConfig of edge1's mailbox", framework.KCP(t).DynamicClient(t, f.Mailbox(t, "edge1")),
		edgev1alpha1.SchemeGroupVersion.WithResource("syncerconfigs"), "", edgev1alpha1.SyncerConfigName, framework.Present)

	expectAllowed(t, who, cred,
		get("list the Assemblages in its mailbox", mailbox, "/apis/edge.kcp.io/v1alpha1/assemblages"),
		get("read its SyncerConfig", mailbox, "/apis/edge.kcp.io/v1alpha1/syncerconfigs/"+edgev1alpha1.SyncerConfigName),
		get("list the AssemblageParts in its mailbox", mailbox, "/apis/edge.kcp.io/v1alpha1/assemblageparts"),
	)
	// Within its mailbox, only what the syncer needs: no placement here up-syncs ConfigMaps.
	expectRefused(t, who, cred,
		get("list ConfigMaps in its mailbox (nothing up-syncs them)", mailbox, "/api/v1/configmaps"),
		create("write a ConfigMap into its mailbox (nothing up-syncs them)", mailbox, "/api/v1/namespaces/default/configmaps", configMap("up-synced")),
		get("list the Secrets of its mailbox", mailbox, "/api/v1/secrets"),
		get("list the Leases of its mailbox", mailbox, "/apis/coordination.k8s.io/v1/namespaces/default/leases"),
		create("make a ServiceAccount in its mailbox", mailbox, "/api/v1/namespaces/default/serviceaccounts",
			`{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "extra"}}`),
		create("write an Assemblage into its mailbox", mailbox, "/apis/edge.kcp.io/v1alpha1/assemblages",
			`{"apiVersion": "edge.kcp.io/v1alpha1", "kind": "Assemblage", "metadata": {"name": "forged"}, "spec": {}}`),
	)
	expectRefused(t, who, cred, outsideRequests(t, f, f.Mailbox(t, "edge2"), mailboxCluster(t, f, "edge2"), f.WMW, wmwB)...)
	expectRefused(t, who, cred,
		create("bind workloads.edge.kcp.io in its mailbox", mailbox, "/apis/apis.kcp.io/v1alpha2/apibindings",
			binding("workloads", f.ESPW, edgev1alpha1.WorkloadsAPIExportName)),
		create("bind edge.kcp.io in its mailbox", mailbox, "/apis/apis.kcp.io/v1alpha2/apibindings",
			binding("edge", f.ESPW, edgev1alpha1.EdgeAPIExportName)),
	)
}

// TestSyncerCredentialCannotWidenItsReach: within its mailbox, the syncer's credential cannot
// change who may do what there (RBAC), nor what the mailbox serves (APIBindings), nor make
// workspaces; the rights to up-sync follow the placements' upsync rules, granted while a rule
// asks for them and taken back after, and never reach RBAC. Before the syncer's ClusterRole was
// narrowed, it granted every verb on every resource of the mailbox, and the credential could
// open the mailbox, its token included, to every authenticated identity.
func TestSyncerCredentialCannotWidenItsReach(t *testing.T) {
	t.Parallel()
	f := framework.NewFleet(t, map[string]string{"edge1": "east"})
	cred, mailbox := f.SyncerCredential(t, "edge1")
	const who = "edge1's syncer credential"
	admin := framework.KCP(t).DynamicClient(t, mailbox)
	// The translator writes the SyncerConfig once the mailbox is ready: wait for it, so that
	// reading it tests the credential, not the timing.
	framework.EventuallyObject(t, "the SyncerConfig of edge1's mailbox", admin,
		edgev1alpha1.SchemeGroupVersion.WithResource("syncerconfigs"), "", edgev1alpha1.SyncerConfigName, framework.Present)
	root := logicalcluster.NewPath("root")
	bindings := list(t, admin, apiBindingsGVR)
	if len(bindings) != 1 {
		t.Fatalf("the mailbox has %d APIBindings, want 1 (mailbox.edge.kcp.io)", len(bindings))
	}
	ownBinding := bindings[0].GetName()
	widen := []request{
		create("grant every authenticated user everything in its mailbox (a ClusterRoleBinding to cluster-admin)", mailbox,
			"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", `{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
				"metadata": {"name": "open-to-all"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
				"subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:authenticated"}]}`),
		create("create a Role in its mailbox", mailbox, "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
			`{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "extra"}, "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]}`),
		{What: "widen its own ClusterRole", Verb: "PATCH", Path: mailbox.RequestPath() + "/apis/rbac.authorization.k8s.io/v1/clusterroles/edge-syncer",
			Body: `{"rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]}`},
		{What: "change its mailbox's APIBinding", Verb: "PATCH", Path: mailbox.RequestPath() + "/apis/apis.kcp.io/v1alpha2/apibindings/" + ownBinding,
			Body: `{"metadata": {"labels": {"changed-by": "syncer"}}}`},
		create("bind kcp's tenancy.kcp.io in its mailbox (and so make workspaces)", mailbox, "/apis/apis.kcp.io/v1alpha2/apibindings",
			binding("tenancy", root, "tenancy.kcp.io")),
	}
	expectRefused(t, who, cred, widen...)
	bob := framework.KCP(t).UserConfig(t, "bob", mailbox)
	expectRefused(t, "bob, granted nothing", bob, get("read the syncer's token in edge1's mailbox", mailbox, "/api/v1/namespaces/default/secrets/edge-syncer-token"))

	// A placement that up-syncs ConfigMaps: the credential may then write them (the syncer puts
	// what it brings back there), and still nothing of the above; without the rule, no longer.
	writeConfigMap := create("write a ConfigMap into its mailbox", mailbox, "/api/v1/namespaces/default/configmaps", configMap("up-synced"))
	f.Apply(t, f.WMW, `apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: reports}
spec:
  locationSelectors: [{matchLabels: {region: east}}]
  upsync: [{resources: [configmaps], namespaces: [default]}]
`)
	framework.Eventually(t, framework.Converge, func() (bool, string) {
		code, body := framework.Send(t, cred, writeConfigMap)
		return code == 201, fmt.Sprintf("%s, with a placement up-syncing ConfigMaps: %s: %d %s", who, writeConfigMap.What, code, body)
	})
	expectRefused(t, who+", with a placement up-syncing ConfigMaps", cred, widen...)
	f.Kubectl(t, f.WMW, "delete", "edgeplacement", "reports").MustSucceed(t)
	writeAnother := create("write another ConfigMap into its mailbox", mailbox, "/api/v1/namespaces/default/configmaps", configMap("up-synced-2"))
	framework.Eventually(t, framework.Converge, func() (bool, string) {
		code, body := framework.Send(t, cred, writeAnother)
		return code == 403, fmt.Sprintf("%s, the placement up-syncing ConfigMaps deleted: %s: %d, want 403: %s", who, writeAnother.What, code, body)
	})
}
