package manager

import (
	"sync/atomic"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// readyGiven is /readyz's answer: ready unless why (nil: ready) says otherwise; a replica that
// stands by counts as ready where the leader check is excluded.
func readyGiven(why *string, excluded map[string]bool) (bool, string) {
	if why != nil && !(excluded[LeaderCheck] && *why == standingBy) {
		return false, *why
	}
	return true, ""
}

// serving is the /readyz of the running Run (nil when none runs), which the readiness gauges
// read at each scrape.
var serving atomic.Pointer[func(excluded map[string]bool) (bool, string)]

// gaugeOf is 1 where /readyz with excluded answers 200, else 0.
func gaugeOf(excluded map[string]bool) func() float64 {
	return func() float64 {
		if readyz := serving.Load(); readyz != nil {
			if ok, _ := (*readyz)(excluded); ok {
				return 1
			}
		}
		return 0
	}
}

func init() {
	legacyregistry.RawMustRegister(
		metrics.NewGaugeFunc(&metrics.GaugeOpts{
			Namespace: "edge", Subsystem: "controller", Name: "ready",
			Help:           "1 while /readyz?exclude=leader answers 200 (the controllers' caches synced, or the replica stands by ready to take over), else 0.",
			StabilityLevel: metrics.ALPHA,
		}, gaugeOf(map[string]bool{LeaderCheck: true})),
		metrics.NewGaugeFunc(&metrics.GaugeOpts{
			Namespace: "edge", Subsystem: "controller", Name: "leader",
			Help:           "1 while this replica leads and its controllers' caches synced (/readyz answers 200), else 0.",
			StabilityLevel: metrics.ALPHA,
		}, gaugeOf(nil)),
	)
}
