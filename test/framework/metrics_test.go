package framework

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestRequestCounts(t *testing.T) {
	metrics := `# HELP apiserver_request_total [STABLE] Counter of apiserver requests.
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="coordination.k8s.io",resource="leases",scope="resource",subresource="",verb="PUT",version="v1"} 40
apiserver_request_total{code="409",component="apiserver",dry_run="",group="coordination.k8s.io",resource="leases",scope="resource",subresource="",verb="PUT",version="v1"} 2
apiserver_request_total{code="200",component="apiserver",dry_run="",group="apps",resource="deployments",scope="resource",subresource="status",verb="PATCH",version="v1"} 1e+03
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="",scope="",subresource="api",verb="GET",version=""} 3
apiserver_request_duration_seconds_count{resource="leases",verb="PUT"} 99
`
	got := RequestCounts(metrics)
	want := map[string]float64{"PUT leases": 42, "PATCH deployments/status": 1000}
	if len(got) != len(want) {
		t.Fatalf("RequestCounts = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("RequestCounts[%q] = %v, want %v", k, got[k], v)
		}
	}
}

// hack/testtimes finds the line RunWithKCP prints of kcp's CPU by the same mark.
func TestTesttimesKnowsTheCPUMark(t *testing.T) {
	path, err := RepoFile("hack", "testtimes", "main.go")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), strconv.Quote(CenterCPUMark)) {
		t.Errorf("%s does not look for %q, the mark of the framework's CPU line", path, CenterCPUMark)
	}
}

func TestMetricSum(t *testing.T) {
	text := "# HELP x_total a\nx_total{a=\"1\"} 2\nx_total{a=\"2\"} 3.5\nx_total_other 7\nx_totals 9\ny 1\n"
	if got := MetricSum(text, "x_total"); got != 5.5 {
		t.Errorf("MetricSum = %v, want 5.5 (two series, not x_total_other or x_totals)", got)
	}
	if got := MetricSum("z 4\n", "z"); got != 4 {
		t.Errorf("MetricSum of an unlabelled series = %v, want 4", got)
	}
}
