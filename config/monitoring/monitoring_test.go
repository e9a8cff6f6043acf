package monitoring

import (
	"slices"
	"strings"
	"testing"
)

func TestMetricNames(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`up`, []string{"up"}},
		{`up{job=~".*edge-controller-manager.*"} == 0`, []string{"up"}},
		{`sum by (name) (workqueue_depth{name!~"edge_syncer_.*"})`, []string{"workqueue_depth"}},
		{`sum(rate(edge_syncer_deletes_total[5m])) by (instance)`, []string{"edge_syncer_deletes_total"}},
		{`histogram_quantile(0.9, sum by (server, le) (rate(edge_controller_kcp_write_duration_seconds_bucket[5m])))`,
			[]string{"edge_controller_kcp_write_duration_seconds_bucket"}},
		{`(sum(edge_controller_leader) or vector(0)) < 1`, []string{"edge_controller_leader"}},
		{"a_total{x=\"by (y) {z}\", w='q'} / on (i) group_left (j) b offset 5m > bool 1e3 and c unless d",
			[]string{"a_total", "b", "c", "d"}},
		{`rate(x[5m:1m]) * 0x1F + .5 - Inf`, []string{"x"}},
		{`sum without (le) (foo:bar:rate5m)`, []string{"foo:bar:rate5m"}},
		{`max_over_time(deriv(workqueue_depth[15m])[1h:])`, []string{"workqueue_depth"}},
		{`label_replace(m, "dst", "$1", "src", "(.*)")`, []string{"m"}},
		{`vector(1)`, nil},
	} {
		if got := MetricNames(tc.expr); !slices.Equal(got, tc.want) {
			t.Errorf("MetricNames(%q) = %q, want %q", tc.expr, got, tc.want)
		}
	}
}

func TestExported(t *testing.T) {
	text := `# HELP h A histogram.
# TYPE h histogram
h_bucket{le="1"} 0
h_sum 0
h_count 0
# TYPE empty_vec counter
g{a="b"} 1
plain 2
`
	got := Exported(text)
	for _, name := range []string{"h", "h_bucket", "h_sum", "h_count", "empty_vec", "g", "plain"} {
		if !got[name] {
			t.Errorf("%s not found in %v", name, got)
		}
	}
	if got["HELP"] || got["le"] || got["a"] {
		t.Errorf("a label or a comment's word taken for a metric: %v", got)
	}
}

// TestDashboardAndRules checks the shipped files' shape: the dashboard parses, has a Prometheus
// datasource variable, and every panel but a row has a title and a query; every rule has an
// expression, a duration, a severity and a summary.
func TestDashboardAndRules(t *testing.T) {
	d, err := ParseDashboard()
	if err != nil {
		t.Fatal(err)
	}
	if d.Title == "" || d.SchemaVersion < 36 {
		t.Errorf("dashboard: title %q, schemaVersion %d", d.Title, d.SchemaVersion)
	}
	if !slices.ContainsFunc(d.Templating.List, func(v struct{ Name, Type, Query string }) bool {
		return v.Name == "datasource" && v.Type == "datasource" && v.Query == "prometheus"
	}) {
		t.Errorf("dashboard: no Prometheus datasource variable named datasource: %+v", d.Templating.List)
	}
	panels := 0
	for i, p := range d.Panels {
		if p.Title == "" {
			t.Errorf("dashboard: panel %d has no title", i)
		}
		if p.Type == "row" {
			continue
		}
		panels++
		if len(p.Targets) == 0 {
			t.Errorf("dashboard: panel %q has no target", p.Title)
		}
		for _, target := range p.Targets {
			if strings.TrimSpace(target.Expr) == "" || len(MetricNames(target.Expr)) == 0 {
				t.Errorf("dashboard: panel %q has a target that reads no metric: %q", p.Title, target.Expr)
			}
		}
	}
	if panels == 0 {
		t.Error("dashboard: no panel")
	}
	if !strings.Contains(string(Dashboard), `"uid": "${datasource}"`) {
		t.Error("dashboard: the panels do not use ${datasource}")
	}

	r, err := ParseAlerts()
	if err != nil {
		t.Fatal(err)
	}
	rules := 0
	for _, g := range r.Groups {
		if g.Name == "" || len(g.Rules) == 0 {
			t.Errorf("alerts: group %q has no name or no rules", g.Name)
		}
		for _, rule := range g.Rules {
			rules++
			if rule.Alert == "" || rule.Expr == "" || rule.For == "" || rule.Labels["severity"] == "" ||
				rule.Annotations["summary"] == "" || rule.Annotations["description"] == "" {
				t.Errorf("alerts: rule %q lacks alert, expr, for, labels.severity, annotations.summary or description: %+v", rule.Alert, rule)
			}
			if !strings.Contains(rule.Annotations["description"], "docs/") {
				t.Errorf("alerts: %s's description names no doc to read", rule.Alert)
			}
		}
	}
	if rules == 0 {
		t.Error("alerts: no rule")
	}
}
