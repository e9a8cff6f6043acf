package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/fleetview"
	"github.com/kcp-dev/edge-mc/pkg/transport"
	"github.com/kcp-dev/edge-mc/pkg/workspaces"
)

var (
	placementsGVR  = edgev1alpha1.SchemeGroupVersion.WithResource("edgeplacements")
	slicesGVR      = edgev1alpha1.SchemeGroupVersion.WithResource("singleplacementslices")
	syncTargetsGVR = edgev1alpha1.SchemeGroupVersion.WithResource("synctargets")
	locationsGVR   = edgev1alpha1.SchemeGroupVersion.WithResource("locations")
	assemblagesGVR = edgev1alpha1.SchemeGroupVersion.WithResource("assemblages")
	leasesGVR      = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
)

// maxListedEdges bounds the edge clusters that the fleet page lists as not ready, so that the
// page stays small when a whole fleet's syncers are down; the count says how many there are.
const maxListedEdges = 50

// listParallel bounds the mirrors' lists in flight at once (when a placement's page is first
// read, one per destination's mailbox).
const listParallel = 16

// assemblageWait bounds how long a placement's page waits for its destinations' assemblages to be
// first read; the rows of those not read by then say so.
const assemblageWait = 10 * time.Second

// reader reads the fleet from kcp with the user's credentials: get and list only.
type reader struct {
	base *rest.Config
	wmws []logicalcluster.Path
	imws []logicalcluster.Path

	mu      sync.Mutex
	clients map[string]dynamic.Interface
	kcp     kcpclientset.ClusterInterface

	// mirrors keep the SinglePlacementSlices of the workload workspaces, the SyncTargets of the
	// inventory workspaces, and the destinations' assemblages of the placements viewed.
	mirrors *mirrorSet
	// assemblageChanges tells a placement's page's event stream that one of its destinations'
	// assemblages changed (the topic is the assemblage's name).
	assemblageChanges *changeBus
}

func newReader(ctx context.Context, base *rest.Config, wmws, imws []logicalcluster.Path, now func() time.Time) (*reader, error) {
	kcp, err := kcpclientset.NewForConfig(base)
	if err != nil {
		return nil, err
	}
	return &reader{base: base, wmws: wmws, imws: imws, clients: map[string]dynamic.Interface{}, kcp: kcp,
		mirrors: newMirrorSet(ctx, listParallel, now), assemblageChanges: newChangeBus()}, nil
}

// client returns the dynamic client of one workspace (a path or a logical cluster's name).
func (r *reader) client(ws string) (dynamic.Interface, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.clients[ws]; c != nil {
		return c, nil
	}
	c, err := dynamic.NewForConfig(workspaces.ConfigFor(r.base, logicalcluster.NewPath(ws)))
	if err != nil {
		return nil, err
	}
	r.clients[ws] = c
	return c, nil
}

func (r *reader) resource(ws string, gvr schema.GroupVersionResource) (dynamic.NamespaceableResourceInterface, error) {
	c, err := r.client(ws)
	if err != nil {
		return nil, err
	}
	return c.Resource(gvr), nil
}

// readFailure is a failed read, said in words a user acts on; it unwraps to the client's error.
type readFailure struct {
	text string
	err  error
}

func (e *readFailure) Error() string { return e.text }
func (e *readFailure) Unwrap() error { return e.err }

// readError says what failed in words a user acts on.
func readError(what, ws string, err error) error {
	var netErr net.Error
	var urlErr *url.Error
	text := fmt.Sprintf("reading %s in %s: %v", what, ws, err)
	switch {
	case apierrors.IsUnauthorized(err):
		text = fmt.Sprintf("kcp refused your credentials reading %s in %s (401 Unauthorized): they may have expired; log in again or renew the kubeconfig's token, and the page recovers by itself", what, ws)
	case apierrors.IsForbidden(err):
		text = fmt.Sprintf("your credentials may not read %s in workspace %s (403 Forbidden); ask its admin for get, list and watch there, or leave it out", what, ws)
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		text = fmt.Sprintf("workspace %s does not exist or serves no %s: is the path right, and does it bind edge.kcp.io?", ws, what)
	case errors.As(err, &urlErr) || errors.As(err, &netErr):
		text = fmt.Sprintf("cannot reach kcp reading %s in %s: %v", what, ws, err)
	case errors.Is(err, context.DeadlineExceeded):
		text = fmt.Sprintf("kcp did not answer in time reading %s in %s", what, ws)
	}
	return &readFailure{text: text, err: err}
}

func decode[T any](u *unstructured.Unstructured, into *T) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
		return fmt.Errorf("decoding %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return nil
}

// workloadWorkspace is what the fleet page shows of one workload workspace.
type workloadWorkspace struct {
	Path       string
	Cluster    string
	Placements []placementRow
	// destinations of each placement, by name (the fleet page needs only their inventories).
	destinations map[string][]edgev1alpha1.SinglePlacement
}

// placementRow is one placement on the fleet page.
type placementRow struct {
	Workspace    string
	Name         string
	State        string
	Destinations int32
	Counts       edgev1alpha1.DestinationCounts
	Bars         []bar
	Problems     []metav1.Condition
	Broken       []edgev1alpha1.BrokenEntry
	BrokenCount  int32
	Rollout      *rolloutView
}

// rolloutView is a placement's rollout as the pages show it.
type rolloutView struct {
	Revision   string
	Paused     bool
	PausedAt   string
	InProgress bool
	// Complete: the current revision's history entry has a completion time.
	Complete bool
	Stages   []edgev1alpha1.StageStatus
	History  []edgev1alpha1.RevisionHistory
}

// bar is one state's part of a placement's bar.
type bar struct {
	State      string
	Count      int32
	X, Percent float64
}

// edgeRow is one SyncTarget on the fleet page.
type edgeRow struct {
	Inventory   string
	Name        string
	SyncerReady string
	Reason      string
	Message     string
	Since       *metav1.Time
}

func newPlacementRow(ws string, p *edgev1alpha1.EdgePlacement) placementRow {
	row := placementRow{
		Workspace: ws, Name: p.Name, State: fleetview.PlacementState(p),
		Destinations: p.Status.MatchingSyncTargetCount, Problems: fleetview.ProblemConditions(p),
		Broken: p.Status.Broken, BrokenCount: p.Status.BrokenCount,
	}
	if p.Status.Summary != nil {
		row.Counts = *p.Status.Summary
	}
	c := row.Counts
	x := 0.0
	for _, b := range []bar{{State: "Ready", Count: c.Ready}, {State: "Applied", Count: c.Applied}, {State: "Pending", Count: c.Pending}, {State: "Failed", Count: c.Failed}, {State: "Stale", Count: c.Stale}} {
		if row.Destinations > 0 && b.Count > 0 {
			b.X, b.Percent = x, 100*float64(b.Count)/float64(row.Destinations)
			x += b.Percent
			row.Bars = append(row.Bars, b)
		}
	}
	row.Rollout = newRolloutView(p)
	return row
}

func newRolloutView(p *edgev1alpha1.EdgePlacement) *rolloutView {
	s := p.Status.Rollout
	if s == nil && p.Spec.Rollout == nil {
		return nil
	}
	v := &rolloutView{Paused: p.Spec.Rollout != nil && p.Spec.Rollout.Paused}
	if s != nil {
		v.Revision, v.PausedAt, v.Stages, v.History = s.Revision, s.PausedAt, s.Stages, s.History
		for _, h := range s.History {
			if h.Revision == s.Revision && h.CompletedTime != nil {
				v.Complete = true
			}
		}
		for _, st := range s.Stages {
			if st.InFlight > 0 || st.Waiting > 0 || st.Updated < st.Destinations {
				v.InProgress = true
			}
		}
	}
	return v
}

// fleet is what the fleet page shows.
type fleet struct {
	Workspaces []workloadWorkspace
	// StaleEdges are the SyncTargets whose syncer is not ready, of every inventory workspace
	// that the placements reach or --imw names.
	StaleEdges []edgeRow
	// StaleCount counts them all; StaleEdges lists the first maxListedEdges by inventory and name.
	StaleCount int
	EdgeCount  int
	Rollouts   []placementRow
	Broken     []placementRow
	Problems   []error
}

func (r *reader) fleet(ctx context.Context) (*fleet, error) {
	f := &fleet{}
	inventories := map[string]bool{}
	for _, p := range r.imws {
		inventories[p.String()] = true
	}
	for _, wmw := range r.wmws {
		ws, err := r.workloadWorkspace(ctx, wmw.String())
		if err != nil {
			f.Problems = append(f.Problems, err)
			continue
		}
		for _, dests := range ws.destinations {
			for _, d := range dests {
				inventories[d.Cluster] = true
			}
		}
		for _, row := range ws.Placements {
			if row.Rollout != nil && (row.Rollout.InProgress || row.Rollout.Paused) {
				f.Rollouts = append(f.Rollouts, row)
			}
			if row.BrokenCount > 0 || len(row.Problems) > 0 {
				f.Broken = append(f.Broken, row)
			}
		}
		f.Workspaces = append(f.Workspaces, *ws)
	}
	for _, inv := range sortedKeys(inventories) {
		sts, err := r.syncTargets(ctx, inv)
		if err != nil {
			f.Problems = append(f.Problems, err)
			continue
		}
		f.EdgeCount += len(sts)
		for _, st := range sts {
			if st.NotReady {
				f.StaleCount++
				if len(f.StaleEdges) < maxListedEdges {
					f.StaleEdges = append(f.StaleEdges, st.Row)
				}
			}
		}
	}
	if len(f.Problems) > 0 && len(f.Workspaces) == 0 {
		return nil, errors.Join(f.Problems...)
	}
	return f, nil
}

// edgeRowOf is a SyncTarget's row, and whether its syncer is not ready (silent, or never heard).
func edgeRowOf(inv string, st *edgev1alpha1.SyncTarget) (edgeRow, bool) {
	row := edgeRow{Inventory: inv, Name: st.Name, SyncerReady: "Unknown", Reason: "NoCondition", Message: "the mailbox controller has not reported on this SyncTarget yet"}
	if c := meta.FindStatusCondition(st.Status.Conditions, edgev1alpha1.SyncTargetSyncerReady); c != nil {
		row.SyncerReady, row.Reason, row.Message, row.Since = string(c.Status), c.Reason, c.Message, &c.LastTransitionTime
	}
	return row, row.SyncerReady != string(metav1.ConditionTrue)
}

func (r *reader) workloadWorkspace(ctx context.Context, wmw string) (*workloadWorkspace, error) {
	placements, err := r.resource(wmw, placementsGVR)
	if err != nil {
		return nil, err
	}
	list, err := placements.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, readError("EdgePlacements", wmw, err)
	}
	ws := &workloadWorkspace{Path: wmw}
	for i := range list.Items {
		p := edgev1alpha1.EdgePlacement{}
		if err := decode(&list.Items[i], &p); err != nil {
			return nil, err
		}
		ws.Cluster = logicalcluster.From(&p).String()
		ws.Placements = append(ws.Placements, newPlacementRow(wmw, &p))
	}
	sort.Slice(ws.Placements, func(i, j int) bool { return ws.Placements[i].Name < ws.Placements[j].Name })
	if ws.destinations, _, err = r.destinations(ctx, wmw); err != nil {
		return nil, err
	}
	return ws, nil
}

// destination is one row of a placement's destinations table.
type destination struct {
	Inventory  string
	SyncTarget string
	Location   string
	State      string
	Reason     string
	Version    string
	Applied    string
}

// placementPage is what a placement's page shows.
type placementPage struct {
	Row          placementRow
	Placement    *edgev1alpha1.EdgePlacement
	Destinations destinationPage
	// Collected are the results of the StatusCollectors that the placement names, in the order
	// of spec.statusCollectors.
	Collected []collectedView
}

// collectedView is one StatusCollector's results over a placement's destinations, as the
// placement's status.collected has them, each value shown as kubectl edge status --collect shows it.
type collectedView struct {
	Name    string
	Columns []string
	Rows    [][]string
	// Status is nil until the status summarizer has written the collector's results.
	Status *edgev1alpha1.CollectedStatus
}

func collectedViews(p *edgev1alpha1.EdgePlacement) []collectedView {
	byName := map[string]*edgev1alpha1.CollectedStatus{}
	for i := range p.Status.Collected {
		byName[p.Status.Collected[i].Name] = &p.Status.Collected[i]
	}
	names := append([]string(nil), p.Spec.StatusCollectors...)
	for _, c := range p.Status.Collected {
		if !slices.Contains(names, c.Name) {
			names = append(names, c.Name)
		}
	}
	out := make([]collectedView, 0, len(names))
	for _, name := range names {
		v := collectedView{Name: name, Status: byName[name]}
		if c := v.Status; c != nil {
			v.Columns = c.Columns
			for _, row := range c.Rows {
				cells := make([]string, len(row.Values))
				for i, value := range row.Values {
					cells[i] = fleetview.CollectedCell(value.Raw)
				}
				v.Rows = append(v.Rows, cells)
			}
		}
		out = append(out, v)
	}
	return out
}

func (r *reader) placement(ctx context.Context, wmw, name string, q destinationQuery) (*placementPage, error) {
	client, err := r.resource(wmw, placementsGVR)
	if err != nil {
		return nil, err
	}
	u, err := client.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("there is no EdgePlacement %q in %s", name, wmw)
	}
	if err != nil {
		return nil, readError("EdgePlacement "+name, wmw, err)
	}
	p := &edgev1alpha1.EdgePlacement{}
	if err := decode(u, p); err != nil {
		return nil, err
	}
	all, _, err := r.destinations(ctx, wmw)
	if err != nil {
		return nil, err
	}
	rows, err := r.destinationStates(ctx, logicalcluster.From(p).String(), name, all[name])
	if err != nil {
		return nil, err
	}
	return &placementPage{Row: newPlacementRow(wmw, p), Placement: p, Destinations: q.apply(rows), Collected: collectedViews(p)}, nil
}

// destinationStates says each destination's state: stale when its syncer is silent, or else
// what the assemblage in its mailbox says, from the mirrors (one per destination, started by
// the first read of the placement's page).
func (r *reader) destinationStates(ctx context.Context, cluster, placement string, dests []edgev1alpha1.SinglePlacement) ([]destination, error) {
	targets := map[string]targetInfo{}
	for _, inv := range uniqueClusters(dests) {
		sts, err := r.syncTargets(ctx, inv)
		if err != nil {
			return nil, err
		}
		for _, st := range sts {
			targets[inv+"|"+st.Row.Name] = st
		}
	}
	rows := make([]destination, len(dests))
	name := transport.AssemblageName(cluster, placement)
	mirrors := make([]*mirror[assemblageInfo], len(dests))
	for i, d := range dests {
		rows[i] = destination{Inventory: d.Cluster, SyncTarget: d.SyncTargetName, Location: d.LocationName}
		st, ok := targets[d.Cluster+"|"+d.SyncTargetName]
		switch {
		case !ok:
			rows[i].State, rows[i].Reason = string(transport.StatePending), "the SyncTarget is gone from its inventory workspace"
			continue
		case st.Mailbox == "":
			rows[i].State, rows[i].Reason = string(transport.StatePending), "the SyncTarget has no mailbox yet"
			continue
		}
		if st.Silent {
			rows[i].State, rows[i].Reason = string(transport.StateStale), st.SilentMessage
		}
		// Every mirror first, so that their first lists run side by side.
		mirrors[i] = r.assemblageMirror(st.Mailbox, name)
	}
	wait, cancel := context.WithTimeout(ctx, assemblageWait)
	defer cancel()
	for i, m := range mirrors {
		if m != nil {
			assemblageState(wait, &rows[i], m, name)
		}
	}
	return rows, ctx.Err()
}

// assemblageState fills a destination's row from its assemblage's mirror.
func assemblageState(ctx context.Context, row *destination, m *mirror[assemblageInfo], name string) {
	var a assemblageInfo
	found := false
	err := m.read(ctx, func(items map[string]assemblageInfo) { a, found = items[name] })
	stale := row.State == string(transport.StateStale)
	switch {
	case errors.Is(err, errNotReadYet):
		if !stale {
			row.State = "Unknown"
		}
		row.Reason = "not read yet: the dashboard has just started to follow this destination's assemblage; the page updates when it arrives"
	case err != nil:
		if !stale {
			row.State = "Unknown"
		}
		row.Reason = err.Error()
	case !found:
		if !stale {
			row.State, row.Reason = string(transport.StatePending), "no assemblage in the mailbox yet"
		}
	default:
		row.Version, row.Applied = a.Version, a.Applied
		if !stale {
			row.State, row.Reason = a.State, a.Reason
		}
	}
}

func uniqueClusters(dests []edgev1alpha1.SinglePlacement) []string {
	seen := map[string]bool{}
	for _, d := range dests {
		seen[d.Cluster] = true
	}
	return sortedKeys(seen)
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// edgePage is what an edge cluster's page shows.
type edgePage struct {
	Inventory  string
	SyncTarget *edgev1alpha1.SyncTarget
	Row        edgeRow
	Locations  []edgev1alpha1.Location
	Heartbeat  *metav1.MicroTime
	// HeartbeatProblem says why the heartbeat could not be read ("" when it was, or when there is
	// none yet).
	HeartbeatProblem string
	Shard            string
	Assemblages      []fleetview.Assemblage
	Labels           []labelPair
}

type labelPair struct{ Key, Value string }

func (r *reader) edge(ctx context.Context, inv, name string) (*edgePage, error) {
	client, err := r.resource(inv, syncTargetsGVR)
	if err != nil {
		return nil, err
	}
	u, err := client.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("there is no SyncTarget %q in %s", name, inv)
	}
	if err != nil {
		return nil, readError("SyncTarget "+name, inv, err)
	}
	page := &edgePage{Inventory: inv, SyncTarget: &edgev1alpha1.SyncTarget{}}
	if err := decode(u, page.SyncTarget); err != nil {
		return nil, err
	}
	page.Row, _ = edgeRowOf(inv, page.SyncTarget)
	page.Labels = labelPairs(page.SyncTarget.Labels)
	err = r.locationsMirror(inv).read(ctx, func(items map[string]locationInfo) {
		for _, l := range items {
			if l.Selector != nil && l.Selector.Matches(labels.Set(page.SyncTarget.Labels)) {
				page.Locations = append(page.Locations, l.Location)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(page.Locations, func(i, j int) bool { return page.Locations[i].Name < page.Locations[j].Name })
	mailbox := page.SyncTarget.Status.MailboxWorkspace
	if mailbox == "" {
		return page, nil
	}
	mbPath, err := workspaces.ParsePath(mailbox)
	if err != nil {
		return nil, fmt.Errorf("SyncTarget %s names mailbox %q: %w", name, mailbox, err)
	}
	page.Shard = workspaces.ShardOf(ctx, r.kcp, mbPath)
	leases, err := r.resource(mailbox, leasesGVR)
	if err != nil {
		return nil, err
	}
	switch lu, err := leases.Namespace(transport.SyncerNamespace).Get(ctx, transport.HeartbeatLease, metav1.GetOptions{}); {
	case apierrors.IsNotFound(err):
	case err != nil:
		page.HeartbeatProblem = readError("the heartbeat Lease", mailbox, err).Error()
	default:
		lease := coordinationv1.Lease{}
		if err := decode(lu, &lease); err == nil {
			page.Heartbeat = lease.Spec.RenewTime
		}
	}
	asm, err := r.resource(mailbox, assemblagesGVR)
	if err != nil {
		return nil, err
	}
	list, err := asm.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, readError("the assemblages of the mailbox", mailbox, err)
	}
	if page.Assemblages, err = fleetview.Assemblages(list.Items); err != nil {
		return nil, fmt.Errorf("mailbox %s: %w", mailbox, err)
	}
	return page, nil
}

func labelPairs(m map[string]string) []labelPair {
	out := make([]labelPair, 0, len(m))
	for k, v := range m {
		out = append(out, labelPair{k, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// shortVersion is the start of an assemblage's version (a content hash).
func shortVersion(v string) string {
	if v == "" {
		return "-"
	}
	return v[:min(len(v), 12)]
}

func ago(now time.Time, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t).Round(time.Second)
	if d < 0 {
		d = 0
	}
	return d.String() + " ago"
}
