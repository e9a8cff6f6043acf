package framework

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/client-go/rest"

	"github.com/kcp-dev/edge-mc/pkg/workspaces"
)

// Request is one HTTP request that a test makes as some identity, to see whether that identity
// may: a read or a write of a workspace's objects, as kubectl or any client sends it.
type Request struct {
	What   string // for messages, e.g. "list Secrets in another mailbox"
	Verb   string // GET, POST, PUT, PATCH (a JSON merge patch), DELETE
	Path   string // from the server's root, e.g. /clusters/root:imw/apis/edge.kcp.io/v1alpha1/synctargets
	Body   string // JSON, for POST, PUT and PATCH
	Server string // another server's base URL (a virtual workspace), if not the one of the identity's config
}

// Get is a GET of apiPath (e.g. /api/v1/secrets) in the workspace ws.
func Get(what string, ws logicalcluster.Path, apiPath string) Request {
	return Request{What: what, Verb: http.MethodGet, Path: ws.RequestPath() + apiPath}
}

// Create is a POST of body to apiPath in the workspace ws.
func Create(what string, ws logicalcluster.Path, apiPath, body string) Request {
	return Request{What: what, Verb: http.MethodPost, Path: ws.RequestPath() + apiPath, Body: body}
}

// Send makes the request as the identity of cfg (of whose Host only the scheme and authority
// are used) and returns the HTTP status and the start of the answer.
func Send(t testing.TB, cfg *rest.Config, r Request) (int, string) {
	t.Helper()
	base, _ := workspaces.Split(cfg)
	client, err := rest.HTTPClientFor(base)
	if err != nil {
		t.Fatal(err)
	}
	server := base.Host
	if r.Server != "" {
		server = r.Server
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		req, err := http.NewRequestWithContext(ctx, r.Verb, strings.TrimRight(server, "/")+r.Path, bytes.NewBufferString(r.Body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if r.Verb == http.MethodPatch {
			req.Header.Set("Content-Type", "application/merge-patch+json")
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", r.What, err)
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 600))
		resp.Body.Close()
		// 429 says to come back (kcp answers so while a resource's storage is initialising, as
		// a new APIBinding's is): try again, as client-go does, while the time lasts.
		if resp.StatusCode == http.StatusTooManyRequests && ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
				continue
			}
		}
		return resp.StatusCode, strings.Join(strings.Fields(string(body)), " ")
	}
}

// ExpectStatus checks that each request is answered with want, and reports each that is not,
// with its answer.
func ExpectStatus(t testing.TB, who string, cfg *rest.Config, want int, requests ...Request) {
	t.Helper()
	for _, r := range requests {
		if code, body := Send(t, cfg, r); code != want {
			t.Errorf("%s: %s (%s %s): %d, want %d: %s", who, r.What, r.Verb, r.Path, code, want, body)
		}
	}
}

// ExpectRefused checks that each request is refused with 403 Forbidden: the identity is known
// (not 401), and refused whether or not the object exists (not 404).
func ExpectRefused(t testing.TB, who string, cfg *rest.Config, requests ...Request) {
	t.Helper()
	ExpectStatus(t, who, cfg, http.StatusForbidden, requests...)
}

// ExpectAllowed checks that each request succeeds (2xx).
func ExpectAllowed(t testing.TB, who string, cfg *rest.Config, requests ...Request) {
	t.Helper()
	for _, r := range requests {
		if code, body := Send(t, cfg, r); code < 200 || code > 299 {
			t.Errorf("%s: %s (%s %s): %d, want success: %s", who, r.What, r.Verb, r.Path, code, body)
		}
	}
}
