package centerview

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// reachability records whether the last request through one virtual workspace URL reached its
// shard. Every client that Endpoints builds for a URL goes through it: an informer's list or
// watch and a controller's write alike. A request that got any answer, an error status included,
// reached the shard; one that failed in transport (connection refused, reset, timed out) did
// not. A request cancelled by its caller says nothing.
type reachability struct {
	mu sync.Mutex
	// since is when the requests started failing, zero while they succeed.
	since time.Time
	// lastErr is the last transport error.
	lastErr string
	now     func() time.Time
}

// observe records the outcome of one request.
func (r *reachability) observe(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		r.since, r.lastErr = time.Time{}, ""
		return
	}
	if r.since.IsZero() {
		r.since = r.now()
	}
	r.lastErr = err.Error()
}

// down returns since when the shard has been unreachable, and the last error, if it is.
func (r *reachability) down() (time.Time, string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.since, r.lastErr, !r.since.IsZero()
}

// roundTripper passes requests on and records whether they reached the shard.
type roundTripper struct {
	next http.RoundTripper
	r    *reachability
}

func (t *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil && req.Context().Err() != nil {
		return resp, err // cancelled by the caller: no news of the shard
	}
	t.r.observe(err)
	return resp, err
}

// ShardOutage describes a shard that edge-controller-manager cannot reach.
type ShardOutage struct {
	// Shard is the shard's name, as its Shard object in root says, or the host of its virtual
	// workspace URL when the Shard objects cannot be read.
	Shard string
	// URL is the virtual workspace URL that failed.
	URL string
	// Since is when the requests to it started failing.
	Since time.Time
	// Err is the last error.
	Err string
}

func (o ShardOutage) String() string {
	return fmt.Sprintf("shard %s unreachable since %s (%s)", o.Shard, o.Since.UTC().Format(time.RFC3339), o.Err)
}

// Outage says whether the shard that holds the logical cluster is unreachable now, and which it
// is. The shard of a logical cluster is the one whose informers showed an object of it (they
// keep what they last listed while their shard is down); if none did and exactly one followed
// URL has never been listed in full (its shard was down when edge-controller-manager started),
// the logical cluster, absent from every complete shard, is on that one.
func (e *Endpoints) Outage(ctx context.Context, cluster logicalcluster.Name) (ShardOutage, bool) {
	e.mu.Lock()
	u, found := e.urlOfLocked(cluster)
	if !found {
		var unlisted []string
		for _, candidate := range e.urls {
			for _, i := range e.informers {
				if !i.shardListed(candidate) {
					unlisted = append(unlisted, candidate)
					break
				}
			}
		}
		if len(unlisted) == 1 {
			u, found = unlisted[0], true
		}
	}
	r := e.health[u]
	e.mu.Unlock()
	if !found || r == nil {
		return ShardOutage{}, false
	}
	since, lastErr, down := r.down()
	if !down {
		return ShardOutage{}, false
	}
	return ShardOutage{Shard: e.shardName(ctx, u), URL: u, Since: since, Err: lastErr}, true
}

// unreachable says whether requests through url fail now.
func (e *Endpoints) unreachable(url string) bool {
	e.mu.Lock()
	r := e.health[url]
	e.mu.Unlock()
	if r == nil {
		return false
	}
	_, _, down := r.down()
	return down
}

// shardName names the shard whose virtual workspace URL is u: the Shard object in root whose
// spec.virtualWorkspaceURL (or, without one, spec.baseURL) u starts with. Names found are
// remembered; when the Shard objects cannot be read (the credential may not list them), u's
// host stands for the name.
func (e *Endpoints) shardName(ctx context.Context, u string) string {
	e.mu.Lock()
	name, ok := e.shardNames[u]
	e.mu.Unlock()
	if ok {
		return name
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	list, err := e.kcp.Cluster(logicalcluster.NewPath("root")).CoreV1alpha1().Shards().List(ctx, metav1.ListOptions{})
	if err != nil {
		klog.FromContext(ctx).V(2).Info("cannot read the Shard objects in root; naming a shard by its host", "url", u, "err", err.Error())
		return hostOf(u)
	}
	name = shardNameOf(u, list.Items)
	if name == "" {
		return hostOf(u)
	}
	e.mu.Lock()
	e.shardNames[u] = name
	e.mu.Unlock()
	return name
}

// shardNameOf returns the name of the shard whose virtual workspace URL (or base URL, if it has
// none) is a prefix of u, the longest such if several are; "" if none is.
func shardNameOf(u string, shards []corev1alpha1.Shard) string {
	best, bestLen := "", 0
	for _, s := range shards {
		base := s.Spec.VirtualWorkspaceURL
		if base == "" {
			base = s.Spec.BaseURL
		}
		base = strings.TrimSuffix(base, "/")
		if base == "" || len(base) <= bestLen {
			continue
		}
		if u == base || strings.HasPrefix(u, base+"/") {
			best, bestLen = s.Name, len(base)
		}
	}
	return best
}

// hostOf is the host:port of a URL, or the URL itself if it has none.
func hostOf(u string) string {
	if parsed, err := url.Parse(u); err == nil && parsed.Host != "" {
		return parsed.Host
	}
	return u
}
