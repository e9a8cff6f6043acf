package mailbox

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

func TestSyncerStatus(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	at := func(ago time.Duration) *time.Time { t := now.Add(-ago); return &t }
	ready := func(recorded time.Duration) edgev1alpha1.SyncTargetStatus {
		s := edgev1alpha1.SyncTargetStatus{LastSyncerHeartbeatTime: &metav1.Time{Time: now.Add(-recorded)}}
		setCondition(&s, edgev1alpha1.SyncTargetSyncerReady, metav1.ConditionTrue, edgev1alpha1.ReasonHeartbeatCurrent, "")
		return s
	}
	for _, tc := range []struct {
		name         string
		before       edgev1alpha1.SyncTargetStatus
		renewed      *time.Time
		wantStatus   metav1.ConditionStatus
		wantReason   string
		wantRecorded *time.Time // nil: lastSyncerHeartbeatTime unchanged from before
		wantRecheck  time.Duration
	}{
		{name: "no heartbeat yet", renewed: nil, wantStatus: metav1.ConditionUnknown, wantReason: edgev1alpha1.ReasonHeartbeatMissing},
		{name: "first heartbeat is recorded", renewed: at(5 * time.Second), wantStatus: metav1.ConditionTrue,
			wantReason: edgev1alpha1.ReasonHeartbeatCurrent, wantRecorded: at(5 * time.Second), wantRecheck: 36 * time.Second},
		{name: "a heartbeat soon after the recorded one is not written", before: ready(20 * time.Second), renewed: at(time.Second),
			wantStatus: metav1.ConditionTrue, wantReason: edgev1alpha1.ReasonHeartbeatCurrent, wantRecheck: 40 * time.Second},
		{name: "the recorded time is refreshed after the record interval", before: ready(3 * time.Minute), renewed: at(0),
			wantStatus: metav1.ConditionTrue, wantReason: edgev1alpha1.ReasonHeartbeatCurrent, wantRecorded: at(0), wantRecheck: 41 * time.Second},
		{name: "just inside the grace period", renewed: at(HeartbeatGracePeriod), wantStatus: metav1.ConditionTrue,
			wantReason: edgev1alpha1.ReasonHeartbeatCurrent, wantRecorded: at(HeartbeatGracePeriod), wantRecheck: time.Second},
		{name: "silent past the grace period", before: ready(time.Minute), renewed: at(HeartbeatGracePeriod + time.Second),
			wantStatus: metav1.ConditionUnknown, wantReason: edgev1alpha1.ReasonHeartbeatStale, wantRecorded: at(HeartbeatGracePeriod + time.Second)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status := tc.before.DeepCopy()
			recheck := syncerStatusAt(now, status, tc.renewed)
			c := meta.FindStatusCondition(status.Conditions, edgev1alpha1.SyncTargetSyncerReady)
			if c == nil || c.Status != tc.wantStatus || c.Reason != tc.wantReason {
				t.Fatalf("SyncerReady = %+v, want %s/%s", c, tc.wantStatus, tc.wantReason)
			}
			if recheck != tc.wantRecheck {
				t.Errorf("recheck after %s, want %s", recheck, tc.wantRecheck)
			}
			want := tc.before.LastSyncerHeartbeatTime
			if tc.wantRecorded != nil {
				want = &metav1.Time{Time: *tc.wantRecorded}
			}
			got := status.LastSyncerHeartbeatTime
			if (got == nil) != (want == nil) || (got != nil && !got.Time.Equal(want.Time)) {
				t.Errorf("lastSyncerHeartbeatTime = %v, want %v", got, want)
			}
		})
	}
}

func TestWorkspaceNameRoundTrip(t *testing.T) {
	name := WorkspaceName("2x8k1nqbgahf1yl5", "6a3c5e1d-8a8f-4c1b-9f4e-0d2b1c3a4e5f")
	if name != "2x8k1nqbgahf1yl5-mb-6a3c5e1d-8a8f-4c1b-9f4e-0d2b1c3a4e5f" {
		t.Fatalf("WorkspaceName = %q", name)
	}
	cluster, uid, ok := ParseWorkspaceName(name)
	if !ok || cluster != "2x8k1nqbgahf1yl5" || uid != "6a3c5e1d-8a8f-4c1b-9f4e-0d2b1c3a4e5f" {
		t.Errorf("ParseWorkspaceName(%q) = %q, %q, %v", name, cluster, uid, ok)
	}
	for _, bad := range []string{"espw", "-mb-x", "x-mb-", "plain-workspace"} {
		if _, _, ok := ParseWorkspaceName(bad); ok {
			t.Errorf("ParseWorkspaceName(%q) accepted a name no mailbox has", bad)
		}
	}
}
