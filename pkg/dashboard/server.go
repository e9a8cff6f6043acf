package dashboard

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/client-go/rest"
)

//go:embed templates/*.html static/*
var assets embed.FS

// readTimeout bounds the reads of one page.
const readTimeout = 15 * time.Second

// Config is what the dashboard reads, and as whom.
type Config struct {
	// Base is the user's kubeconfig's server and credentials, without a workspace.
	Base *rest.Config
	// WorkloadWorkspaces are the workload workspaces whose placements it shows (at least one).
	WorkloadWorkspaces []logicalcluster.Path
	// InventoryWorkspaces are inventory workspaces whose edges it shows beside those that the
	// placements reach.
	InventoryWorkspaces []logicalcluster.Path
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Server serves the dashboard.
type Server struct {
	read  *reader
	now   func() time.Time
	pages map[string]*template.Template
	mux   *http.ServeMux
	// watchDelay is how long a change event waits for more changes before it is sent.
	watchDelay time.Duration

	// stop stops the mirrors' watches.
	stop context.CancelFunc

	mu sync.Mutex
	// lastCurrent is, per page (its path), when its data was last read in full.
	lastCurrent map[string]time.Time
}

// New returns a dashboard for cfg.
func New(cfg Config) (*Server, error) {
	if len(cfg.WorkloadWorkspaces) == 0 {
		return nil, fmt.Errorf("the dashboard needs at least one workload workspace")
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	ctx, stop := context.WithCancel(context.Background())
	r, err := newReader(ctx, rest.CopyConfig(cfg.Base), cfg.WorkloadWorkspaces, cfg.InventoryWorkspaces, now)
	if err != nil {
		stop()
		return nil, err
	}
	s := &Server{read: r, now: now, stop: stop, lastCurrent: map[string]time.Time{}, watchDelay: 100 * time.Millisecond}
	if err := s.parseTemplates(); err != nil {
		return nil, err
	}
	static, _ := fs.Sub(assets, "static")
	s.mux = http.NewServeMux()
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", cacheFor(http.FileServerFS(static))))
	s.mux.HandleFunc("GET /{$}", s.serveFleet)
	s.mux.HandleFunc("GET /placement/{wmw}/{name}", s.servePlacement)
	s.mux.HandleFunc("GET /edge/{imw}/{name}", s.serveEdge)
	s.mux.HandleFunc("GET /events", s.serveEvents)
	return s, nil
}

// ServeHTTP serves the dashboard's pages, assets and event streams.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Only for a loopback name: a web site whose name an attacker points at 127.0.0.1 (DNS
	// rebinding) must not read the fleet through the user's browser.
	if !loopbackHost(r.Host) {
		http.Error(w, "the dashboard answers only at 127.0.0.1 or localhost", http.StatusForbidden)
		return
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'; img-src 'self' data:")
	w.Header().Set("Referrer-Policy", "no-referrer")
	s.mux.ServeHTTP(w, r)
}

func loopbackHost(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Listen opens a listener on loopback (127.0.0.1) at port, a free one for 0.
func Listen(port int) (net.Listener, error) {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return nil, fmt.Errorf("listening on 127.0.0.1:%d: %w (give another --port, or 0 for any free one)", port, err)
	}
	return l, nil
}

// Close stops the watches that keep the pages' data; the server does not serve after it.
func (s *Server) Close() { s.stop() }

// Serve serves the dashboard on l until ctx ends, then closes it.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	defer s.Close()
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
		_ = srv.Close()
	}()
	if err := srv.Serve(l); err != nil && err != http.ErrServerClosed {
		return err
	}
	return nil
}

func cacheFor(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=300")
		h.ServeHTTP(w, r)
	})
}

func (s *Server) parseTemplates() error {
	funcs := template.FuncMap{
		"short":      shortVersion,
		"ago":        func(t time.Time) string { return ago(s.now(), t) },
		"clock":      func(t time.Time) string { return t.UTC().Format("15:04:05 UTC") },
		"pathEscape": url.PathEscape,
		"lower":      strings.ToLower,
		"pct":        func(f float64) string { return fmt.Sprintf("%.2f%%", f) },
		"placementURL": func(ws, name string) string {
			return "/placement/" + url.PathEscape(ws) + "/" + url.PathEscape(name)
		},
		"edgeURL": func(inv, name string) string {
			return "/edge/" + url.PathEscape(inv) + "/" + url.PathEscape(name)
		},
		"stateClass": func(state string) string {
			if i := strings.IndexByte(state, ' '); i > 0 {
				state = state[:i]
			}
			return "state-" + strings.ToLower(state)
		},
	}
	s.pages = map[string]*template.Template{}
	for _, page := range []string{"fleet", "placement", "edge", "error"} {
		t, err := template.New(page).Funcs(funcs).ParseFS(assets, "templates/layout.html", "templates/"+page+".html")
		if err != nil {
			return fmt.Errorf("dashboard template %s: %w", page, err)
		}
		s.pages[page] = t
	}
	return nil
}

// view is what every page's template gets.
type view struct {
	Title string
	// Page is the page's own URL (path and query), which its script refreshes.
	Page string
	// Now is when the data was read.
	Now time.Time
	// Error is set when the page's data could not be read; LastCurrent is then when it last
	// was (zero: never, since the dashboard started).
	Error       string
	LastCurrent time.Time
	// Partial lists what could not be read while the rest was.
	Partial []string
	Data    any
}

// render writes a page, or its live part alone (?fragment=1), or, when read failed, the error
// page in its place, with when the page's data was last current.
func (s *Server) render(w http.ResponseWriter, r *http.Request, page, title string, read func(ctx context.Context) (any, []error, error)) {
	ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
	defer cancel()
	v := view{Title: title, Page: r.URL.Path}
	q := r.URL.Query()
	q.Del("fragment")
	if len(q) > 0 {
		v.Page += "?" + q.Encode()
	}
	data, partial, err := read(ctx)
	v.Now = s.now()
	status := http.StatusOK
	s.mu.Lock()
	if err != nil {
		page, status = "error", http.StatusServiceUnavailable
		v.Error, v.LastCurrent = err.Error(), s.lastCurrent[r.URL.Path]
	} else {
		v.Data = data
		s.lastCurrent[r.URL.Path] = v.Now
	}
	s.mu.Unlock()
	for _, e := range partial {
		v.Partial = append(v.Partial, e.Error())
	}
	name := "layout"
	if r.URL.Query().Get("fragment") == "1" {
		name = "live"
	}
	var buf bytes.Buffer
	if err := s.pages[page].ExecuteTemplate(&buf, name, v); err != nil {
		http.Error(w, "rendering the page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

func (s *Server) serveFleet(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, "fleet", "Fleet", func(ctx context.Context) (any, []error, error) {
		f, err := s.read.fleet(ctx)
		if err != nil {
			return nil, nil, err
		}
		return f, f.Problems, nil
	})
}

func (s *Server) servePlacement(w http.ResponseWriter, r *http.Request) {
	wmw, name := r.PathValue("wmw"), r.PathValue("name")
	s.render(w, r, "placement", "Placement "+name, func(ctx context.Context) (any, []error, error) {
		p, err := s.read.placement(ctx, wmw, name, parseDestinationQuery(r.URL.Query()))
		return p, nil, err
	})
}

func (s *Server) serveEdge(w http.ResponseWriter, r *http.Request) {
	imw, name := r.PathValue("imw"), r.PathValue("name")
	s.render(w, r, "edge", "Edge cluster "+name, func(ctx context.Context) (any, []error, error) {
		e, err := s.read.edge(ctx, imw, name)
		return e, nil, err
	})
}
