package sharded

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/transport"
	"github.com/kcp-dev/edge-mc/test/framework"
)

var (
	placementsGVR  = edgev1alpha1.SchemeGroupVersion.WithResource("edgeplacements")
	assemblagesGVR = edgev1alpha1.SchemeGroupVersion.WithResource("assemblages")
	partsGVR       = edgev1alpha1.SchemeGroupVersion.WithResource("assemblageparts")
)

// acrossShardsWorkload is a namespace and a ConfigMap customised per destination, and a placement
// of them to every Location.
const acrossShardsWorkload = `apiVersion: v1
kind: Namespace
metadata: {name: app}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: app
  annotations: {edge.kcp.io/expand-parameters: "true"}
data: {region: "%(region)"}
---
apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: app}
spec:
  locationSelectors: [{matchLabels: {}}]
  downsync: [{namespaces: [app]}]
`

// TestPlacementAcrossShards runs all four controllers on a center whose inventory is spread over
// both shards (an inventory workspace on each) and whose mailboxes land on both, and places a
// workload from a workload workspace on the ESPW's shard to every Location. Each mailbox, on
// whichever shard, gets the workload customised for its own SyncTarget's region, and the
// placement's status, written through the virtual workspace of its shard, says it reached them
// all: the scheduler and the translator read SyncTargets and Locations through both shards'
// virtual workspaces of edge.kcp.io, and the translator sees the mailboxes through both shards'
// virtual workspaces of mailbox.edge.kcp.io.
func TestPlacementAcrossShards(t *testing.T) {
	t.Parallel()
	c := framework.ShardedKCP(t)
	base := framework.NewWorkspace(t)
	espw, wmw := base.Join("espw"), base.Join("wmw")
	framework.KubectlEdge(t, "init", "--espw", espw.String()).MustSucceed(t)
	espwShard := c.EventuallyShardOf(t, espw)
	c.CreateWorkspaceOn(t, wmw, espwShard)
	framework.KubectlEdge(t, "ensure", "wmw", wmw.String(), "--espw", espw.String()).MustSucceed(t)
	imws := map[string]logicalcluster.Path{}
	for _, s := range c.Shards {
		imws[s.Name] = base.Join("imw-" + s.Name)
		c.CreateWorkspaceOn(t, imws[s.Name], s.Name)
		framework.KubectlEdge(t, "ensure", "imw", imws[s.Name].String(), "--espw", espw.String()).MustSucceed(t)
	}
	framework.StartControllerManager(t, espw, append([]string{"--controllers", "mailbox,scheduler,placement-translator,upsync,status-summarizer"},
		framework.FleetHeartbeatArgs...)...)

	// SyncTargets in turn in each inventory workspace, until the mailboxes are on both shards.
	type destination struct {
		imw            logicalcluster.Path
		name, region   string
		mailbox, shard string
	}
	var dests []destination
	mailboxShards := map[string]int{}
	for i := 0; i < maxSyncTargets && (len(mailboxShards) < len(c.Shards) || i < len(c.Shards)); i++ {
		imwShard := c.Shards[i%len(c.Shards)].Name
		d := destination{imw: imws[imwShard], name: fmt.Sprintf("edge-%d", i), region: fmt.Sprintf("r%d", i)}
		framework.KubectlEdge(t, "ensure", "location", d.name, "region="+d.region, "--imw", d.imw.String(), "--espw", espw.String()).MustSucceed(t)
		st := framework.EventuallyObject(t, "the mailbox of "+d.name+" in "+d.imw.String()+" is ready",
			framework.KCP(t).DynamicClient(t, d.imw), syncTargetsGVR, "", d.name, mailboxReady)
		d.mailbox, _, _ = unstructured.NestedString(st.Object, "status", "mailboxWorkspace")
		d.shard = c.EventuallyShardOf(t, logicalcluster.NewPath(d.mailbox))
		t.Logf("SyncTarget %s in %s (shard %s): mailbox %s on shard %s", d.name, d.imw, imwShard, d.mailbox, d.shard)
		mailboxShards[d.shard]++
		dests = append(dests, d)
	}
	if len(mailboxShards) < len(c.Shards) {
		t.Fatalf("after %d SyncTargets the mailboxes are on %d shards only: %v", len(dests), len(mailboxShards), mailboxShards)
	}

	framework.KubectlApply(t, framework.KCP(t).ServerURL(wmw), acrossShardsWorkload).MustSucceed(t)
	for _, d := range dests {
		mailbox := framework.KCP(t).DynamicClient(t, logicalcluster.NewPath(d.mailbox))
		framework.Eventually(t, framework.Converge, func() (bool, string) {
			region, err := deliveredRegion(t, mailbox)
			if err != nil {
				return false, fmt.Sprintf("mailbox %s of %s (shard %s): %v", d.mailbox, d.name, d.shard, err)
			}
			return region == d.region, fmt.Sprintf("mailbox %s of %s (shard %s) holds settings for region %q, want %q", d.mailbox, d.name, d.shard, region, d.region)
		})
	}
	framework.Eventually(t, framework.Converge, func() (bool, string) {
		u, err := framework.KCP(t).DynamicClient(t, wmw).Resource(placementsGVR).Get(framework.Context(t, 10*time.Second), "app", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		count, _, _ := unstructured.NestedInt64(u.Object, "status", "matchingSyncTargetCount")
		status, reason, msg := framework.ConditionStatus(u, "Projected")
		want := fmt.Sprintf("all %d destinations", len(dests))
		return count == int64(len(dests)) && status == metav1.ConditionTrue && strings.Contains(msg, want),
			fmt.Sprintf("placement app: matchingSyncTargetCount %d, Projected %s (%s: %s); want %d and True, %q", count, status, reason, msg, len(dests), want)
	})
}

// deliveredRegion decodes the assemblages of a mailbox, with their parts, and returns the region
// of the ConfigMap app/settings in them.
func deliveredRegion(t *testing.T, mailbox dynamic.Interface) (string, error) {
	ctx := framework.Context(t, 10*time.Second)
	list, err := mailbox.Resource(assemblagesGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	partList, err := mailbox.Resource(partsGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	var parts []*edgev1alpha1.AssemblagePart
	for i := range partList.Items {
		p := &edgev1alpha1.AssemblagePart{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(partList.Items[i].Object, p); err != nil {
			return "", err
		}
		parts = append(parts, p)
	}
	for i := range list.Items {
		a := &edgev1alpha1.Assemblage{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, a); err != nil {
			return "", err
		}
		doc, err := transport.DecodeAssemblage(a, parts)
		if err != nil {
			return "", fmt.Errorf("decoding assemblage %s: %w", a.Name, err)
		}
		for _, e := range doc.Objects {
			if k := e.Key(); e.Resource == "configmaps" && k.Namespace == "app" && k.Name == "settings" {
				region, _, _ := unstructured.NestedString(e.Object, "data", "region")
				return region, nil
			}
		}
	}
	return "", fmt.Errorf("no assemblage carries the ConfigMap app/settings (%d assemblages)", len(list.Items))
}
