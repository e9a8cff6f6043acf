package statussummarizer

import (
	"fmt"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/centerview"
	"github.com/kcp-dev/edge-mc/pkg/statuscel"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

var statusCollectorsGVR = edgev1alpha1.SchemeGroupVersion.WithResource("statuscollectors")

// collected combines, for each collector the placement names, the reports of its destinations'
// syncers (statuscel.Combine): the destinations whose syncer is silent past the grace period are
// left out, the others count with what they last reported. A collector that does not exist or
// is not accepted yields its problem, no rows.
func (c *Controller) collected(pk placementKey, p *edgev1alpha1.EdgePlacement, views []transport.DestinationView) []edgev1alpha1.CollectedStatus {
	if c.collectors == nil || len(p.Spec.StatusCollectors) == 0 {
		return nil
	}
	out := make([]edgev1alpha1.CollectedStatus, 0, len(p.Spec.StatusCollectors))
	for _, name := range p.Spec.StatusCollectors {
		item, exists, _ := c.collectors.GetIndexer().GetByKey(kcpcache.ToClusterAwareKey(pk.cluster, "", name))
		sc := &edgev1alpha1.StatusCollector{}
		if exists {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(centerview.AsUnstructured(item).Object, sc); err != nil {
				exists = false
			}
		}
		if !exists {
			out = append(out, edgev1alpha1.CollectedStatus{Name: name, Columns: []string{},
				Problem: fmt.Sprintf("there is no StatusCollector %s in this workspace: create it, or remove it from spec.statusCollectors", name)})
			continue
		}
		if cond := meta.FindStatusCondition(sc.Status.Conditions, edgev1alpha1.RuleAccepted); cond != nil && cond.Status == metav1.ConditionFalse {
			out = append(out, edgev1alpha1.CollectedStatus{Name: name, Columns: statuscel.Columns(&sc.Spec),
				Problem: fmt.Sprintf("StatusCollector %s is not accepted: %s", name, cond.Message)})
			continue
		}
		var reports []statuscel.DestinationReport
		for _, v := range views {
			if v.Stale || v.Assemblage == nil {
				continue
			}
			for i := range v.Assemblage.Status.Collected {
				if r := &v.Assemblage.Status.Collected[i]; r.Name == name {
					reports = append(reports, statuscel.DestinationReport{Destination: v.Name, Report: r})
					break
				}
			}
		}
		out = append(out, statuscel.Combine(name, &sc.Spec, reports))
	}
	return out
}

// collectorChanged queues the placements of the collector's workspace.
func (c *Controller) collectorChanged(obj any) {
	u := centerview.AsUnstructured(obj)
	if u == nil {
		return
	}
	cluster := logicalcluster.From(u)
	items, _ := c.placements.GetIndexer().ByIndex(kcpcache.ClusterIndexName, kcpcache.ClusterIndexKey(cluster))
	for _, item := range items {
		if pu := centerview.AsUnstructured(item); pu != nil {
			c.placementQueue.Add(placementKey{cluster.String(), pu.GetName()})
		}
	}
}
