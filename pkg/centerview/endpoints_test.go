package centerview

import (
	"context"
	"slices"
	"testing"

	"github.com/kcp-dev/logicalcluster/v3"
	apisv1alpha1 "github.com/kcp-dev/sdk/apis/apis/v1alpha1"
	kcpfakeclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster/fake"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

func endpointSlice(name string, urls ...string) *apisv1alpha1.APIExportEndpointSlice {
	s := &apisv1alpha1.APIExportEndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: name,
		Annotations: map[string]string{logicalcluster.AnnotationKey: "espw-cluster"}}}
	for _, u := range urls {
		s.Status.APIExportEndpoints = append(s.Status.APIExportEndpoints, apisv1alpha1.APIExportEndpoint{URL: u})
	}
	return s
}

// TestEndpointsFollowTheSlice follows a slice through kcp's fake clientset: its URLs as they
// change, its deletion and its return.
func TestEndpointsFollowTheSlice(t *testing.T) {
	espw := logicalcluster.Name("espw-cluster")
	kcp := kcpfakeclientset.NewSimpleClientset()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e, err := NewEndpoints(kcp, espw.Path(), "edge.kcp.io", &rest.Config{Host: "https://front-proxy.example"})
	if err != nil {
		t.Fatal(err)
	}
	// A slice not there yet: WaitForURL says so once, and waits. (The fake clientset's watch does
	// not replay what was created between its list and its watch, so the slices that this test
	// follows exist before Start.)
	other, err := NewEndpoints(kcp, espw.Path(), "not.there", &rest.Config{Host: "https://front-proxy.example"})
	if err != nil {
		t.Fatal(err)
	}
	other.Start(ctx)
	notYet := make(chan struct{})
	waitCtx, stopWaiting := context.WithCancel(ctx)
	go func() {
		if _, ok := other.WaitForURL(waitCtx, func() { close(notYet) }); ok {
			t.Error("WaitForURL returned a URL of a slice that does not exist")
		}
	}()
	<-notYet
	stopWaiting()

	endpointSlices := kcp.Cluster(espw.Path()).ApisV1alpha1().APIExportEndpointSlices()
	if _, err := endpointSlices.Create(ctx, endpointSlice("edge.kcp.io", "https://shard-b/vw"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.Start(ctx)
	if url, ok := e.WaitForURL(ctx, nil); !ok || url != "https://shard-b/vw" {
		t.Errorf("WaitForURL: %q, want the one URL listed", url)
	}
	// The update is repeated until seen: the watch may start after the list that found the slice.
	eventually(t, "both URLs followed", func() bool {
		if _, err := endpointSlices.Update(ctx, endpointSlice("edge.kcp.io", "https://shard-b/vw", "https://shard-a/vw"), metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		return slices.Equal(e.URLs(), []string{"https://shard-a/vw", "https://shard-b/vw"})
	})
	if cfg := e.Config("https://shard-a/vw"); cfg.Host != "https://shard-a/vw" {
		t.Errorf("Config(url).Host = %q", cfg.Host)
	}
	if err := endpointSlices.Delete(ctx, "edge.kcp.io", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "nothing followed once the slice is deleted", func() bool { return len(e.URLs()) == 0 })
	if _, err := endpointSlices.Create(ctx, endpointSlice("edge.kcp.io", "https://shard-a/vw"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the slice made again is followed", func() bool {
		return slices.Equal(e.URLs(), []string{"https://shard-a/vw"})
	})
}
