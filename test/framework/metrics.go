package framework

import (
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var labelPair = regexp.MustCompile(`(\w+)="((?:[^"\\]|\\.)*)"`)

// RequestCounts sums the apiserver_request_total series of kcp's Prometheus text (Server.Metrics)
// by verb and resource, with the subresource after a slash: "APPLY assemblages",
// "UPDATE synctargets/status". kcp counts requests for its whole shard, across workspaces.
func RequestCounts(metrics string) map[string]float64 {
	counts := map[string]float64{}
	EachRequestSeries(metrics, func(verb, resource string, labels map[string]string, value float64) {
		counts[verb+" "+resource] += value
	})
	return counts
}

// EachRequestSeries calls f for each apiserver_request_total series of resource requests in
// kcp's Prometheus text, with its verb, its resource (with the subresource after a slash), all
// its labels and its value; discovery and other non-resource requests are left out.
func EachRequestSeries(metrics string, f func(verb, resource string, labels map[string]string, value float64)) {
	const series = "apiserver_request_total{"
	for _, line := range strings.Split(metrics, "\n") {
		if !strings.HasPrefix(line, series) {
			continue
		}
		end := strings.LastIndexByte(line, '}')
		if end < 0 {
			continue
		}
		value, err := strconv.ParseFloat(strings.TrimSpace(line[end+1:]), 64)
		if err != nil {
			continue
		}
		labels := map[string]string{}
		for _, m := range labelPair.FindAllStringSubmatch(line[len(series):end], -1) {
			labels[m[1]] = m[2]
		}
		resource := labels["resource"]
		if resource == "" {
			continue
		}
		if sub := labels["subresource"]; sub != "" {
			resource += "/" + sub
		}
		f(labels["verb"], resource, labels, value)
	}
}

// IsWrite says whether a key of RequestCounts is a write: a create, update, patch, apply or
// delete.
func IsWrite(request string) bool {
	verb, _, _ := strings.Cut(request, " ")
	switch verb {
	case "POST", "CREATE", "PUT", "UPDATE", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION":
		return true
	}
	return false
}

// ScrapeMetrics reads the Prometheus text of a process's /metrics at address (host:port).
func ScrapeMetrics(t testing.TB, address string) string {
	t.Helper()
	resp, err := http.Get("http://" + address + "/metrics")
	if err != nil {
		t.Fatalf("reading %s/metrics: %v", address, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("reading %s/metrics: %d %v", address, resp.StatusCode, err)
	}
	return string(body)
}

// MetricSum sums every series of one metric (name, without labels) in Prometheus text.
func MetricSum(metrics, name string) float64 {
	sum := 0.0
	for _, line := range strings.Split(metrics, "\n") {
		rest, ok := strings.CutPrefix(line, name)
		if !ok || (rest != "" && rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		if end := strings.LastIndexByte(rest, '}'); end >= 0 {
			rest = rest[end+1:]
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64); err == nil {
			sum += v
		}
	}
	return sum
}
