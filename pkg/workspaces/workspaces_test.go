package workspaces

import (
	"context"
	"errors"
	"testing"

	apisv1alpha2 "github.com/kcp-dev/sdk/apis/apis/v1alpha2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestCreateWhenServed: a create answered 404 (a workspace not served at its path yet), or with an
// error the caller says to wait for, is tried again; any other answer ends the wait.
func TestCreateWhenServed(t *testing.T) {
	notServed := apierrors.NewNotFound(schema.GroupResource{Group: "tenancy.kcp.io", Resource: "workspacetypes"}, "")
	notYet := errors.New("type not yet known")
	other := errors.New("refused")
	for _, tc := range []struct {
		name     string
		answers  []error
		alsoWait func(error) bool
		calls    int
		want     error
	}{
		{"served at once", []error{nil}, nil, 1, nil},
		{"404, then served", []error{notServed, notServed, nil}, nil, 3, nil},
		{"another error ends it", []error{notServed, other, nil}, nil, 2, other},
		{"an error the caller waits for", []error{notYet, notServed, nil}, func(err error) bool { return err == notYet }, 3, nil},
		{"that error, not waited for", []error{notYet, nil}, nil, 1, notYet},
	} {
		calls := 0
		err := CreateWhenServed(context.Background(), tc.alsoWait, func() error {
			calls++
			return tc.answers[calls-1]
		})
		if !errors.Is(err, tc.want) || calls != tc.calls {
			t.Errorf("%s: %v after %d calls, want %v after %d", tc.name, err, calls, tc.want, tc.calls)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := CreateWhenServed(ctx, nil, func() error { return notServed }); !errors.Is(err, context.Canceled) {
		t.Errorf("with the context cancelled: %v, want context.Canceled", err)
	}
}

func TestClaimsApplied(t *testing.T) {
	claim := func(group, resource, identity string, verbs ...string) apisv1alpha2.PermissionClaim {
		return apisv1alpha2.PermissionClaim{GroupResource: apisv1alpha2.GroupResource{Group: group, Resource: resource}, IdentityHash: identity, Verbs: verbs}
	}
	accept := func(c apisv1alpha2.PermissionClaim, state apisv1alpha2.AcceptablePermissionClaimState) apisv1alpha2.AcceptablePermissionClaim {
		return apisv1alpha2.AcceptablePermissionClaim{ScopedPermissionClaim: apisv1alpha2.ScopedPermissionClaim{PermissionClaim: c}, State: state}
	}
	applied := func(cs ...apisv1alpha2.PermissionClaim) []apisv1alpha2.ScopedPermissionClaim {
		var out []apisv1alpha2.ScopedPermissionClaim
		for _, c := range cs {
			out = append(out, apisv1alpha2.ScopedPermissionClaim{PermissionClaim: c})
		}
		return out
	}
	deployments := claim("apps", "deployments", "abc", "get", "list")
	configMaps := claim("", "configmaps", "", "get")
	binding := func(spec []apisv1alpha2.AcceptablePermissionClaim, status []apisv1alpha2.ScopedPermissionClaim) *apisv1alpha2.APIBinding {
		b := &apisv1alpha2.APIBinding{}
		b.Spec.PermissionClaims, b.Status.AppliedPermissionClaims = spec, status
		return b
	}
	for _, c := range []struct {
		name string
		b    *apisv1alpha2.APIBinding
		want bool
	}{
		{"no claims", binding(nil, nil), true},
		{"accepted, none applied", binding([]apisv1alpha2.AcceptablePermissionClaim{accept(deployments, apisv1alpha2.ClaimAccepted)}, nil), false},
		{"accepted, another applied", binding([]apisv1alpha2.AcceptablePermissionClaim{accept(deployments, apisv1alpha2.ClaimAccepted)}, applied(configMaps)), false},
		{"accepted, applied with its verbs in another order", binding([]apisv1alpha2.AcceptablePermissionClaim{accept(deployments, apisv1alpha2.ClaimAccepted)}, applied(claim("apps", "deployments", "abc", "list", "get"))), true},
		{"the same kind of another export is not it", binding([]apisv1alpha2.AcceptablePermissionClaim{accept(deployments, apisv1alpha2.ClaimAccepted)}, applied(claim("apps", "deployments", "xyz"))), false},
		{"rejected claims are not waited for", binding([]apisv1alpha2.AcceptablePermissionClaim{accept(deployments, apisv1alpha2.ClaimRejected)}, nil), true},
		{"every accepted claim applied", binding([]apisv1alpha2.AcceptablePermissionClaim{accept(deployments, apisv1alpha2.ClaimAccepted), accept(configMaps, apisv1alpha2.ClaimAccepted)}, applied(configMaps, deployments)), true},
	} {
		if got := claimsApplied(c.b); got != c.want {
			t.Errorf("%s: claimsApplied = %v, want %v", c.name, got, c.want)
		}
	}
}
