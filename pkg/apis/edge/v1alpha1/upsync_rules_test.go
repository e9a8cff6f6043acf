package v1alpha1

import "testing"

func TestUpsyncCovers(t *testing.T) {
	type object struct {
		group, resource, namespace, name string
		covered                          bool
	}
	cases := []struct {
		name    string
		sets    []UpsyncSet
		objects []object
	}{
		{
			name: "no sets cover nothing",
			objects: []object{
				{"", "configmaps", "app", "x", false},
			},
		},
		{
			name: "named resource of the core group",
			sets: []UpsyncSet{{Resources: []string{"configmaps"}}},
			objects: []object{
				{"", "configmaps", "app", "x", true},
				{"", "configmaps", "", "cluster-scoped-name", true},
				{"", "secrets", "app", "x", false},
				{"apps", "configmaps", "app", "x", false},
			},
		},
		{
			name: "* within a group only",
			sets: []UpsyncSet{{APIGroup: "apps", Resources: []string{"*"}}},
			objects: []object{
				{"apps", "deployments", "app", "web", true},
				{"apps", "statefulsets", "app", "db", true},
				{"", "configmaps", "app", "x", false},
				{"batch", "jobs", "app", "x", false},
			},
		},
		{
			name: "resource, namespaces and names are ANDed",
			sets: []UpsyncSet{{Resources: []string{"configmaps"}, Namespaces: []string{"app"}, Names: []string{"report"}}},
			objects: []object{
				{"", "configmaps", "app", "report", true},
				{"", "configmaps", "app", "other", false},
				{"", "configmaps", "other", "report", false},
				{"", "configmaps", "", "report", false},
				{"", "secrets", "app", "report", false},
			},
		},
		{
			name: "sets are ORed",
			sets: []UpsyncSet{
				{Resources: []string{"configmaps"}, Namespaces: []string{"app"}},
				{APIGroup: "", Resources: []string{"services"}, Names: []string{"edge"}},
			},
			objects: []object{
				{"", "configmaps", "app", "any", true},
				{"", "services", "other", "edge", true},
				{"", "services", "app", "any", false},
				{"", "configmaps", "other", "edge", false},
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, o := range c.objects {
				if got := UpsyncCovers(c.sets, o.group, o.resource, o.namespace, o.name); got != o.covered {
					t.Errorf("UpsyncCovers(%q, %q, %q, %q) = %v, want %v", o.group, o.resource, o.namespace, o.name, got, o.covered)
				}
			}
		})
	}
}
