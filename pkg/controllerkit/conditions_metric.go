package controllerkit

import (
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/component-base/metrics"
)

// ConditionCounts is a gauge counted at each scrape from the caches of running controllers: how
// many objects carry each condition, by type, status and reason. Objects are not labels, so its
// size does not grow with the fleet. A replica whose controller does not run (it stands by)
// serves no series, so the leader's are the only ones.
type ConditionCounts struct {
	metrics.BaseStableCollector
	desc *metrics.Desc

	mu     sync.Mutex
	caches map[int]Lister
	next   int
}

// Lister is what ConditionCounts reads: an informer's store (cache.Store has List).
type Lister interface{ List() []any }

// NewConditionCounts makes the gauge edge_controller_<name>, labelled type, status and reason.
func NewConditionCounts(name, help string) *ConditionCounts {
	return &ConditionCounts{
		desc:   metrics.NewDesc("edge_controller_"+name, help, []string{"type", "status", "reason"}, nil, metrics.ALPHA, ""),
		caches: map[int]Lister{},
	}
}

// Count counts the objects of cache (*unstructured.Unstructured) at each scrape until the
// returned function is called; a controller calls it while it runs.
func (c *ConditionCounts) Count(cache Lister) (stop func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := c.next
	c.next++
	c.caches[id] = cache
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.caches, id)
	}
}

// DescribeWithStability implements metrics.StableCollector.
func (c *ConditionCounts) DescribeWithStability(ch chan<- *metrics.Desc) { ch <- c.desc }

// CollectWithStability implements metrics.StableCollector.
func (c *ConditionCounts) CollectWithStability(ch chan<- metrics.Metric) {
	c.mu.Lock()
	var objs []any
	for _, cache := range c.caches {
		objs = append(objs, cache.List()...)
	}
	c.mu.Unlock()
	for k, n := range countConditions(objs) {
		ch <- metrics.NewLazyConstMetric(c.desc, metrics.GaugeValue, float64(n), k.Type, k.Status, k.Reason)
	}
}

// conditionKey is one series of ConditionCounts.
type conditionKey struct{ Type, Status, Reason string }

// countConditions counts the conditions in status.conditions of objs by type, status and
// reason; what is not an *unstructured.Unstructured, or has no conditions, counts for nothing.
func countConditions(objs []any) map[conditionKey]int {
	counts := map[conditionKey]int{}
	for _, obj := range objs {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			m, ok := c.(map[string]any)
			if !ok {
				continue
			}
			t, _ := m["type"].(string)
			s, _ := m["status"].(string)
			r, _ := m["reason"].(string)
			if t != "" {
				counts[conditionKey{t, s, r}]++
			}
		}
	}
	return counts
}
