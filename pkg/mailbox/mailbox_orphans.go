package mailbox

import (
	"context"
	"fmt"

	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/centerview"
)

// checkOrphan deletes the mailbox workspace with the given name if no SyncTarget owns it any
// more: its SyncTarget was deleted, or recreated under the same name with a new UID. It runs
// only after the caches synced, so an absent SyncTarget is really absent.
func (c *Controller) checkOrphan(ctx context.Context, name string) error {
	obj, exists, err := c.mailboxes.GetIndexer().GetByKey(name)
	if err != nil || !exists {
		return err
	}
	ws := obj.(*tenancyv1alpha1.Workspace)
	if ws.DeletionTimestamp != nil || ws.Labels[LabelMailbox] != "true" {
		return nil
	}
	cluster, uid, ok := ParseWorkspaceName(name)
	if !ok {
		return nil // not a name this controller gives; leave it alone
	}
	owners, err := c.syncTargets.GetIndexer().ByIndex(byClusterUID, cluster.String()+"|"+string(uid))
	if err != nil {
		return err
	}
	if len(owners) > 0 {
		return nil
	}
	if !centerview.Complete(c.syncTargets) {
		// A shard's virtual workspace that appeared since the start has not listed its
		// SyncTargets yet (or its shard has not answered yet): the owner may be among them.
		return fmt.Errorf("not deciding yet whether mailbox %s is an orphan: the SyncTargets of a virtual workspace of %s that appeared since the start are still being listed",
			name, edgev1alpha1.EdgeAPIExportName)
	}
	klog.FromContext(ctx).Info("deleting mailbox workspace whose SyncTarget is gone",
		"mailbox", c.cfg.ESPW.Join(name), "syncTarget", ws.Annotations[AnnotationSyncTargetCluster]+"|"+ws.Annotations[AnnotationSyncTargetName], "uid", uid)
	err = c.cfg.KCP.Cluster(c.cfg.ESPW).TenancyV1alpha1().Workspaces().Delete(ctx, name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &ws.UID},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting mailbox workspace %s: %w", name, err)
	}
	c.setContentsStage(ws.UID, contentsUnknown)
	c.notYet.Forget(ws.UID)
	c.endSetup(name)
	return nil
}
