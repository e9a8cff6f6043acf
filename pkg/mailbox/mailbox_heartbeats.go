package mailbox

import (
	"fmt"
	"time"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	"github.com/kcp-dev/logicalcluster/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/centerview"
)

// watchHeartbeats makes the informers on the syncers' heartbeat Leases in every mailbox, and on
// their SyncerConfigs, through the virtual workspaces of mailbox.edge.kcp.io, whose permission
// claim on Leases every mailbox accepts. kcp publishes a shard's virtual workspace only once a
// mailbox there binds the export; the informers follow them as they appear.
func (c *Controller) watchHeartbeats() error {
	byName := func(name string) func(*metav1.ListOptions) {
		return func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=" + name }
	}
	c.leases = c.cfg.Mailbox.NewInformer(leasesGVR, resyncPeriod, nil, byName(HeartbeatLease))
	// No field selector on SyncerConfigs: watched through the virtual workspace with
	// metadata.name=the-one, this informer saw none of them, and SyncerCompatible stayed Unknown
	// with every syncer reporting (test/e2e/upgrade found it; without the selector it passes). A
	// mailbox holds one SyncerConfig anyway.
	c.configs = c.cfg.Mailbox.NewInformer(syncerConfigsGVR, resyncPeriod, nil, nil)
	_ = c.configs.SetTransform(slimSyncerReport)
	for _, inf := range []centerview.SharedInformer{c.leases, c.configs} {
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    c.enqueueLeaseOwner,
			UpdateFunc: func(_, obj any) { c.enqueueLeaseOwner(obj) },
			DeleteFunc: c.enqueueLeaseOwner,
		}); err != nil {
			return fmt.Errorf("watching heartbeats: %w", err)
		}
	}
	return nil
}

// slimSyncerReport keeps of a SyncerConfig only what the syncer reports about itself.
func slimSyncerReport(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	status, _, _ := unstructured.NestedMap(u.Object, "status")
	kept := map[string]any{}
	for _, f := range []string{"syncerVersion", "formats", "observedGeneration"} {
		if v, ok := status[f]; ok {
			kept[f] = v
		}
	}
	slim := &unstructured.Unstructured{Object: map[string]any{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(), "status": kept}}
	slim.SetName(u.GetName())
	slim.SetAnnotations(u.GetAnnotations()) // the logical cluster
	slim.SetResourceVersion(u.GetResourceVersion())
	return slim, nil
}

// syncerConfig returns what the syncer reported in the mailbox's SyncerConfig (nil if there is
// none), and whether the SyncerConfigs are known at all.
func (c *Controller) syncerConfig(mailbox logicalcluster.Name) (*edgev1alpha1.SyncerConfig, bool) {
	configs := c.configs
	if !configs.HasSynced() {
		return nil, false
	}
	obj, exists, err := configs.GetIndexer().GetByKey(kcpcache.ToClusterAwareKey(mailbox.String(), "", edgev1alpha1.SyncerConfigName))
	if err != nil || !exists {
		return nil, true
	}
	cfg := &edgev1alpha1.SyncerConfig{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.(*unstructured.Unstructured).Object, cfg); err != nil {
		return nil, true
	}
	return cfg, true
}

// heartbeat returns the renew time of the heartbeat Lease in the mailbox with the given logical
// cluster (nil if there is none), and whether the Leases are known at all: they are not before
// the watch has synced.
func (c *Controller) heartbeat(mailbox logicalcluster.Name) (*time.Time, bool) {
	leases := c.leases
	if !leases.HasSynced() {
		return nil, false
	}
	obj, exists, err := leases.GetIndexer().GetByKey(kcpcache.ToClusterAwareKey(mailbox.String(), SyncerNamespace, HeartbeatLease))
	if err != nil || !exists {
		return nil, true
	}
	u := obj.(*unstructured.Unstructured)
	s, found, _ := unstructured.NestedString(u.Object, "spec", "renewTime")
	if !found {
		return nil, true
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return nil, true
	}
	return &t, true
}
