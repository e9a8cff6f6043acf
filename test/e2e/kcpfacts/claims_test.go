package kcpfacts

import (
	"fmt"
	"testing"
	"time"

	kcpdynamic "github.com/kcp-dev/client-go/dynamic"
	"github.com/kcp-dev/logicalcluster/v3"
	apisv1alpha2 "github.com/kcp-dev/sdk/apis/apis/v1alpha2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/espw"
	"github.com/kcp-dev/edge-mc/pkg/workspaces"
	"github.com/kcp-dev/edge-mc/test/framework"
)

// TestPermissionClaimsTakeEffectWhenAccepted: the placement translator reads a workload
// workspace's objects, and the translator and status summarizer write into it, through the
// virtual workspace of edge.kcp.io, by its permission claims (espw.EdgeClaims). A workspace that
// binds edge.kcp.io without accepting them shows none of its claimed objects there, not even
// when asked for by name; once its owner accepts them with `kubectl edge ensure wmw`, its
// ConfigMaps and Deployments show, and can be created and patched through the virtual workspace.
func TestPermissionClaimsTakeEffectWhenAccepted(t *testing.T) {
	t.Parallel()
	s := framework.KCP(t)
	base, espwPath := initESPW(t)
	ctx := framework.Context(t, 5*time.Minute)

	// A workspace that binds both exports as `kubectl kcp bind apiexport` would, answering no claim.
	late := base.Join("late")
	plainWorkspace(t, late)
	ensurer := &workspaces.Ensurer{KCP: s.KCP}
	for _, export := range []string{edgev1alpha1.WorkloadsAPIExportName, edgev1alpha1.EdgeAPIExportName} {
		if _, err := ensurer.Binding(ctx, late, export, espwPath, export); err != nil {
			t.Fatal(err)
		}
	}
	apply(t, late, marker("kcpfacts", "late")+"---\n"+deployment)

	// The binding lists the claims the export makes, exactly the ones edge-mc declares.
	export, err := s.KCP.Cluster(espwPath).ApisV1alpha2().APIExports().Get(ctx, edgev1alpha1.EdgeAPIExportName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	workloads, err := s.KCP.Cluster(espwPath).ApisV1alpha2().APIExports().Get(ctx, edgev1alpha1.WorkloadsAPIExportName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := espw.EdgeClaims(workloads); len(export.Spec.PermissionClaims) != len(want) {
		t.Fatalf("APIExport %s makes %d permission claims, edge-mc declares %d", export.Name, len(export.Spec.PermissionClaims), len(want))
	}
	var binding *apisv1alpha2.APIBinding
	framework.Eventually(t, time.Minute, func() (bool, string) {
		binding, err = s.KCP.Cluster(late).ApisV1alpha2().APIBindings().Get(ctx, edgev1alpha1.EdgeAPIExportName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(binding.Status.ExportPermissionClaims) == len(export.Spec.PermissionClaims),
			fmt.Sprintf("the APIBinding %s in %s lists %d of the export's %d claims in status.exportPermissionClaims",
				binding.Name, late, len(binding.Status.ExportPermissionClaims), len(export.Spec.PermissionClaims))
	})
	if len(binding.Spec.PermissionClaims) != 0 {
		t.Fatalf("the APIBinding %s in %s answers %d claims, want none", binding.Name, late, len(binding.Spec.PermissionClaims))
	}

	// A workload workspace made afterwards accepts the claims: once its objects show, those of
	// the late workspace would have too, were unaccepted claims enough.
	wmw := base.Join("wmw")
	framework.KubectlEdge(t, "ensure", "wmw", wmw.String(), "--espw", espwPath.String()).MustSucceed(t)
	apply(t, wmw, marker("kcpfacts", "wmw")+"---\n"+deployment)
	lateC, wmwC := clusterOf(t, late), clusterOf(t, wmw)
	names := map[logicalcluster.Name]string{lateC: late.String(), wmwC: wmw.String()}
	vw, _ := virtualWorkspace(t, endpointURL(t, espwPath, edgev1alpha1.EdgeAPIExportName))
	waitListed(t, vw, names, wmwC, "default/kcpfacts", "default/web")
	for what, gvr := range map[string]schema.GroupVersionResource{"ConfigMaps": configMapsGVR, "Deployments": deploymentsGVR} {
		if got := seen(t, vw, gvr); len(got[lateC]) > 0 {
			t.Errorf("the virtual workspace of edge.kcp.io lists %s of %s, whose binding accepted no claim: %s", what, late, describe(got, names))
		}
	}
	_, err = vw.Cluster(lateC.Path()).Resource(configMapsGVR).Namespace("default").Get(ctx, "kcpfacts", metav1.GetOptions{})
	switch {
	case err == nil:
		t.Errorf("the virtual workspace of edge.kcp.io gives the ConfigMap default/kcpfacts of %s, whose binding accepted no claim", late)
	case !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err):
		t.Errorf("reading the ConfigMap default/kcpfacts of %s through the virtual workspace: %v, want 404 or 403", late, err)
	default:
		t.Logf("unaccepted claim: reading the ConfigMap of %s by name through the virtual workspace: %v", late, err)
	}

	// Its owner accepts the claims, as edge-mc tells them to.
	accepted := time.Now()
	framework.KubectlEdge(t, "ensure", "wmw", late.String(), "--espw", espwPath.String()).MustSucceed(t)
	waitListed(t, vw, names, lateC, "default/kcpfacts", "default/web")
	t.Logf("the objects of %s show through the virtual workspace %s after the claims were accepted", late, time.Since(accepted).Round(100*time.Millisecond))

	// Writes through the claims: a create (an up-synced object coming back) and a patch (the
	// summarizer's annotation on a workload object).
	lateVW := vw.Cluster(lateC.Path())
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "through-vw", "namespace": "default"}, "data": map[string]any{"from": "the virtual workspace"}}}
	if _, err := lateVW.Resource(configMapsGVR).Namespace("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Errorf("creating a ConfigMap in %s through the virtual workspace of edge.kcp.io, claims accepted: %v", late, err)
	}
	if _, err := lateVW.Resource(deploymentsGVR).Namespace("default").Patch(ctx, "web", types.MergePatchType,
		[]byte(`{"metadata": {"annotations": {"kcpfacts": "patched"}}}`), metav1.PatchOptions{}); err != nil {
		t.Errorf("patching the Deployment default/web of %s through the virtual workspace of edge.kcp.io, claims accepted: %v", late, err)
	}
	if _, err := s.KubeClient(t, late).CoreV1().ConfigMaps("default").Get(ctx, "through-vw", metav1.GetOptions{}); err != nil {
		t.Errorf("the ConfigMap created through the virtual workspace is not in %s: %v", late, err)
	}
	dep, err := s.DynamicClient(t, late).Resource(deploymentsGVR).Namespace("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := dep.GetAnnotations()["kcpfacts"]; got != "patched" {
		t.Errorf("the Deployment default/web in %s has annotation kcpfacts %q after the patch through the virtual workspace, want patched", late, got)
	}
}

// waitListed waits until the ConfigMap configMap and the Deployment deployment of cluster show
// in the listings through the virtual workspace vw.
func waitListed(t *testing.T, vw kcpdynamic.ClusterInterface, names map[logicalcluster.Name]string, cluster logicalcluster.Name, configMap, deployment string) {
	t.Helper()
	framework.Eventually(t, time.Minute, func() (bool, string) {
		if got := seen(t, vw, configMapsGVR); !contains(got[cluster], configMap) {
			return false, fmt.Sprintf("the ConfigMap %s of %s is not listed; ConfigMaps listed: %s", configMap, names[cluster], describe(got, names))
		}
		if got := seen(t, vw, deploymentsGVR); !contains(got[cluster], deployment) {
			return false, fmt.Sprintf("the Deployment %s of %s is not listed; Deployments listed: %s", deployment, names[cluster], describe(got, names))
		}
		return true, ""
	})
}
