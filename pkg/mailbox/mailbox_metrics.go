package mailbox

import (
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/kcp-dev/edge-mc/pkg/controllerkit"
)

// metricSyncTargetConditions counts the SyncTargets in the controller's cache by condition, so
// that stale edges (SyncerReady Unknown, reason HeartbeatStale or MailboxUnreachable) can be
// graphed and alerted on.
var metricSyncTargetConditions = controllerkit.NewConditionCounts("synctarget_conditions",
	"SyncTargets by the type, status and reason of their conditions (MailboxReady, SyncerReady, SyncerCompatible), served by the replica that leads.")

func init() { legacyregistry.CustomMustRegister(metricSyncTargetConditions) }
