package espw

import (
	"context"
	"slices"
	"testing"

	kcpkubefake "github.com/kcp-dev/client-go/kubernetes/fake"
	"github.com/kcp-dev/logicalcluster/v3"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kcp-dev/edge-mc/config/exports"
	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

// allows says whether rules grant verb on resource of edge.kcp.io, as RBAC matches them.
func allows(rules []rbacv1.PolicyRule, resource, verb string) bool {
	for _, r := range rules {
		if (slices.Contains(r.APIGroups, edgev1alpha1.GroupName) || slices.Contains(r.APIGroups, "*")) &&
			(slices.Contains(r.Resources, resource) || slices.Contains(r.Resources, "*")) &&
			(slices.Contains(r.Verbs, verb) || slices.Contains(r.Verbs, "*")) {
			return true
		}
	}
	return false
}

// TestEdgePolicyCoversEveryKind: the maximal permission policy of edge.kcp.io refuses whatever
// its RBAC does not name, so every kind of the export must be named: a kind added to the export
// and forgotten here would be refused to everyone but kcp's admins.
func TestEdgePolicyCoversEveryKind(t *testing.T) {
	_, apiExports, err := exports.Load()
	if err != nil {
		t.Fatal(err)
	}
	var resources []string
	for _, e := range apiExports {
		if e.Name != edgev1alpha1.EdgeAPIExportName {
			continue
		}
		for _, r := range e.Spec.Resources {
			resources = append(resources, r.Name)
		}
	}
	if len(resources) == 0 {
		t.Fatalf("the embedded APIExport %s has no resources", edgev1alpha1.EdgeAPIExportName)
	}
	user, inventory, admin := EdgeAPIUserRules(), InventoryAdminRules(), EdgeAPIAdminRules()
	for _, r := range resources {
		for _, verb := range []string{"get", "list", "watch"} {
			if !allows(user, r, verb) {
				t.Errorf("%s %s: not allowed to every authenticated identity", verb, r)
			}
		}
		writable := map[string]bool{"edgeplacements": true, "customizers": true, "statuscollectors": true, "healthrules": true}[r]
		inventoryKind := map[string]bool{"synctargets": true, "locations": true}[r]
		for _, verb := range []string{"create", "update", "patch", "delete"} {
			if got := allows(user, r, verb); got != writable {
				t.Errorf("%s %s by every authenticated identity: allowed %v, want %v", verb, r, got, writable)
			}
			if got, want := allows(user, r, verb) || allows(inventory, r, verb), writable || inventoryKind; got != want {
				t.Errorf("%s %s by an inventory admin: allowed %v, want %v", verb, r, got, want)
			}
			if !allows(admin, r, verb) || !allows(admin, r+"/status", verb) {
				t.Errorf("%s %s (and status) by kcp's admins: refused", verb, r)
			}
		}
	}
}

// TestPolicyBindingKeepsAddedSubjects: init run again adds what is missing from the bindings of
// the policy and keeps the subjects an operator added (the inventory admins named one by one).
func TestPolicyBindingKeepsAddedSubjects(t *testing.T) {
	ctx := context.Background()
	path := logicalcluster.NewPath("root:espw")
	kube := kcpkubefake.NewSimpleClientset()
	if err := ensureEdgePolicyRBAC(ctx, kube, path, &Result{}); err != nil {
		t.Fatal(err)
	}
	bindings := kube.Cluster(path).RbacV1().ClusterRoleBindings()
	crb, err := bindings.Get(ctx, InventoryAdminRole, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dave := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: PolicyName("dave")}
	crb.Subjects = append(crb.Subjects[1:], dave) // one default subject removed, dave added
	if _, err := bindings.Update(ctx, crb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	res := &Result{}
	if err := ensureEdgePolicyRBAC(ctx, kube, path, res); err != nil {
		t.Fatal(err)
	}
	crb, err = bindings.Get(ctx, InventoryAdminRole, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{PolicyName(InventoryAdminsGroup), PolicyName("system:kcp:admin"), PolicyName("dave")} {
		if !slices.ContainsFunc(crb.Subjects, func(s rbacv1.Subject) bool { return s.Name == want }) {
			t.Errorf("ClusterRoleBinding %s after init again: no subject %s in %v", InventoryAdminRole, want, crb.Subjects)
		}
	}
	if len(res.Updated) != 1 || res.Updated[0] != "ClusterRoleBinding "+InventoryAdminRole {
		t.Errorf("init again updated %v, want the one binding", res.Updated)
	}
	res = &Result{}
	if err := ensureEdgePolicyRBAC(ctx, kube, path, res); err != nil {
		t.Fatal(err)
	}
	if len(res.Updated)+len(res.Created) != 0 {
		t.Errorf("init a third time changed %v %v, want nothing", res.Created, res.Updated)
	}
}
