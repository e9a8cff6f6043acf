package sharded

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/test/framework"
)

// TestInventoryOnEveryShard puts an inventory workspace on each shard, with a SyncTarget in each,
// and expects both SyncTargets to get a ready mailbox. kcp lists an export's virtual workspace
// of a shard in the APIExportEndpointSlice only while some workspace on that shard binds the
// export, so edge-controller-manager sees both inventories only if it follows every endpoint; and
// it writes each SyncTarget's status through the virtual workspace of the shard that holds it.
func TestInventoryOnEveryShard(t *testing.T) {
	t.Parallel()
	c := framework.ShardedKCP(t)
	f, _ := oneShardFleet(t)
	var imws []string
	for _, s := range c.Shards {
		imw := c.NewWorkspaceOn(t, s.Name)
		framework.KubectlEdge(t, "ensure", "imw", imw.String(), "--espw", f.ESPW.String()).MustSucceed(t)
		framework.KubectlEdge(t, "ensure", "location", "edge-on-"+s.Name, "region="+s.Name,
			"--imw", imw.String(), "--espw", f.ESPW.String()).MustSucceed(t)
		imws = append(imws, imw.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	slice, err := framework.KCP(t).KCP.Cluster(f.ESPW).ApisV1alpha1().APIExportEndpointSlices().Get(ctx, edgev1alpha1.EdgeAPIExportName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	for _, e := range slice.Status.APIExportEndpoints {
		urls = append(urls, e.URL)
	}
	t.Logf("the APIExportEndpointSlice %s lists %d endpoints: %v", edgev1alpha1.EdgeAPIExportName, len(urls), urls)
	if len(urls) != len(c.Shards) {
		t.Errorf("the APIExportEndpointSlice %s lists %d endpoints with a binding on each of %d shards: %v", edgev1alpha1.EdgeAPIExportName, len(urls), len(c.Shards), urls)
	}
	for i, s := range c.Shards {
		name := "edge-on-" + s.Name
		framework.EventuallyObject(t, "the mailbox of "+name+" in "+imws[i]+" is ready",
			framework.KCP(t).DynamicClient(t, logicalPath(imws[i])), syncTargetsGVR, "", name, mailboxReady)
	}
}
