package health

import (
	"io"
	"net"
	"net/http"
	"strings"
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

// TestProfilerApart: the profiles are served on the profiler's address only, never beside the
// health endpoints.
func TestProfilerApart(t *testing.T) {
	free := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return l.Addr().String()
	}
	healthAddress, profilerAddress := free(), free()
	hs, err := Serve(healthAddress, func() (bool, string) { return true, "" })
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Close()
	ps, err := ServeProfiler(profilerAddress)
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	get := func(url string) (int, []byte) {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, body
	}
	if code, body := get("http://" + profilerAddress + "/debug/pprof/profile?seconds=1"); code != http.StatusOK || len(body) == 0 {
		t.Errorf("CPU profile from the profiler's address: %d, %d bytes; want 200 and a profile", code, len(body))
	}
	if code, body := get("http://" + profilerAddress + "/debug/pprof/goroutine?debug=1"); code != http.StatusOK || !strings.Contains(string(body), "goroutine profile") {
		t.Errorf("goroutine profile from the profiler's address: %d %.80q", code, body)
	}
	if code, _ := get("http://" + healthAddress + "/debug/pprof/"); code != http.StatusNotFound {
		t.Errorf("GET /debug/pprof/ on the health address: %d, want 404 (profiles only where asked)", code)
	}
}
