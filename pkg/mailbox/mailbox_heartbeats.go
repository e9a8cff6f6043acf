package mailbox

import (
	"context"
	"time"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	kcpdynamic "github.com/kcp-dev/client-go/dynamic"
	kcpdynamicinformer "github.com/kcp-dev/client-go/dynamic/dynamicinformer"
	"github.com/kcp-dev/logicalcluster/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/espw"
)

// watchHeartbeats watches the syncers' heartbeat Leases in every mailbox, through the virtual
// workspace of mailbox.edge.kcp.io, whose permission claim on Leases every mailbox accepts. kcp
// publishes that virtual workspace only once some workspace binds the export, that is once the
// first mailbox exists; until then there is no heartbeat to see, and this waits for it.
func (c *Controller) watchHeartbeats(ctx context.Context) {
	logger := klog.FromContext(ctx)
	url, ok := espw.WaitForEndpoint(ctx, c.cfg.KCP, c.cfg.ESPW, edgev1alpha1.MailboxAPIExportName)
	if !ok {
		return
	}
	cfg := rest.CopyConfig(c.cfg.VWConfig)
	cfg.Host = url
	client, err := kcpdynamic.NewForConfig(cfg)
	if err != nil {
		logger.Error(err, "building the client of the mailbox virtual workspace; heartbeats are not watched")
		return
	}
	informer := kcpdynamicinformer.NewFilteredDynamicInformer(client, leasesGVR, resyncPeriod,
		cache.Indexers{kcpcache.ClusterIndexName: kcpcache.ClusterIndexFunc},
		func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=" + HeartbeatLease }).Informer()
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueLeaseOwner,
		UpdateFunc: func(_, obj any) { c.enqueueLeaseOwner(obj) },
		DeleteFunc: c.enqueueLeaseOwner,
	}); err != nil {
		logger.Error(err, "watching heartbeats")
		return
	}
	c.leasesMu.Lock()
	c.leases = informer
	c.leasesMu.Unlock()
	logger.Info("watching heartbeats through the virtual workspace of "+edgev1alpha1.MailboxAPIExportName, "url", url)
	informer.Run(ctx.Done())
}

// heartbeat returns the renew time of the heartbeat Lease in the mailbox with the given logical
// cluster (nil if there is none), and whether the Leases are known at all: they are not before
// the watch has synced.
func (c *Controller) heartbeat(mailbox logicalcluster.Name) (*time.Time, bool) {
	c.leasesMu.RLock()
	leases := c.leases
	c.leasesMu.RUnlock()
	if leases == nil || !leases.HasSynced() {
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
