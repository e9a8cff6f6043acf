package security

import (
	"testing"

	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/test/framework"
)

// controllerConfig is the identity edge-controller-manager runs with, from the kubeconfig that
// 'kubectl edge init --controller-token-file ... --controller-kubeconfig ...' writes.
func controllerConfig(t *testing.T, espw logicalcluster.Path) *rest.Config {
	t.Helper()
	file := t.TempDir() + "/ecm.kubeconfig"
	framework.KubectlEdge(t, "init", "--espw", espw.String(), "--controller-token-file", framework.ControllerToken(t), "--controller-kubeconfig", file).MustSucceed(t)
	cfg, err := clientcmd.BuildConfigFromFlags("", file)
	if err != nil {
		t.Fatalf("loading the kubeconfig that kubectl edge init wrote: %v", err)
	}
	return cfg
}

const clusterAdminForAll = `{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
	"metadata": {"name": "open-to-all"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
	"subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:authenticated"}]}`

// TestControllerIdentityHasOnlyItsRights runs a fleet (whose edge-controller-manager, as in every
// e2e test, runs with the identity that kubectl edge init makes, not as kcp's admin), and checks
// that this identity reaches what the controllers need, and is refused (403) everything else:
// root, the ESPW's parent, the inventory workspace (which the controllers reach only through the
// virtual workspace of edge.kcp.io), the ESPW beyond the exports, mailboxes and Leases, and
// writes other than updates in a workload workspace; and that it cannot widen its rights with
// RBAC anywhere outside the mailboxes.
func TestControllerIdentityHasOnlyItsRights(t *testing.T) {
	t.Parallel()
	f := framework.NewFleet(t, map[string]string{"edge1": "east"})
	wmwB := secondWMW(t, f)
	mailbox := mailboxCluster(t, f, "edge1")
	ecm := controllerConfig(t, f.ESPW)
	const who = "edge-controller-manager's identity"
	root := logicalcluster.NewPath("root")
	base, _ := f.ESPW.Parent()
	edgeVW := exportURL(t, framework.KCP(t), f.ESPW, edgev1alpha1.EdgeAPIExportName)

	expectAllowed(t, who, ecm,
		get("list Workspaces (the mailboxes) in the ESPW", f.ESPW, "/apis/tenancy.kcp.io/v1alpha1/workspaces"),
		get("read the APIExport edge.kcp.io", f.ESPW, "/apis/apis.kcp.io/v1alpha2/apiexports/"+edgev1alpha1.EdgeAPIExportName),
		request{What: "list SyncTargets everywhere through the virtual workspace of edge.kcp.io", Verb: "GET", Server: edgeVW,
			Path: "/clusters/*/apis/edge.kcp.io/v1alpha1/synctargets"},
		get("list Secrets in edge1's mailbox", mailbox, "/api/v1/secrets"),
		get("list ConfigMaps in the workload workspace (objects of custom kinds are read so)", f.WMW, "/api/v1/configmaps"),
		get("list the Shards in root (to name an unreachable mailbox's shard)", root, "/apis/core.kcp.io/v1alpha1/shards"),
		get("read the sealing secret in the ESPW", f.ESPW, "/api/v1/namespaces/default/secrets/edge-mc-sealing-secret"),
		get("read the admission webhook's CA in the ESPW", f.ESPW, "/api/v1/namespaces/default/secrets/edge-mc-webhook-ca"),
		get("read the ESPW's webhook configuration", f.ESPW, "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/edge-mc"),
	)
	expectRefused(t, who, ecm,
		get("list Secrets in root", root, "/api/v1/secrets"),
		get("list Namespaces in root", root, "/api/v1/namespaces"),
		create("create a Workspace in root", root, "/apis/tenancy.kcp.io/v1alpha1/workspaces",
			`{"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": "intruder"}}`),
		create("grant everybody cluster-admin in root", root, "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", clusterAdminForAll),
		get("list Secrets in the ESPW's parent", base, "/api/v1/secrets"),
		create("create a Workspace in the ESPW's parent", base, "/apis/tenancy.kcp.io/v1alpha1/workspaces",
			`{"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": "intruder"}}`),
		get("list Secrets in every workspace at once", logicalcluster.NewPath("*"), "/api/v1/secrets"),
		get("list Secrets in the ESPW", f.ESPW, "/api/v1/secrets"),
		get("read another Secret of the ESPW by name", f.ESPW, "/api/v1/namespaces/default/secrets/anything-else"),
		create("create a ServiceAccount in the ESPW", f.ESPW, "/api/v1/namespaces/default/serviceaccounts",
			`{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "intruder"}}`),
		get("list ConfigMaps in the ESPW", f.ESPW, "/api/v1/configmaps"),
		create("create another webhook configuration in the ESPW", f.ESPW, "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
			`{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "intruder"}}`),
		create("create a webhook configuration in a workload workspace", f.WMW, "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
			`{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "intruder"}}`),
		create("grant everybody cluster-admin in the ESPW", f.ESPW, "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", clusterAdminForAll),
		create("create a ClusterRole in the ESPW", f.ESPW, "/apis/rbac.authorization.k8s.io/v1/clusterroles",
			`{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "more"}, "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]}`),
		request{What: "change the APIExport edge.kcp.io", Verb: "PATCH", Path: f.ESPW.RequestPath() + "/apis/apis.kcp.io/v1alpha2/apiexports/" + edgev1alpha1.EdgeAPIExportName,
			Body: `{"metadata": {"labels": {"changed-by": "controller"}}}`},
		create("bind edge.kcp.io in the ESPW", f.ESPW, "/apis/apis.kcp.io/v1alpha2/apibindings", binding("intruder", f.ESPW, edgev1alpha1.EdgeAPIExportName)),
		get("list SyncTargets in the inventory workspace directly", f.IMW, "/apis/edge.kcp.io/v1alpha1/synctargets"),
		create("create a Location in the inventory workspace directly", f.IMW, "/apis/edge.kcp.io/v1alpha1/locations",
			`{"apiVersion": "edge.kcp.io/v1alpha1", "kind": "Location", "metadata": {"name": "intruder"}, "spec": {"instanceSelector": {}}}`),
		create("write a ConfigMap into the workload workspace directly", f.WMW, "/api/v1/namespaces/default/configmaps", configMap("intruder")),
		request{What: "delete a Secret of the workload workspace directly", Verb: "DELETE", Path: wmwB.RequestPath() + "/api/v1/namespaces/app/secrets/creds"},
		create("grant everybody cluster-admin in the workload workspace directly", f.WMW, "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", clusterAdminForAll),
		request{What: "widen its own ClusterRole in the workload workspace", Verb: "PATCH",
			Path: f.WMW.RequestPath() + "/apis/rbac.authorization.k8s.io/v1/clusterroles/edge-mc:controller-manager",
			Body: `{"rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]}`},
	)
}
