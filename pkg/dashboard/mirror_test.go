package dashboard

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// fakeKCP answers a mirror's lists and watches: the objects it holds (name -> value), or the
// error it is told to fail with; each list is counted, and each watch is kept for the test to
// drive.
type fakeKCP struct {
	mu      sync.Mutex
	objects map[string]string
	fail    error
	// hold, when set, blocks lists until it is closed.
	hold    chan struct{}
	lists   int
	watches chan *watch.RaceFreeFakeWatcher
}

func newFakeKCP(objects map[string]string) *fakeKCP {
	return &fakeKCP{objects: objects, watches: make(chan *watch.RaceFreeFakeWatcher, 100)}
}

func object(name, value string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"v": value}}}
	u.SetName(name)
	return u
}

func (k *fakeKCP) mirror(t *testing.T) (*mirror[string], func() int) {
	m := newMirror[string]("ConfigMaps", "root:ws")
	m.backoff = time.Hour // only a read makes a failing mirror try again, in these tests
	m.list = func(ctx context.Context) (*unstructured.UnstructuredList, error) {
		k.mu.Lock()
		hold := k.hold
		k.mu.Unlock()
		if hold != nil {
			select {
			case <-hold:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		k.mu.Lock()
		defer k.mu.Unlock()
		k.lists++
		if k.fail != nil {
			return nil, k.fail
		}
		l := &unstructured.UnstructuredList{}
		l.SetResourceVersion("7")
		for name, v := range k.objects {
			l.Items = append(l.Items, *object(name, v))
		}
		return l, nil
	}
	m.watch = func(ctx context.Context, rv string) (watch.Interface, error) {
		if rv != "7" {
			t.Errorf("watch from resource version %q, not the list's", rv)
		}
		w := watch.NewRaceFreeFake()
		k.watches <- w
		return w, nil
	}
	m.convert = func(u *unstructured.Unstructured) (string, error) {
		v, _, _ := unstructured.NestedString(u.Object, "data", "v")
		if v == "bad" {
			return "", errors.New("cannot decode")
		}
		return v, nil
	}
	changes := 0
	var mu sync.Mutex
	m.changed = func() { mu.Lock(); changes++; mu.Unlock() }
	return m, func() int { mu.Lock(); defer mu.Unlock(); return changes }
}

func (k *fakeKCP) set(f func(k *fakeKCP)) {
	k.mu.Lock()
	defer k.mu.Unlock()
	f(k)
}

func (k *fakeKCP) nextWatch(t *testing.T) *watch.RaceFreeFakeWatcher {
	t.Helper()
	select {
	case w := <-k.watches:
		return w
	case <-time.After(10 * time.Second):
		t.Fatal("the mirror did not watch")
		return nil
	}
}

func start(t *testing.T, m interface{ run(context.Context) }) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// read returns the mirror's values as a copy, or its error.
func read(t *testing.T, m *mirror[string], within time.Duration) (map[string]string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	var out map[string]string
	err := m.read(ctx, func(items map[string]string) {
		out = map[string]string{}
		for k, v := range items {
			out[k] = v
		}
	})
	return out, err
}

// eventually reads until the mirror holds want.
func eventually(t *testing.T, m *mirror[string], want map[string]string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := read(t, m, time.Second)
		if err == nil && equalMaps(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the mirror holds %v (error %v), want %v", got, err, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// A read waits for the first list, and says when kcp has not answered in time; the values then
// follow the watch's events.
func TestMirrorListThenWatch(t *testing.T) {
	k := newFakeKCP(map[string]string{"a": "1"})
	hold := make(chan struct{})
	k.set(func(k *fakeKCP) { k.hold = hold })
	m, changes := k.mirror(t)
	start(t, m)

	if got, err := read(t, m, 50*time.Millisecond); err == nil || !strings.Contains(err.Error(), "kcp did not answer in time reading ConfigMaps in root:ws") || !errors.Is(err, errNotReadYet) {
		t.Fatalf("before the first list a read got %v, %v; want the wait's end said", got, err)
	}
	close(hold)
	if got, err := read(t, m, 10*time.Second); err != nil || !equalMaps(got, map[string]string{"a": "1"}) {
		t.Fatalf("after the list: %v, %v", got, err)
	}
	// The first list is told, so that a page that gave up waiting for it is refreshed.
	if changes() != 1 {
		t.Errorf("the first list counted as %d changes, want 1", changes())
	}

	w := k.nextWatch(t)
	w.Add(object("b", "2"))
	w.Modify(object("a", "3"))
	w.Delete(object("b", "2"))
	eventually(t, m, map[string]string{"a": "3"})
	if got := changes(); got != 4 {
		t.Errorf("%d changes told, want 4 (the first list, then one per event)", got)
	}
	// A bookmark changes nothing.
	w.Action(watch.Bookmark, object("", ""))
	eventually(t, m, map[string]string{"a": "3"})
}

// kcp unreachable: from the moment the watch ends and the list fails, a read gets the failure in
// words, not the old values; a read of a failing mirror makes it try again at once (its backoff
// is an hour here), and once kcp answers, the values are current again.
func TestMirrorNeverServesOldValuesAsCurrent(t *testing.T) {
	k := newFakeKCP(map[string]string{"a": "1"})
	m, _ := k.mirror(t)
	start(t, m)
	eventually(t, m, map[string]string{"a": "1"})
	w := k.nextWatch(t)

	k.set(func(k *fakeKCP) {
		k.fail = &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/clusters/root:ws/api/v1/configmaps", Err: syscall.ECONNREFUSED}
		k.objects = map[string]string{"a": "2"}
	})
	w.Stop() // kcp killed: the watch's connection closes
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := read(t, m, time.Second)
		if err != nil {
			if !strings.Contains(err.Error(), "cannot reach kcp reading ConfigMaps in root:ws") {
				t.Errorf("the failure reads %q", err)
			}
			break
		}
		if got["a"] != "1" {
			t.Fatalf("read %v while kcp fails", got)
		}
		if time.Now().After(deadline) {
			t.Fatal("the mirror still says its values are current after the watch ended and the list failed")
		}
		time.Sleep(5 * time.Millisecond)
	}

	k.set(func(k *fakeKCP) { k.fail = nil })
	got, err := read(t, m, 10*time.Second)
	if err != nil || got["a"] != "2" {
		t.Fatalf("kcp back, a read got %v, %v; want the new values at once (the read has the mirror try again)", got, err)
	}
}

// A watch that kcp ends with an error: 410 Gone (too old) lists again without a failure; any
// other error is a failure, and 403 says the user may not read it.
func TestMirrorWatchErrors(t *testing.T) {
	k := newFakeKCP(map[string]string{"a": "1"})
	m, _ := k.mirror(t)
	start(t, m)
	eventually(t, m, map[string]string{"a": "1"})
	w := k.nextWatch(t)
	k.set(func(k *fakeKCP) { k.objects["b"] = "2" })
	gone := apierrors.NewResourceExpired("too old resource version")
	w.Error(&gone.ErrStatus)
	eventually(t, m, map[string]string{"a": "1", "b": "2"})

	w = k.nextWatch(t)
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", errors.New("no"))
	k.set(func(k *fakeKCP) { k.fail = forbidden })
	w.Error(&forbidden.ErrStatus)
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := read(t, m, time.Second)
		if err != nil {
			if !strings.Contains(err.Error(), "may not read ConfigMaps in workspace root:ws (403 Forbidden)") || !apierrors.IsForbidden(err) {
				t.Errorf("the failure reads %q", err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a watch that failed with 403 left the values current")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// An object the mirror cannot read is a failure, not a silent gap.
func TestMirrorUndecodable(t *testing.T) {
	k := newFakeKCP(map[string]string{"a": "bad"})
	m, _ := k.mirror(t)
	start(t, m)
	if _, err := read(t, m, 10*time.Second); err == nil || !strings.Contains(err.Error(), "reading ConfigMaps in root:ws: cannot decode") {
		t.Fatalf("got %v, want the decoding failure", err)
	}
}

// The set starts one mirror per key, and stops those that no page read for its idle time; a
// stopped mirror's read says so at once.
func TestMirrorSetStartsOnceStopsIdle(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	now := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s := newMirrorSet(ctx, 2, clock)
	k := newFakeKCP(map[string]string{"a": "1"})
	builds := 0
	build := func() *mirror[string] { builds++; m, _ := k.mirror(t); return m }
	a := mirrorFor(s, "a", build)
	if b := mirrorFor(s, "a", build); b != a || builds != 1 {
		t.Fatalf("the same key built %d mirrors", builds)
	}
	mirrorFor(s, "b", build)
	eventually(t, a, map[string]string{"a": "1"})

	mu.Lock()
	now = now.Add(mirrorIdle - time.Minute)
	mu.Unlock()
	mirrorFor(s, "a", build) // read again: a stays
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	s.stopIdle()
	if got := s.count(); got != 1 {
		t.Fatalf("%d mirrors run after b was idle for %s, want 1", got, mirrorIdle+time.Minute)
	}
	cancel()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := read(t, a, time.Second)
		if errors.Is(err, errMirrorStopped) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a stopped mirror's read: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A page's stream hears of each change of its topic, and nothing once it has left.
func TestChangeBus(t *testing.T) {
	b := newChangeBus()
	ch, unsubscribe := b.subscribe("x.web")
	other, unsubscribeOther := b.subscribe("x.db")
	defer unsubscribeOther()
	b.publish("x.web")
	b.publish("x.web") // one waiting is enough: the page reads again once
	select {
	case <-ch:
	default:
		t.Fatal("no change told")
	}
	select {
	case <-other:
		t.Fatal("another topic's subscriber was told")
	default:
	}
	unsubscribe()
	b.publish("x.web")
	select {
	case <-ch:
		t.Fatal("told after the subscription ended")
	default:
	}
	if len(b.subs["x.web"]) != 0 {
		t.Error("the ended subscription is still kept")
	}
}

// A destination whose assemblage is not read yet when the page stops waiting says so, and not
// that kcp failed.
func TestAssemblageRowNotReadYet(t *testing.T) {
	m := newMirror[assemblageInfo]("the assemblage", "root:mb")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	row := destination{}
	assemblageState(ctx, &row, m, "a")
	if row.State != "Unknown" || !strings.HasPrefix(row.Reason, "not read yet") {
		t.Errorf("row %+v", row)
	}
}
