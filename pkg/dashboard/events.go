package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// keepAlive is how often an idle event stream sends a comment, so that a dead connection shows.
const keepAlive = 15 * time.Second

// watchTarget is one collection a page's stream watches.
type watchTarget struct {
	ws       string
	gvr      schema.GroupVersionResource
	ns       string
	name     string
	describe string
}

// watchesFor says what to watch for the page at u: what the page shows, read again when any of
// it changes. The destinations' assemblages of a placement's page are followed by their mirrors
// (the watches that feed the page), whose changes come under the topic that watchesFor returns
// (their name), and through the placement's status, which the status summarizer rewrites.
func (s *Server) watchesFor(ctx context.Context, u *url.URL) ([]watchTarget, string, error) {
	parts := strings.Split(strings.Trim(u.EscapedPath(), "/"), "/")
	for i := range parts {
		p, err := url.PathUnescape(parts[i])
		if err != nil {
			return nil, "", err
		}
		parts[i] = p
	}
	var out []watchTarget
	topic := ""
	switch {
	case len(parts) == 1 && parts[0] == "":
		inventories := map[string]bool{}
		for _, p := range s.read.imws {
			inventories[p.String()] = true
		}
		for _, wmw := range s.read.wmws {
			out = append(out,
				watchTarget{ws: wmw.String(), gvr: placementsGVR, describe: "EdgePlacements"},
				watchTarget{ws: wmw.String(), gvr: slicesGVR, describe: "SinglePlacementSlices"})
			dests, _, err := s.read.destinations(ctx, wmw.String())
			if apierrors.IsForbidden(err) || apierrors.IsNotFound(err) {
				continue // a workspace the user may not read: the page's banner names it
			}
			if err != nil {
				return nil, "", err
			}
			for _, ds := range dests {
				for _, d := range ds {
					inventories[d.Cluster] = true
				}
			}
		}
		for _, inv := range sortedKeys(inventories) {
			out = append(out, watchTarget{ws: inv, gvr: syncTargetsGVR, describe: "SyncTargets"})
		}
	case len(parts) == 3 && parts[0] == "placement":
		wmw, name := parts[1], parts[2]
		out = append(out,
			watchTarget{ws: wmw, gvr: placementsGVR, name: name, describe: "EdgePlacement " + name},
			watchTarget{ws: wmw, gvr: slicesGVR, describe: "SinglePlacementSlices"})
		dests, cluster, err := s.read.destinations(ctx, wmw)
		if err != nil {
			return nil, "", err
		}
		if cluster != "" {
			topic = transport.AssemblageName(cluster, name)
		}
		for _, inv := range uniqueClusters(dests[name]) {
			out = append(out, watchTarget{ws: inv, gvr: syncTargetsGVR, describe: "SyncTargets"})
		}
	case len(parts) == 3 && parts[0] == "edge":
		inv, name := parts[1], parts[2]
		out = append(out, watchTarget{ws: inv, gvr: syncTargetsGVR, name: name, describe: "SyncTarget " + name},
			watchTarget{ws: inv, gvr: locationsGVR, describe: "Locations"})
		page, err := s.read.edge(ctx, inv, name)
		if err != nil {
			return nil, "", err
		}
		if mb := page.SyncTarget.Status.MailboxWorkspace; mb != "" {
			out = append(out,
				watchTarget{ws: mb, gvr: assemblagesGVR, describe: "assemblages"},
				watchTarget{ws: mb, gvr: leasesGVR, ns: transport.SyncerNamespace, name: transport.HeartbeatLease, describe: "the heartbeat Lease"})
		}
	default:
		return nil, "", fmt.Errorf("no such page: %s", u.Path)
	}
	return out, topic, nil
}

// serveEvents streams "change" when what the page named by ?page= shows changes, and "problem"
// when it cannot be watched (kcp unreachable, credentials refused), trying again every few
// seconds for as long as the page is open, and "change" once it can again.
func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request) {
	page, err := url.Parse(r.URL.Query().Get("page"))
	if err != nil || !strings.HasPrefix(page.Path, "/") {
		http.Error(w, "?page= must name a page of the dashboard", http.StatusBadRequest)
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	ctx := r.Context()
	version := 0
	send := func(event, data string) bool {
		version++
		_, err := fmt.Fprintf(w, "event: %s\nid: %d\ndata: %s\n\n", event, version, strings.ReplaceAll(data, "\n", " "))
		flusher.Flush()
		return err == nil
	}
	fmt.Fprint(w, "retry: 2000\n\n")
	flusher.Flush()
	backoff := time.Second
	failing := false
	for ctx.Err() == nil {
		err := s.watchPage(ctx, page, func() bool {
			if failing {
				failing, backoff = false, time.Second
			}
			return send("change", "")
		}, func() bool {
			_, err := fmt.Fprint(w, ": keep-alive\n\n")
			flusher.Flush()
			return err == nil
		}, failing)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			// A watch ended by itself, as watches do now and then: the page reads again, for
			// what changed between that watch and the next.
			if !send("change", "") {
				return
			}
			continue
		}
		failing = true
		if !send("problem", err.Error()) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 4*time.Second)
	}
}

// watchPage watches what the page shows until a watch fails or ends; it calls changed, at most
// once per watchDelay, when anything changes, and once at the start when recovering (failing).
func (s *Server) watchPage(ctx context.Context, page *url.URL, changed, alive func() bool, failing bool) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	targets, topic, err := s.watchesFor(ctx, page)
	if err != nil {
		return err
	}
	events := make(chan struct{}, 1)
	if topic != "" {
		assemblages, unsubscribe := s.read.assemblageChanges.subscribe(topic)
		defer unsubscribe()
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-assemblages:
					select {
					case events <- struct{}{}:
					default:
					}
				}
			}
		}()
	}
	ended := make(chan error, len(targets))
	for _, t := range targets {
		client, err := s.read.resource(t.ws, t.gvr)
		if err != nil {
			return err
		}
		var ri dynamic.ResourceInterface = client
		if t.ns != "" {
			ri = client.Namespace(t.ns)
		}
		opts := metav1.ListOptions{Limit: 1}
		if t.name != "" {
			opts.FieldSelector = fields.OneTermEqualSelector("metadata.name", t.name).String()
		}
		l, err := ri.List(ctx, opts)
		if (apierrors.IsForbidden(err) || apierrors.IsNotFound(err)) && len(targets) > 1 {
			// The page says so in a banner; the rest of what it shows is still followed.
			continue
		}
		if err != nil {
			return readError(t.describe, t.ws, err)
		}
		opts.Limit, opts.ResourceVersion = 0, l.GetResourceVersion()
		wi, err := ri.Watch(ctx, opts)
		if err != nil {
			return readError(t.describe, t.ws, err)
		}
		go func(t watchTarget, wi watch.Interface) {
			defer wi.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case ev, ok := <-wi.ResultChan():
					if !ok {
						ended <- nil
						return
					}
					if ev.Type == watch.Error {
						ended <- readError(t.describe, t.ws, fmt.Errorf("the watch failed: %v", ev.Object))
						return
					}
					select {
					case events <- struct{}{}:
					default:
					}
				}
			}
		}(t, wi)
	}
	if failing && !changed() {
		cancel()
		return nil
	}
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-ended:
			// A watch ends by itself now and then; the next one starts at once, and kcp going
			// away shows as the next start failing.
			return err
		case <-tick.C:
			if !alive() {
				return nil
			}
		case <-events:
			time.Sleep(s.watchDelay)
			select {
			case <-events:
			default:
			}
			if !changed() {
				cancel()
				return nil
			}
		}
	}
}
