package framework

import (
	"regexp"
	"strconv"
	"strings"
)

var labelPair = regexp.MustCompile(`(\w+)="((?:[^"\\]|\\.)*)"`)

// RequestCounts sums the apiserver_request_total series of kcp's Prometheus text (Server.Metrics)
// by verb and resource, with the subresource after a slash: "APPLY assemblages",
// "UPDATE synctargets/status". kcp counts requests for its whole shard, across workspaces.
func RequestCounts(metrics string) map[string]float64 {
	const series = "apiserver_request_total{"
	counts := map[string]float64{}
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
			continue // discovery and other non-resource requests
		}
		if sub := labels["subresource"]; sub != "" {
			resource += "/" + sub
		}
		counts[labels["verb"]+" "+resource] += value
	}
	return counts
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
