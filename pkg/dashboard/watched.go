package dashboard

import (
	"context"
	"sort"
	"sync"

	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// The mirrors that the pages read (see mirror.go): what they keep of each object.

// sliceInfo is what the dashboard keeps of a SinglePlacementSlice.
type sliceInfo struct {
	// Owner is the EdgePlacement that owns it ("" for none); Cluster its logical cluster.
	Owner, Cluster string
	Destinations   []edgev1alpha1.SinglePlacement
}

// targetInfo is what the dashboard keeps of a SyncTarget.
type targetInfo struct {
	// Row is its row of the fleet page; NotReady: its syncer is not ready.
	Row      edgeRow
	NotReady bool
	Mailbox  string
	// Silent: its syncer has gone silent past the grace period (stale); SilentMessage says so.
	Silent        bool
	SilentMessage string
}

// locationInfo is what the dashboard keeps of a Location: itself (its labels and description
// are on the edge page), and its instanceSelector (nil when it is not valid, and selects nothing).
type locationInfo struct {
	Location edgev1alpha1.Location
	Selector labels.Selector
}

func (r *reader) locationsMirror(inv string) *mirror[locationInfo] {
	return mirrorFor(r.mirrors, "locations|"+inv, func() *mirror[locationInfo] {
		m := newMirror[locationInfo]("Locations", inv)
		m.convert = func(u *unstructured.Unstructured) (locationInfo, error) {
			info := locationInfo{}
			if err := decode(u, &info.Location); err != nil {
				return info, err
			}
			info.Location.ManagedFields = nil
			if sel, _, err := info.Location.Spec.InstanceSelector.AsSelector("spec.instanceSelector"); err == nil {
				info.Selector = sel
			}
			return info, nil
		}
		return newListWatch(r, m, locationsGVR, "")
	})
}

// assemblageInfo is what the dashboard keeps of an assemblage: its destination's state.
type assemblageInfo struct {
	Version, Applied string
	State, Reason    string
}

// newListWatch binds a mirror's list and watch to a resource of a workspace, all of its objects or
// the one named.
func newListWatch[T any](r *reader, m *mirror[T], gvr schema.GroupVersionResource, name string) *mirror[T] {
	opts := func() metav1.ListOptions {
		o := metav1.ListOptions{}
		if name != "" {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		}
		return o
	}
	m.list = func(ctx context.Context) (*unstructured.UnstructuredList, error) {
		c, err := r.resource(m.ws, gvr)
		if err != nil {
			return nil, err
		}
		return c.List(ctx, opts())
	}
	m.watch = func(ctx context.Context, rv string) (watch.Interface, error) {
		c, err := r.resource(m.ws, gvr)
		if err != nil {
			return nil, err
		}
		o := opts()
		o.ResourceVersion, o.AllowWatchBookmarks = rv, true
		return c.Watch(ctx, o)
	}
	return m
}

func (r *reader) slicesMirror(wmw string) *mirror[sliceInfo] {
	return mirrorFor(r.mirrors, "slices|"+wmw, func() *mirror[sliceInfo] {
		m := newMirror[sliceInfo]("SinglePlacementSlices", wmw)
		m.convert = sliceInfoOf
		return newListWatch(r, m, slicesGVR, "")
	})
}

func sliceInfoOf(u *unstructured.Unstructured) (sliceInfo, error) {
	info := sliceInfo{Cluster: logicalcluster.From(u).String()}
	for _, ref := range u.GetOwnerReferences() {
		if ref.Kind == "EdgePlacement" && ref.Controller != nil && *ref.Controller {
			info.Owner = ref.Name
		}
	}
	if info.Owner == "" {
		return info, nil
	}
	s := &edgev1alpha1.SinglePlacementSlice{}
	if err := decode(u, s); err != nil {
		return info, err
	}
	info.Destinations = s.Destinations
	return info, nil
}

func (r *reader) targetsMirror(inv string) *mirror[targetInfo] {
	return mirrorFor(r.mirrors, "synctargets|"+inv, func() *mirror[targetInfo] {
		m := newMirror[targetInfo]("SyncTargets", inv)
		m.convert = func(u *unstructured.Unstructured) (targetInfo, error) {
			st := &edgev1alpha1.SyncTarget{}
			if err := decode(u, st); err != nil {
				return targetInfo{}, err
			}
			return targetInfoOf(inv, st), nil
		}
		return newListWatch(r, m, syncTargetsGVR, "")
	})
}

func targetInfoOf(inv string, st *edgev1alpha1.SyncTarget) targetInfo {
	info := targetInfo{Mailbox: st.Status.MailboxWorkspace}
	info.Row, info.NotReady = edgeRowOf(inv, st)
	if c := meta.FindStatusCondition(st.Status.Conditions, edgev1alpha1.SyncTargetSyncerReady); c != nil && edgev1alpha1.SyncerSilent(c.Reason) {
		info.Silent, info.SilentMessage = true, c.Message
	}
	return info
}

// assemblageMirror follows one assemblage of one mailbox: the watch of a placement's page per
// destination, for as long as the page is read.
func (r *reader) assemblageMirror(mailbox, name string) *mirror[assemblageInfo] {
	return mirrorFor(r.mirrors, "assemblage|"+mailbox+"|"+name, func() *mirror[assemblageInfo] {
		m := newMirror[assemblageInfo]("the assemblage", mailbox)
		m.convert = func(u *unstructured.Unstructured) (assemblageInfo, error) {
			a := &edgev1alpha1.Assemblage{}
			if err := decode(u, a); err != nil {
				return assemblageInfo{}, err
			}
			s := transport.DestinationState(a)
			return assemblageInfo{Version: a.Spec.Version, Applied: a.Status.AppliedVersion, State: string(s.State), Reason: s.Reason}, nil
		}
		m.changed = func() { r.assemblageChanges.publish(name) }
		return newListWatch(r, m, assemblagesGVR, name)
	})
}

// destinations returns each placement's destinations of a workload workspace, by the
// placement's name, and the workspace's logical cluster ("" when it has no slices yet).
func (r *reader) destinations(ctx context.Context, wmw string) (map[string][]edgev1alpha1.SinglePlacement, string, error) {
	type named struct {
		name string
		info sliceInfo
	}
	var slices []named
	err := r.slicesMirror(wmw).read(ctx, func(items map[string]sliceInfo) {
		for name, info := range items {
			slices = append(slices, named{name, info})
		}
	})
	if err != nil {
		return nil, "", err
	}
	sort.Slice(slices, func(i, j int) bool { return slices[i].name < slices[j].name })
	out, cluster := map[string][]edgev1alpha1.SinglePlacement{}, ""
	for _, s := range slices {
		cluster = s.info.Cluster
		if s.info.Owner != "" {
			out[s.info.Owner] = append(out[s.info.Owner], s.info.Destinations...)
		}
	}
	return out, cluster, nil
}

// syncTargets returns the SyncTargets of an inventory workspace, sorted by name.
func (r *reader) syncTargets(ctx context.Context, inv string) ([]targetInfo, error) {
	var out []targetInfo
	err := r.targetsMirror(inv).read(ctx, func(items map[string]targetInfo) {
		out = make([]targetInfo, 0, len(items))
		for _, t := range items {
			out = append(out, t)
		}
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Row.Name < out[j].Row.Name })
	return out, err
}

// changeBus tells subscribers of a topic that something of it changed.
type changeBus struct {
	mu   sync.Mutex
	subs map[string]map[chan struct{}]bool
}

func newChangeBus() *changeBus { return &changeBus{subs: map[string]map[chan struct{}]bool{}} }

// subscribe returns a channel that gets a value (at most one waiting) after each change of
// topic, and the function that ends the subscription.
func (b *changeBus) subscribe(topic string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	b.mu.Lock()
	if b.subs[topic] == nil {
		b.subs[topic] = map[chan struct{}]bool{}
	}
	b.subs[topic][ch] = true
	b.mu.Unlock()
	return ch, func() {
		b.mu.Lock()
		delete(b.subs[topic], ch)
		if len(b.subs[topic]) == 0 {
			delete(b.subs, topic)
		}
		b.mu.Unlock()
	}
}

func (b *changeBus) publish(topic string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs[topic] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
