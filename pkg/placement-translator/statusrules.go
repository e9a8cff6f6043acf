package placementtranslator

import (
	"context"
	"sort"
	"sync"
	"time"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/centerview"
	"github.com/kcp-dev/edge-mc/pkg/statuscel"
)

// Status collectors and health rules: the translator compiles those of the workload workspaces
// (once per generation), says on each whether it is accepted (the condition Accepted, naming
// the expression that does not compile or is over the cost limit, and where), and puts the
// accepted ones in the SyncerConfig of the mailboxes of the placements that use them: a
// collector for each placement that names it, a health rule for every placement of its
// workspace. The SyncerConfig, not the assemblage, carries them, so that a change of one is one
// write per mailbox and delivers no workload again, whatever a rollout holds back.

var (
	statusCollectorsGVR = edgev1alpha1.SchemeGroupVersion.WithResource("statuscollectors")
	healthRulesGVR      = edgev1alpha1.SchemeGroupVersion.WithResource("healthrules")
)

// ruleKey names a StatusCollector or HealthRule whose status to write.
type ruleKey struct {
	resource, cluster, name string
}

// compiledRule is a collector's or health rule's compilation, for one generation of it.
type compiledRule struct {
	uid        types.UID
	generation int64
	err        error
}

// ruleCompiler remembers the compilations.
type ruleCompiler struct {
	mu   sync.Mutex
	memo map[ruleKey]compiledRule
}

// compile compiles the collector or rule u, or says what the last compilation of its generation
// said.
func (r *ruleCompiler) compile(resource string, u *unstructured.Unstructured) error {
	key := ruleKey{resource, logicalcluster.From(u).String(), u.GetName()}
	r.mu.Lock()
	if m, ok := r.memo[key]; ok && m.uid == u.GetUID() && m.generation == u.GetGeneration() {
		r.mu.Unlock()
		return m.err
	}
	r.mu.Unlock()
	var err error
	switch resource {
	case statusCollectorsGVR.Resource:
		sc := &edgev1alpha1.StatusCollector{}
		if err = runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, sc); err == nil {
			_, err = statuscel.CompileCollector(sc.Name, &sc.Spec)
		}
	default:
		hr := &edgev1alpha1.HealthRule{}
		if err = runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, hr); err == nil {
			_, err = statuscel.CompileHealthRule(hr.Name, &hr.Spec)
		}
	}
	r.mu.Lock()
	if r.memo == nil {
		r.memo = map[ruleKey]compiledRule{}
	}
	r.memo[key] = compiledRule{uid: u.GetUID(), generation: u.GetGeneration(), err: err}
	r.mu.Unlock()
	return err
}

func (r *ruleCompiler) forget(key ruleKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.memo, key)
}

// ruleChanged queues, for a changed collector or health rule, its status and the mailboxes of
// every placement of its workspace.
func (c *Controller) ruleChanged(resource string) func(old, obj *unstructured.Unstructured) {
	return func(_, obj *unstructured.Unstructured) {
		if obj == nil {
			return
		}
		c.workloadChanged(obj)
		c.queue.Add(queueKey{rule: ruleKey{resource, logicalcluster.From(obj).String(), obj.GetName()}})
	}
}

// statusRulesOf are the accepted collectors and health rules of the placements that have
// destinations in a mailbox, in a stable order.
func (c *Controller) statusRulesOf(placements []placementKey) ([]edgev1alpha1.SyncerCollector, []edgev1alpha1.SyncerHealthRule) {
	var collectors []edgev1alpha1.SyncerCollector
	var rules []edgev1alpha1.SyncerHealthRule
	clusters := map[string]bool{}
	for _, pk := range placements {
		clusters[pk.cluster] = true
		p := c.placementOf(pk)
		if p == nil {
			continue
		}
		for _, name := range p.Spec.StatusCollectors {
			sc, ok := c.acceptedCollector(pk.cluster, name)
			if !ok {
				continue
			}
			collectors = append(collectors, edgev1alpha1.SyncerCollector{
				Placement: edgev1alpha1.PlacementReference{Cluster: pk.cluster, Name: pk.name}, Name: name, Spec: sc.Spec})
		}
	}
	for cluster := range clusters {
		items, _ := c.healthRules.GetIndexer().ByIndex(kcpcache.ClusterIndexName, kcpcache.ClusterIndexKey(logicalcluster.Name(cluster)))
		for _, item := range items {
			u := centerview.AsUnstructured(item)
			if u == nil || c.rules.compile(healthRulesGVR.Resource, u) != nil {
				continue
			}
			hr := &edgev1alpha1.HealthRule{}
			if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, hr) != nil {
				continue
			}
			rules = append(rules, edgev1alpha1.SyncerHealthRule{Cluster: cluster, Name: hr.Name, Spec: hr.Spec})
		}
	}
	sort.Slice(collectors, func(i, j int) bool {
		a, b := collectors[i], collectors[j]
		if a.Placement != b.Placement {
			return a.Placement.Cluster+"|"+a.Placement.Name < b.Placement.Cluster+"|"+b.Placement.Name
		}
		return a.Name < b.Name
	})
	sort.Slice(rules, func(i, j int) bool {
		if rules[i].Cluster != rules[j].Cluster {
			return rules[i].Cluster < rules[j].Cluster
		}
		return rules[i].Name < rules[j].Name
	})
	return collectors, rules
}

// acceptedCollector is the collector of the workspace by that name, if it exists and compiles.
func (c *Controller) acceptedCollector(cluster, name string) (*edgev1alpha1.StatusCollector, bool) {
	item, exists, _ := c.statusCollectors.GetIndexer().GetByKey(kcpcache.ToClusterAwareKey(cluster, "", name))
	if !exists {
		return nil, false
	}
	u := centerview.AsUnstructured(item)
	if u == nil || c.rules.compile(statusCollectorsGVR.Resource, u) != nil {
		return nil, false
	}
	sc := &edgev1alpha1.StatusCollector{}
	if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, sc) != nil {
		return nil, false
	}
	return sc, true
}

// writeRuleStatus sets the condition Accepted of a collector or health rule: True when its
// expressions compile within the cost limit; False with the expressions that do not, each with
// its position and why; for a health rule, False too when an earlier rule of the workspace (by
// name) has the same kind.
func (c *Controller) writeRuleStatus(ctx context.Context, key ruleKey) (time.Duration, error) {
	inf, gvr := c.statusCollectors, statusCollectorsGVR
	if key.resource == healthRulesGVR.Resource {
		inf, gvr = c.healthRules, healthRulesGVR
	}
	item, exists, _ := inf.GetIndexer().GetByKey(kcpcache.ToClusterAwareKey(key.cluster, "", key.name))
	if !exists {
		c.rules.forget(key)
		return 0, nil
	}
	u := centerview.AsUnstructured(item).DeepCopy()
	cond := metav1.Condition{Type: edgev1alpha1.RuleAccepted, Status: metav1.ConditionTrue, ObservedGeneration: u.GetGeneration(),
		Reason: edgev1alpha1.ReasonExpressionsCompile, Message: "every expression compiles within the cost limit"}
	if err := c.rules.compile(key.resource, u); err != nil {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, edgev1alpha1.ReasonInvalidExpression, err.Error()
	} else if key.resource == healthRulesGVR.Resource {
		if first := c.firstRuleOfKind(key.cluster, u); first != "" && first != key.name {
			cond.Status, cond.Reason = metav1.ConditionFalse, edgev1alpha1.ReasonDuplicateKind
			cond.Message = "health rule " + first + " has the same kind and comes first by name: this one is not used"
		}
	}
	status := &edgev1alpha1.StatusRuleStatus{}
	if st, ok, _ := unstructured.NestedMap(u.Object, "status"); ok {
		_ = runtime.DefaultUnstructuredConverter.FromUnstructured(st, status)
	}
	before := status.DeepCopy()
	status.ObservedGeneration = u.GetGeneration()
	meta.SetStatusCondition(&status.Conditions, cond)
	if equality.Semantic.DeepEqual(before, status) {
		return 0, nil
	}
	st, err := runtime.DefaultUnstructuredConverter.ToUnstructured(status)
	if err != nil {
		return 0, err
	}
	u.Object["status"] = st
	_, err = c.edgeVW.Cluster(logicalcluster.NewPath(key.cluster)).Resource(gvr).UpdateStatus(ctx, u, metav1.UpdateOptions{})
	return 0, err
}

// firstRuleOfKind is the name of the first health rule, by name, of the workspace with the kind
// of u.
func (c *Controller) firstRuleOfKind(cluster string, u *unstructured.Unstructured) string {
	group, _, _ := unstructured.NestedString(u.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(u.Object, "spec", "kind")
	items, _ := c.healthRules.GetIndexer().ByIndex(kcpcache.ClusterIndexName, kcpcache.ClusterIndexKey(logicalcluster.Name(cluster)))
	first := ""
	for _, item := range items {
		o := centerview.AsUnstructured(item)
		if o == nil {
			continue
		}
		g, _, _ := unstructured.NestedString(o.Object, "spec", "group")
		k, _, _ := unstructured.NestedString(o.Object, "spec", "kind")
		if g == group && k == kind && (first == "" || o.GetName() < first) {
			first = o.GetName()
		}
	}
	return first
}
