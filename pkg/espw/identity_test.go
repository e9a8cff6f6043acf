package espw

import (
	"context"
	"strings"
	"testing"

	"github.com/kcp-dev/logicalcluster/v3"
	apisv1alpha2 "github.com/kcp-dev/sdk/apis/apis/v1alpha2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestControllerUserOf(t *testing.T) {
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		want        string
	}{
		{"recorded by init", map[string]string{ControllerUserAnnotation: "ecm-prod"}, "ecm-prod"},
		{"an ESPW made before init recorded one", nil, DefaultControllerUser},
		{"an empty annotation", map[string]string{ControllerUserAnnotation: ""}, DefaultControllerUser},
	} {
		t.Run(tc.name, func(t *testing.T) {
			export := &apisv1alpha2.APIExport{ObjectMeta: metav1.ObjectMeta{Annotations: tc.annotations}}
			if got := ControllerUserOf(export); got != tc.want {
				t.Errorf("ControllerUserOf = %q, want %q", got, tc.want)
			}
		})
	}
}

// A ServiceAccount or a system identity cannot be the controllers' user: the error says what to
// give instead, before anything is written.
func TestEnsureControllerRightsRefusesSystemNames(t *testing.T) {
	for _, user := range []string{"", "system:serviceaccount:default:edge-controller-manager", "system:admin"} {
		err := EnsureControllerRights(context.Background(), nil, nil, logicalcluster.NewPath("root:espw"), user, &Result{})
		if err == nil || !strings.Contains(err.Error(), DefaultControllerUser) {
			t.Errorf("user %q: got %v, want an error that names a kcp user to give, such as %s", user, err, DefaultControllerUser)
		}
	}
}

func TestControllerWMWRulesNeverCreateOrDelete(t *testing.T) {
	for _, r := range ControllerWMWRules() {
		for _, v := range r.Verbs {
			if v == "create" || v == "delete" || v == "*" || v == "escalate" || v == "bind" {
				t.Errorf("a rule of workload workspaces grants %q: %+v", v, r)
			}
		}
	}
}
