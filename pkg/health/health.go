// Package health serves the HTTP endpoints of edge-mc's processes: /healthz (the process lives),
// /readyz (ready, or why not) and Prometheus /metrics from the component-base legacy registry;
// and, on a listener of its own where an operator asks for it, Go's profiles.
package health

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"time"

	"k8s.io/component-base/metrics/legacyregistry"
)

// Serve serves the endpoints on address in the background until the returned server is closed.
// ready says whether the process is ready, or why not; /readyz answers 503 with that reason.
func Serve(address string, ready func() (bool, string)) (*http.Server, error) {
	return ServeChecks(address, func(map[string]bool) (bool, string) { return ready() })
}

// ServeChecks is Serve for a process whose readiness has parts that a caller may leave out, as
// kube-apiserver's /readyz?exclude=<check> does: ready gets the names the request excludes
// (/readyz?exclude=leader&exclude=... gives {"leader": true, ...}).
func ServeChecks(address string, ready func(excluded map[string]bool) (bool, string)) (*http.Server, error) {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		excluded := map[string]bool{}
		for _, name := range r.URL.Query()["exclude"] {
			excluded[name] = true
		}
		if ok, why := ready(excluded); !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(why))
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	mux.Handle("/metrics", legacyregistry.Handler())
	return serve(address, "health and metrics", mux)
}

// ServeProfiler serves Go's CPU, heap and goroutine profiles (net/http/pprof, under
// /debug/pprof/) on address in the background until the returned server is closed. It is a
// listener of its own, apart from Serve's, so that an operator opens it only where asked, on
// loopback preferably: a profile shows the process's work to whoever reaches it.
func ServeProfiler(address string) (*http.Server, error) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return serve(address, "profiles", mux)
}

// serve listens on address and serves handler in the background until the returned server is
// closed; what names what it serves, in errors.
func serve(address, what string, handler http.Handler) (*http.Server, error) {
	l, err := net.Listen("tcp", address)
	if err != nil {
		return nil, fmt.Errorf("serving %s on %s: %w", what, address, err)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(os.Stderr, "serving %s: %v\n", what, err)
		}
	}()
	return srv, nil
}
