package syncer

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestListPatiently: while the center cannot be reached the list is tried again, and its answer
// returned once there is one; any other error goes back at once; an ended context stops it.
func TestListPatiently(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "assemblages"}, "", errors.New("no"))
	tooMany := apierrors.NewTooManyRequests("slow down", 1)
	for _, tc := range []struct {
		name    string
		answers []error
		calls   int
		want    error
	}{
		{"answers at once", []error{nil}, 1, nil},
		{"refused twice, then answers", []error{refused, refused, nil}, 3, nil},
		{"unavailable, then answers", []error{apierrors.NewServiceUnavailable("starting"), nil}, 2, nil},
		{"forbidden goes back at once", []error{forbidden, nil}, 1, forbidden},
		{"too many requests go back at once", []error{tooMany, nil}, 1, tooMany},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			got, err := listPatiently(context.Background(), "assemblages", time.Millisecond, func(context.Context) (string, error) {
				e := tc.answers[calls]
				calls++
				if e != nil {
					return "", e
				}
				return "listed", nil
			})
			if calls != tc.calls {
				t.Errorf("%d calls, want %d", calls, tc.calls)
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("error %v, want %v", err, tc.want)
			}
			if tc.calls == len(tc.answers) && (err != nil || got != "listed") {
				t.Errorf("got %q, %v", got, err)
			}
		})
	}

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := listPatiently(ctx, "assemblages", time.Millisecond, func(context.Context) (string, error) { return "", refused })
	if !centerUnreachable(err) {
		t.Errorf("an ended context returns %v, want the last error", err)
	}
}

func TestCenterUnreachable(t *testing.T) {
	for err, want := range map[error]bool{
		nil: false,
		&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}:              true,
		fmt.Errorf("wrapped: %w", &net.OpError{Op: "read", Err: syscall.ECONNRESET}): true,
		apierrors.NewServiceUnavailable("x"):                                         true,
		apierrors.NewNotFound(schema.GroupResource{Resource: "assemblages"}, ""):     false,
		apierrors.NewForbidden(schema.GroupResource{}, "", errors.New("no")):         false,
		apierrors.NewTooManyRequests("x", 1):                                         false,
		errors.New("the mailbox serves no assemblages"):                              false,
	} {
		if got := centerUnreachable(err); got != want {
			t.Errorf("centerUnreachable(%v) = %v, want %v", err, got, want)
		}
	}
}
