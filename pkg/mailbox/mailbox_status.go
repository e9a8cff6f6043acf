package mailbox

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/centerview"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// syncerStatus sets SyncerReady from the last heartbeat (nil: none yet), and returns when the
// condition would change if no heartbeat came (0: never). A healthy syncer's heartbeats change
// nothing in the SyncTarget's status: it is written only when SyncerReady changes.
func (c *Controller) syncerStatus(status *edgev1alpha1.SyncTargetStatus, renewed *time.Time) time.Duration {
	return syncerStatusAt(c.now(), c.cfg.HeartbeatGracePeriod, status, renewed)
}

func syncerStatusAt(now time.Time, grace time.Duration, status *edgev1alpha1.SyncTargetStatus, renewed *time.Time) time.Duration {
	if renewed == nil {
		setCondition(status, edgev1alpha1.SyncTargetSyncerReady, metav1.ConditionUnknown, edgev1alpha1.ReasonHeartbeatMissing,
			"no heartbeat from the syncer yet: install it in the edge cluster with the YAML of 'kubectl edge prep-for-syncer'")
		return 0
	}
	age := now.Sub(*renewed)
	if age <= grace {
		setCondition(status, edgev1alpha1.SyncTargetSyncerReady, metav1.ConditionTrue, edgev1alpha1.ReasonHeartbeatCurrent,
			fmt.Sprintf("the syncer renews its heartbeat within the grace period of %s", grace))
		return grace - age + time.Second
	}
	setCondition(status, edgev1alpha1.SyncTargetSyncerReady, metav1.ConditionUnknown, edgev1alpha1.ReasonHeartbeatStale,
		fmt.Sprintf("no heartbeat from the syncer since %s, more than %s ago", renewed.UTC().Format(time.RFC3339), grace))
	return 0
}

// unreachableRecheck is how often a SyncTarget whose mailbox's shard does not answer is looked at
// again, to notice the shard's return (a look costs no request) or the grace period's end.
const unreachableRecheck = 10 * time.Second

// unreachableStatusAt sets SyncerReady for a mailbox whose shard does not answer: as it was while
// the last heartbeat seen (renewed, nil if none) is within the grace period, then Unknown with
// reason MailboxUnreachable and a message that names the shard. A condition that says so already
// is kept as it is, so that the outage's start that it names survives a restart of
// edge-controller-manager (which sees the shard fail only from its own start). It returns when
// to look again.
func unreachableStatusAt(now time.Time, grace time.Duration, status *edgev1alpha1.SyncTargetStatus, mailbox fmt.Stringer, outage centerview.ShardOutage, renewed *time.Time) time.Duration {
	if c := meta.FindStatusCondition(status.Conditions, edgev1alpha1.SyncTargetSyncerReady); c != nil && c.Reason == edgev1alpha1.ReasonMailboxUnreachable {
		return unreachableRecheck
	}
	if renewed != nil && now.Sub(*renewed) <= grace {
		syncerStatusAt(now, grace, status, renewed)
		return min(unreachableRecheck, grace-now.Sub(*renewed)+time.Second)
	}
	last := "none seen"
	if renewed != nil {
		last = renewed.UTC().Format(time.RFC3339)
	}
	setCondition(status, edgev1alpha1.SyncTargetSyncerReady, metav1.ConditionUnknown, edgev1alpha1.ReasonMailboxUnreachable,
		fmt.Sprintf("mailbox %s is on shard %s, unreachable since %s: the syncer's heartbeats cannot be read (the last one seen: %s)",
			mailbox, outage.Shard, outage.Since.UTC().Format(time.RFC3339), last))
	return unreachableRecheck
}

// syncerCompatibility sets SyncerCompatible from what the syncer reports in its SyncerConfig:
// whether it reads the assemblage format that the center writes; and status.syncerVersion, the
// version it reports. cfg nil: no SyncerConfig yet (a version already reported is kept).
func syncerCompatibility(status *edgev1alpha1.SyncTargetStatus, cfg *edgev1alpha1.SyncerConfig) {
	const cond = edgev1alpha1.SyncTargetSyncerCompatible
	if cfg != nil {
		status.SyncerVersion = cfg.Status.SyncerVersion
	}
	switch {
	case cfg == nil || (cfg.Status.SyncerVersion == "" && len(cfg.Status.Formats) == 0 && cfg.Status.ObservedGeneration == 0):
		setCondition(status, cond, metav1.ConditionUnknown, edgev1alpha1.ReasonSyncerNotReported, "no syncer has reported in the mailbox yet")
	case slices.Contains(cfg.Status.Formats, transport.FormatV1):
		setCondition(status, cond, metav1.ConditionTrue, edgev1alpha1.ReasonFormatsSupported,
			fmt.Sprintf("the syncer (version %s) reads the assemblage format %s", versionText(cfg.Status.SyncerVersion), transport.FormatV1))
	case len(cfg.Status.Formats) == 0:
		setCondition(status, cond, metav1.ConditionFalse, edgev1alpha1.ReasonSyncerOutdated,
			"the syncer predates assemblages: it keeps the edge cluster as it is and applies no change until it is upgraded (install the YAML of 'kubectl edge prep-for-syncer' of this release)")
	default:
		setCondition(status, cond, metav1.ConditionFalse, edgev1alpha1.ReasonSyncerOutdated,
			fmt.Sprintf("the syncer (version %s) reads the assemblage formats %s, not %s that the center writes: it changes nothing at the edge until it is upgraded",
				versionText(cfg.Status.SyncerVersion), strings.Join(cfg.Status.Formats, ", "), transport.FormatV1))
	}
}

func versionText(v string) string {
	if v == "" {
		return "unknown"
	}
	return v
}

// mailboxOutage says whether the shard that holds the mailbox with the given logical cluster
// does not answer (see centerview.Endpoints.Outage).
func (c *Controller) mailboxOutage(ctx context.Context, mailbox logicalcluster.Name) (centerview.ShardOutage, bool) {
	if c.cfg.Mailbox == nil {
		return centerview.ShardOutage{}, false
	}
	return c.cfg.Mailbox.Outage(ctx, mailbox)
}
