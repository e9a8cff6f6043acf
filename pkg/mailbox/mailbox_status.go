package mailbox

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

// syncerStatus sets SyncerReady and lastSyncerHeartbeatTime from the last heartbeat (nil: none
// yet), and returns when the condition would change if no heartbeat came (0: never).
func (c *Controller) syncerStatus(status *edgev1alpha1.SyncTargetStatus, renewed *time.Time) time.Duration {
	return syncerStatusAt(c.now(), status, renewed)
}

func syncerStatusAt(now time.Time, status *edgev1alpha1.SyncTargetStatus, renewed *time.Time) time.Duration {
	if renewed == nil {
		setCondition(status, edgev1alpha1.SyncTargetSyncerReady, metav1.ConditionUnknown, edgev1alpha1.ReasonHeartbeatMissing,
			"no heartbeat from the syncer yet: install it in the edge cluster with the YAML of 'kubectl edge prep-for-syncer'")
		return 0
	}
	age := now.Sub(*renewed)
	previous := meta.FindStatusCondition(status.Conditions, edgev1alpha1.SyncTargetSyncerReady)
	wasReady := previous != nil && previous.Status == metav1.ConditionTrue
	if age <= HeartbeatGracePeriod {
		setCondition(status, edgev1alpha1.SyncTargetSyncerReady, metav1.ConditionTrue, edgev1alpha1.ReasonHeartbeatCurrent,
			fmt.Sprintf("the syncer renewed its heartbeat within the last %s", HeartbeatGracePeriod))
		last := status.LastSyncerHeartbeatTime
		if !wasReady || last == nil || renewed.Sub(last.Time) >= heartbeatRecordInterval || renewed.Before(last.Time) {
			status.LastSyncerHeartbeatTime = &metav1.Time{Time: renewed.Truncate(time.Second)}
		}
		return HeartbeatGracePeriod - age + time.Second
	}
	setCondition(status, edgev1alpha1.SyncTargetSyncerReady, metav1.ConditionUnknown, edgev1alpha1.ReasonHeartbeatStale,
		fmt.Sprintf("no heartbeat from the syncer since %s, more than %s ago", renewed.UTC().Format(time.RFC3339), HeartbeatGracePeriod))
	status.LastSyncerHeartbeatTime = &metav1.Time{Time: renewed.Truncate(time.Second)}
	return 0
}
