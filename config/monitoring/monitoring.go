// Package monitoring embeds the Grafana dashboard and the Prometheus alerting rules that ship
// with edge-mc, and names the metrics their PromQL reads, so that tests can check that
// edge-controller-manager and edge-syncer export every one.
package monitoring

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// Dashboard is the Grafana dashboard (edge-mc-dashboard.json).
//
//go:embed edge-mc-dashboard.json
var Dashboard []byte

// Alerts is the Prometheus rules file (alerts.yaml).
//
//go:embed alerts.yaml
var Alerts []byte

// DashboardModel is the part of a Grafana dashboard that the checks read.
type DashboardModel struct {
	Title         string `json:"title"`
	SchemaVersion int    `json:"schemaVersion"`
	Panels        []struct {
		Type    string `json:"type"`
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
	Templating struct {
		List []struct {
			Name, Type, Query string
		} `json:"list"`
	} `json:"templating"`
}

// RuleFile is a Prometheus rules file.
type RuleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []Rule `json:"rules"`
	} `json:"groups"`
}

// Rule is one alerting rule.
type Rule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// ParseDashboard parses Dashboard.
func ParseDashboard() (*DashboardModel, error) {
	d := &DashboardModel{}
	if err := json.Unmarshal(Dashboard, d); err != nil {
		return nil, fmt.Errorf("parsing the dashboard: %w", err)
	}
	return d, nil
}

// ParseAlerts parses Alerts.
func ParseAlerts() (*RuleFile, error) {
	r := &RuleFile{}
	if err := yaml.UnmarshalStrict(Alerts, r); err != nil {
		return nil, fmt.Errorf("parsing alerts.yaml: %w", err)
	}
	return r, nil
}

// Expressions returns every PromQL expression of the dashboard and the rules, each with where
// it is ("dashboard: <panel>", "alert: <name>").
func Expressions() (map[string][]string, error) {
	d, err := ParseDashboard()
	if err != nil {
		return nil, err
	}
	r, err := ParseAlerts()
	if err != nil {
		return nil, err
	}
	exprs := map[string][]string{}
	for _, p := range d.Panels {
		for _, t := range p.Targets {
			exprs["dashboard: "+p.Title] = append(exprs["dashboard: "+p.Title], t.Expr)
		}
	}
	for _, g := range r.Groups {
		for _, rule := range g.Rules {
			exprs["alert: "+rule.Alert] = append(exprs["alert: "+rule.Alert], rule.Expr)
		}
	}
	return exprs, nil
}

var (
	promqlString    = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`")
	promqlMatchers  = regexp.MustCompile(`\{[^{}]*\}`)
	promqlRange     = regexp.MustCompile(`\[[^\[\]]*\]`)
	promqlLabelList = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	promqlOffset    = regexp.MustCompile(`\boffset\s+-?[0-9a-z]+`)
	promqlNumber    = regexp.MustCompile(`(?i)(^|[^a-z0-9_:])(?:0x[0-9a-f]+|[0-9]+(?:\.[0-9]*)?(?:e[+-]?[0-9]+)?|\.[0-9]+(?:e[+-]?[0-9]+)?)`)
	promqlName      = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?`)
	promqlKeywords  = []string{"and", "or", "unless", "bool", "by", "without", "on", "ignoring",
		"group_left", "group_right", "offset", "inf", "nan", "atan2", "start", "end"}
)

// MetricNames returns the names of the metrics that a PromQL expression reads, sorted and
// without repeats: what is left once strings, label matchers, ranges, label lists (by,
// without, on, ignoring, group_left, group_right), offsets, numbers, keywords and the names of
// functions and aggregations (a name followed by "(") are taken out. A histogram's series keep
// their suffixes (_bucket, _sum, _count), which is how a histogram's metric text names them.
func MetricNames(expr string) []string {
	s := promqlString.ReplaceAllString(expr, `""`)
	s = promqlMatchers.ReplaceAllString(s, " ")
	s = promqlRange.ReplaceAllString(s, " ")
	s = promqlLabelList.ReplaceAllString(s, " ")
	s = promqlOffset.ReplaceAllString(s, " ")
	s = promqlNumber.ReplaceAllString(s, "$1 ")
	var names []string
	for _, m := range promqlName.FindAllStringSubmatch(s, -1) {
		name := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(m[0]), "("))
		if m[1] != "" || slices.Contains(promqlKeywords, strings.ToLower(name)) {
			continue // a function or aggregation, or a keyword
		}
		names = append(names, name)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// Exported returns the names of the series in Prometheus text (a /metrics page), and of the
// metrics that its # TYPE lines declare.
func Exported(text string) map[string]bool {
	names := map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			if name, _, ok := strings.Cut(rest, " "); ok {
				names[name] = true
			}
			continue
		}
		if line == "" || line[0] == '#' {
			continue
		}
		if end := strings.IndexAny(line, "{ "); end > 0 {
			names[line[:end]] = true
		}
	}
	return names
}
