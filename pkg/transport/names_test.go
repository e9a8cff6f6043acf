package transport

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestIsKCPBuiltIn(t *testing.T) {
	tests := []struct {
		gr   schema.GroupResource
		want bool
	}{
		{schema.GroupResource{Resource: "configmaps"}, true},
		{schema.GroupResource{Resource: "secrets"}, true},
		{schema.GroupResource{Resource: "namespaces"}, true},
		{schema.GroupResource{Resource: "services"}, false},
		{schema.GroupResource{Resource: "persistentvolumeclaims"}, false},
		{schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "roles"}, true},
		{schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}, true},
		{schema.GroupResource{Group: "apps", Resource: "deployments"}, false},
		{schema.GroupResource{Group: "batch", Resource: "jobs"}, false},
		{schema.GroupResource{Group: "networking.k8s.io", Resource: "ingresses"}, false},
		{schema.GroupResource{Group: "example.com", Resource: "widgets"}, false},
	}
	for _, tt := range tests {
		if got := IsKCPBuiltIn(tt.gr); got != tt.want {
			t.Errorf("IsKCPBuiltIn(%v) = %v, want %v", tt.gr, got, tt.want)
		}
	}
}
