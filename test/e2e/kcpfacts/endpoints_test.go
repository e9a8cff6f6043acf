package kcpfacts

import (
	"fmt"
	"testing"
	"time"

	kcpdynamic "github.com/kcp-dev/client-go/dynamic"
	"github.com/kcp-dev/logicalcluster/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/test/framework"
)

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
`

const location = `apiVersion: edge.kcp.io/v1alpha1
kind: Location
metadata: {name: edge-1}
spec: {instanceSelector: {}}
`

// TestEndpointSlicesServeBoundWorkspacesOnly: edge-controller-manager finds the virtual
// workspaces of edge.kcp.io and workloads.edge.kcp.io through their APIExportEndpointSlices,
// which edge-mc never creates, and watches through them, across all workspaces at once, what it
// reconciles. The slices appear by themselves and list an endpoint once a workspace binds the
// export; through edge.kcp.io's endpoint it sees the export's kinds in every binding workspace,
// and the claimed kinds (ConfigMaps, and Deployments of the workloads export, claimed by its
// identity) only in the workload workspaces, which accepted the claims: not in the inventory
// workspace, which rejected them, nor in a workspace that binds nothing.
func TestEndpointSlicesServeBoundWorkspacesOnly(t *testing.T) {
	t.Parallel()
	s := framework.KCP(t)
	base, espw := initESPW(t)
	start := time.Now()
	for _, export := range []string{edgev1alpha1.EdgeAPIExportName, edgev1alpha1.WorkloadsAPIExportName, edgev1alpha1.MailboxAPIExportName} {
		framework.Eventually(t, time.Minute, func() (bool, string) {
			slice, err := s.KCP.Cluster(espw).ApisV1alpha1().APIExportEndpointSlices().Get(withTimeout(t), export, metav1.GetOptions{})
			if err != nil {
				return false, fmt.Sprintf("kcp made no APIExportEndpointSlice %s for the APIExport of that name in %s: %v", export, espw, err)
			}
			t.Logf("APIExportEndpointSlice %s is there %s after init, with %d endpoints before any workspace binds the export",
				export, time.Since(start).Round(100*time.Millisecond), len(slice.Status.APIExportEndpoints))
			return true, ""
		})
	}

	imw, wmwA, wmwB, unbound := base.Join("imw"), base.Join("wmw-a"), base.Join("wmw-b"), base.Join("unbound")
	framework.KubectlEdge(t, "ensure", "imw", imw.String(), "--espw", espw.String()).MustSucceed(t)
	framework.KubectlEdge(t, "ensure", "wmw", wmwA.String(), "--espw", espw.String()).MustSucceed(t)
	framework.KubectlEdge(t, "ensure", "wmw", wmwB.String(), "--espw", espw.String()).MustSucceed(t)
	plainWorkspace(t, unbound)
	names := map[logicalcluster.Name]string{}
	for _, ws := range []logicalcluster.Path{imw, wmwA, wmwB, unbound} {
		names[clusterOf(t, ws)] = ws.String()
	}
	// The objects that must not show are made first: once the later ones show, the earlier
	// would have too, were the virtual workspace to serve them.
	apply(t, imw, marker("kcpfacts", "imw")+"---\n"+location)
	apply(t, unbound, marker("kcpfacts", "unbound"))
	apply(t, wmwA, marker("kcpfacts", "wmw-a")+"---\n"+deployment)
	apply(t, wmwB, marker("kcpfacts", "wmw-b"))

	edgeVW, _ := virtualWorkspace(t, endpointURL(t, espw, edgev1alpha1.EdgeAPIExportName))
	workloadsVW, _ := virtualWorkspace(t, endpointURL(t, espw, edgev1alpha1.WorkloadsAPIExportName))
	imwC, wmwAC, wmwBC := clusterOf(t, imw), clusterOf(t, wmwA), clusterOf(t, wmwB)

	for _, c := range []struct {
		what    string
		vw      kcpdynamic.ClusterInterface
		gvr     schema.GroupVersionResource
		want    map[logicalcluster.Name]string // cluster: an object that must show
		allowed map[logicalcluster.Name]bool   // the only clusters that may show
	}{
		{"Locations through edge.kcp.io", edgeVW, locationsGVR,
			map[logicalcluster.Name]string{imwC: "edge-1"},
			map[logicalcluster.Name]bool{imwC: true, wmwAC: true, wmwBC: true}},
		{"ConfigMaps (claimed) through edge.kcp.io", edgeVW, configMapsGVR,
			map[logicalcluster.Name]string{wmwAC: "default/kcpfacts", wmwBC: "default/kcpfacts"},
			map[logicalcluster.Name]bool{wmwAC: true, wmwBC: true}},
		{"Deployments (claimed by the workloads export's identity) through edge.kcp.io", edgeVW, deploymentsGVR,
			map[logicalcluster.Name]string{wmwAC: "default/web"},
			map[logicalcluster.Name]bool{wmwAC: true, wmwBC: true}},
		{"Deployments through workloads.edge.kcp.io", workloadsVW, deploymentsGVR,
			map[logicalcluster.Name]string{wmwAC: "default/web"},
			map[logicalcluster.Name]bool{wmwAC: true, wmwBC: true}},
	} {
		vw := c.vw
		framework.Eventually(t, time.Minute, func() (bool, string) {
			got := seen(t, vw, c.gvr)
			for cluster, obj := range c.want {
				if !contains(got[cluster], obj) {
					return false, fmt.Sprintf("%s: %s of %s is not listed; listed: %s", c.what, obj, names[cluster], describe(got, names))
				}
			}
			return true, ""
		})
		got := seen(t, vw, c.gvr)
		for cluster := range got {
			if !c.allowed[cluster] {
				t.Errorf("%s lists objects of a workspace it must not show: %s", c.what, describe(got, names))
				break
			}
		}
		t.Logf("%s: %s", c.what, describe(got, names))
	}

	// The workloads export claims nothing: its virtual workspace serves no ConfigMaps.
	if got := seen(t, workloadsVW, configMapsGVR); len(got) > 0 {
		t.Errorf("workloads.edge.kcp.io claims nothing, yet its virtual workspace lists ConfigMaps: %s", describe(got, names))
	}
}
