package syncer

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/kcp-dev/edge-mc/pkg/transport"
)

var (
	metricApplies = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "edge_syncer", Name: "applies_total",
		Help:           "Objects applied at the edge, by result: applied, waiting (for their namespace or kind), refused (by the edge cluster), error (to be retried).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
	metricDeletes = metrics.NewCounter(&metrics.CounterOpts{
		Namespace: "edge_syncer", Name: "deletes_total",
		Help:           "Objects deleted at the edge because they left their assemblage, or their assemblage left the mailbox.",
		StabilityLevel: metrics.ALPHA,
	})
	metricDriftRepairs = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "edge_syncer", Name: "drift_repairs_total",
		Help:           "Objects edited or deleted at the edge that the syncer put back, by change (edited, deleted).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"change"})
	metricDriftLeft = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "edge_syncer", Name: "drift_left_total",
		Help:           "Create-only objects edited or deleted at the edge, which the syncer reports and leaves as they are, by change (edited, deleted).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"change"})
	metricStatusWrites = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "edge_syncer", Name: "status_writes_total",
		Help:           "Writes of assemblages' status into the mailbox, by result (written, error).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
	metricRefusals = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "edge_syncer", Name: "assemblages_refused_total",
		Help:           "Versions of assemblages the syncer could not read, by reason (UnknownFormat, Corrupt, PartsMissing); the edge kept the last good version.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"reason"})
	metricUpsyncWrites = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "edge_syncer", Name: "upsync_writes_total",
		Help:           "Up-synced objects written into or deleted from the mailbox, by operation.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"operation"})
	metricHeartbeats = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "edge_syncer", Name: "heartbeats_total",
		Help:           "Heartbeat Lease renewals in the mailbox, by result (ok, failed).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
	metricCollectorObjects = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "edge_syncer", Name: "collector_objects_total",
		Help:           "Objects that status collectors ran on, at each status report of their assemblage, by collector (a StatusCollector's name).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"collector"})
	metricCollectorErrors = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "edge_syncer", Name: "collector_errors_total",
		Help:           "Run-time errors of status collectors' expressions on objects (each also counted in the assemblage's status.collected with an example), by collector.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"collector"})
	metricConnected = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: "edge_syncer", Name: "center_connected",
		Help:           "1 when the last heartbeat reached the mailbox, else 0.",
		StabilityLevel: metrics.ALPHA,
	})
)

var registerOnce sync.Once

func init() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(metricApplies, metricDeletes, metricDriftRepairs, metricDriftLeft, metricStatusWrites,
			metricRefusals, metricUpsyncWrites, metricHeartbeats, metricConnected, metricCollectorObjects, metricCollectorErrors)
		// Served at 0 from the start, so that rate() sees the first refusal and alerts can name them.
		for _, reason := range []string{transport.RefusedUnknownFormat, transport.RefusedCorrupt, transport.RefusedPartsMissing} {
			metricRefusals.WithLabelValues(reason)
		}
	})
}
