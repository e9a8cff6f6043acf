package transport

import (
	"os"
	"reflect"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

func TestUpsyncRules(t *testing.T) {
	all := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	for _, tc := range []struct {
		name  string
		rules []edgev1alpha1.UpsyncSet
		want  []rbacv1.PolicyRule
	}{
		{"none", nil, nil},
		{"one resource, with its status", []edgev1alpha1.UpsyncSet{{APIGroup: "apps", Resources: []string{"deployments"}}},
			[]rbacv1.PolicyRule{{APIGroups: []string{"apps"}, Resources: []string{"deployments", "deployments/status"}, Verbs: all}}},
		{"rules of one group merge, groups sorted", []edgev1alpha1.UpsyncSet{
			{APIGroup: "apps", Resources: []string{"deployments"}},
			{Resources: []string{"configmaps"}, Namespaces: []string{"a"}},
			{APIGroup: "apps", Resources: []string{"statefulsets", "deployments"}, Names: []string{"x"}},
		}, []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps", "configmaps/status"}, Verbs: all},
			{APIGroups: []string{"apps"}, Resources: []string{"deployments", "deployments/status", "statefulsets", "statefulsets/status"}, Verbs: all},
		}},
		{"* covers the group", []edgev1alpha1.UpsyncSet{{APIGroup: "apps", Resources: []string{"deployments", "*"}}},
			[]rbacv1.PolicyRule{{APIGroups: []string{"apps"}, Resources: []string{"*"}, Verbs: all}}},
		{"forbidden groups grant nothing", []edgev1alpha1.UpsyncSet{
			{APIGroup: "rbac.authorization.k8s.io", Resources: []string{"*"}},
			{APIGroup: "apis.kcp.io", Resources: []string{"apibindings"}},
			{APIGroup: "edge.kcp.io", Resources: []string{"assemblages"}},
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := UpsyncRules(tc.rules); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("UpsyncRules(%+v) = %+v, want %+v", tc.rules, got, tc.want)
			}
		})
	}
}

// TestSyncerRulesGrantNoEscalation: nothing in the syncer's role reaches RBAC, kcp's APIs,
// ServiceAccounts or Secrets, and no rule is a wildcard.
func TestSyncerRulesGrantNoEscalation(t *testing.T) {
	for _, r := range SyncerRules() {
		for _, g := range r.APIGroups {
			if g == "*" || (g != "" && g != edgev1alpha1.SchemeGroupVersion.Group && g != "coordination.k8s.io") {
				t.Errorf("the syncer's role reaches API group %q: %+v", g, r)
			}
		}
		for _, res := range append(append([]string{}, r.Resources...), r.Verbs...) {
			if res == "*" || res == "secrets" || res == "serviceaccounts" || res == "escalate" || res == "bind" || res == "impersonate" {
				t.Errorf("the syncer's role grants %q: %+v", res, r)
			}
		}
	}
}

// TestForbiddenGroupsMatchAdmission: EdgePlacement's admission refuses upsync rules of exactly
// the groups that UpsyncRules leaves out.
func TestForbiddenGroupsMatchAdmission(t *testing.T) {
	crd, err := os.ReadFile("../../config/crds/edge.kcp.io_edgeplacements.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(crd, &doc); err != nil {
		t.Fatal(err)
	}
	var rule string
	for _, v := range doc.Spec.Versions {
		spec := v.Schema.OpenAPIV3Schema.Properties["spec"]
		for _, x := range spec.Properties["upsync"].XValidations {
			rule += x.Rule
		}
	}
	if rule == "" {
		t.Fatal("no admission rule on spec.upsync in the EdgePlacement CRD")
	}
	quoted := strings.Count(rule, "'") / 2
	if quoted != len(UpsyncForbiddenGroups) {
		t.Errorf("the admission rule names %d groups, UpsyncForbiddenGroups %d: %s", quoted, len(UpsyncForbiddenGroups), rule)
	}
	for _, g := range UpsyncForbiddenGroups {
		if !strings.Contains(rule, "'"+g+"'") {
			t.Errorf("the admission rule does not refuse %q: %s", g, rule)
		}
	}
}

func TestSyncTargetUIDOfServer(t *testing.T) {
	for _, tc := range []struct {
		server string
		uid    string
		ok     bool
	}{
		{"https://kcp.example:6443/clusters/root:espw:1abc-mb-0d1f2e3a-uid", "0d1f2e3a-uid", true},
		{"https://kcp.example:6443/clusters/root:espw:1abc-mb-0d1f2e3a-uid/", "0d1f2e3a-uid", true},
		{"https://127.0.0.1:8080/clusters/1abc-mb-u2", "u2", true},
		{"https://kcp.example:6443/clusters/2x7kq9mz", "", false}, // a logical cluster's name
		{"https://kcp.example:6443", "", false},
		{"https://kcp.example:6443/clusters/root:espw", "", false},
	} {
		uid, ok := SyncTargetUIDOfServer(tc.server)
		if string(uid) != tc.uid || ok != tc.ok {
			t.Errorf("SyncTargetUIDOfServer(%q) = %q, %v; want %q, %v", tc.server, uid, ok, tc.uid, tc.ok)
		}
	}
}
