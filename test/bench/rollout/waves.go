package main

import (
	"sort"
	"time"
)

// span is one destination's update as the edge player saw it: from the new version's arrival in
// its mailbox to when it was done with it (reported ready, plus the soak).
type span struct {
	start, end time.Time
}

// wave is a group of consecutive deliveries (by arrival) of the size of maxInFlight: its first
// arrival and its last destination done.
type wave struct {
	start, end time.Time
	size       int
}

// wavesOf cuts the spans, in the order of their start, into waves of size (the last may be
// smaller). With every edge equally fast, a rollout bounded by maxInFlight=size moves in such
// waves; otherwise they are a way of reading the record, not what the translator decided.
func wavesOf(spans []span, size int) []wave {
	if size < 1 || len(spans) == 0 {
		return nil
	}
	sorted := append([]span(nil), spans...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].start.Before(sorted[j].start) })
	var out []wave
	for i := 0; i < len(sorted); i += size {
		chunk := sorted[i:min(i+size, len(sorted))]
		w := wave{start: chunk[0].start, end: chunk[0].end, size: len(chunk)}
		for _, s := range chunk[1:] {
			if s.end.After(w.end) {
				w.end = s.end
			}
		}
		out = append(out, w)
	}
	return out
}

// waveSeconds is each wave's time: from its start to the next wave's start, and for the last
// from its start to its end.
func waveSeconds(waves []wave) []float64 {
	out := make([]float64, len(waves))
	for i, w := range waves {
		next := w.end
		if i+1 < len(waves) {
			next = waves[i+1].start
		}
		out[i] = next.Sub(w.start).Seconds()
	}
	return out
}

// maxOverlap is the largest number of spans under way at one moment. A span that ends at the
// moment another starts does not overlap it.
func maxOverlap(spans []span) int {
	type edge struct {
		at    time.Time
		delta int
	}
	edges := make([]edge, 0, 2*len(spans))
	for _, s := range spans {
		edges = append(edges, edge{s.start, +1}, edge{s.end, -1})
	}
	sort.Slice(edges, func(i, j int) bool {
		if !edges[i].at.Equal(edges[j].at) {
			return edges[i].at.Before(edges[j].at)
		}
		return edges[i].delta < edges[j].delta
	})
	cur, peak := 0, 0
	for _, e := range edges {
		cur += e.delta
		peak = max(peak, cur)
	}
	return peak
}

// ceilDiv is n/d rounded up, for d > 0.
func ceilDiv(n, d int) int { return (n + d - 1) / d }
