package main

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

func TestCollectedRow(t *testing.T) {
	row := func(values ...string) []edgev1alpha1.CollectedRow {
		var r edgev1alpha1.CollectedRow
		for _, v := range values {
			r.Values = append(r.Values, apiextensionsv1.JSON{Raw: []byte(v)})
		}
		return []edgev1alpha1.CollectedRow{r}
	}
	columns := []string{"available", "deployments"}
	for _, tc := range []struct {
		name          string
		in            *edgev1alpha1.CollectedStatus
		available     float64
		deployments   int64
		wantWhyPrefix string
	}{
		{"the sum and count", &edgev1alpha1.CollectedStatus{Name: collectorName, Columns: columns, Rows: row("20", "300")}, 20, 300, ""},
		{"no Deployment had a number", &edgev1alpha1.CollectedStatus{Name: collectorName, Columns: columns, Rows: row("null", "300")}, 0, 300, ""},
		{"an empty value", &edgev1alpha1.CollectedStatus{Name: collectorName, Columns: columns, Rows: row("", "3")}, 0, 3, ""},
		{"absent", nil, 0, 0, "no status.collected entry"},
		{"a problem", &edgev1alpha1.CollectedStatus{Name: collectorName, Problem: "StatusCollector bench-available does not exist"}, 0, 0, "problem: StatusCollector"},
		{"other columns", &edgev1alpha1.CollectedStatus{Name: collectorName, Columns: []string{"available"}, Rows: row("20")}, 0, 0, "columns"},
		{"no rows", &edgev1alpha1.CollectedStatus{Name: collectorName, Columns: columns}, 0, 0, "0 rows"},
		{"not a number", &edgev1alpha1.CollectedStatus{Name: collectorName, Columns: columns, Rows: row(`"many"`, "3")}, 0, 0, "available is"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			available, deployments, why := collectedRow(tc.in)
			if tc.wantWhyPrefix == "" && why != "" || !strings.HasPrefix(why, tc.wantWhyPrefix) {
				t.Fatalf("why %q, want it to begin with %q", why, tc.wantWhyPrefix)
			}
			if why == "" && (available != tc.available || deployments != tc.deployments) {
				t.Errorf("available %v, deployments %d; want %v, %d", available, deployments, tc.available, tc.deployments)
			}
		})
	}
}

func TestRuleVerdict(t *testing.T) {
	const key = "deployments.apps/bench-g0/app"
	status := func(state, reason string) *edgev1alpha1.AssemblageStatus {
		return &edgev1alpha1.AssemblageStatus{Objects: []edgev1alpha1.ObjectState{
			{Object: "configmaps/bench-g0/cm-001", State: edgev1alpha1.ObjectReady},
			{Object: key, State: state, Reason: reason},
		}}
	}
	for _, tc := range []struct {
		name                string
		in                  *edgev1alpha1.AssemblageStatus
		ready, byRule, told bool
	}{
		{"ready", status(edgev1alpha1.ObjectReady, ""), true, false, false},
		{"not ready by the rule", status(edgev1alpha1.ObjectApplied, ruleNotReady), false, true, false},
		{"not ready by kstatus", status(edgev1alpha1.ObjectApplied, "Deployment does not have minimum availability"), false, false, true},
		{"pending", status(edgev1alpha1.ObjectPending, "not applied yet"), false, false, true},
		{"not listed", &edgev1alpha1.AssemblageStatus{}, false, false, true},
		{"no status", nil, false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ready, byRule, other := ruleVerdict(tc.in, key)
			if ready != tc.ready || byRule != tc.byRule || (other != "") != tc.told {
				t.Errorf("ready %v, by the rule %v, other %q; want %v, %v, other said: %v", ready, byRule, other, tc.ready, tc.byRule, tc.told)
			}
		})
	}
}
