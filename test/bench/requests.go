package main

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/kcp-dev/edge-mc/test/framework"
)

// requestRate is how many requests of one kind a kcp server served during a phase.
type requestRate struct {
	// Request is the verb and the resource (with its subresource), as kcp's
	// apiserver_request_total labels them: "UPDATE leases", "PATCH assemblages/status".
	Request   string  `json:"request"`
	Count     float64 `json:"count"`
	PerSecond float64 `json:"perSecond"`
}

// topRequests is how many kinds of request a phase reports when it reports the most frequent.
const topRequests = 12

// requestCounter samples the request counters of kcp servers (the shards of a center, or one
// kcp), to say what a phase asked of them.
type requestCounter struct {
	servers []metricsSource
	// before holds each server's counters when counting started; nil if one could not be read.
	before []map[string]float64
}

// startCounting samples the counters now; a failure is reported and leaves the figures empty.
func startCounting(ctx context.Context, servers ...metricsSource) *requestCounter {
	c := &requestCounter{servers: servers}
	before, err := readCounts(ctx, servers)
	if err != nil {
		say("cannot read kcp's request counters: %v", err)
		return c
	}
	c.before = before
	return c
}

func readCounts(ctx context.Context, servers []metricsSource) ([]map[string]float64, error) {
	var out []map[string]float64
	for _, s := range servers {
		metrics, err := s.Metrics(ctx)
		if err != nil {
			return nil, err
		}
		counts := framework.RequestCounts(metrics)
		framework.EachRequestSeries(metrics, func(verb, resource string, labels map[string]string, value float64) {
			if labels["code"] == "429" {
				counts[refusedPrefix+verb+" "+resource] += value
			}
		})
		out = append(out, counts)
	}
	return out, nil
}

// refusedPrefix marks, among the requests a server served, those it refused with 429 (Too Many
// Requests): kcp's API priority and fairness turns away what exceeds a priority level's
// concurrency. They are counted in their own request too ("APPLY configmaps"), and are not
// writes.
const refusedPrefix = "refused (429): "

// requestDelta is what a server served between two samples, by request; nil if the counters
// could not be read.
type requestDelta map[string]float64

// deltaOf is what a server served between the counters before and after.
func deltaOf(before, after map[string]float64) requestDelta {
	d := requestDelta{}
	for request, n := range after {
		if n > before[request] {
			d[request] = n - before[request]
		}
	}
	return d
}

// sinceEach returns the requests each server served since startCounting, in the order given
// there; nil if the counters could not be read.
func (c *requestCounter) sinceEach(ctx context.Context) []requestDelta {
	if c.before == nil {
		return nil
	}
	after, err := readCounts(ctx, c.servers)
	if err != nil {
		say("cannot read kcp's request counters: %v", err)
		return nil
	}
	out := make([]requestDelta, len(after))
	for i := range after {
		out[i] = deltaOf(c.before[i], after[i])
	}
	return out
}

// since returns the requests all the servers served since startCounting, together.
func (c *requestCounter) since(ctx context.Context) requestDelta {
	return sumDeltas(c.sinceEach(ctx))
}

// sumDeltas adds up the servers' deltas, request by request; nil if there are none.
func sumDeltas(deltas []requestDelta) requestDelta {
	if deltas == nil {
		return nil
	}
	sum := requestDelta{}
	for _, d := range deltas {
		for request, n := range d {
			sum[request] += n
		}
	}
	return sum
}

// top returns the most frequent requests since startCounting, over a phase of the given length.
func (c *requestCounter) top(ctx context.Context, seconds float64) []requestRate {
	return c.since(ctx).rates(seconds, nil, topRequests)
}

// rates lists the requests that keep says to (all if nil), the most frequent first, at most
// limit of them (all if 0), over a phase of the given length. It is nil if the counters could
// not be read, and empty if nothing was served.
func (d requestDelta) rates(seconds float64, keep func(request string) bool, limit int) []requestRate {
	if d == nil {
		return nil
	}
	rates := []requestRate{}
	for request, n := range d {
		if keep == nil || keep(request) {
			rates = append(rates, requestRate{Request: request, Count: n, PerSecond: n / seconds})
		}
	}
	sort.Slice(rates, func(i, j int) bool {
		if rates[i].Count != rates[j].Count {
			return rates[i].Count > rates[j].Count
		}
		return rates[i].Request < rates[j].Request
	})
	if limit > 0 && len(rates) > limit {
		rates = rates[:limit]
	}
	return rates
}

// writes returns every write, by verb and resource, the most frequent first.
func (d requestDelta) writes(seconds float64) []requestRate {
	return d.rates(seconds, framework.IsWrite, 0)
}

// sum adds up the requests that keep says to.
func (d requestDelta) sum(keep func(request string) bool) float64 {
	total := 0.0
	for request, n := range d {
		if keep(request) {
			total += n
		}
	}
	return total
}

// isAssemblageWrite says whether a request writes an assemblage or a part of one (not their
// status): what the placement translator writes, one per destination per change.
func isAssemblageWrite(request string) bool {
	_, resource, _ := strings.Cut(request, " ")
	return framework.IsWrite(request) && (resource == "assemblages" || resource == "assemblageparts")
}

// isRefused says whether a key of the counts is the count of a request's refusals (429).
func isRefused(request string) bool {
	return strings.HasPrefix(request, refusedPrefix)
}

// isAssemblageStatusWrite says whether a request writes an assemblage's status: what a syncer
// reports.
func isAssemblageStatusWrite(request string) bool {
	_, resource, _ := strings.Cut(request, " ")
	return framework.IsWrite(request) && resource == "assemblages/status"
}

// describeRequests says the first n of rates in a table cell.
func describeRequests(rates []requestRate, perSecond bool, n int) string {
	switch {
	case rates == nil:
		return "not read"
	case len(rates) == 0:
		return "none"
	}
	var parts []string
	for _, r := range rates[:min(len(rates), n)] {
		if perSecond {
			parts = append(parts, fmt.Sprintf("%s %.2f/s", r.Request, r.PerSecond))
		} else {
			parts = append(parts, fmt.Sprintf("%s %.0f", r.Request, r.Count))
		}
	}
	if len(rates) > n {
		parts = append(parts, fmt.Sprintf("and %d more", len(rates)-n))
	}
	return strings.Join(parts, ", ")
}
