package transport

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
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
	// SyncerClusterRole grants the syncer what it needs within its mailbox, and is bound to
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

// MailboxName is the name of the mailbox workspace of the SyncTarget with the given UID in the
// inventory workspace with the given logical cluster name.
func MailboxName(inventory logicalcluster.Name, uid types.UID) string {
	return inventory.String() + mailboxInfix + string(uid)
}

// SyncTargetUIDOfServer returns the UID of the SyncTarget whose mailbox a server URL points at,
// when it names the mailbox by its workspace path (as kubectl edge prep-for-syncer writes it:
// https://<kcp>/clusters/<espw>:<mailbox>); ok is false for any other URL.
func SyncTargetUIDOfServer(server string) (uid types.UID, ok bool) {
	_, rest, found := strings.Cut(server, "/clusters/")
	if !found {
		return "", false
	}
	path, _, _ := strings.Cut(rest, "/")
	name := path[strings.LastIndex(path, ":")+1:]
	_, uid, ok = ParseMailboxName(name)
	return uid, ok
}

// ParseMailboxName splits a mailbox workspace name into the inventory workspace's logical
// cluster and the SyncTarget's UID; ok is false for names that no mailbox has.
func ParseMailboxName(name string) (inventory logicalcluster.Name, uid types.UID, ok bool) {
	before, after, found := strings.Cut(name, mailboxInfix)
	if !found || before == "" || after == "" {
		return "", "", false
	}
	return logicalcluster.Name(before), types.UID(after), true
}

// Labels on assemblages and their parts.
const (
	// LabelPlacementCluster is the logical cluster of the placement's workload workspace.
	LabelPlacementCluster = "edge.kcp.io/placement-cluster"
	// LabelPlacementName is the placement's name, or its hash when longer than a label value
	// may be.
	LabelPlacementName = "edge.kcp.io/placement"
	// LabelAssemblage on an AssemblagePart names its Assemblage (or its hash, when too long).
	LabelAssemblage = "edge.kcp.io/assemblage"
)

// maxPartSuffix is the longest suffix a part name adds to its assemblage's name: "-" and an
// index of up to four digits.
const maxPartSuffix = 5

// AssemblageName is the name of the assemblage of the named placement of the workload workspace
// with the given logical cluster: <cluster>.<placement>, or, when that would be too long for a
// name (with room for a part's suffix), <cluster>.<the placement name's start>.<hash>, which is
// as unique.
func AssemblageName(cluster, placement string) string {
	name := cluster + "." + placement
	limit := validation.DNS1123SubdomainMaxLength - maxPartSuffix
	if len(name) <= limit {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	h := hex.EncodeToString(sum[:8])
	keep := limit - len(cluster) - 2 - len(h)
	return strings.TrimRight(cluster+"."+placement[:keep], ".-") + "." + h
}

// PartName is the name of the AssemblagePart holding piece index (from 1) of an assemblage.
func PartName(assemblage string, index int) string {
	return fmt.Sprintf("%s-%d", assemblage, index)
}

// LabelValue is v if it may be a label value, else a hash of it that may.
func LabelValue(v string) string {
	if len(validation.IsValidLabelValue(v)) == 0 {
		return v
	}
	sum := sha256.Sum256([]byte(v))
	return "h-" + hex.EncodeToString(sum[:16])
}

// IsKCPBuiltIn says whether kcp serves the resource in every workspace by itself, mailboxes
// included; a mailbox needs an APIBinding to the workloads export to hold objects of any other
// (non-custom) kind, and the up-synced objects of those are seen through that export's virtual
// workspace.
func IsKCPBuiltIn(gr schema.GroupResource) bool {
	switch gr.Group {
	case "", "rbac.authorization.k8s.io", "apiextensions.k8s.io":
		return gr.Resource != "services" && gr.Resource != "persistentvolumeclaims"
	}
	return false
}
