package dashboard

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
)

// Mirrors: what a page shows that grows with the fleet (a placement's destinations, the
// SyncTargets of an inventory, each destination's assemblage) is read from memory kept current by
// watches, not from kcp on every load, so that a page costs kcp the same few requests at 10
// destinations as at 1,000. A mirror is started by the first page that needs it and stopped once
// no page has asked for it for mirrorIdle.
//
// A mirror never passes an old picture off as current: until its first list, and from the moment a
// list or a watch fails (kcp unreachable, credentials refused) until a list succeeds again, a read
// gets the failure, not the values; after a watch ends, a read waits for the next list. Every page
// still reads one object straight from kcp on each load (the placement, or the fleet's placements),
// so a kcp that stops answering without closing the mirrors' connections shows at once too.

// mirrorIdle is how long a mirror that no page reads keeps watching.
const mirrorIdle = 10 * time.Minute

// mirrorBackoff bounds the wait between a mirror's failed attempts; a read of a failed mirror
// makes it try again at once.
const mirrorBackoff = 30 * time.Second

// errNotReadYet is the failure of a read that gave up waiting for a mirror's first list, or for
// its next one after a watch ended.
var errNotReadYet = errors.New("not read yet")

// errMirrorStopped is the failure of a mirror that was stopped (idle, or the dashboard ends).
var errMirrorStopped = errors.New("no longer watched")

// mirror keeps what one list and watch of kcp returns (one resource of one workspace: all its
// objects, or one by name) as a map from object name to a small value made from the object.
type mirror[T any] struct {
	// describe says what it holds, for errors ("SyncTargets"); ws is the workspace.
	describe, ws string
	list         func(ctx context.Context) (*unstructured.UnstructuredList, error)
	watch        func(ctx context.Context, resourceVersion string) (watch.Interface, error)
	convert      func(*unstructured.Unstructured) (T, error)
	// changed, if set, is called after the values change, the first list included.
	changed func()
	// listSlots, if set, bounds the lists in flight of all the mirrors that share it.
	listSlots chan struct{}
	// backoff is the first wait after a failure, doubled up to mirrorBackoff.
	backoff time.Duration

	mu    sync.Mutex
	items map[string]T
	// current: the items are those of the last list and of the watch's events since.
	current bool
	// err is the last attempt's failure, while the items are not current (nil: not known yet).
	err error
	// outcome is closed, and replaced, at each attempt's outcome.
	outcome chan struct{}
	// retry wakes the loop from its wait after a failure.
	retry    chan struct{}
	lastUsed time.Time
}

func newMirror[T any](describe, ws string) *mirror[T] {
	return &mirror[T]{describe: describe, ws: ws, backoff: time.Second, outcome: make(chan struct{}), retry: make(chan struct{}, 1)}
}

// read calls f with the values, if they are current; otherwise it waits for them (until ctx
// ends), or, if the mirror is failing, has it try once more at once and returns that attempt's
// failure. f must not keep the map.
func (m *mirror[T]) read(ctx context.Context, f func(items map[string]T)) error {
	retried := false
	m.mu.Lock()
	for {
		switch {
		case m.current:
			f(m.items)
			m.mu.Unlock()
			return nil
		case m.err != nil && (retried || errors.Is(m.err, errMirrorStopped)):
			err := m.err
			m.mu.Unlock()
			return err
		case m.err != nil:
			retried = true
			select {
			case m.retry <- struct{}{}:
			default:
			}
		}
		wait := m.outcome
		m.mu.Unlock()
		select {
		case <-ctx.Done():
			return fmt.Errorf("kcp did not answer in time reading %s in %s: %w", m.describe, m.ws, errNotReadYet)
		case <-wait:
		}
		m.mu.Lock()
	}
}

func (m *mirror[T]) touch(now time.Time) {
	m.mu.Lock()
	m.lastUsed = now
	m.mu.Unlock()
}

func (m *mirror[T]) idleSince() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lastUsed
}

// settle records an attempt's outcome: new values (items non-nil), not current any more (neither),
// or a failure.
func (m *mirror[T]) settle(items map[string]T, err error) {
	m.mu.Lock()
	notify := false
	switch {
	case err != nil:
		m.current, m.err = false, err
	case items != nil:
		// The first list too: a page that gave up waiting for it (a placement's first load at
		// a thousand destinations) is refreshed once it is in.
		notify = true
		m.items, m.current, m.err = items, true, nil
	default:
		m.current = false
	}
	close(m.outcome)
	m.outcome = make(chan struct{})
	m.mu.Unlock()
	if notify && m.changed != nil {
		m.changed()
	}
}

// run lists and watches until ctx ends, listing again whenever a watch ends, and after a failure
// once the backoff has passed or a read asked.
func (m *mirror[T]) run(ctx context.Context) {
	defer m.settle(nil, errMirrorStopped)
	backoff := m.backoff
	for ctx.Err() == nil {
		listed, err := m.listAndWatch(ctx)
		if ctx.Err() != nil {
			return
		}
		if listed {
			backoff = m.backoff
		}
		if err == nil {
			// The watch ended, as watches do: list again; reads wait for it.
			m.settle(nil, nil)
			continue
		}
		m.settle(nil, err)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-m.retry:
			t.Stop()
		case <-t.C:
		}
		backoff = min(2*backoff, mirrorBackoff)
	}
}

// listAndWatch lists, then follows the watch from the list's resource version until it ends (nil)
// or fails.
func (m *mirror[T]) listAndWatch(ctx context.Context) (bool, error) {
	if m.listSlots != nil {
		select {
		case m.listSlots <- struct{}{}:
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	l, err := m.list(ctx)
	if m.listSlots != nil {
		<-m.listSlots
	}
	if err != nil {
		return false, readError(m.describe, m.ws, err)
	}
	items := make(map[string]T, len(l.Items))
	for i := range l.Items {
		v, err := m.convert(&l.Items[i])
		if err != nil {
			return false, fmt.Errorf("reading %s in %s: %w", m.describe, m.ws, err)
		}
		items[l.Items[i].GetName()] = v
	}
	m.settle(items, nil)
	w, err := m.watch(ctx, l.GetResourceVersion())
	if err != nil {
		return true, readError(m.describe, m.ws, err)
	}
	defer w.Stop()
	for {
		var ev watch.Event
		var ok bool
		select {
		case <-ctx.Done():
			return true, nil
		case ev, ok = <-w.ResultChan():
		}
		if !ok {
			return true, nil
		}
		switch ev.Type {
		case watch.Added, watch.Modified, watch.Deleted:
			u, isU := ev.Object.(*unstructured.Unstructured)
			if !isU {
				return true, fmt.Errorf("reading %s in %s: the watch sent a %T", m.describe, m.ws, ev.Object)
			}
			var v T
			if ev.Type != watch.Deleted {
				if v, err = m.convert(u); err != nil {
					return true, fmt.Errorf("reading %s in %s: %w", m.describe, m.ws, err)
				}
			}
			m.mu.Lock()
			if ev.Type == watch.Deleted {
				delete(m.items, u.GetName())
			} else {
				m.items[u.GetName()] = v
			}
			m.mu.Unlock()
			if m.changed != nil {
				m.changed()
			}
		case watch.Error:
			err := apierrors.FromObject(ev.Object)
			if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				return true, nil // too old to resume: list again
			}
			return true, readError(m.describe, m.ws, fmt.Errorf("the watch failed: %w", err))
		}
	}
}

// stoppable is a running mirror of any type, as mirrorSet keeps it.
type stoppable interface {
	idleSince() time.Time
}

type runningMirror struct {
	m      stoppable
	cancel context.CancelFunc
}

// mirrorSet holds the running mirrors by key, starts them on first use, and stops those that no
// page has read for idle.
type mirrorSet struct {
	ctx       context.Context
	listSlots chan struct{}
	idle      time.Duration
	now       func() time.Time

	mu       sync.Mutex
	running  map[string]runningMirror
	sweeping bool
}

func newMirrorSet(ctx context.Context, parallelLists int, now func() time.Time) *mirrorSet {
	return &mirrorSet{ctx: ctx, listSlots: make(chan struct{}, parallelLists), idle: mirrorIdle, now: now, running: map[string]runningMirror{}}
}

// mirrorFor returns the mirror of key, started with build's if there is none yet.
func mirrorFor[T any](s *mirrorSet, key string, build func() *mirror[T]) *mirror[T] {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if r, ok := s.running[key]; ok {
		m := r.m.(*mirror[T])
		m.touch(now)
		return m
	}
	m := build()
	m.listSlots = s.listSlots
	m.touch(now)
	ctx, cancel := context.WithCancel(s.ctx)
	s.running[key] = runningMirror{m: m, cancel: cancel}
	go m.run(ctx)
	if !s.sweeping {
		s.sweeping = true
		go s.sweep()
	}
	return m
}

// sweep stops, every quarter of idle, the mirrors unread for idle.
func (s *mirrorSet) sweep() {
	t := time.NewTicker(s.idle / 4)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			s.stopIdle()
		}
	}
}

func (s *mirrorSet) stopIdle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	cutoff := s.now().Add(-s.idle)
	for key, r := range s.running {
		if r.m.idleSince().Before(cutoff) {
			r.cancel()
			delete(s.running, key)
		}
	}
}

// count is the number of running mirrors.
func (s *mirrorSet) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.running)
}
