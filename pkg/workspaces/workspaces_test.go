package workspaces

import (
	"context"
	"errors"
	"testing"

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
