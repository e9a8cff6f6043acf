package kcpfacts

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	kcpdynamic "github.com/kcp-dev/client-go/dynamic"
	"github.com/kcp-dev/logicalcluster/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/kcp-dev/edge-mc/pkg/workspaces"
	"github.com/kcp-dev/edge-mc/test/framework"
)

var (
	configMapsGVR  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	leasesGVR      = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
	locationsGVR   = schema.GroupVersionResource{Group: "edge.kcp.io", Version: "v1alpha1", Resource: "locations"}
)

// initESPW makes the test's workspace and runs `kubectl edge init` for an ESPW in it, as an
// operator would, and returns the test's workspace and the ESPW.
func initESPW(t *testing.T) (base, espw logicalcluster.Path) {
	t.Helper()
	base = framework.NewWorkspace(t)
	espw = base.Join("espw")
	framework.KubectlEdge(t, "init", "--espw", espw.String()).MustSucceed(t)
	return base, espw
}

// plainWorkspace makes a workspace of kcp's default type that binds nothing of edge-mc's.
func plainWorkspace(t *testing.T, path logicalcluster.Path) {
	t.Helper()
	ctx := framework.Context(t, 2*time.Minute)
	if _, err := (&workspaces.Ensurer{KCP: framework.KCP(t).KCP}).Workspace(ctx, path); err != nil {
		t.Fatalf("making the workspace %s: %v", path, err)
	}
}

// clusterOf is the logical cluster name of the workspace at path: the name under which a virtual
// workspace shows the workspace's objects (their annotation kcp.io/cluster).
func clusterOf(t *testing.T, path logicalcluster.Path) logicalcluster.Name {
	t.Helper()
	parent, _ := path.Parent()
	ws, err := framework.KCP(t).KCP.Cluster(parent).TenancyV1alpha1().Workspaces().Get(framework.Context(t, 30*time.Second), path.Base(), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the Workspace %s: %v", path, err)
	}
	if ws.Spec.Cluster == "" {
		t.Fatalf("the Workspace %s has no spec.cluster", path)
	}
	return logicalcluster.Name(ws.Spec.Cluster)
}

// endpointURL waits until the APIExportEndpointSlice of the named export in the ESPW lists an
// endpoint, as the controllers wait for it (centerview.WaitForEndpoint), and returns its URL.
func endpointURL(t *testing.T, espw logicalcluster.Path, export string) string {
	t.Helper()
	var url string
	framework.Eventually(t, time.Minute, func() (bool, string) {
		slice, err := framework.KCP(t).KCP.Cluster(espw).ApisV1alpha1().APIExportEndpointSlices().Get(framework.Context(t, 10*time.Second), export, metav1.GetOptions{})
		switch {
		case err != nil:
			return false, fmt.Sprintf("reading the APIExportEndpointSlice %s in %s: %v", export, espw, err)
		case len(slice.Status.APIExportEndpoints) == 0:
			return false, fmt.Sprintf("the APIExportEndpointSlice %s in %s lists no endpoint", export, espw)
		}
		url = slice.Status.APIExportEndpoints[0].URL
		return true, ""
	})
	return url
}

// virtualWorkspace is a client of the virtual workspace at url with the admin's credential, as
// edge-controller-manager builds its clients of edge-mc's virtual workspaces.
func virtualWorkspace(t *testing.T, url string) (kcpdynamic.ClusterInterface, *rest.Config) {
	t.Helper()
	cfg := rest.CopyConfig(framework.KCP(t).Base)
	cfg.Host = url
	client, err := kcpdynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("a client of the virtual workspace %s: %v", url, err)
	}
	return client, cfg
}

// seen lists a resource through a virtual workspace across all its workspaces at once
// (/clusters/*), as the controllers' informers do, and returns each object's namespace/name by
// logical cluster. A resource the virtual workspace does not serve (404) is an empty result.
func seen(t *testing.T, vw kcpdynamic.ClusterInterface, gvr schema.GroupVersionResource) map[logicalcluster.Name][]string {
	t.Helper()
	list, err := vw.Resource(gvr).List(framework.Context(t, 30*time.Second), metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("listing %s through the virtual workspace: %v", gvr.Resource, err)
	}
	out := map[logicalcluster.Name][]string{}
	for _, o := range list.Items {
		out[logicalcluster.From(&o)] = append(out[logicalcluster.From(&o)], key(&o))
	}
	for _, names := range out {
		sort.Strings(names)
	}
	return out
}

func key(o *unstructured.Unstructured) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}

// apply applies manifest to the workspace ws, as a user would.
func apply(t *testing.T, ws logicalcluster.Path, manifest string) {
	t.Helper()
	framework.KubectlApply(t, framework.KCP(t).ServerURL(ws), manifest).MustSucceed(t)
}

// marker is a ConfigMap whose name and data say which workspace it was made in.
func marker(name, ws string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: default}\ndata: {workspace: %q}\n", name, ws)
}

// describe prints what a listing by cluster holds, with workspace paths for the known clusters.
func describe(byCluster map[logicalcluster.Name][]string, names map[logicalcluster.Name]string) string {
	var parts []string
	for c, objs := range byCluster {
		who := names[c]
		if who == "" {
			who = "another workspace (" + c.String() + ")"
		}
		parts = append(parts, fmt.Sprintf("%s: %s", who, strings.Join(objs, ", ")))
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, "; ")
}

func contains(objs []string, want string) bool {
	for _, o := range objs {
		if o == want {
			return true
		}
	}
	return false
}

// withTimeout is a context for one request.
func withTimeout(t *testing.T) context.Context { return framework.Context(t, 30*time.Second) }
