package outage

import (
	"fmt"
	"testing"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kcp-dev/edge-mc/test/framework"
)

// converge is how long the controllers and the syncer may take to reflect a change.
const converge = 90 * time.Second

var (
	configMaps    = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secrets       = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	services      = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	namespaces    = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	deployments   = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	widgets       = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	crds          = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	clusterRoles  = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}
	syncTargets   = schema.GroupVersionResource{Group: "edge.kcp.io", Version: "v1alpha1", Resource: "synctargets"}
	syncerConfigs = schema.GroupVersionResource{Group: "edge.kcp.io", Version: "v1alpha1", Resource: "syncerconfigs"}
)

// fleet is one test's center: workspaces and controller manager.
type fleet struct {
	espw, wmw, imw logicalcluster.Path
	ecm            *framework.ControllerManager
}

// setUp makes the ESPW, a workload workspace, an inventory workspace with a Location and
// SyncTarget per region given, and starts edge-controller-manager.
func setUp(t *testing.T, regions map[string]string) *fleet {
	t.Helper()
	base := framework.NewWorkspace(t)
	f := &fleet{espw: base.Join("espw"), wmw: base.Join("wmw"), imw: base.Join("imw")}
	framework.KubectlEdge(t, "init", "--espw", f.espw.String()).MustSucceed(t)
	framework.KubectlEdge(t, "ensure", "wmw", f.wmw.String(), "--espw", f.espw.String()).MustSucceed(t)
	framework.KubectlEdge(t, "ensure", "imw", f.imw.String(), "--espw", f.espw.String()).MustSucceed(t)
	for name, region := range regions {
		framework.KubectlEdge(t, "ensure", "location", name, "region="+region, "--imw", f.imw.String(), "--espw", f.espw.String()).MustSucceed(t)
	}
	f.ecm = framework.StartControllerManager(t, f.espw, "--controllers", "mailbox,scheduler,placement-translator")
	return f
}

func (f *fleet) apply(t *testing.T, ws logicalcluster.Path, manifest string) {
	t.Helper()
	framework.KubectlApply(t, framework.KCP(t).ServerURL(ws), manifest).MustSucceed(t)
}

func (f *fleet) kubectl(t *testing.T, ws logicalcluster.Path, args ...string) framework.Result {
	t.Helper()
	return framework.Kubectl(t, append([]string{"--server", framework.KCP(t).ServerURL(ws)}, args...)...).MustSucceed(t)
}

// mailbox returns the mailbox path of a SyncTarget, once it has one.
func (f *fleet) mailbox(t *testing.T, syncTarget string) logicalcluster.Path {
	t.Helper()
	var path string
	framework.Eventually(t, converge, func() (bool, string) {
		st := framework.GetObject(t, framework.KCP(t).DynamicClient(t, f.imw), syncTargets, "", syncTarget)
		if st == nil {
			return false, "no SyncTarget " + syncTarget
		}
		path, _, _ = unstructured.NestedString(st.Object, "status", "mailboxWorkspace")
		return path != "", "SyncTarget " + syncTarget + " has no mailbox yet"
	})
	return logicalcluster.NewPath(path)
}

// eventually waits until check, given the object (nil if absent), says nothing is wrong.
func eventually(t *testing.T, what string, client dynamic.Interface, gvr schema.GroupVersionResource, namespace, name string, check func(u *unstructured.Unstructured) string) *unstructured.Unstructured {
	t.Helper()
	var last *unstructured.Unstructured
	framework.Eventually(t, converge, func() (bool, string) {
		last = framework.GetObject(t, client, gvr, namespace, name)
		if why := check(last); why != "" {
			return false, fmt.Sprintf("%s: %s %s/%s: %s", what, gvr.Resource, namespace, name, why)
		}
		return true, ""
	})
	return last
}

// present checks that the object exists.
func present(u *unstructured.Unstructured) string {
	if u == nil {
		return "absent"
	}
	return ""
}

// absent checks that the object does not exist.
func absent(u *unstructured.Unstructured) string {
	if u != nil {
		return "still there"
	}
	return ""
}

// fieldIs checks a string field.
func fieldIs(want string, path ...string) func(u *unstructured.Unstructured) string {
	return func(u *unstructured.Unstructured) string {
		if u == nil {
			return "absent"
		}
		got, _, _ := unstructured.NestedFieldNoCopy(u.Object, path...)
		if fmt.Sprint(got) != want {
			return fmt.Sprintf("%v is %v, want %s", path, got, want)
		}
		return ""
	}
}
