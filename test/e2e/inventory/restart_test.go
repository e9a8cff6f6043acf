package inventory

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kcp-dev/edge-mc/pkg/transport"
	"github.com/kcp-dev/edge-mc/test/framework"
)

// kcp killed and restarted: the syncer credential from prep-for-syncer keeps working, the mailbox
// is the same workspace, and the controller, which kept running, converges without re-creating
// anything. Not parallel: the other tests of the package wait while kcp is down.
func TestCredentialAndMailboxSurviveKCPRestart(t *testing.T) {
	s := framework.KCP(t)
	base, espw := setUpESPW(t)
	imw := base.Join("imw")
	ensureIMW(t, espw, imw)
	cm := framework.StartControllerManager(t, espw)
	ensureLocation(t, imw, "edge-1")
	expectMailboxes(t, espw, []target{{imw, "edge-1"}}, time.Minute)
	before := mailboxes(t, espw)
	kubeconfig := syncerKubeconfig(t, imw, "edge-1")
	// The syncer's credential writes its heartbeat Lease (what its role allows it to write).
	probe := writeFile(t, "lease.yaml", heartbeatLease("before-restart"))
	framework.Kubectl(t, append([]string{"--kubeconfig", kubeconfig}, framework.ApplyArgs("-f", probe)...)...).MustSucceed(t)
	stBefore := getSyncTarget(t, imw, "edge-1")

	s.Kill()
	t.Log("kcp killed")
	time.Sleep(5 * time.Second)
	if err := s.Restart(); err != nil {
		t.Fatalf("restarting kcp: %v", err)
	}
	t.Log("kcp restarted")

	framework.Eventually(t, time.Minute, func() (bool, string) {
		res := framework.Kubectl(t, "--kubeconfig", kubeconfig, "get", "lease", transport.HeartbeatLease, "-n", "default", "-o", "jsonpath={.spec.holderIdentity}")
		return res.Err == nil && strings.TrimSpace(res.Stdout) == "before-restart", fmt.Sprintf("%v %s %s", res.Err, res.Stdout, res.Stderr)
	})
	if cm.Exited() {
		t.Fatal("edge-controller-manager exited while kcp was down")
	}
	cm.WaitReady(t, 2*time.Minute)
	expectMailboxes(t, espw, []target{{imw, "edge-1"}}, time.Minute)
	if after := mailboxes(t, espw); strings.Join(after, ",") != strings.Join(before, ",") {
		t.Errorf("mailboxes changed across the restart: %v before, %v after", before, after)
	}
	if stAfter := getSyncTarget(t, imw, "edge-1"); stAfter.UID != stBefore.UID || stAfter.Status.MailboxWorkspace != stBefore.Status.MailboxWorkspace {
		t.Errorf("SyncTarget changed across the restart: %s %s before, %s %s after",
			stBefore.UID, stBefore.Status.MailboxWorkspace, stAfter.UID, stAfter.Status.MailboxWorkspace)
	}
}
