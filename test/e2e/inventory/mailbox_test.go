package inventory

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/transport"
	"github.com/kcp-dev/edge-mc/test/framework"
)

// Three inventory workspaces with three SyncTargets each: a mailbox per SyncTarget; deleting a
// SyncTarget deletes its mailbox; recreating one under the same name (a new UID) replaces it.
func TestMailboxesFollowSyncTargets(t *testing.T) {
	t.Parallel()
	base, espw := setUpESPW(t)
	framework.StartControllerManager(t, espw)

	var targets []target
	for i := 1; i <= 3; i++ {
		imw := base.Join(fmt.Sprintf("imw-%d", i))
		ensureIMW(t, espw, imw)
		for j := 1; j <= 3; j++ {
			name := fmt.Sprintf("edge-%d-%d", i, j)
			ensureLocation(t, imw, name, fmt.Sprintf("region=r%d", j))
			targets = append(targets, target{imw, name})
		}
	}
	expectMailboxes(t, espw, targets, 2*time.Minute)

	// One SyncTarget deleted in each inventory workspace: their mailboxes go, the others stay.
	var kept []target
	for _, tg := range targets {
		if strings.HasSuffix(tg.name, "-2") {
			framework.KubectlEdge(t, "remove", "location", tg.name, "--imw", tg.imw.String()).MustSucceed(t)
			continue
		}
		kept = append(kept, tg)
	}
	expectMailboxes(t, espw, kept, 2*time.Minute)

	// Recreated under the same name: a new UID, a new mailbox, and the old one goes.
	old := getSyncTarget(t, kept[0].imw, kept[0].name)
	framework.KubectlEdge(t, "remove", "location", kept[0].name, "--imw", kept[0].imw.String()).MustSucceed(t)
	ensureLocation(t, kept[0].imw, kept[0].name)
	expectMailboxes(t, espw, kept, 2*time.Minute)
	renewed := getSyncTarget(t, kept[0].imw, kept[0].name)
	if renewed.UID == old.UID || renewed.Status.MailboxWorkspace == old.Status.MailboxWorkspace {
		t.Errorf("recreated SyncTarget kept UID %s / mailbox %s; want new ones", renewed.UID, renewed.Status.MailboxWorkspace)
	}
	for _, name := range mailboxes(t, espw) {
		if espw.Join(name).String() == old.Status.MailboxWorkspace {
			t.Errorf("the old mailbox %s is still there", name)
		}
	}
}

// The controller killed midway and restarted, with SyncTargets deleted and added while it was
// down: it converges with no duplicate and no orphan mailbox.
func TestControllerRestartConverges(t *testing.T) {
	t.Parallel()
	base, espw := setUpESPW(t)
	imw := base.Join("imw")
	ensureIMW(t, espw, imw)
	var targets []target
	for j := 1; j <= 6; j++ {
		name := fmt.Sprintf("edge-%d", j)
		ensureLocation(t, imw, name)
		targets = append(targets, target{imw, name})
	}

	cm := framework.StartControllerManager(t, espw)
	framework.Eventually(t, time.Minute, func() (bool, string) {
		n := len(mailboxes(t, espw))
		return n >= 1, fmt.Sprintf("%d mailboxes", n)
	})
	cm.Kill()
	t.Logf("killed edge-controller-manager with %d of %d mailboxes created", len(mailboxes(t, espw)), len(targets))

	framework.KubectlEdge(t, "remove", "location", "edge-1", "--imw", imw.String()).MustSucceed(t)
	framework.KubectlEdge(t, "remove", "location", "edge-6", "--imw", imw.String()).MustSucceed(t)
	ensureLocation(t, imw, "edge-7")
	targets = append(targets[1:5], target{imw, "edge-7"})

	cm.Restart()
	expectMailboxes(t, espw, targets, 2*time.Minute)
}

// A second replica stands by while the first leads, and takes over when it goes.
func TestSecondReplicaStandsBy(t *testing.T) {
	t.Parallel()
	base, espw := setUpESPW(t)
	imw := base.Join("imw")
	ensureIMW(t, espw, imw)
	first := framework.StartControllerManager(t, espw)
	second := framework.StartControllerManagerNoWait(t, espw)
	framework.Eventually(t, 30*time.Second, func() (bool, string) {
		code, body, err := second.Readyz()
		return err == nil && strings.Contains(body, "standing by"), fmt.Sprintf("second replica /readyz: %d %q %v", code, body, err)
	})
	// What the readiness probe of config/deploy asks: a replica standing by counts as ready.
	if resp, err := http.Get("http://" + second.HTTPAddress + "/readyz?exclude=leader"); err != nil {
		t.Errorf("second replica /readyz?exclude=leader: %v", err)
	} else if resp.Body.Close(); resp.StatusCode != http.StatusOK {
		t.Errorf("second replica /readyz?exclude=leader: %s, want 200", resp.Status)
	}
	first.Stop()
	second.WaitReady(t, time.Minute)
	ensureLocation(t, imw, "edge-1")
	expectMailboxes(t, espw, []target{{imw, "edge-1"}}, time.Minute)
}

// SyncerReady follows the heartbeat Lease that the syncer renews in its mailbox, with the
// syncer's own credential, within the fleet's grace period; a heartbeat that changes nothing
// costs no status write.
func TestSyncerReadyFollowsHeartbeat(t *testing.T) {
	t.Parallel()
	base, espw := setUpESPW(t)
	imw := base.Join("imw")
	ensureIMW(t, espw, imw)
	framework.StartControllerManager(t, espw, "--heartbeat-interval=5s", "--heartbeat-grace-period=20s")
	ensureLocation(t, imw, "edge-1")
	expectMailboxes(t, espw, []target{{imw, "edge-1"}}, time.Minute)
	syncerReady := func() *metav1.Condition {
		return meta.FindStatusCondition(getSyncTarget(t, imw, "edge-1").Status.Conditions, edgev1alpha1.SyncTargetSyncerReady)
	}
	if c := syncerReady(); c == nil || c.Status != metav1.ConditionUnknown || c.Reason != edgev1alpha1.ReasonHeartbeatMissing {
		t.Fatalf("before any heartbeat, SyncerReady should be Unknown/%s, is %+v", edgev1alpha1.ReasonHeartbeatMissing, c)
	}

	kubeconfig := syncerKubeconfig(t, imw, "edge-1")
	renewed := time.Now()
	renew := func(at time.Time) {
		lease := fmt.Sprintf(`apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: edge-syncer-heartbeat, namespace: default}
spec: {holderIdentity: edge-syncer, leaseDurationSeconds: 20, renewTime: "%s"}`, at.UTC().Format("2006-01-02T15:04:05.000000Z"))
		framework.Kubectl(t, append([]string{"--kubeconfig", kubeconfig}, framework.ApplyArgs("-f", writeFile(t, "lease.yaml", lease))...)...).MustSucceed(t)
	}
	renew(renewed)
	framework.Eventually(t, 30*time.Second, func() (bool, string) {
		c := syncerReady()
		return c != nil && c.Status == metav1.ConditionTrue, fmt.Sprintf("SyncerReady %+v", c)
	})
	before := getSyncTarget(t, imw, "edge-1").ResourceVersion
	renew(time.Now())
	time.Sleep(3 * time.Second)
	if after := getSyncTarget(t, imw, "edge-1").ResourceVersion; after != before {
		t.Errorf("a heartbeat that changes no condition wrote the SyncTarget (resourceVersion %s -> %s)", before, after)
	}

	// No renewal: Unknown after the grace period, saying since when.
	framework.Eventually(t, 40*time.Second, func() (bool, string) {
		c := syncerReady()
		return c != nil && c.Status == metav1.ConditionUnknown && c.Reason == edgev1alpha1.ReasonHeartbeatStale, fmt.Sprintf("SyncerReady %+v", c)
	})
}

// A controller manager pointed at an ESPW that does not exist says so on /readyz and keeps
// trying, without crashing.
func TestUnreachableESPWIsReported(t *testing.T) {
	t.Parallel()
	base := framework.NewWorkspace(t)
	// No ESPW, so no identity of its own: kcp's admin, who could read the ESPW if it existed.
	cm := framework.StartControllerManagerNoWait(t, base.Join("no-such-espw"), "--kubeconfig", framework.KCP(t).KubeconfigPath)
	framework.Eventually(t, 30*time.Second, func() (bool, string) {
		code, body, err := cm.Readyz()
		return err == nil && code == http.StatusServiceUnavailable && strings.Contains(body, "kubectl edge init"),
			fmt.Sprintf("/readyz: %d %q %v", code, body, err)
	})
	time.Sleep(3 * time.Second)
	if cm.Exited() {
		t.Fatal("edge-controller-manager exited instead of waiting for the ESPW")
	}
}

// A workspace without the edge.kcp.io binding, or a name that cannot name a SyncTarget, gives a
// clear CLI error.
func TestInventoryBadInput(t *testing.T) {
	t.Parallel()
	base, espw := setUpESPW(t)
	imw := base.Join("imw")
	ensureIMW(t, espw, imw)

	res := framework.KubectlEdge(t, "ensure", "location", "Edge_1", "--imw", imw.String()).MustFail(t)
	if !strings.Contains(res.Stderr, "Edge_1") {
		t.Errorf("the error should name the bad name: %s", res.Stderr)
	}
	res = framework.KubectlEdge(t, "ensure", "location", "edge-1", "bad key=x", "--imw", imw.String()).MustFail(t)
	if !strings.Contains(res.Stderr, "bad key") {
		t.Errorf("the error should name the bad label: %s", res.Stderr)
	}
	res = framework.KubectlEdge(t, "ensure", "location", "edge-1", "--imw", base.String()).MustFail(t)
	if !strings.Contains(res.Stderr, "ensure imw") {
		t.Errorf("the error for a workspace without the binding should say to run ensure imw: %s", res.Stderr)
	}
}

// The credential that prep-for-syncer gives reads and writes its own mailbox and is refused by
// another mailbox, the inventory workspace, a workload workspace, the ESPW and root.
func TestSyncerCredentialReachesOnlyItsMailbox(t *testing.T) {
	t.Parallel()
	s := framework.KCP(t)
	base, espw := setUpESPW(t)
	imw, wmw := base.Join("imw"), base.Join("wmw")
	ensureIMW(t, espw, imw)
	framework.KubectlEdge(t, "ensure", "wmw", wmw.String(), "--espw", espw.String()).MustSucceed(t)
	framework.StartControllerManager(t, espw)
	ensureLocation(t, imw, "edge-1")
	ensureLocation(t, imw, "edge-2")
	expectMailboxes(t, espw, []target{{imw, "edge-1"}, {imw, "edge-2"}}, time.Minute)

	kubeconfig := syncerKubeconfig(t, imw, "edge-1")
	own := getSyncTarget(t, imw, "edge-1").Status.MailboxWorkspace
	other := getSyncTarget(t, imw, "edge-2").Status.MailboxWorkspace

	lease := writeFile(t, "lease.yaml", heartbeatLease("by-syncer"))
	framework.Kubectl(t, append([]string{"--kubeconfig", kubeconfig}, framework.ApplyArgs("-f", lease)...)...).MustSucceed(t)
	out := framework.Kubectl(t, "--kubeconfig", kubeconfig, "get", "lease", transport.HeartbeatLease, "-n", "default", "-o", "jsonpath={.spec.holderIdentity}").MustSucceed(t).Stdout
	if out != "by-syncer" {
		t.Errorf("reading back from its own mailbox %s: got %q", own, out)
	}
	for _, ws := range []string{other, imw.String(), wmw.String(), espw.String(), "root"} {
		res := framework.Kubectl(t, "--kubeconfig", kubeconfig, "--server", s.Base.Host+"/clusters/"+ws,
			"get", "configmaps", "-n", "default").MustFail(t)
		if !strings.Contains(res.Stderr, "Forbidden") && !strings.Contains(res.Stderr, "forbidden") {
			t.Errorf("the syncer credential of edge-1 in %s: want 403 Forbidden, got: %s", ws, res.Stderr)
		}
	}
}

// heartbeatLease is the syncer's heartbeat Lease held by holder: what the syncer's credential
// writes in its mailbox.
func heartbeatLease(holder string) string {
	return fmt.Sprintf("apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {name: %s, namespace: default}\nspec: {holderIdentity: %s}\n", transport.HeartbeatLease, holder)
}

// syncerKubeconfig writes the mailbox kubeconfig that prep-for-syncer gives for a SyncTarget.
func syncerKubeconfig(t *testing.T, imw logicalcluster.Path, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	framework.KubectlEdge(t, "prep-for-syncer", name, "--imw", imw.String(), "--kubeconfig-only", "--output-file", path).MustSucceed(t)
	return path
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
