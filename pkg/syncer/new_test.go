package syncer

import (
	"strings"
	"testing"

	"k8s.io/client-go/rest"
)

// TestNewRefusesAnotherMailbox: a syncer given the kubeconfig of another SyncTarget's mailbox (or
// the wrong UID for its own) refuses to start, naming both UIDs and the fix.
func TestNewRefusesAnotherMailbox(t *testing.T) {
	edge := &rest.Config{Host: "https://edge.example:6443"}
	mailbox := &rest.Config{Host: "https://kcp.example:6443/clusters/root:espw:1abc-mb-uid-of-edge2"}
	_, err := New(Config{Mailbox: mailbox, Edge: edge, SyncTargetName: "edge1", SyncTargetUID: "uid-of-edge1"})
	if err == nil {
		t.Fatal("New accepted the mailbox of another SyncTarget")
	}
	for _, want := range []string{"uid-of-edge2", "SyncTarget edge1 with UID uid-of-edge1", "kubectl edge prep-for-syncer edge1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q: %v", want, err)
		}
	}
	if _, err := New(Config{Mailbox: mailbox, Edge: edge, SyncTargetName: "edge2", SyncTargetUID: "uid-of-edge2"}); err != nil {
		t.Errorf("New refused its own mailbox: %v", err)
	}
	byCluster := &rest.Config{Host: "https://kcp.example:6443/clusters/2x7kq9mz"}
	if _, err := New(Config{Mailbox: byCluster, Edge: edge, SyncTargetName: "edge1", SyncTargetUID: "uid-of-edge1"}); err != nil {
		t.Errorf("New refused a mailbox named by its logical cluster, which says nothing of its SyncTarget: %v", err)
	}
}
