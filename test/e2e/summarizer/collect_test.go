package summarizer

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/espw"
	"github.com/kcp-dev/edge-mc/test/framework"
)

var (
	statusCollectorsGVR = edgev1alpha1.SchemeGroupVersion.WithResource("statuscollectors")
	healthRulesGVR      = edgev1alpha1.SchemeGroupVersion.WithResource("healthrules")
)

// collectWorkload is a Deployment and a ConfigMap whose data.count is no number, for the web
// placement, and a Widget, of a custom kind, for the gadgets
// placement (no failure allowed).
const collectWorkload = `apiVersion: v1
kind: Namespace
metadata: {name: web}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: registry.example/web:1}]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: web}
data: {count: many}
---
apiVersion: v1
kind: Namespace
metadata: {name: gadgets}
`

const collectors = `apiVersion: edge.kcp.io/v1alpha1
kind: StatusCollector
metadata: {name: available}
spec:
  filter: object.kind == "Deployment"
  select: [{name: available, expression: object.status.availableReplicas}]
  combine: [{name: available, type: sum, select: available}, {name: deployments, type: count}]
---
apiVersion: edge.kcp.io/v1alpha1
kind: StatusCollector
metadata: {name: images}
spec:
  filter: object.kind == "Deployment"
  groupBy: [{name: image, expression: 'object.spec.template.spec.containers[0].image'}]
  combine: [{name: deployments, type: count}]
---
apiVersion: edge.kcp.io/v1alpha1
kind: StatusCollector
metadata: {name: images-by-edge}
spec:
  filter: object.kind == "Deployment"
  select: [{name: image, expression: 'object.spec.template.spec.containers[0].image'}]
---
apiVersion: edge.kcp.io/v1alpha1
kind: StatusCollector
metadata: {name: counts}
spec:
  select: [{name: count, expression: int(object.data.count)}]
  combine: [{name: total, type: sum, select: count}]
---
apiVersion: edge.kcp.io/v1alpha1
kind: HealthRule
metadata: {name: widgets}
spec:
  group: example.com
  kind: Widget
  ready: object.status.phase == "Running"
  failed: object.status.phase == "Degraded"
  message: '"the widget is " + object.status.phase'
`

const collectPlacements = `apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: web}
spec:
  locationSelectors: [{matchLabels: {region: north}}]
  downsync: [{namespaces: [web]}]
  statusCollectors: [available, images, images-by-edge, counts]
---
apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: gadgets}
spec:
  locationSelectors: [{matchLabels: {region: north}}]
  downsync: [{namespaces: [gadgets]}, {apiGroup: apiextensions.k8s.io, resources: [customresourcedefinitions], objectNames: [widgets.example.com]}]
  rollout: {maxInFlight: 1, maxFailures: 0}
`

// TestStatusYouDefine: status collectors and a health rule on three real Kubernetes edges. The
// sum of availableReplicas matches the edges' own and follows a scale within 5 s; a paced image
// change shows two groups of images; the health rule on a custom kind makes its placement ready,
// then failed, and stalls a rollout that allows no failure; a broken expression is refused; a
// run-time error is counted with an example while the rest works.
func TestStatusYouDefine(t *testing.T) {
	t.Parallel()
	names := []string{"kube1", "kube2", "kube3"}
	starting := map[string]func() *framework.KubeCluster{}
	for _, n := range names {
		starting[n] = framework.StartKubeClusterInBackground(t, n)
	}
	// The admission webhook refuses broken CEL (its subtest).
	f := framework.NewFleetWithArgs(t, map[string]string{"kube1": "north", "kube2": "north", "kube3": "north"}, framework.WebhookArgs...)
	edges := map[string]dynamic.Interface{}
	for _, n := range names {
		kube := starting[n]()
		framework.StartSyncer(t, f.ESPW, f.IMW, n, kube.PCluster())
		edges[n] = kube.DynamicClient(t)
	}
	wmw := framework.KCP(t).DynamicClient(t, f.WMW)
	f.Apply(t, f.WMW, collectWorkload)
	applyWidget(t, f, "gadgets")
	f.Apply(t, f.WMW, collectors)
	for _, c := range []struct {
		gvr  schema.GroupVersionResource
		name string
	}{{statusCollectorsGVR, "available"}, {statusCollectorsGVR, "images"}, {statusCollectorsGVR, "images-by-edge"}, {statusCollectorsGVR, "counts"}, {healthRulesGVR, "widgets"}} {
		framework.EventuallyObject(t, "accepted", wmw, c.gvr, "", c.name, ruleCondition(metav1.ConditionTrue))
	}
	f.Apply(t, f.WMW, collectPlacements)

	t.Run("broken expressions refused", func(t *testing.T) {
		// The structure is checked at admission: groupBy without combine.
		r := framework.KubectlApply(t, framework.KCP(t).ServerURL(f.WMW), `apiVersion: edge.kcp.io/v1alpha1
kind: StatusCollector
metadata: {name: shapeless}
spec:
  groupBy: [{name: image, expression: object.spec.image}]
`)
		if r.Err == nil || !strings.Contains(r.Stderr, "spec.groupBy needs spec.combine") {
			t.Errorf("a collector with groupBy and no combine was not refused: %v\n%s", r.Err, r.Stderr)
		}
		// An expression that does not compile is refused at admission by edge-controller-manager's
		// webhook, which kcp calls for the workload workspace: the error names the field, the
		// expression and where. kcp learns of the webhook configuration through its cache
		// server, so a server-side dry run (which runs the webhooks) is retried until refused.
		broken := `apiVersion: edge.kcp.io/v1alpha1
kind: StatusCollector
metadata: {name: broken}
spec:
  select: [{name: phase, expression: "object.status.phase +"}]
`
		refusal := func(err error, says string) string {
			switch {
			case err == nil:
				return "accepted"
			case !strings.Contains(says, "denied the request") || !strings.Contains(says, "spec.select[phase]") ||
				!strings.Contains(says, "object.status.phase +") || !strings.Contains(says, "at 1:"):
				return "refused without the webhook's message: " + says
			}
			return ""
		}
		ctx := context.Background()
		dryRun := func() error {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(broken), &u.Object); err != nil {
				t.Fatal(err)
			}
			_, err := wmw.Resource(statusCollectorsGVR).Create(ctx, u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}
		framework.Eventually(t, 10*time.Second, func() (bool, string) {
			err := dryRun()
			why := refusal(err, fmt.Sprint(err))
			return why == "", why
		})
		r = framework.KubectlApply(t, framework.KCP(t).ServerURL(f.WMW), broken)
		if why := refusal(r.Err, r.Stderr); why != "" {
			t.Fatalf("kubectl apply of a collector whose CEL does not compile: %s", why)
		}
		t.Logf("refused at admission: %s", strings.TrimSpace(r.Stderr))
		if u := framework.GetObject(t, wmw, statusCollectorsGVR, "", "broken"); u != nil {
			t.Errorf("the refused collector was stored")
		}
		// What gets in without the webhook (written while no edge-controller-manager answered,
		// or before this release) is not accepted: the condition names it and where. kcp's
		// admin empties the webhook configuration to write one, then restores it.
		espwKube := framework.KCP(t).KubeClient(t, f.ESPW).AdmissionregistrationV1().ValidatingWebhookConfigurations()
		hooks, err := espwKube.Get(ctx, espw.WebhookConfigurationName, metav1.GetOptions{})
		if err != nil || len(hooks.Webhooks) != 1 {
			t.Fatalf("the ESPW's webhook configuration: %v (%d webhooks, want 1)", err, len(hooks.Webhooks))
		}
		saved := hooks.Webhooks
		hooks.Webhooks = nil
		if _, err := espwKube.Update(ctx, hooks, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		framework.Eventually(t, 10*time.Second, func() (bool, string) {
			err := dryRun()
			return err == nil, fmt.Sprintf("still refused: %v", err)
		})
		f.Apply(t, f.WMW, broken)
		framework.Eventually(t, 10*time.Second, func() (bool, string) {
			hooks, err := espwKube.Get(ctx, espw.WebhookConfigurationName, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			hooks.Webhooks = saved
			_, err = espwKube.Update(ctx, hooks, metav1.UpdateOptions{})
			return err == nil, fmt.Sprint(err)
		})
		u := framework.EventuallyObject(t, "not accepted", wmw, statusCollectorsGVR, "", "broken", ruleCondition(metav1.ConditionFalse))
		_, reason, msg := framework.ConditionStatus(u, edgev1alpha1.RuleAccepted)
		if reason != edgev1alpha1.ReasonInvalidExpression || !strings.Contains(msg, "spec.select[phase]") ||
			!strings.Contains(msg, "object.status.phase +") || !strings.Contains(msg, "at 1:") {
			t.Errorf("Accepted: %s: %s", reason, msg)
		}
	})

	// edgeSum is the sum of the Deployment's status.availableReplicas over the edges.
	edgeSum := func() int64 {
		var sum int64
		for _, n := range names {
			if u := framework.GetObject(t, edges[n], deployments, "web", "web"); u != nil {
				v, _, _ := unstructured.NestedInt64(u.Object, "status", "availableReplicas")
				sum += v
			}
		}
		return sum
	}
	t.Run("sum of available replicas follows a scale", func(t *testing.T) {
		start := time.Now()
		waitCollected(t, wmw, "web", "available", "6", func(c *edgev1alpha1.CollectedStatus) string {
			if got := rowsOf(c); got != "6,3" || c.Destinations != 3 {
				return fmt.Sprintf("rows %s from %d destinations, want 6,3 from 3", got, c.Destinations)
			}
			return ""
		})
		t.Logf("two available replicas at each edge, collected, %s after the subtest began", time.Since(start).Round(time.Second))
		if s := edgeSum(); s != 6 {
			t.Errorf("the edges' own sum is %d", s)
		}
		f.Kubectl(t, f.WMW, "scale", "deployment", "web", "-n", "web", "--replicas=1")
		var edgesAt time.Time
		framework.Eventually(t, framework.Converge, func() (bool, string) {
			s := edgeSum()
			return s == 3, fmt.Sprintf("the edges' sum is %d", s)
		})
		edgesAt = time.Now()
		t.Logf("the edges' own sum reached 3 %s after the subtest began", edgesAt.Sub(start).Round(time.Second))
		waitCollected(t, wmw, "web", "available", "3", func(c *edgev1alpha1.CollectedStatus) string {
			if got := rowsOf(c); got != "3,3" {
				return "rows " + got
			}
			return ""
		})
		lag := time.Since(edgesAt)
		t.Logf("status.collected followed the edges %s after their sum reached 3", lag.Round(10*time.Millisecond))
		if lag > 5*time.Second {
			t.Errorf("status.collected showed the new sum %s after the edges had it, more than 5 s", lag)
		}
		out := framework.KubectlEdge(t, "status", "web", "--collect", "available", "--wmw", f.WMW.String()).MustSucceed(t).Stdout
		lines := strings.Split(out, "\n")
		if len(lines) < 3 || strings.Join(strings.Fields(lines[0]), " ") != "AVAILABLE DEPLOYMENTS" || strings.Join(strings.Fields(lines[1]), " ") != "3 3" ||
			!strings.Contains(out, "3 destinations reported") {
			t.Errorf("kubectl edge status --collect:\n%s", out)
		}
	})

	t.Run("images grouped during a paced rollout", func(t *testing.T) {
		// One destination at a time from now on, each soaking 1 s.
		f.Kubectl(t, f.WMW, "patch", "edgeplacement", "web", "--type=merge", "-p", `{"spec":{"rollout":{"maxInFlight":1,"minReadySeconds":1}}}`)
		f.Kubectl(t, f.WMW, "patch", "deployment", "web", "-n", "web", "--type=json", "-p", `[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"registry.example/web:2"}]`)
		// kube1 goes first; while it rolls and soaks, the others keep the old image.
		waitCollected(t, wmw, "web", "images", "two groups", func(c *edgev1alpha1.CollectedStatus) string {
			if got := rowsOf(c); got != "registry.example/web:1,2;registry.example/web:2,1" {
				return "rows " + got
			}
			return ""
		})
		out := framework.KubectlEdge(t, "status", "web", "--collect", "images", "-o", "json", "--wmw", f.WMW.String()).MustSucceed(t).Stdout
		if !strings.Contains(out, `"registry.example/web:2",`) || !strings.Contains(out, `"columns"`) {
			t.Errorf("kubectl edge status --collect -o json:\n%s", out)
		}
		// Without combine: a row per edge, kube1's with the new image (it keeps it from now on).
		waitCollected(t, wmw, "web", "images-by-edge", "kube1 on the new image", func(c *edgev1alpha1.CollectedStatus) string {
			rows := strings.Split(rowsOf(c), ";")
			if strings.Join(c.Columns, ",") != "destination,object,image" || len(rows) != 3 ||
				!strings.HasSuffix(strings.Split(rows[0], ",")[0], ":kube1") || !strings.HasSuffix(rows[0], ",deployments.apps/web/web,registry.example/web:2") ||
				!strings.HasSuffix(strings.Split(rows[2], ",")[0], ":kube3") {
				return fmt.Sprintf("columns %v, rows %s", c.Columns, rowsOf(c))
			}
			return ""
		})
	})

	t.Run("a run-time error is counted, the rest works", func(t *testing.T) {
		c := waitCollected(t, wmw, "web", "counts", "3 errors", func(c *edgev1alpha1.CollectedStatus) string {
			if c.Errors != 3 || c.ErrorExample == nil {
				return fmt.Sprintf("%d errors, example %+v", c.Errors, c.ErrorExample)
			}
			return ""
		})
		if e := c.ErrorExample; e.Object != "configmaps/web/settings" || !strings.Contains(e.Error, "spec.select[count]") || !strings.Contains(e.Destination, ":kube") {
			t.Errorf("error example %+v", e)
		}
		// Every object is matched (no filter); none has a number, so the one group has no total.
		if c.Matched < 6 || len(c.Rows) != 1 || len(c.Rows[0].Values) != 1 || (len(c.Rows[0].Values[0].Raw) > 0 && string(c.Rows[0].Values[0].Raw) != "null") {
			t.Errorf("matched %d, rows %+v", c.Matched, c.Rows)
		}
		waitCollected(t, wmw, "web", "available", "still 3", func(c *edgev1alpha1.CollectedStatus) string {
			if got := rowsOf(c); got != "3,3" || c.Errors != 0 {
				return fmt.Sprintf("rows %s, %d errors", got, c.Errors)
			}
			return ""
		})
	})

	widgets := func(n string) dynamic.ResourceInterface { return edges[n].Resource(widgetsGVR).Namespace("gadgets") }
	setPhase := func(t *testing.T, n, phase string) {
		t.Helper()
		framework.Eventually(t, framework.Converge, func() (bool, string) {
			_, err := widgets(n).Patch(context.Background(), "w1", types.MergePatchType, []byte(`{"status":{"phase":"`+phase+`"}}`), metav1.PatchOptions{}, "status")
			return err == nil, fmt.Sprintf("setting the phase at %s: %v", n, err)
		})
	}
	t.Run("health rule for a custom kind: ready, then failed", func(t *testing.T) {
		// No phase yet: kstatus would call the Widget ready; the rule says not yet, so the
		// rollout (one at a time) holds the others back.
		framework.EventuallyObject(t, "the rule decides", wmw, placements, "", "gadgets", func(u *unstructured.Unstructured) string {
			if u == nil {
				return "absent"
			}
			for _, o := range placementStatus(t, u).Objects {
				if o.Object == "widgets.example.com/gadgets/w1" {
					if o.Applied != 1 || o.Ready != 0 {
						return fmt.Sprintf("the Widget: %+v, want applied and not ready at the first destination", o.DestinationCounts)
					}
					return ""
				}
			}
			return "the Widget is not in the summary"
		})
		for _, n := range names {
			setPhase(t, n, "Running") // each in turn: the next gets the Widget once this one is ready
		}
		framework.EventuallyObject(t, "ready by the rule", wmw, placements, "", "gadgets",
			summaryIs(t, edgev1alpha1.DestinationCounts{Ready: 3}, metav1.ConditionTrue))
		setPhase(t, "kube1", "Degraded")
		framework.EventuallyObject(t, "failed by the rule", wmw, placements, "", "gadgets", func(u *unstructured.Unstructured) string {
			if why := summaryIs(t, edgev1alpha1.DestinationCounts{Ready: 2, Failed: 1}, metav1.ConditionFalse)(u); why != "" {
				return why
			}
			s := placementStatus(t, u)
			if len(s.Broken) != 1 || !strings.HasSuffix(s.Broken[0].Destination, ":kube1") || s.Broken[0].Reason != "the widget is Degraded" {
				return fmt.Sprintf("broken %+v", s.Broken)
			}
			return ""
		})
	})

	t.Run("maxFailures 0 stalls on the destination the rule calls failed", func(t *testing.T) {
		// kube1 goes first (destinations go in name order) and stays Degraded with the new version.
		f.Kubectl(t, f.WMW, "patch", "widgets.example.com", "w1", "-n", "gadgets", "--type=merge", "-p", `{"spec":{"size":4}}`)
		framework.EventuallyObject(t, "kube1", edges["kube1"], widgetsGVR, "gadgets", "w1", framework.FieldIs("4", "spec", "size"))
		framework.EventuallyPlacementCondition(t, wmw, "gadgets", edgev1alpha1.PlacementRolloutStalled, metav1.ConditionTrue, "kube1")
		time.Sleep(2 * time.Second)
		for _, n := range []string{"kube2", "kube3"} {
			if u := framework.GetObject(t, edges[n], widgetsGVR, "gadgets", "w1"); u != nil {
				if size, _, _ := unstructured.NestedInt64(u.Object, "spec", "size"); size == 4 {
					t.Errorf("%s got the new version while the rollout was stalled", n)
				}
			}
		}
		setPhase(t, "kube1", "Running")
		framework.EventuallyPlacementCondition(t, wmw, "gadgets", edgev1alpha1.PlacementRolloutStalled, metav1.ConditionFalse)
		framework.EventuallyObject(t, "kube3", edges["kube3"], widgetsGVR, "gadgets", "w1", framework.FieldIs("4", "spec", "size"))
	})
}

// ruleCondition checks a StatusCollector's or HealthRule's Accepted condition.
func ruleCondition(want metav1.ConditionStatus) func(*unstructured.Unstructured) string {
	return func(u *unstructured.Unstructured) string {
		if u == nil {
			return "absent"
		}
		if st, reason, msg := framework.ConditionStatus(u, edgev1alpha1.RuleAccepted); st != want {
			return fmt.Sprintf("Accepted is %q (%s: %s), want %s", st, reason, msg, want)
		}
		return ""
	}
}

// waitCollected waits until the placement's status.collected entry of the collector passes
// check, and returns it.
func waitCollected(t *testing.T, wmw dynamic.Interface, placement, collector, what string, check func(*edgev1alpha1.CollectedStatus) string) *edgev1alpha1.CollectedStatus {
	t.Helper()
	var out *edgev1alpha1.CollectedStatus
	// Longer than Converge: a paced rollout on three Kubernetes edges of a busy machine.
	framework.Eventually(t, 3*time.Minute, func() (bool, string) {
		u := framework.GetObject(t, wmw, placements, "", placement)
		if u == nil {
			return false, "no placement " + placement
		}
		p := &edgev1alpha1.EdgePlacement{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
			return false, err.Error()
		}
		for i := range p.Status.Collected {
			if c := &p.Status.Collected[i]; c.Name == collector {
				if why := check(c); why != "" {
					return false, fmt.Sprintf("%s of %s (%s): %s", collector, placement, what, why)
				}
				out = c
				return true, ""
			}
		}
		return false, fmt.Sprintf("no status.collected entry %s in %s (conditions %v)", collector, placement, meta.FindStatusCondition(p.Status.Conditions, "Ready"))
	})
	return out
}

// rowsOf renders a collector's rows as "a,b;c,d", strings without their quotes.
func rowsOf(c *edgev1alpha1.CollectedStatus) string {
	if len(c.Rows) == 0 {
		return "<none>"
	}
	var rows []string
	for _, r := range c.Rows {
		var cells []string
		for _, v := range r.Values {
			cells = append(cells, strings.Trim(string(v.Raw), `"`))
		}
		rows = append(rows, strings.Join(cells, ","))
	}
	return strings.Join(rows, ";")
}
