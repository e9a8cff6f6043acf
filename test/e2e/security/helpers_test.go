package security

import (
	"fmt"
	"testing"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kcp-dev/edge-mc/test/framework"
)

// Shorthands of the framework's requests.
type request = framework.Request

var (
	get           = framework.Get
	create        = framework.Create
	expectAllowed = framework.ExpectAllowed
	expectRefused = framework.ExpectRefused
)

// exportURL is the URL of the virtual workspace of an APIExport of the ESPW.
func exportURL(t *testing.T, s *framework.Server, espw logicalcluster.Path, export string) string {
	t.Helper()
	var url string
	framework.Eventually(t, framework.Converge, func() (bool, string) {
		slice, err := s.KCP.Cluster(espw).ApisV1alpha1().APIExportEndpointSlices().Get(framework.Context(t, 10*time.Second), export, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if len(slice.Status.APIExportEndpoints) == 0 {
			return false, "the APIExportEndpointSlice " + export + " has no endpoint yet"
		}
		url = slice.Status.APIExportEndpoints[0].URL
		return true, ""
	})
	return url
}

var apiBindingsGVR = schema.GroupVersionResource{Group: "apis.kcp.io", Version: "v1alpha2", Resource: "apibindings"}

// list lists the objects of a cluster-scoped resource.
func list(t *testing.T, client dynamic.Interface, gvr schema.GroupVersionResource) []unstructured.Unstructured {
	t.Helper()
	l, err := client.Resource(gvr).List(framework.Context(t, 30*time.Second), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing %s: %v", gvr.Resource, err)
	}
	return l.Items
}

func configMap(name string) string {
	return fmt.Sprintf(`{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": %q}, "data": {"k": "v"}}`, name)
}
