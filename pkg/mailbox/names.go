package mailbox

import (
	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// The layout of a mailbox workspace is part of the contract between center and edge, in package
// transport; these are its names as the mailbox controller uses them.
const (
	SyncerNamespace             = transport.SyncerNamespace
	SyncerServiceAccount        = transport.SyncerServiceAccount
	SyncerTokenSecret           = transport.SyncerTokenSecret
	SyncerClusterRole           = transport.SyncerClusterRole
	HeartbeatLease              = transport.HeartbeatLease
	LabelMailbox                = transport.LabelMailbox
	AnnotationSyncTargetCluster = transport.AnnotationSyncTargetCluster
	AnnotationSyncTargetName    = transport.AnnotationSyncTargetName
	AnnotationSyncTargetUID     = transport.AnnotationSyncTargetUID
)

// WorkspaceName is the name of the mailbox workspace of the SyncTarget with the given UID in the
// inventory workspace with the given logical cluster name (transport.MailboxName).
func WorkspaceName(inventory logicalcluster.Name, uid types.UID) string {
	return transport.MailboxName(inventory, uid)
}

// ParseWorkspaceName is transport.ParseMailboxName.
func ParseWorkspaceName(name string) (inventory logicalcluster.Name, uid types.UID, ok bool) {
	return transport.ParseMailboxName(name)
}
