package mailbox

import (
	"strings"
	"testing"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/centerview"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

func TestSyncerStatus(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	const grace = 90 * time.Second
	at := func(ago time.Duration) *time.Time { t := now.Add(-ago); return &t }
	for _, tc := range []struct {
		name        string
		renewed     *time.Time
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantRecheck time.Duration
	}{
		{name: "no heartbeat yet", renewed: nil, wantStatus: metav1.ConditionUnknown, wantReason: edgev1alpha1.ReasonHeartbeatMissing},
		{name: "a recent heartbeat", renewed: at(5 * time.Second), wantStatus: metav1.ConditionTrue,
			wantReason: edgev1alpha1.ReasonHeartbeatCurrent, wantRecheck: grace - 4*time.Second},
		{name: "just inside the grace period", renewed: at(grace), wantStatus: metav1.ConditionTrue,
			wantReason: edgev1alpha1.ReasonHeartbeatCurrent, wantRecheck: time.Second},
		{name: "silent past the grace period", renewed: at(grace + time.Second),
			wantStatus: metav1.ConditionUnknown, wantReason: edgev1alpha1.ReasonHeartbeatStale},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status := &edgev1alpha1.SyncTargetStatus{}
			recheck := syncerStatusAt(now, grace, status, tc.renewed)
			c := meta.FindStatusCondition(status.Conditions, edgev1alpha1.SyncTargetSyncerReady)
			if c == nil || c.Status != tc.wantStatus || c.Reason != tc.wantReason {
				t.Fatalf("SyncerReady = %+v, want %s/%s", c, tc.wantStatus, tc.wantReason)
			}
			if recheck != tc.wantRecheck {
				t.Errorf("recheck after %s, want %s", recheck, tc.wantRecheck)
			}
		})
	}
	// A healthy syncer's heartbeats leave the status as it was: nothing to write.
	first := &edgev1alpha1.SyncTargetStatus{}
	syncerStatusAt(now, grace, first, at(20*time.Second))
	second := first.DeepCopy()
	syncerStatusAt(now.Add(30*time.Second), grace, second, at(-10*time.Second))
	if !equality.Semantic.DeepEqual(first, second) {
		t.Errorf("a later heartbeat changed the status: %+v -> %+v", first, second)
	}
}

func TestSyncerCompatibility(t *testing.T) {
	cfg := func(version string, formats ...string) *edgev1alpha1.SyncerConfig {
		return &edgev1alpha1.SyncerConfig{Status: edgev1alpha1.SyncerConfigStatus{ObservedGeneration: 1, SyncerVersion: version, Formats: formats}}
	}
	for _, tc := range []struct {
		name        string
		cfg         *edgev1alpha1.SyncerConfig
		want        metav1.ConditionStatus
		wantVersion string // status.syncerVersion, from a status that had "v0.1.0"
	}{
		{"no SyncerConfig", nil, metav1.ConditionUnknown, "v0.1.0"},
		{"no report yet", &edgev1alpha1.SyncerConfig{}, metav1.ConditionUnknown, ""},
		{"reads the format", cfg("v0.2.0", "x", transport.FormatV1), metav1.ConditionTrue, "v0.2.0"},
		{"predates assemblages", cfg(""), metav1.ConditionFalse, ""},
		{"reads other formats only", cfg("v9", "edge.kcp.io/other"), metav1.ConditionFalse, "v9"},
	} {
		status := &edgev1alpha1.SyncTargetStatus{SyncerVersion: "v0.1.0"}
		syncerCompatibility(status, tc.cfg)
		if c := meta.FindStatusCondition(status.Conditions, edgev1alpha1.SyncTargetSyncerCompatible); c == nil || c.Status != tc.want {
			t.Errorf("%s: SyncerCompatible = %+v, want %s", tc.name, c, tc.want)
		}
		if status.SyncerVersion != tc.wantVersion {
			t.Errorf("%s: status.syncerVersion = %q, want %q", tc.name, status.SyncerVersion, tc.wantVersion)
		}
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

// TestUnreachableStatus: a mailbox whose shard does not answer keeps SyncerReady as its last
// heartbeat says within the grace period, then turns Unknown with a message naming the shard,
// which stays the same (no status write) as long as the outage lasts.
func TestUnreachableStatus(t *testing.T) {
	now := time.Date(2026, 11, 26, 5, 0, 0, 0, time.UTC)
	const grace = 20 * time.Second
	at := func(ago time.Duration) *time.Time { t := now.Add(-ago); return &t }
	outage := centerview.ShardOutage{Shard: "shard-1", URL: "https://127.0.0.1:6444/services/apiexport/x/mailbox.edge.kcp.io",
		Since: now.Add(-15 * time.Second), Err: "connection refused"}
	mailbox := logicalcluster.NewPath("root:espw:abc-mb-123")

	status := &edgev1alpha1.SyncTargetStatus{}
	recheck := unreachableStatusAt(now, grace, status, mailbox, outage, at(5*time.Second))
	if c := meta.FindStatusCondition(status.Conditions, edgev1alpha1.SyncTargetSyncerReady); c == nil || c.Reason != edgev1alpha1.ReasonHeartbeatCurrent {
		t.Errorf("within the grace period: SyncerReady = %+v, want HeartbeatCurrent", c)
	}
	if recheck != 10*time.Second {
		t.Errorf("within the grace period: recheck after %s, want 10s", recheck)
	}

	status = &edgev1alpha1.SyncTargetStatus{}
	recheck = unreachableStatusAt(now, grace, status, mailbox, outage, at(25*time.Second))
	c := meta.FindStatusCondition(status.Conditions, edgev1alpha1.SyncTargetSyncerReady)
	want := "mailbox root:espw:abc-mb-123 is on shard shard-1, unreachable since 2026-11-26T04:59:45Z: the syncer's heartbeats cannot be read (the last one seen: 2026-11-26T04:59:35Z)"
	if c == nil || c.Status != metav1.ConditionUnknown || c.Reason != edgev1alpha1.ReasonMailboxUnreachable || c.Message != want {
		t.Fatalf("past the grace period: SyncerReady = %+v, want Unknown/%s %q", c, edgev1alpha1.ReasonMailboxUnreachable, want)
	}
	if !edgev1alpha1.SyncerSilent(c.Reason) {
		t.Error("MailboxUnreachable does not count as silent")
	}
	if recheck != unreachableRecheck {
		t.Errorf("recheck after %s, want %s", recheck, unreachableRecheck)
	}
	later := status.DeepCopy()
	unreachableStatusAt(now.Add(time.Minute), grace, later, mailbox, outage, at(25*time.Second))
	if !equality.Semantic.DeepEqual(status, later) {
		t.Errorf("the outage going on changed the status: %+v -> %+v", status, later)
	}
	// edge-controller-manager started again sees the shard fail from its own start and no
	// heartbeat: the condition keeps the outage's start it named.
	restarted := status.DeepCopy()
	unreachableStatusAt(now.Add(time.Minute), grace, restarted, mailbox, centerview.ShardOutage{Shard: "shard-1", Since: now.Add(time.Minute)}, nil)
	if !equality.Semantic.DeepEqual(status, restarted) {
		t.Errorf("a restart's view of the outage changed the status: %+v -> %+v", status, restarted)
	}

	status = &edgev1alpha1.SyncTargetStatus{}
	unreachableStatusAt(now, grace, status, mailbox, outage, nil)
	if c := meta.FindStatusCondition(status.Conditions, edgev1alpha1.SyncTargetSyncerReady); c == nil || c.Reason != edgev1alpha1.ReasonMailboxUnreachable ||
		!strings.Contains(c.Message, "the last one seen: none seen") {
		t.Errorf("no heartbeat seen: SyncerReady = %+v", c)
	}
}
