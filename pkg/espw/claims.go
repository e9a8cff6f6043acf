package espw

import (
	apisv1alpha2 "github.com/kcp-dev/sdk/apis/apis/v1alpha2"
)

// ClaimVerbs are the verbs of each permission claim of edge.kcp.io. The placement translator
// reads the workload objects; writing is for what comes back from the edge (up-synced objects)
// and for the status summarizer, which records on each object where it runs.
var ClaimVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete"}

// MailboxClaimVerbs are the verbs of each permission claim of mailbox.edge.kcp.io: the
// controllers only read mailboxes through its virtual workspace (they write into mailboxes,
// their own workspaces, with their own credential).
var MailboxClaimVerbs = []string{"get", "list", "watch"}

// builtInClaimed are the resources kcp itself serves in every workspace that the placement
// translator may copy to the edge.
var builtInClaimed = []apisv1alpha2.GroupResource{
	{Group: "", Resource: "namespaces"},
	{Group: "", Resource: "configmaps"},
	{Group: "", Resource: "secrets"},
	{Group: "", Resource: "serviceaccounts"},
	{Group: "rbac.authorization.k8s.io", Resource: "roles"},
	{Group: "rbac.authorization.k8s.io", Resource: "rolebindings"},
	{Group: "rbac.authorization.k8s.io", Resource: "clusterroles"},
	{Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"},
	{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"},
}

// EdgeClaims are the permission claims of the APIExport edge.kcp.io: kcp's built-in kinds that
// workloads use, and every resource of the workloads export (identified by its identity hash).
// A workload workspace accepts them in its binding of edge.kcp.io, which lets the placement
// translator see its objects through the export's virtual workspace; an inventory workspace
// rejects them. Custom kinds that a workload workspace defines with its own CRDs cannot
// be claimed (they belong to no export), so the translator reads those with its own credential.
func EdgeClaims(workloads *apisv1alpha2.APIExport) []apisv1alpha2.PermissionClaim {
	var claims []apisv1alpha2.PermissionClaim
	for _, gr := range builtInClaimed {
		claims = append(claims, apisv1alpha2.PermissionClaim{GroupResource: gr, Verbs: ClaimVerbs})
	}
	for _, r := range workloads.Spec.Resources {
		claims = append(claims, apisv1alpha2.PermissionClaim{
			GroupResource: apisv1alpha2.GroupResource{Group: r.Group, Resource: r.Name},
			Verbs:         ClaimVerbs,
			IdentityHash:  workloads.Status.IdentityHash,
		})
	}
	return claims
}

// MailboxClaims are the permission claims of the APIExport mailbox.edge.kcp.io, which every
// mailbox binds through its WorkspaceType, and kcp accepts when it makes that binding (the
// mailbox controller accepts claims added later). Through the export's virtual workspace they let
// the controllers watch, across all mailboxes at once, the syncers' heartbeat Leases (mailbox
// controller) and the up-synced objects of kcp's built-in kinds (up-sync return path). The
// assemblages and SyncerConfigs are the export's own resources and need no claim.
func MailboxClaims() []apisv1alpha2.PermissionClaim {
	claims := []apisv1alpha2.PermissionClaim{{
		GroupResource: apisv1alpha2.GroupResource{Group: "coordination.k8s.io", Resource: "leases"},
		Verbs:         MailboxClaimVerbs,
	}}
	for _, gr := range builtInClaimed {
		claims = append(claims, apisv1alpha2.PermissionClaim{GroupResource: gr, Verbs: MailboxClaimVerbs})
	}
	return claims
}

// AcceptAll returns the claims of an export as accepted, for every object, as an APIBinding of
// a workload workspace holds them.
func AcceptAll(claims []apisv1alpha2.PermissionClaim) []apisv1alpha2.AcceptablePermissionClaim {
	return answerAll(claims, apisv1alpha2.ClaimAccepted)
}

// RejectAll returns the claims of an export as rejected, as an APIBinding of an inventory
// workspace holds them: its objects are none of the controllers' business, and a claim left
// unanswered would have kcp's `kubectl ws` warn about it at every visit.
func RejectAll(claims []apisv1alpha2.PermissionClaim) []apisv1alpha2.AcceptablePermissionClaim {
	return answerAll(claims, apisv1alpha2.ClaimRejected)
}

func answerAll(claims []apisv1alpha2.PermissionClaim, state apisv1alpha2.AcceptablePermissionClaimState) []apisv1alpha2.AcceptablePermissionClaim {
	var out []apisv1alpha2.AcceptablePermissionClaim
	for _, c := range claims {
		out = append(out, apisv1alpha2.AcceptablePermissionClaim{
			ScopedPermissionClaim: apisv1alpha2.ScopedPermissionClaim{
				PermissionClaim: c,
				Selector:        apisv1alpha2.PermissionClaimSelector{MatchAll: true},
			},
			State: state,
		})
	}
	return out
}
