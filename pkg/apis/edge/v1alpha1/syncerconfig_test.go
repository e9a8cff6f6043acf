package v1alpha1

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestCopyKey(t *testing.T) {
	tests := []struct {
		gr              schema.GroupResource
		namespace, name string
		want            string
	}{
		{schema.GroupResource{Resource: "configmaps"}, "ns", "cfg", "configmaps/ns/cfg"},
		{schema.GroupResource{Group: "apps", Resource: "deployments"}, "ns", "web", "deployments.apps/ns/web"},
		{schema.GroupResource{Resource: "namespaces"}, "", "ns", "namespaces/ns"},
		{schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}, "", "widgets.example.com",
			"customresourcedefinitions.apiextensions.k8s.io/widgets.example.com"},
	}
	for _, tt := range tests {
		got := CopyKey(tt.gr, tt.namespace, tt.name)
		if got != tt.want {
			t.Errorf("CopyKey(%v, %q, %q) = %q, want %q", tt.gr, tt.namespace, tt.name, got, tt.want)
		}
		gr, ns, name, ok := ParseCopyKey(got)
		if !ok || gr != tt.gr || ns != tt.namespace || name != tt.name {
			t.Errorf("ParseCopyKey(%q) = %v, %q, %q, %v; want %v, %q, %q, true", got, gr, ns, name, ok, tt.gr, tt.namespace, tt.name)
		}
	}
	for _, bad := range []string{"", "configmaps", "a/b/c/d", "/ns/name", "configmaps/ns/"} {
		if _, _, _, ok := ParseCopyKey(bad); ok {
			t.Errorf("ParseCopyKey(%q) ok, want not", bad)
		}
	}
}
