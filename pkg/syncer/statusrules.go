package syncer

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/statuscel"
)

// statusRules are the SyncerConfig's collectors and health rules, compiled.
type statusRules struct {
	// collectors, by placement, in the SyncerConfig's order.
	collectors map[edgev1alpha1.PlacementReference][]*statuscel.Collector
	// health, by workload workspace and kind.
	health map[string]map[schema.GroupKind]*statuscel.HealthRule
	// from are the specs compiled, to compile again only when they change.
	fromCollectors []edgev1alpha1.SyncerCollector
	fromHealth     []edgev1alpha1.SyncerHealthRule
}

// compileStatusRules compiles the SyncerConfig's collectors and health rules, reusing prev when
// they did not change. A collector or rule that does not compile here (the center compiled it;
// a syncer of another version may not) is left out and reported as an error of the config.
func compileStatusRules(spec *edgev1alpha1.SyncerConfigSpec, prev *statusRules) (*statusRules, []string, bool) {
	if prev != nil && equality.Semantic.DeepEqual(prev.fromCollectors, spec.Collectors) && equality.Semantic.DeepEqual(prev.fromHealth, spec.HealthRules) {
		return prev, nil, false
	}
	out := &statusRules{
		collectors:     map[edgev1alpha1.PlacementReference][]*statuscel.Collector{},
		health:         map[string]map[schema.GroupKind]*statuscel.HealthRule{},
		fromCollectors: spec.Collectors, fromHealth: spec.HealthRules,
	}
	var errs []string
	for i := range spec.Collectors {
		sc := &spec.Collectors[i]
		c, err := statuscel.CompileCollector(sc.Name, &sc.Spec)
		if err != nil {
			errs = append(errs, fmt.Sprintf("status collector %s of placement %s|%s: %v", sc.Name, sc.Placement.Cluster, sc.Placement.Name, err))
			continue
		}
		out.collectors[sc.Placement] = append(out.collectors[sc.Placement], c)
	}
	for i := range spec.HealthRules {
		hr := &spec.HealthRules[i]
		h, err := statuscel.CompileHealthRule(hr.Name, &hr.Spec)
		if err != nil {
			errs = append(errs, fmt.Sprintf("health rule %s of workspace %s: %v", hr.Name, hr.Cluster, err))
			continue
		}
		gk := schema.GroupKind{Group: hr.Spec.Group, Kind: hr.Spec.Kind}
		if out.health[hr.Cluster] == nil {
			out.health[hr.Cluster] = map[schema.GroupKind]*statuscel.HealthRule{}
		}
		if out.health[hr.Cluster][gk] == nil {
			out.health[hr.Cluster][gk] = h
		}
	}
	return out, errs, true
}

// applyStatusRules takes in the SyncerConfig's collectors and health rules; when they changed,
// every assemblage's status is built again with them (nothing is applied again).
func (s *Syncer) applyStatusRules(ctx context.Context, spec *edgev1alpha1.SyncerConfigSpec) []string {
	s.mu.Lock()
	rules, errs, changed := compileStatusRules(spec, s.statusRules)
	s.statusRules = rules
	var names []string
	if changed {
		for name := range s.states {
			names = append(names, name)
		}
	}
	s.mu.Unlock()
	if changed {
		klog.FromContext(ctx).Info("took in the status collectors and health rules", "collectors", len(spec.Collectors), "healthRules", len(spec.HealthRules), "errors", len(errs))
		for _, name := range names {
			s.queueStatus(name)
		}
	}
	return errs
}

// healthRuleLocked is the health rule that decides the state of live, an object of the
// assemblage of placement p, if any; s.mu is held.
func (s *Syncer) healthRuleLocked(p edgev1alpha1.PlacementReference, live *unstructured.Unstructured) *statuscel.HealthRule {
	if s.statusRules == nil || live == nil {
		return nil
	}
	return s.statusRules.health[p.Cluster][live.GroupVersionKind().GroupKind()]
}

// collectorsLocked are the collectors of placement p; s.mu is held.
func (s *Syncer) collectorsLocked(p edgev1alpha1.PlacementReference) []*statuscel.Collector {
	if s.statusRules == nil {
		return nil
	}
	return s.statusRules.collectors[p]
}

// collect runs the collectors on the objects reported that are at the edge.
func collect(collectors []*statuscel.Collector, objects []reported) []edgev1alpha1.CollectorReport {
	if len(collectors) == 0 {
		return nil
	}
	var objs []statuscel.Object
	for _, o := range objects {
		if o.live != nil {
			objs = append(objs, statuscel.Object{Key: o.state.Object, Content: o.live.Object})
		}
	}
	out := make([]edgev1alpha1.CollectorReport, 0, len(collectors))
	for _, c := range collectors {
		r := c.Collect(objs)
		metricCollectorObjects.WithLabelValues(c.Name).Add(float64(len(objs)))
		if r.Errors > 0 {
			metricCollectorErrors.WithLabelValues(c.Name).Add(float64(r.Errors))
		}
		out = append(out, r)
	}
	return out
}

// fitCollected drops groups and rows from the end of the reports, those of the longest first,
// counting them in omitted, until the status (as JSON, without the objects' .status, which
// fitBudget then adds while room is left) is within budget.
func fitCollected(status *edgev1alpha1.AssemblageStatus, budget int) {
	if len(status.Collected) == 0 {
		return
	}
	base, err := json.Marshal(status)
	if err != nil {
		return
	}
	size := len(base)
	type entry struct {
		report, index, size int
	}
	var entries []entry
	for r := range status.Collected {
		c := &status.Collected[r]
		for i := range c.Groups {
			data, _ := json.Marshal(c.Groups[i])
			entries = append(entries, entry{r, i, len(data) + 1})
		}
		for i := range c.Rows {
			data, _ := json.Marshal(c.Rows[i])
			entries = append(entries, entry{r, i, len(data) + 1})
		}
	}
	sort.SliceStable(entries, func(a, b int) bool { return entries[a].index > entries[b].index })
	keep := map[int]int{}
	for r := range status.Collected {
		keep[r] = len(status.Collected[r].Groups) + len(status.Collected[r].Rows)
	}
	for _, e := range entries {
		if size <= budget {
			break
		}
		size -= e.size
		keep[e.report]--
		status.Collected[e.report].Omitted++
	}
	for r := range status.Collected {
		c := &status.Collected[r]
		if len(c.Groups) > keep[r] {
			c.Groups = c.Groups[:keep[r]]
		}
		if len(c.Rows) > keep[r] {
			c.Rows = c.Rows[:keep[r]]
		}
	}
}
