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
	// apiserver_request_total labels them: "UPDATE leases", "PATCH deployments/status".
	Request   string  `json:"request"`
	Count     float64 `json:"count"`
	PerSecond float64 `json:"perSecond"`
}

// topRequests is how many kinds of request a phase reports, the most frequent first.
const topRequests = 12

// requestCounter samples a kcp server's request counters, to say what a phase asked of it.
type requestCounter struct {
	server *framework.Server
	before map[string]float64
}

// startCounting samples the counters now; a failure is reported and leaves the figures empty.
func startCounting(ctx context.Context, s *framework.Server) *requestCounter {
	c := &requestCounter{server: s}
	metrics, err := s.Metrics(ctx)
	if err != nil {
		say("cannot read kcp's request counters: %v", err)
		return c
	}
	c.before = framework.RequestCounts(metrics)
	return c
}

// top returns the most frequent requests since startCounting, over a phase of the given length.
func (c *requestCounter) top(ctx context.Context, seconds float64) []requestRate {
	if c.before == nil {
		return nil
	}
	metrics, err := c.server.Metrics(ctx)
	if err != nil {
		say("cannot read kcp's request counters: %v", err)
		return nil
	}
	rates := []requestRate{}
	for request, n := range framework.RequestCounts(metrics) {
		if d := n - c.before[request]; d > 0 {
			rates = append(rates, requestRate{Request: request, Count: d, PerSecond: d / seconds})
		}
	}
	sort.Slice(rates, func(i, j int) bool {
		if rates[i].Count != rates[j].Count {
			return rates[i].Count > rates[j].Count
		}
		return rates[i].Request < rates[j].Request
	})
	return rates[:min(len(rates), topRequests)]
}

// describeRequests says the top requests in a table cell.
func describeRequests(rates []requestRate, perSecond bool) string {
	switch {
	case rates == nil:
		return "not read"
	case len(rates) == 0:
		return "none"
	}
	var parts []string
	for _, r := range rates[:min(len(rates), 5)] {
		if perSecond {
			parts = append(parts, fmt.Sprintf("%s %.1f/s", r.Request, r.PerSecond))
		} else {
			parts = append(parts, fmt.Sprintf("%s %.0f", r.Request, r.Count))
		}
	}
	return strings.Join(parts, ", ")
}
