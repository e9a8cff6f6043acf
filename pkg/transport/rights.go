package transport

import (
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

// What a syncer's credential may do in its mailbox. The mailbox controller grants SyncerRules
// through SyncerClusterRole; the placement translator, which writes the SyncerConfig, grants
// UpsyncRules of its upsync rules through UpsyncClusterRole, before the syncer reads them. Neither
// grants anything of RBAC, of kcp's own APIs (APIBindings, workspaces), ServiceAccounts or
// Secrets (but up-synced ones), so the credential cannot widen its own reach.

// UpsyncClusterRole names the ClusterRole (and its ClusterRoleBinding to SyncerServiceAccount)
// that lets the syncer write what it up-syncs into its mailbox.
const UpsyncClusterRole = "edge-syncer-upsync"

// SyncerRules are the syncer's rights in its mailbox, up-sync aside: read the assemblages, their
// parts and the SyncerConfig, report in their status, renew its heartbeat Lease, make the
// namespaces of what it up-syncs, and discovery.
func SyncerRules() []rbacv1.PolicyRule {
	read := []string{"get", "list", "watch"}
	report := []string{"get", "update", "patch"}
	return []rbacv1.PolicyRule{
		{APIGroups: []string{edgev1alpha1.SchemeGroupVersion.Group}, Resources: []string{"assemblages", "assemblageparts", "syncerconfigs"}, Verbs: read},
		{APIGroups: []string{edgev1alpha1.SchemeGroupVersion.Group}, Resources: []string{"assemblages/status", "syncerconfigs/status"}, Verbs: report},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{HeartbeatLease}, Verbs: report},
		// A create cannot be limited to a name: RBAC does not know the name before the object.
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create"}},
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch", "create"}},
		{NonResourceURLs: []string{"/api", "/api/*", "/apis", "/apis/*", "/version"}, Verbs: []string{"get"}},
	}
}

// UpsyncForbiddenGroups are the API groups whose objects never come back from an edge: writing
// them into a mailbox would change who may do what there (RBAC), what it serves and what it
// holds (kcp's APIs, edge-mc's own), or what the center admits. EdgePlacement's admission
// refuses an upsync rule naming one; UpsyncRules leaves them out all the same.
var UpsyncForbiddenGroups = []string{
	"rbac.authorization.k8s.io",
	"admissionregistration.k8s.io",
	"apiregistration.k8s.io",
	"apiextensions.k8s.io",
	"authentication.k8s.io",
	"authorization.k8s.io",
	"certificates.k8s.io",
	"apis.kcp.io",
	"tenancy.kcp.io",
	"core.kcp.io",
	"topology.kcp.io",
	"cache.kcp.io",
	edgev1alpha1.SchemeGroupVersion.Group,
}

// UpsyncRules are the rights to write, into a mailbox, the objects that rules bring back: each
// rule's resources (and their status) in its group, every verb up-sync uses. A resource "*"
// covers its group. Nil when no rule brings anything back.
func UpsyncRules(rules []edgev1alpha1.UpsyncSet) []rbacv1.PolicyRule {
	byGroup := map[string][]string{}
	var groups []string
	for _, r := range rules {
		if slices.Contains(UpsyncForbiddenGroups, r.APIGroup) {
			continue
		}
		if _, ok := byGroup[r.APIGroup]; !ok {
			groups = append(groups, r.APIGroup)
		}
		for _, res := range r.Resources {
			if res == "*" {
				byGroup[r.APIGroup] = append(byGroup[r.APIGroup], "*")
			} else {
				byGroup[r.APIGroup] = append(byGroup[r.APIGroup], res, res+"/status")
			}
		}
	}
	slices.Sort(groups)
	var out []rbacv1.PolicyRule
	for _, g := range groups {
		resources := byGroup[g]
		slices.Sort(resources)
		resources = slices.Compact(resources)
		if slices.Contains(resources, "*") {
			resources = []string{"*"}
		}
		out = append(out, rbacv1.PolicyRule{
			APIGroups: []string{g},
			Resources: resources,
			Verbs:     []string{"get", "list", "watch", "create", "update", "patch", "delete"},
		})
	}
	return out
}
