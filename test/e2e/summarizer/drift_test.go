package summarizer

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kcp-dev/logicalcluster/v3"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/transport"
	"github.com/kcp-dev/edge-mc/test/framework"
)

var secrets = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// The Secret's value as placed, and as edited at the edge: neither may reach the drift report.
const (
	placedSecret = "placed-s3cret-value"
	edgeSecret   = "edited-at-the-edge-hunter2"
)

const driftWorkload = `apiVersion: v1
kind: Namespace
metadata: {name: drift}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: drift}
data: {mode: edge, level: "3"}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: tuning
  namespace: drift
  annotations: {edge.kcp.io/create-only: "true"}
data: {threads: "4"}
---
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: drift}
stringData: {password: ` + placedSecret + `}
---
apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: drift}
spec:
  locationSelectors: [{matchLabels: {region: drift}}]
  downsync: [{namespaces: [drift]}]
`

// TestDriftReported edits placed objects by hand at a logical-cluster edge and follows the drift
// to the user: the edited ConfigMap is repaired and shows, within seconds, in kubectl edge
// status (DRIFTED) and in kubectl edge status --target with its field path; an edited
// create-only ConfigMap is reported and left as edited; an edited (sealed) Secret is repaired and
// reported by path alone: neither the placed value nor the one set at the edge is in the
// mailbox's assemblages or their status.
func TestDriftReported(t *testing.T) {
	t.Parallel()
	made := framework.StartLogicalPClusters(t, "edge-drift")
	f := framework.NewFleet(t, map[string]string{"edge-drift": "drift"})
	p := made()["edge-drift"]
	framework.StartSyncer(t, f.ESPW, f.IMW, "edge-drift", p)
	edge := p.DynamicClient(t)
	wmw := framework.KCP(t).DynamicClient(t, f.WMW)
	f.Apply(t, f.WMW, driftWorkload)
	framework.EventuallyObject(t, "ready", wmw, placements, "", "drift",
		summaryIs(t, edgev1alpha1.DestinationCounts{Ready: 1}, metav1.ConditionTrue))

	// Three edits by hand at the edge, at once.
	ctx := framework.Context(t, 30*time.Second)
	patch := func(gvr schema.GroupVersionResource, name, body string) {
		t.Helper()
		if _, err := edge.Resource(gvr).Namespace("drift").Patch(ctx, name, types.MergePatchType, []byte(body), metav1.PatchOptions{}); err != nil {
			t.Fatalf("editing %s drift/%s at the edge: %v", gvr.Resource, name, err)
		}
	}
	edited := time.Now()
	patch(configMaps, "settings", `{"data":{"mode":"local"}}`)
	patch(configMaps, "tuning", `{"data":{"threads":"16"}}`)
	patch(secrets, "creds", fmt.Sprintf(`{"data":{"password":%q}}`, base64.StdEncoding.EncodeToString([]byte(edgeSecret))))

	// kubectl edge status shows the destination drifted.
	server := framework.KCP(t).ServerURL(f.WMW)
	framework.Eventually(t, framework.Converge, func() (bool, string) {
		out := framework.KubectlEdge(t, "status", "--server", server).MustSucceed(t).Stdout
		return driftedColumn(out, "drift") == "1", "kubectl edge status does not show DRIFTED 1:\n" + out
	})
	shown := time.Since(edited)
	// And --target the field path.
	target := []string{"status", "--target", "edge-drift", "--imw", f.IMW.String(), "--espw", f.ESPW.String()}
	var out string
	framework.Eventually(t, framework.Converge, func() (bool, string) {
		out = framework.KubectlEdge(t, target...).MustSucceed(t).Stdout
		return strings.Contains(out, "configmaps/drift/settings") && strings.Contains(out, "data.mode") &&
			strings.Contains(out, "configmaps/drift/tuning") && strings.Contains(out, "secrets/drift/creds"), "kubectl edge status --target:\n" + out
	})
	shownTarget := time.Since(edited)
	t.Logf("from the edit at the edge to DRIFTED in kubectl edge status: %s; to the paths in --target: %s", shown.Round(10*time.Millisecond), shownTarget.Round(10*time.Millisecond))
	// 5 s is the aim (two coalescing windows, the syncer's and the summarizer's, fit in it); a
	// loaded two-core machine gets a generous bound.
	if shown > 15*time.Second {
		t.Errorf("DRIFTED showed %s after the edit, want within seconds", shown)
	}
	if !strings.Contains(out, "data.threads") || !strings.Contains(out, "no (create-only)") || !strings.Contains(out, "data.password") {
		t.Errorf("--target does not show the create-only drift left and the Secret's path:\n%s", out)
	}

	// At the edge: the ConfigMap and the Secret are put back, the create-only ConfigMap is left.
	framework.EventuallyObject(t, "repaired", edge, configMaps, "drift", "settings", framework.FieldIs("edge", "data", "mode"))
	framework.EventuallyObject(t, "repaired", edge, secrets, "drift", "creds",
		framework.FieldIs(base64.StdEncoding.EncodeToString([]byte(placedSecret)), "data", "password"))
	if got := framework.FieldOf(framework.GetObject(t, edge, configMaps, "drift", "tuning"), "data", "threads"); got != "16" {
		t.Errorf("the create-only ConfigMap was changed back at the edge: threads = %s, want 16 as edited", got)
	}

	// In the mailbox: the report, by paths alone.
	mailbox := framework.KCP(t).DynamicClient(t, f.Mailbox(t, "edge-drift"))
	wmwCluster := logicalcluster.From(framework.GetObject(t, wmw, placements, "", "drift")).String()
	a := framework.GetAssemblage(t, mailbox, transport.AssemblageName(wmwCluster, "drift"))
	r := a.Status.Drift
	if r == nil || r.Count != 3 || r.Repairs != 2 || len(r.Recent) != 3 {
		t.Fatalf("drift report %+v, want 3 drifts, 2 repaired", r)
	}
	want := map[string]struct {
		repaired bool
		paths    []string
	}{
		"configmaps/drift/settings": {true, []string{"data.mode"}},
		"configmaps/drift/tuning":   {false, []string{"data.threads"}},
		"secrets/drift/creds":       {true, []string{"data.password"}},
	}
	for _, e := range r.Recent {
		w, ok := want[e.Object]
		if !ok || e.Repaired != w.repaired || !slices.Equal(e.Paths, w.paths) || e.Change != edgev1alpha1.DriftEdited || e.Version != a.Spec.Version || e.Count != 1 {
			t.Errorf("drift entry %+v, want %+v at version %s", e, w, a.Spec.Version)
		}
	}
	// Neither value is anywhere in the mailbox: the placed one travels sealed for the syncer's
	// key (TestSealedSecret checks the decoded assemblage), the edited one not at all.
	yaml := f.Kubectl(t, f.Mailbox(t, "edge-drift"), "get", "assemblages", "-o", "yaml").Stdout
	status, err := json.Marshal(a.Status)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{edgeSecret, base64.StdEncoding.EncodeToString([]byte(edgeSecret)), placedSecret, base64.StdEncoding.EncodeToString([]byte(placedSecret))} {
		if strings.Contains(yaml, secret) {
			t.Errorf("the mailbox's assemblages hold the Secret's value %q", secret)
		}
	}
	for _, secret := range []string{edgeSecret, base64.StdEncoding.EncodeToString([]byte(edgeSecret)), placedSecret, base64.StdEncoding.EncodeToString([]byte(placedSecret))} {
		if strings.Contains(string(status), secret) {
			t.Errorf("the assemblage's status holds the Secret's value %q", secret)
		}
	}
}

// driftedColumn returns the DRIFTED column of a placement's row in kubectl edge status ("" if
// none). READY spans two fields of a row, the count and the bar, under one heading.
func driftedColumn(out, placement string) string {
	lines := strings.Split(out, "\n")
	if len(lines) < 2 {
		return ""
	}
	col := slices.Index(strings.Fields(lines[0]), "DRIFTED")
	for _, line := range lines[1:] {
		if f := strings.Fields(line); len(f) > col+1 && col >= 0 && f[0] == placement {
			return f[col+1]
		}
	}
	return ""
}
