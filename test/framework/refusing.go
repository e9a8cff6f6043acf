package framework

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

// RefusingProxy is an HTTPS reverse proxy in front of the package's kcp that can answer every
// write (POST, PUT, PATCH, DELETE) with 429 Too Many Requests and Retry-After: 1, the answer of
// kcp's own priority and fairness when it sheds load, and switch that on and off at a moment a
// test chooses, which a kcp started with a low --max-requests-inflight cannot. Reads and watches
// always pass. It serves kcp's own serving certificate, so a client keeps kcp's CA, and forwards
// the client's bearer token, so kcp sees the client's own identity.
type RefusingProxy struct {
	URL      string
	target   *url.URL
	listener net.Listener
	refusing atomic.Bool
	refused  atomic.Int64
	passed   atomic.Int64
}

// StartRefusingProxy starts a RefusingProxy to the package's kcp, stopped when the test ends. It
// needs the kcp that the harness started (its serving key).
func StartRefusingProxy(t testing.TB) *RefusingProxy {
	t.Helper()
	s := KCP(t)
	if s.dir == "" {
		t.Fatal("a RefusingProxy needs the kcp the harness started (its serving key), not EDGE_E2E_KUBECONFIG's")
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(s.dir, ".kcp", "apiserver.crt"), filepath.Join(s.dir, ".kcp", "apiserver.key"))
	if err != nil {
		t.Fatalf("loading kcp's serving certificate: %v", err)
	}
	target, err := url.Parse(s.Base.Host)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	ca := s.Base.CAData
	if len(ca) == 0 && s.Base.CAFile != "" {
		if ca, err = os.ReadFile(s.Base.CAFile); err != nil {
			t.Fatal(err)
		}
	}
	if !roots.AppendCertsFromPEM(ca) {
		t.Fatal("kcp's admin kubeconfig has no CA to verify kcp with")
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	// Only kcp's CA, no client certificate: kcp authenticates the request by the client's token.
	rp.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}, ForceAttemptHTTP2: true}
	rp.FlushInterval = -1 // watches stream
	p := &RefusingProxy{target: target}
	p.listener, err = tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	p.URL = "https://" + p.listener.Addr().String()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
			if p.refusing.Load() {
				p.refused.Add(1)
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusTooManyRequests)
				fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too many requests, please try again later","reason":"TooManyRequests","details":{"retryAfterSeconds":1},"code":429}`)
				return
			}
			p.passed.Add(1)
		}
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(p.listener) }()
	t.Cleanup(func() { _ = srv.Close() })
	return p
}

// Refuse switches the refusal of writes on or off.
func (p *RefusingProxy) Refuse(on bool) { p.refusing.Store(on) }

// Refused is how many writes the proxy has answered with 429; Passed how many it forwarded.
func (p *RefusingProxy) Refused() int64 { return p.refused.Load() }
func (p *RefusingProxy) Passed() int64  { return p.passed.Load() }

// Through rewrites a kubeconfig file (a copy, beside it) so that every cluster that names kcp
// names the proxy instead, and returns the copy's path.
func (p *RefusingProxy) Through(t testing.TB, kubeconfig string) string {
	t.Helper()
	raw, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range raw.Clusters {
		u, err := url.Parse(c.Server)
		if err != nil {
			t.Fatalf("cluster %s of %s: server %q: %v", name, kubeconfig, c.Server, err)
		}
		if u.Host == p.target.Host {
			u.Host = p.listener.Addr().String()
			c.Server = u.String()
		}
	}
	out := filepath.Join(t.TempDir(), "through-refusing-proxy.kubeconfig")
	if err := clientcmd.WriteToFile(*raw, out); err != nil {
		t.Fatal(err)
	}
	return out
}
