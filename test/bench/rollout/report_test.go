package main

import (
	"reflect"
	"testing"
)

func TestRequestCounts(t *testing.T) {
	metrics := `# HELP apiserver_request_total x
apiserver_request_total{code="200",component="apiserver",group="edge.kcp.io",resource="edgeplacements",scope="resource",subresource="status",verb="PUT",version="v1alpha1"} 7
apiserver_request_total{code="409",component="apiserver",group="edge.kcp.io",resource="edgeplacements",scope="resource",subresource="status",verb="PUT",version="v1alpha1"} 3
apiserver_request_total{code="201",component="apiserver",group="",resource="configmaps",scope="resource",subresource="",verb="POST",version="v1"} 2
apiserver_request_total{code="201",component="apiserver",group="",resource="configmaps",scope="resource",subresource="",verb="POST",version="v1"} 1
apiserver_request_total{code="200",component="apiserver",group="",resource="",scope="",subresource="/apis",verb="GET",version=""} 9
`
	got := requestCounts(metrics)
	want := map[string]float64{"PUT edgeplacements/status": 7, "PUT edgeplacements/status 409": 3, "POST configmaps": 3}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("requestCounts = %v, want %v", got, want)
	}
	diff := requestDiff(map[string]float64{"POST configmaps": 1, "PUT edgeplacements/status": 7}, got)
	wantDiff := []requestCount{{"PUT edgeplacements/status 409", 3}, {"POST configmaps", 2}}
	if !reflect.DeepEqual(diff, wantDiff) {
		t.Errorf("requestDiff = %v, want %v", diff, wantDiff)
	}
	if w, r := sumRequests(append(diff, requestCount{"GET edgeplacements", 4})); w != 5 || r != 4 {
		t.Errorf("sumRequests = %v writes, %v reads; want 5, 4", w, r)
	}
}
