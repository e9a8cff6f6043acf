package syncer

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/component-base/metrics/testutil"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/statuscel"
)

// A health rule for the Deployment kind decides in place of kstatus: a Deployment that kstatus
// calls ready is failed by the rule, with the rule's message.
func TestHealthRuleReplacesKstatus(t *testing.T) {
	dep := planned(t, deploymentEntry("app", "web"))
	live := deploymentAtEdge(dep, 2, readyDeploymentStatus(2))
	live.SetAPIVersion("apps/v1")
	live.SetKind("Deployment")
	rule, err := statuscel.CompileHealthRule("two-is-too-few", &edgev1alpha1.HealthRuleSpec{Group: "apps", Kind: "Deployment",
		Ready: "object.status.availableReplicas > 2", Failed: "object.status.availableReplicas < 3", Message: `"only " + string(object.status.availableReplicas)`})
	if err != nil {
		t.Fatal(err)
	}
	applied := &result{outcome: outcomeApplied, uid: "u"}
	if got := objectReport(dep, applied, live, true, nil, nil).state; got.State != edgev1alpha1.ObjectReady {
		t.Fatalf("without the rule, kstatus: %+v", got)
	}
	got := objectReport(dep, applied, live, true, nil, rule)
	if got.state.State != edgev1alpha1.ObjectFailed || got.state.Reason != "only 2" || got.live != live || len(got.status) == 0 {
		t.Errorf("with the rule: %+v", got)
	}
	rules, errs, changed := compileStatusRules(&edgev1alpha1.SyncerConfigSpec{HealthRules: []edgev1alpha1.SyncerHealthRule{
		{Cluster: "ws", Name: "a", Spec: rule.Spec}, {Cluster: "ws", Name: "b", Spec: edgev1alpha1.HealthRuleSpec{Group: "apps", Kind: "Deployment", Ready: "true"}},
		{Cluster: "ws", Name: "broken", Spec: edgev1alpha1.HealthRuleSpec{Kind: "X", Ready: "object.("}}}}, nil)
	if !changed || len(errs) != 1 || !strings.Contains(errs[0], "health rule broken") {
		t.Fatalf("compiled: %v %v", errs, changed)
	}
	s := &Syncer{statusRules: rules}
	if h := s.healthRuleLocked(edgev1alpha1.PlacementReference{Cluster: "ws", Name: "p"}, live); h == nil || h.Name != "a" {
		t.Errorf("the first rule of the kind applies: %v", h)
	}
	if h := s.healthRuleLocked(edgev1alpha1.PlacementReference{Cluster: "other", Name: "p"}, live); h != nil {
		t.Errorf("a rule of another workspace applies: %v", h.Name)
	}
	if again, _, changed := compileStatusRules(&edgev1alpha1.SyncerConfigSpec{HealthRules: rules.fromHealth}, rules); changed || again != rules {
		t.Error("the same rules are compiled again")
	}
}

// Collected results past the status budget are cut, the cut counted in omitted, and the status
// fits the budget.
func TestFitCollected(t *testing.T) {
	status := edgev1alpha1.AssemblageStatus{ObservedVersion: "v1"}
	var rows []edgev1alpha1.CollectedObjectRow
	for i := 0; i < 100; i++ {
		rows = append(rows, edgev1alpha1.CollectedObjectRow{Object: strings.Repeat("x", 90), Values: []string{`"value"`}})
	}
	status.Collected = []edgev1alpha1.CollectorReport{{Name: "a", Rows: rows}, {Name: "b", Groups: []edgev1alpha1.CollectedGroup{{Count: 1}}}}
	fitCollected(&status, 5000)
	data, _ := json.Marshal(status)
	if len(data) > 5000 {
		t.Errorf("status of %d bytes, over the budget", len(data))
	}
	a := status.Collected[0]
	if len(a.Rows) == 0 || len(a.Rows)+int(a.Omitted) != 100 || len(status.Collected[1].Groups) != 1 {
		t.Errorf("kept %d rows, omitted %d; the small report kept %d groups", len(a.Rows), a.Omitted, len(status.Collected[1].Groups))
	}
}

// The collectors' metrics count the objects each ran on and its run-time errors.
func TestCollectorMetrics(t *testing.T) {
	c, err := statuscel.CompileCollector("metrics-test", &edgev1alpha1.StatusCollectorSpec{
		Select: []edgev1alpha1.NamedExpression{{Name: "n", Expression: "int(object.data.n)"}}})
	if err != nil {
		t.Fatal(err)
	}
	objects := []reported{}
	for _, n := range []string{"1", "two", "3"} {
		dep := planned(t, deploymentEntry("app", "web-"+n))
		live := deploymentAtEdge(dep, 1, readyDeploymentStatus(1))
		live.Object["data"] = map[string]any{"n": n}
		objects = append(objects, reported{state: edgev1alpha1.ObjectState{Object: "x/" + n}, live: live})
	}
	objectsBefore, _ := testutil.GetCounterMetricValue(metricCollectorObjects.WithLabelValues("metrics-test"))
	errorsBefore, _ := testutil.GetCounterMetricValue(metricCollectorErrors.WithLabelValues("metrics-test"))
	reports := collect([]*statuscel.Collector{c}, objects)
	if len(reports) != 1 || reports[0].Errors != 1 {
		t.Fatalf("reports %+v, want one error (int(\"two\"))", reports)
	}
	objectsAfter, _ := testutil.GetCounterMetricValue(metricCollectorObjects.WithLabelValues("metrics-test"))
	errorsAfter, _ := testutil.GetCounterMetricValue(metricCollectorErrors.WithLabelValues("metrics-test"))
	if objectsAfter-objectsBefore != 3 || errorsAfter-errorsBefore != 1 {
		t.Errorf("objects +%v, errors +%v; want +3, +1", objectsAfter-objectsBefore, errorsAfter-errorsBefore)
	}
}
