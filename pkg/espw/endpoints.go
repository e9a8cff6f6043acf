package espw

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// WaitForEndpoint waits until the APIExportEndpointSlice of the named APIExport in the ESPW lists
// a URL, the export's virtual workspace, and returns it; false if ctx ends first. kcp lists it
// only once some workspace binds the export. It reads the slice with jittered backoff, from 1 s
// up to 30 s, logging why a read failed.
func WaitForEndpoint(ctx context.Context, kcp kcpclientset.ClusterInterface, espw logicalcluster.Path, export string) (string, bool) {
	logger := klog.FromContext(ctx)
	delay := time.Second
	for {
		slice, err := kcp.Cluster(espw).ApisV1alpha1().APIExportEndpointSlices().Get(ctx, export, metav1.GetOptions{})
		switch {
		case err != nil && ctx.Err() == nil:
			logger.Error(err, "reading the APIExportEndpointSlice of "+export+" (has 'kubectl edge init' run with this version?)", "espw", espw)
		case err == nil && len(slice.Status.APIExportEndpoints) > 0:
			return slice.Status.APIExportEndpoints[0].URL, true
		}
		select {
		case <-ctx.Done():
			return "", false
		case <-time.After(delay + rand.N(delay/2)):
		}
		delay = min(2*delay, 30*time.Second)
	}
}
