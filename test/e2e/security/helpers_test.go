package security

import (
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/kcp-dev/edge-mc/test/framework"
)

// KnownGapsEnv names the environment variable that, set to 1, makes expectGap check the
// guarantee instead of today's answer.
const KnownGapsEnv = "EDGE_E2E_KNOWN_GAPS"

// Shorthands of the framework's requests.
type request = framework.Request

var (
	get           = framework.Get
	create        = framework.Create
	expectAllowed = framework.ExpectAllowed
	expectRefused = framework.ExpectRefused
)

// gap is a request that edge-mc should refuse (403) but does not yet: now is today's answer.
type gap struct {
	framework.Request
	now int
}

// expectGap checks requests that edge-mc should refuse but does not yet, for the reason why
// (docs/reliability.md lists these known gaps). By default it checks that each is still answered
// as today, so that closing a gap makes the test fail and says to expect the guarantee from then
// on; with EDGE_E2E_KNOWN_GAPS=1 it checks the guarantee, 403, and fails while the gap is open.
func expectGap(t *testing.T, who string, cfg *rest.Config, why string, gaps []gap) {
	t.Helper()
	strict := strictGaps()
	for _, g := range gaps {
		code, body := framework.Send(t, cfg, g.Request)
		switch {
		case strict && code != http.StatusForbidden:
			t.Errorf("%s: %s (%s %s): %d, want 403 (known gap: %s): %s", who, g.What, g.Verb, g.Path, code, why, body)
		case !strict && code == http.StatusForbidden:
			t.Errorf("%s: %s is refused now: the gap (%s) is closed; make 403 this test's expectation and update docs/reliability.md", who, g.What, why)
		case !strict && code != g.now:
			t.Errorf("%s: %s (%s %s): %d, where the known gap (%s) answered %d: %s", who, g.What, g.Verb, g.Path, code, why, g.now, body)
		case !strict:
			t.Logf("known gap (%s; %s=1 expects the guarantee): %s: %s", why, KnownGapsEnv, who, g.What)
		}
	}
}

// strictGaps says whether EDGE_E2E_KNOWN_GAPS asks to check the guarantees of known gaps.
func strictGaps() bool { return os.Getenv(KnownGapsEnv) == "1" }

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
