package espw

import (
	"context"
	"fmt"

	kcpkubernetesclientset "github.com/kcp-dev/client-go/kubernetes"
	"github.com/kcp-dev/logicalcluster/v3"
	apisv1alpha1 "github.com/kcp-dev/sdk/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/kcp-dev/sdk/apis/apis/v1alpha2"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

// Who may do what with edge.kcp.io, wherever it is bound.
//
// A workspace that binds edge.kcp.io gets all of its kinds: a workload workspace gets SyncTargets
// and Locations as well as EdgePlacements and Customizers, and the mailbox controller makes a
// mailbox for a SyncTarget in any workspace that binds the export. So the admin of a workload
// workspace, who may do anything there, could make SyncTargets, and so mailboxes, and Locations
// that other teams' placements then choose. kcp's RBAC in the consuming workspace cannot take that
// back from its admin; the export's maximal permission policy can. With
// spec.maximalPermissionPolicy.local on edge.kcp.io, kcp lets a request on a kind of the export,
// in any workspace that binds it, through only if RBAC in the ESPW also allows it to the same
// identity, its user and groups prefixed with "apis.kcp.io:binding:" (kcp replicates those
// ClusterRoles and ClusterRoleBindings to other shards). The ESPW holds three grants:
//
//   - everyone authenticated (EdgeAPIUserRole): EdgePlacements, Customizers, StatusCollectors and
//     HealthRules (not the status of the last two, which the translator writes), every verb;
//     SyncTargets, Locations and SinglePlacementSlices, read only. What each person may do in a
//     given workspace is still up to that workspace's own RBAC.
//   - inventory admins (InventoryAdminRole): SyncTargets and Locations, every verb; bound to the
//     group InventoryAdminsGroup and to kcp's admins (system:kcp:admin). An operator adds people by
//     that group in the identity provider, or adds subjects (named with the prefix) to the
//     ClusterRoleBinding, which init keeps.
//   - kcp's admins (EdgeAPIAdminRole): every kind, every verb. kcp's own virtual workspaces act
//     under this group (a warrant of system:kcp:admin), so this is what lets edge-mc's controllers,
//     through the export's virtual workspace, write SinglePlacementSlices, placement status and
//     SyncTarget status.
const (
	InventoryAdminsGroup = "edge-mc:inventory-admins"
	EdgeAPIUserRole      = "edge-mc:edge-api:user"
	InventoryAdminRole   = "edge-mc:edge-api:inventory-admin"
	EdgeAPIAdminRole     = "edge-mc:edge-api:admin"
)

// allAuthenticated is Kubernetes' group of every authenticated identity.
const allAuthenticated = "system:authenticated"

// kcpAdminGroup is kcp's group of admins of every workspace (bootstrap.SystemKcpAdminGroup).
const kcpAdminGroup = "system:kcp:admin"

// PolicyName is the name by which the RBAC of the ESPW knows the user or group name, when kcp
// checks a request on an edge.kcp.io kind against the policy: a subject named so, added to the
// ClusterRoleBinding InventoryAdminRole, makes that user or group inventory admins. A
// ServiceAccount is named there as kcp names it outside its workspace:
// PolicyName("system:kcp:serviceaccount:<cluster>:<namespace>:<name>").
func PolicyName(name string) string {
	return apisv1alpha1.MaximalPermissionPolicyRBACUserGroupPrefix + name
}

var (
	userResources      = []string{"edgeplacements", "edgeplacements/status", "customizers", "customizers/status", "statuscollectors", "healthrules"}
	readOnlyResources  = []string{"synctargets", "synctargets/status", "locations", "locations/status", "singleplacementslices", "singleplacementslices/status", "statuscollectors/status", "healthrules/status"}
	inventoryResources = []string{"synctargets", "synctargets/status", "locations", "locations/status"}
)

// EdgeAPIUserRules are what the maximal permission policy of edge.kcp.io lets every
// authenticated identity do.
func EdgeAPIUserRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{edgev1alpha1.GroupName}, Resources: userResources, Verbs: []string{"*"}},
		{APIGroups: []string{edgev1alpha1.GroupName}, Resources: readOnlyResources, Verbs: []string{"get", "list", "watch"}},
	}
}

// InventoryAdminRules are what it lets inventory admins do besides.
func InventoryAdminRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{edgev1alpha1.GroupName}, Resources: inventoryResources, Verbs: []string{"*"}},
	}
}

// EdgeAPIAdminRules are what it lets kcp's admins do: everything.
func EdgeAPIAdminRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{edgev1alpha1.GroupName}, Resources: []string{"*"}, Verbs: []string{"*"}},
	}
}

// edgePolicy is the maximal permission policy that Install puts on edge.kcp.io.
func edgePolicy() *apisv1alpha2.MaximalPermissionPolicy {
	return &apisv1alpha2.MaximalPermissionPolicy{Local: &apisv1alpha2.LocalAPIExportPolicy{}}
}

// ensureEdgePolicyRBAC makes the three grants of the policy in the ESPW at path. Install makes them
// before it puts the policy on the export, so that no request is refused in between.
func ensureEdgePolicyRBAC(ctx context.Context, kube kcpkubernetesclientset.ClusterInterface, path logicalcluster.Path, res *Result) error {
	group := func(name string) rbacv1.Subject {
		return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: PolicyName(name)}
	}
	grants := []struct {
		role     string
		rules    []rbacv1.PolicyRule
		subjects []rbacv1.Subject
	}{
		{EdgeAPIUserRole, EdgeAPIUserRules(), []rbacv1.Subject{group(allAuthenticated)}},
		{InventoryAdminRole, InventoryAdminRules(), []rbacv1.Subject{group(InventoryAdminsGroup), group(kcpAdminGroup)}},
		{EdgeAPIAdminRole, EdgeAPIAdminRules(), []rbacv1.Subject{group(kcpAdminGroup)}},
	}
	for _, g := range grants {
		if err := EnsureClusterRole(ctx, kube, path, g.role, g.rules, res); err != nil {
			return err
		}
		if err := ensureBindingHas(ctx, kube, path, g.role, g.subjects, res); err != nil {
			return err
		}
	}
	return nil
}

// ensureBindingHas makes sure the workspace at path has a ClusterRoleBinding role, of the
// ClusterRole role, whose subjects include subjects; subjects an operator added are kept.
func ensureBindingHas(ctx context.Context, kube kcpkubernetesclientset.ClusterInterface, path logicalcluster.Path, role string, subjects []rbacv1.Subject, res *Result) error {
	kind := "ClusterRoleBinding " + role
	roleRef := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}
	want := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role}, RoleRef: roleRef, Subjects: subjects}
	var wrongRef error
	err := ensure(ctx, res, kind, kube.Cluster(path).RbacV1().ClusterRoleBindings(), want, func(got *rbacv1.ClusterRoleBinding) bool {
		if !equality.Semantic.DeepEqual(got.RoleRef, roleRef) {
			wrongRef = fmt.Errorf("%s in %s refers to %s %s, not the ClusterRole %s: delete it and run init again", kind, path, got.RoleRef.Kind, got.RoleRef.Name, role)
			return false
		}
		changed := false
		for _, s := range subjects {
			if !hasSubject(got.Subjects, s) {
				got.Subjects = append(got.Subjects, s)
				changed = true
			}
		}
		return changed
	})
	if wrongRef != nil {
		return wrongRef
	}
	return err
}

func hasSubject(subjects []rbacv1.Subject, s rbacv1.Subject) bool {
	for _, have := range subjects {
		if have.Kind == s.Kind && have.Name == s.Name && have.Namespace == s.Namespace {
			return true
		}
	}
	return false
}
