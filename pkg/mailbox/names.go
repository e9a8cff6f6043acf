package mailbox

import (
	"strings"

	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/apimachinery/pkg/types"
)

// The layout of a mailbox workspace, shared by the mailbox controller, kubectl edge
// prep-for-syncer and the syncer.
const (
	// SyncerNamespace holds the syncer's identity and heartbeat in the mailbox.
	SyncerNamespace = "default"
	// SyncerServiceAccount is the syncer's identity in the mailbox.
	SyncerServiceAccount = "edge-syncer"
	// SyncerTokenSecret holds the long-lived token of SyncerServiceAccount, which kcp fills in.
	SyncerTokenSecret = "edge-syncer-token"
	// SyncerClusterRole grants the syncer everything within its mailbox, and is bound to
	// SyncerServiceAccount by a ClusterRoleBinding of the same name. A token minted in one
	// workspace is refused by every other, so this reaches the mailbox and nothing else.
	SyncerClusterRole = "edge-syncer"
	// HeartbeatLease is the Lease in SyncerNamespace that the syncer renews.
	HeartbeatLease = "edge-syncer-heartbeat"

	// LabelMailbox marks mailbox workspaces in the ESPW.
	LabelMailbox = "edge.kcp.io/mailbox"
	// AnnotationSyncTargetCluster, AnnotationSyncTargetName and AnnotationSyncTargetUID on a
	// mailbox workspace say whose mailbox it is.
	AnnotationSyncTargetCluster = "edge.kcp.io/synctarget-cluster"
	AnnotationSyncTargetName    = "edge.kcp.io/synctarget-name"
	AnnotationSyncTargetUID     = "edge.kcp.io/synctarget-uid"
)

// mailboxInfix separates the inventory workspace's logical cluster from the SyncTarget's UID.
const mailboxInfix = "-mb-"

// WorkspaceName is the name of the mailbox workspace of the SyncTarget with the given UID in the
// inventory workspace with the given logical cluster name.
func WorkspaceName(inventory logicalcluster.Name, uid types.UID) string {
	return inventory.String() + mailboxInfix + string(uid)
}

// ParseWorkspaceName splits a mailbox workspace name into the inventory workspace's logical
// cluster and the SyncTarget's UID; ok is false for names that no mailbox has.
func ParseWorkspaceName(name string) (inventory logicalcluster.Name, uid types.UID, ok bool) {
	before, after, found := strings.Cut(name, mailboxInfix)
	if !found || before == "" || after == "" {
		return "", "", false
	}
	return logicalcluster.Name(before), types.UID(after), true
}
