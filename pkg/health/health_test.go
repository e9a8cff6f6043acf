package health

import (
	"io"
	"net"
	"net/http"
	"testing"
)

func TestReadyzExclude(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	address := l.Addr().String()
	l.Close()
	srv, err := ServeChecks(address, func(excluded map[string]bool) (bool, string) {
		if excluded["leader"] {
			return true, ""
		}
		return false, "standing by"
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for _, tc := range []struct {
		path string
		code int
		body string
	}{
		{"/readyz", http.StatusServiceUnavailable, "standing by"},
		{"/readyz?exclude=other", http.StatusServiceUnavailable, "standing by"},
		{"/readyz?exclude=other&exclude=leader", http.StatusOK, "ok"},
		{"/healthz", http.StatusOK, "ok"},
	} {
		resp, err := http.Get("http://" + address + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code || string(body) != tc.body {
			t.Errorf("GET %s: %d %q, want %d %q", tc.path, resp.StatusCode, body, tc.code, tc.body)
		}
	}
}
