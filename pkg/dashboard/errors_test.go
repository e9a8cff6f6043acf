package dashboard

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Each way a read fails is said in words that tell the user what to do.
func TestReadError(t *testing.T) {
	gr := schema.GroupResource{Group: "edge.kcp.io", Resource: "edgeplacements"}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{apierrors.NewUnauthorized("token expired"), "refused your credentials reading EdgePlacements in root:wmw (401 Unauthorized): they may have expired"},
		{apierrors.NewForbidden(gr, "", errors.New("no")), "your credentials may not read EdgePlacements in workspace root:wmw (403 Forbidden)"},
		{apierrors.NewNotFound(gr, ""), "workspace root:wmw does not exist or serves no EdgePlacements"},
		{&url.Error{Op: "Get", URL: "https://127.0.0.1:1/clusters/root:wmw", Err: syscall.ECONNREFUSED}, "cannot reach kcp reading EdgePlacements in root:wmw"},
	} {
		err := readError("EdgePlacements", "root:wmw", tc.err)
		if got := err.Error(); !strings.Contains(got, tc.want) {
			t.Errorf("readError(%v) = %q, want it to say %q", tc.err, got, tc.want)
		}
		if !errors.Is(err, tc.err) {
			t.Errorf("readError(%v) does not wrap the client's error", tc.err)
		}
	}
}

// The dashboard answers only requests for a loopback name (no DNS rebinding).
func TestLoopbackOnly(t *testing.T) {
	s := testServer(t, fixedNow)
	for host, want := range map[string]int{"127.0.0.1:8001": http.StatusOK, "localhost:8001": http.StatusOK, "[::1]:8001": http.StatusOK, "evil.example:8001": http.StatusForbidden, "10.0.0.1:8001": http.StatusForbidden} {
		req := httptest.NewRequest(http.MethodGet, "/static/style.css", nil)
		req.Host = host
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("Host %s: %d, want %d", host, rec.Code, want)
		}
	}
}
