package controllerkit

import (
	"maps"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
)

func withConditions(conds ...map[string]any) *unstructured.Unstructured {
	list := make([]any, len(conds))
	for i, c := range conds {
		list[i] = c
	}
	return &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": list}}}
}

func cond(t, s, r string) map[string]any { return map[string]any{"type": t, "status": s, "reason": r} }

func TestCountConditions(t *testing.T) {
	for _, tc := range []struct {
		name string
		objs []any
		want map[conditionKey]int
	}{
		{"nothing", nil, map[conditionKey]int{}},
		{"no status", []any{&unstructured.Unstructured{Object: map[string]any{}}}, map[conditionKey]int{}},
		{"not unstructured", []any{"a string"}, map[conditionKey]int{}},
		{"by type, status and reason", []any{
			withConditions(cond("SyncerReady", "True", "HeartbeatCurrent"), cond("MailboxReady", "True", "Ready")),
			withConditions(cond("SyncerReady", "Unknown", "HeartbeatStale")),
			withConditions(cond("SyncerReady", "True", "HeartbeatCurrent")),
			withConditions(map[string]any{"status": "True"}), // no type: not counted
		}, map[conditionKey]int{
			{"SyncerReady", "True", "HeartbeatCurrent"}:  2,
			{"SyncerReady", "Unknown", "HeartbeatStale"}: 1,
			{"MailboxReady", "True", "Ready"}:            1,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := countConditions(tc.objs); !maps.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

type listerOf []any

func (l listerOf) List() []any { return l }

func TestConditionCountsServesWhileCounting(t *testing.T) {
	c := NewConditionCounts("test_conditions", "test")
	reg := metrics.NewKubeRegistry()
	reg.CustomMustRegister(c)
	stop := c.Count(listerOf{withConditions(cond("Ready", "True", "Ready")), withConditions(cond("Ready", "True", "Ready"))})
	want := `
# HELP edge_controller_test_conditions [ALPHA] test
# TYPE edge_controller_test_conditions gauge
edge_controller_test_conditions{reason="Ready",status="True",type="Ready"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "edge_controller_test_conditions"); err != nil {
		t.Error(err)
	}
	stop()
	if err := testutil.GatherAndCompare(reg, strings.NewReader(""), "edge_controller_test_conditions"); err != nil {
		t.Errorf("after stop: %v", err)
	}
}
