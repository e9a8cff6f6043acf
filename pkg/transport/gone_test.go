package transport

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestGone(t *testing.T) {
	assemblages := schema.GroupResource{Group: "edge.kcp.io", Resource: "assemblages"}
	leases := schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}
	// What kcp answered a syncer for its own assemblage while it started again after kill -9.
	workspaceNotReady := &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
		Message: `workspaces.tenancy.kcp.io "root:espw:abc-mb-0e42" not found`,
		Details: &metav1.StatusDetails{Name: "root:espw:abc-mb-0e42", Group: "tenancy.kcp.io", Kind: "workspaces"},
	}}
	for _, tc := range []struct {
		what string
		err  error
		gr   schema.GroupResource
		name string
		want bool
	}{
		{"the assemblage is not found", apierrors.NewNotFound(assemblages, "w.p"), assemblages, "w.p", true},
		{"wrapped", fmt.Errorf("reading: %w", apierrors.NewNotFound(assemblages, "w.p")), assemblages, "w.p", true},
		{"the Lease is not found", apierrors.NewNotFound(leases, "edge-syncer-heartbeat"), leases, "edge-syncer-heartbeat", true},
		{"kcp does not serve the workspace yet", workspaceNotReady, assemblages, "w.p", false},
		{"another object of the resource", apierrors.NewNotFound(assemblages, "w.q"), assemblages, "w.p", false},
		{"an object of another resource", apierrors.NewNotFound(leases, "w.p"), assemblages, "w.p", false},
		{"a 404 without details", apierrors.NewGenericServerResponse(http.StatusNotFound, "GET", assemblages, "", "", 0, false), assemblages, "w.p", false},
		{"another error", apierrors.NewConflict(assemblages, "w.p", errors.New("changed")), assemblages, "w.p", false},
		{"no error", nil, assemblages, "w.p", false},
	} {
		if got := Gone(tc.err, tc.gr, tc.name); got != tc.want {
			t.Errorf("%s: Gone(%v) = %v, want %v", tc.what, tc.err, got, tc.want)
		}
	}
}
