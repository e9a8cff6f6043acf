package upsync

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/centerview"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// Up-synced objects are watched across all mailboxes at once, one informer per resource, through
// the virtual workspace of the export that serves the resource in mailboxes: mailbox.edge.kcp.io,
// whose permission claims every mailbox accepts, for kcp's built-in kinds, and
// workloads.edge.kcp.io for its own kinds (a mailbox binds it when it needs one of them). The
// informer of a resource runs only while some placement's spec.upsync can cover the resource.

// upsyncedSelector selects the objects that syncers up-synced into mailboxes. The workloads
// export's virtual workspace also shows the workload workspaces, where the objects the return
// path wrote bear LabelReturned besides LabelUpsynced.
var upsyncedSelector = edgev1alpha1.LabelUpsynced + "=true,!" + edgev1alpha1.LabelReturned

// byIdentity indexes up-synced objects by namespace/name, across mailboxes.
const byIdentity = "byIdentity"

// neverReturned are resources whose up-synced objects do not come back: a Namespace or a CRD
// made in a workload workspace by the edge would change where and what objects there are. The
// namespaces of up-synced objects are made as needed.
var neverReturned = map[schema.GroupResource]bool{
	namespacesGVR.GroupResource(): true,
	crdsGVR.GroupResource():       true,
}

// servedResources lists, by group and resource, the resources of a discovery that can be listed
// and watched, but no subresources.
func servedResources(lists []*metav1.APIResourceList) map[schema.GroupResource]schema.GroupVersionResource {
	out := map[schema.GroupResource]schema.GroupVersionResource{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			gvr := gv.WithResource(r.Name)
			if _, seen := out[gvr.GroupResource()]; seen || strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") || !slices.Contains(r.Verbs, "watch") {
				continue
			}
			// Discovery lists a group's versions preferred first: the first seen stays.
			out[gvr.GroupResource()] = gvr
		}
	}
	return out
}

// upsyncExportOf is the export whose virtual workspace shows the resource across mailboxes.
func upsyncExportOf(gr schema.GroupResource) string {
	if transport.IsKCPBuiltIn(gr) {
		return edgev1alpha1.MailboxAPIExportName
	}
	return edgev1alpha1.WorkloadsAPIExportName
}

// upsyncedWatch is the informer on one resource's up-synced objects in all mailboxes.
type upsyncedWatch struct {
	informer centerview.SharedInformer
	stop     context.CancelFunc
}

// sources runs the informers on up-synced objects.
type sources struct {
	c *Controller

	mu  sync.Mutex
	ctx context.Context
	// clients follow, per export, its virtual workspaces, once what they serve is known.
	clients map[string]*centerview.Endpoints
	// returnable are the resources whose up-synced objects can come back: served in mailboxes
	// through an export's virtual workspace, and in workload workspaces through edge.kcp.io's,
	// by group and resource, at the mailbox version.
	returnable map[schema.GroupResource]schema.GroupVersionResource
	// rules are the placements' spec.upsync; covered the returnable resources each can cover;
	// coverage how many placements can cover each.
	rules    map[PlacementKey][]edgev1alpha1.UpsyncSet
	covered  map[PlacementKey]map[schema.GroupResource]bool
	coverage map[schema.GroupResource]int
	watches  map[schema.GroupResource]*upsyncedWatch
}

func newSources(c *Controller) *sources {
	return &sources{
		c:          c,
		clients:    map[string]*centerview.Endpoints{},
		returnable: map[schema.GroupResource]schema.GroupVersionResource{},
		rules:      map[PlacementKey][]edgev1alpha1.UpsyncSet{},
		covered:    map[PlacementKey]map[schema.GroupResource]bool{},
		coverage:   map[schema.GroupResource]int{},
		watches:    map[schema.GroupResource]*upsyncedWatch{},
	}
}

// start finds, in the background, the virtual workspaces of the mailbox and workloads exports
// (kcp publishes each once some workspace binds the export) and what they serve.
func (s *sources) start(ctx context.Context) {
	s.mu.Lock()
	s.ctx = ctx
	s.mu.Unlock()
	for _, export := range []string{edgev1alpha1.MailboxAPIExportName, edgev1alpha1.WorkloadsAPIExportName} {
		go s.discover(ctx, export)
	}
}

// discover waits for the export's virtual workspace, learns which of its resources can come
// back, and starts the informers that the placements' rules need.
func (s *sources) discover(ctx context.Context, export string) {
	logger := klog.FromContext(ctx).WithValues("export", export)
	endpoints := s.c.cfg.Mailbox
	if export == edgev1alpha1.WorkloadsAPIExportName {
		endpoints = s.c.cfg.Workloads
	}
	// Every shard's virtual workspace of the export serves the same resources: one tells, the
	// first that answers (a shard may be down).
	var lists []*metav1.APIResourceList
	var url string
	_ = wait.ExponentialBackoffWithContext(ctx, wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.2, Steps: 1 << 30, Cap: 30 * time.Second},
		func(context.Context) (bool, error) {
			if _, ok := endpoints.WaitForURL(ctx, nil); !ok {
				return false, ctx.Err()
			}
			for _, url = range endpoints.URLs() {
				var err error
				if lists, err = centerview.DiscoverVirtualWorkspace(endpoints.Config(url)); err == nil {
					return true, nil
				}
				logger.Error(err, "discovering the resources of a virtual workspace; will retry", "url", url)
			}
			return false, nil
		})
	if ctx.Err() != nil {
		return
	}
	served := servedResources(lists)
	s.mu.Lock()
	s.clients[export] = endpoints
	for _, r := range s.c.caches.WorkloadResources {
		gr := r.GVR.GroupResource()
		if mgvr, ok := served[gr]; ok && upsyncExportOf(gr) == export && !neverReturned[gr] {
			s.returnable[gr] = mgvr
		}
	}
	for pk := range s.rules {
		s.coverLocked(pk)
	}
	s.runWatchesLocked()
	placements := make([]PlacementKey, 0, len(s.rules))
	for pk := range s.rules {
		placements = append(placements, pk)
	}
	s.mu.Unlock()
	logger.Info("up-synced objects of this export's kinds can come back", "discoveredAt", url)
	// The placements' Upsynced conditions can now say which of their rules cannot be honoured.
	for _, pk := range placements {
		s.c.queue.Add(queueKey{placement: pk})
	}
}

// setRules records a placement's spec.upsync (nil once the placement is gone), starts and stops
// informers as the resources that some placement can cover change, and says whether the rules
// changed.
func (s *sources) setRules(pk PlacementKey, rules []edgev1alpha1.UpsyncSet) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, had := s.rules[pk]
	if had == (len(rules) > 0) && equality.Semantic.DeepEqual(old, rules) {
		return false
	}
	for gr := range s.covered[pk] {
		s.coverage[gr]--
	}
	delete(s.covered, pk)
	if len(rules) == 0 {
		delete(s.rules, pk)
	} else {
		s.rules[pk] = rules
		s.coverLocked(pk)
	}
	s.runWatchesLocked()
	return true
}

// coverLocked records which returnable resources the placement's rules can cover.
func (s *sources) coverLocked(pk PlacementKey) {
	for gr := range s.covered[pk] {
		s.coverage[gr]--
	}
	covered := map[schema.GroupResource]bool{}
	for gr := range s.returnable {
		for i := range s.rules[pk] {
			if s.rules[pk][i].MatchesResource(gr.Group, gr.Resource) {
				covered[gr] = true
				s.coverage[gr]++
				break
			}
		}
	}
	s.covered[pk] = covered
}

// runWatchesLocked starts the informers of resources that some placement can cover, and stops
// the others.
func (s *sources) runWatchesLocked() {
	if s.ctx == nil {
		return
	}
	for gr, w := range s.watches {
		if s.coverage[gr] <= 0 {
			w.stop()
			delete(s.watches, gr)
			klog.FromContext(s.ctx).V(2).Info("stopped watching up-synced objects: no placement covers them any more", "resource", gr.String())
		}
	}
	for gr, n := range s.coverage {
		if n <= 0 {
			delete(s.coverage, gr)
			continue
		}
		client, known := s.clients[upsyncExportOf(gr)]
		if _, running := s.watches[gr]; running || !known {
			continue
		}
		ctx, stop := context.WithCancel(s.ctx)
		inf := client.NewInformer(s.returnable[gr], 0, cache.Indexers{byIdentity: identityIndex},
			func(o *metav1.ListOptions) { o.LabelSelector = upsyncedSelector })
		_, _ = inf.AddEventHandler(s.c.upsyncedHandler(gr))
		s.watches[gr] = &upsyncedWatch{informer: inf, stop: stop}
		klog.FromContext(ctx).V(2).Info("watching up-synced objects in all mailboxes", "resource", s.returnable[gr].String())
		go inf.Run(ctx.Done())
	}
}

// watch returns the informer on the up-synced objects of a resource. ready is false while what
// is known of them is incomplete: the export's virtual workspace is not known yet, or the
// informer has not synced (or not started: placements' rules that cover it were just recorded).
// A resource that cannot come back is ready, with no informer.
func (s *sources) watch(gr schema.GroupResource) (informer centerview.SharedInformer, ready bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if neverReturned[gr] {
		return nil, true
	}
	if !s.knownLocked(upsyncExportOf(gr)) {
		return nil, false
	}
	if _, ok := s.returnable[gr]; !ok {
		return nil, true
	}
	w, ok := s.watches[gr]
	if !ok || !centerview.Complete(w.informer) {
		// Complete, not HasSynced: a copy in a workload workspace whose up-synced original
		// is in a mailbox on a shard not listed yet would be taken for one to delete.
		return nil, false
	}
	return w.informer, true
}

// watching returns the running informers, by resource, for the resources the rules cover.
func (s *sources) watching(rules []edgev1alpha1.UpsyncSet) map[schema.GroupResource]centerview.SharedInformer {
	out := s.watchingAll()
	for gr := range out {
		covered := false
		for i := range rules {
			covered = covered || rules[i].MatchesResource(gr.Group, gr.Resource)
		}
		if !covered {
			delete(out, gr)
		}
	}
	return out
}

// unreturnable says which of the rules cannot be honoured, because they name resources that
// cannot come back. known is false while the virtual workspaces that would tell are not known.
func (s *sources) unreturnable(rules []edgev1alpha1.UpsyncSet) (problems []string, known bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	known = true
	for i, rule := range rules {
		for _, res := range rule.Resources {
			if res == "*" {
				continue
			}
			gr := schema.GroupResource{Group: rule.APIGroup, Resource: res}
			_, served := s.c.workloadResource(gr)
			switch {
			case neverReturned[gr]:
				problems = append(problems, fmt.Sprintf("spec.upsync[%d]: %s do not come back into a workload workspace (the namespaces of up-synced objects are made as needed)", i, gr))
			case !served:
				problems = append(problems, fmt.Sprintf("spec.upsync[%d]: %s cannot come back: edge.kcp.io claims only kcp's built-in workload kinds and those of %s (objects of custom and other kinds stay in the mailboxes)", i, gr, edgev1alpha1.WorkloadsAPIExportName))
			case !s.knownLocked(upsyncExportOf(gr)):
				known = false
			default:
				if _, ok := s.returnable[gr]; !ok {
					problems = append(problems, fmt.Sprintf("spec.upsync[%d]: %s cannot come back: the virtual workspace of %s does not show it across mailboxes", i, gr, upsyncExportOf(gr)))
				}
			}
		}
		if slices.Contains(rule.Resources, "*") {
			if len(s.clients) < 2 {
				known = false
				continue
			}
			found := false
			for gr := range s.returnable {
				found = found || gr.Group == rule.APIGroup
			}
			if !found {
				problems = append(problems, fmt.Sprintf("spec.upsync[%d]: no resource of group %q can come back", i, rule.APIGroup))
			}
		}
	}
	return problems, known
}

// knownLocked: the export's virtual workspace is known.
func (s *sources) knownLocked(export string) bool {
	_, known := s.clients[export]
	return known
}

// identityIndex is the byIdentity index function.
func identityIndex(obj any) ([]string, error) {
	u := centerview.AsUnstructured(obj)
	if u == nil {
		return nil, nil
	}
	return []string{u.GetNamespace() + "/" + u.GetName()}, nil
}

// isUpsyncedInMailbox: the object was up-synced into a mailbox by a syncer (which also labels
// the namespaces it makes there, but does not annotate them with their origin).
func isUpsyncedInMailbox(u *unstructured.Unstructured) bool {
	return u != nil && u.GetLabels()[edgev1alpha1.LabelUpsynced] == "true" && u.GetLabels()[edgev1alpha1.LabelReturned] != "true" &&
		u.GetAnnotations()[edgev1alpha1.AnnotationUpsyncedFrom] != ""
}

// watchingAll returns every running informer, by resource.
func (s *sources) watchingAll() map[schema.GroupResource]centerview.SharedInformer {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[schema.GroupResource]centerview.SharedInformer{}
	for gr, w := range s.watches {
		out[gr] = w.informer
	}
	return out
}
