package syncer

import (
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

func TestRestoreAndBeginVersion(t *testing.T) {
	created := metav1.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	a := &edgev1alpha1.Assemblage{
		ObjectMeta: metav1.ObjectMeta{Name: testAssemblage, UID: "asm-uid"},
		Spec:       edgev1alpha1.AssemblageSpec{Version: "v2"},
		Status: edgev1alpha1.AssemblageStatus{ObservedVersion: "v2", AppliedVersion: "v1", Objects: []edgev1alpha1.ObjectState{
			{Object: "configmaps/app/a", State: "Ready"},
			{Object: "configmaps/app/b", State: "Applied"},
			{Object: "configmaps/app/c", State: "Pending"},
			{Object: "configmaps/app/once", State: "Applied", CreatedAt: &created},
			{Object: "not a key", State: "Ready"},
		}},
	}
	st := newAssemblageState(a.Name)
	st.restore(a)
	if st.uid != "asm-uid" || st.appliedVersion != "v1" || st.written == nil || st.written.ObservedVersion != "v2" {
		t.Errorf("restored uid %q, applied %q, written %+v", st.uid, st.appliedVersion, st.written)
	}
	once := transport.Key{Resource: "configmaps", Namespace: "app", Name: "once"}
	if got := st.createdAt[once]; !got.Equal(&created) {
		t.Errorf("createdAt of the create-only object = %v, want %v", got, created)
	}

	doc := &transport.Document{Objects: []transport.Entry{plainConfigMap("app", "a", nil), plainConfigMap("app", "b", nil), plainConfigMap("app", "c", nil)}}
	p2 := newPlan(a.Name, "v2", doc, nil, testMarks)
	st.beginVersion(p2, time.Now())
	a1 := p2.objects[0]
	// Applied at the version the status reports: a deletion at the edge since is drift.
	if !st.wasApplied(a1.key, a1.hash) || !st.wasApplied(p2.objects[1].key, p2.objects[1].hash) {
		t.Errorf("objects reported applied at this version are not known as applied")
	}
	if st.wasApplied(p2.objects[2].key, p2.objects[2].hash) {
		t.Errorf("an object reported pending is known as applied")
	}
	if pending, failed := st.tally(); pending != 3 || failed != 0 {
		t.Errorf("a new version tallies %d pending, %d failed; want 3, 0", pending, failed)
	}
	st.setResult(a1.key, result{outcome: outcomeApplied})
	st.setResult(p2.objects[1].key, result{outcome: outcomeFailed, reason: "refused"})
	if pending, failed := st.tally(); pending != 1 || failed != 1 {
		t.Errorf("tally = %d pending, %d failed; want 1, 1", pending, failed)
	}
	// The same version again keeps the outcomes; a new one starts afresh, keeping createdAt.
	st.beginVersion(newPlan(a.Name, "v2", doc, nil, testMarks), time.Now())
	if pending, _ := st.tally(); pending != 1 {
		t.Errorf("the same version started afresh")
	}
	p3 := newPlan(a.Name, "v3", doc, nil, testMarks)
	st.beginVersion(p3, time.Now())
	if pending, failed := st.tally(); pending != 3 || failed != 0 {
		t.Errorf("a new version tallies %d pending, %d failed; want 3, 0", pending, failed)
	}
	if st.wasApplied(a1.key, a1.hash) {
		t.Errorf("the status of another version still counts")
	}
	if _, ok := st.createdAt[once]; !ok {
		t.Errorf("a new version forgot when a create-only object was created")
	}
	// What this run applied counts, at its hash only.
	st.appliedHash[a1.key] = a1.hash
	if !st.wasApplied(a1.key, a1.hash) || st.wasApplied(a1.key, "another") {
		t.Errorf("wasApplied does not follow the hash applied")
	}
}

// newTestSyncer is a Syncer with caches that are never started: the tests fill their stores.
func newTestSyncer(t *testing.T) *Syncer {
	t.Helper()
	s, err := New(Config{Mailbox: &rest.Config{Host: "https://mailbox.invalid"}, Edge: &rest.Config{Host: "https://edge.invalid"},
		SyncTargetName: "edge-1", SyncTargetUID: testSyncTargetUID, StatusCoalesce: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.statusQueue.ShutDown()
		s.assemblageQueue.ShutDown()
	})
	return s
}

// assemblageOf builds an Assemblage and its parts as the placement translator writes them.
func assemblageOf(t *testing.T, name string, entries []transport.Entry, shared ...edgev1alpha1.SharedObject) (*edgev1alpha1.Assemblage, []*edgev1alpha1.AssemblagePart) {
	t.Helper()
	enc, err := transport.Encode(entries)
	if err != nil {
		t.Fatal(err)
	}
	a := &edgev1alpha1.Assemblage{ObjectMeta: metav1.ObjectMeta{Name: name, UID: "uid-" + "name", Generation: 1}, Spec: edgev1alpha1.AssemblageSpec{
		Version: enc.Version, Format: transport.FormatV1, Parts: int32(len(enc.Pieces)), Data: enc.Pieces[0], Digest: enc.Digests[0],
		Objects: enc.Objects, ObjectCount: int32(len(enc.Objects)), Shared: shared,
	}}
	var parts []*edgev1alpha1.AssemblagePart
	for i := 1; i < len(enc.Pieces); i++ {
		parts = append(parts, &edgev1alpha1.AssemblagePart{ObjectMeta: metav1.ObjectMeta{Name: transport.PartName(name, i)},
			Spec: edgev1alpha1.AssemblagePartSpec{Assemblage: name, Version: enc.Version, Index: int32(i), Data: enc.Pieces[i], Digest: enc.Digests[i]}})
	}
	return a, parts
}

// bigConfigMap is a ConfigMap of n bytes of data that does not compress.
func bigConfigMap(name string, n int) transport.Entry {
	var b strings.Builder
	x := uint64(88172645463325252)
	for b.Len() < n {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b.WriteByte("abcdefghijklmnopqrstuvwxyz0123456789"[x%36])
	}
	e := plainConfigMap("app", name, nil)
	e.Object["data"] = map[string]any{"blob": b.String()}
	return e
}

func TestPlanOfRefusesAsAWhole(t *testing.T) {
	s := newTestSyncer(t)
	a, parts := assemblageOf(t, testAssemblage, []transport.Entry{bigConfigMap("big", 900<<10), namespaceEntry("app")})
	if len(parts) < 2 {
		t.Fatalf("the test needs an assemblage in parts; it has %d", len(parts)+1)
	}
	if err := s.assemblages.GetStore().Add(a); err != nil {
		t.Fatal(err)
	}
	st := s.stateFor(a)
	refusal := func() *transport.RefusedError {
		t.Helper()
		_, err := s.planOf(a, st)
		var r *transport.RefusedError
		if err != nil && !errors.As(err, &r) {
			t.Fatalf("planOf failed with %v, not a refusal", err)
		}
		return r
	}

	// The parts arrive one by one: PartsMissing until the last.
	for i, part := range parts {
		r := refusal()
		if r == nil || r.Reason != transport.RefusedPartsMissing {
			t.Fatalf("with %d of %d parts: refusal %v, want PartsMissing", i, len(parts), r)
		}
		if err := s.parts.GetIndexer().Add(part); err != nil {
			t.Fatal(err)
		}
	}
	if r := refusal(); r != nil {
		t.Fatalf("with every part: refused: %v", r)
	}
	p, _ := s.planOf(a, st)
	if p.version != a.Spec.Version || len(p.objects) != 2 || p.objects[0].key.String() != "namespaces/app" {
		t.Errorf("plan of the whole: version %s, objects %v", p.version, keysOf(p.objects))
	}

	// A part of another version, or a corrupt one, is refused as a whole.
	bad := parts[0].DeepCopy()
	bad.Spec.Data = append([]byte{}, bad.Spec.Data...)
	bad.Spec.Data[10] ^= 0xff
	if err := s.parts.GetIndexer().Update(bad); err != nil {
		t.Fatal(err)
	}
	if r := refusal(); r == nil || r.Reason != transport.RefusedCorrupt || !strings.Contains(r.Message, bad.Name) {
		t.Errorf("a corrupt part: refusal %v, want Corrupt naming %s", r, bad.Name)
	}
	if err := s.parts.GetIndexer().Update(parts[0]); err != nil {
		t.Fatal(err)
	}
	unknown := a.DeepCopy()
	unknown.Spec.Format = "edge.kcp.io/some-future-format"
	if _, err := s.planOf(unknown, newAssemblageState(a.Name)); err == nil || !strings.Contains(err.Error(), "upgrade the syncer") {
		t.Errorf("an unknown format: %v, want a refusal that says to upgrade the syncer", err)
	}
	var r *transport.RefusedError
	if _, err := s.planOf(unknown, newAssemblageState(a.Name)); !errors.As(err, &r) || r.Reason != transport.RefusedUnknownFormat {
		t.Errorf("an unknown format: %v, want UnknownFormat", err)
	}
}

func TestCarriedElsewhereAndSharing(t *testing.T) {
	s := newTestSyncer(t)
	a, _ := assemblageOf(t, "ws.a", []transport.Entry{plainConfigMap("app", "x", nil)})
	b, _ := assemblageOf(t, "ws.b", []transport.Entry{plainConfigMap("app", "y", nil)},
		edgev1alpha1.SharedObject{Object: "configmaps/app/x", Assemblage: "ws.a"})
	for _, obj := range []runtime.Object{a, b} {
		if err := s.assemblages.GetStore().Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	x, y := mustKey(t, "configmaps/app/x"), mustKey(t, "configmaps/app/y")
	if !s.carriedElsewhere(x, "ws.a") {
		t.Errorf("x is shared by ws.b, but not found elsewhere than ws.a")
	}
	if s.carriedElsewhere(y, "ws.b") || !s.carriedElsewhere(y, "ws.a") {
		t.Errorf("y is carried by ws.b only")
	}
	if got := s.sharingFrom("ws.a"); len(got) != 1 || got[0] != "ws.b" {
		t.Errorf("sharingFrom(ws.a) = %v, want [ws.b]", got)
	}
}

// TestQueueStatusCoalesces checks the coalescing window: a change after a quiet period is queued
// at once; one within the window waits until its end; and the assemblages sharing objects of
// the changed one are queued too.
func TestQueueStatusCoalesces(t *testing.T) {
	s := newTestSyncer(t)
	a, _ := assemblageOf(t, "ws.a", []transport.Entry{plainConfigMap("app", "x", nil)})
	b, _ := assemblageOf(t, "ws.b", nil, edgev1alpha1.SharedObject{Object: "configmaps/app/x", Assemblage: "ws.a"})
	for _, obj := range []runtime.Object{a, b} {
		if err := s.assemblages.GetStore().Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	get := func() string {
		item, _ := s.statusQueue.Get()
		s.statusQueue.Done(item)
		return item
	}

	s.queueStatus("ws.a") // never written: both at once
	if n := s.statusQueue.Len(); n != 2 {
		t.Fatalf("after a quiet period: %d queued, want ws.a and its sharer ws.b at once", n)
	}
	got := map[string]bool{get(): true, get(): true}
	if !got["ws.a"] || !got["ws.b"] {
		t.Errorf("queued %v, want ws.a and ws.b", got)
	}

	s.mu.Lock()
	st := newAssemblageState("ws.a")
	st.writtenAt = time.Now()
	s.states["ws.a"] = st
	s.mu.Unlock()
	start := time.Now()
	for i := 0; i < 5; i++ {
		s.queueStatusOf("ws.a") // a burst within the window
	}
	if n := s.statusQueue.Len(); n != 0 {
		t.Fatalf("a change within the window was queued at once")
	}
	if item := get(); item != "ws.a" {
		t.Errorf("queued %q, want ws.a", item)
	}
	waited := time.Since(start)
	if waited < 250*time.Millisecond || waited > 2*time.Second {
		t.Errorf("the burst was queued after %v, want at the end of the 300ms window", waited)
	}
	if n := s.statusQueue.Len(); n != 0 {
		t.Errorf("the burst was queued %d more times, want once", n)
	}
}

// TestSharedObjectsReported checks that an object one assemblage shares and another carries is
// reported in both, with the carrier's state, and as pending while the carrier has not
// delivered it.
func TestSharedObjectsReported(t *testing.T) {
	s := newTestSyncer(t)
	shared := edgev1alpha1.SharedObject{Object: "configmaps/app/common", Assemblage: "ws.carrier"}
	carrierAsm, _ := assemblageOf(t, "ws.carrier", []transport.Entry{plainConfigMap("app", "common", nil)})
	sharerAsm, _ := assemblageOf(t, "ws.sharer", []transport.Entry{plainConfigMap("app", "own", nil)}, shared)
	sharer := newAssemblageState("ws.sharer")
	sharer.beginVersion(newPlan("ws.sharer", sharerAsm.Spec.Version, &transport.Document{Objects: []transport.Entry{plainConfigMap("app", "own", nil)}},
		sharerAsm.Spec.Shared, testMarks), time.Now())
	common := mustKey(t, "configmaps/app/common")
	if _, carried := sharer.plan.byKey[common]; carried {
		t.Fatalf("the sharer plans to apply the shared object")
	}
	s.states["ws.sharer"] = sharer

	s.mu.Lock()
	in, _ := s.statusInputsLocked(sharer, sharerAsm)
	s.mu.Unlock()
	if len(in.objects) != 2 || in.total != 1 {
		t.Fatalf("the sharer reports %d objects (%d carried), want its own and the shared one", len(in.objects), in.total)
	}
	if o := in.objects[1].state; o.Object != "configmaps/app/common" || o.State != edgev1alpha1.ObjectPending || !strings.Contains(o.Reason, "ws.carrier") {
		t.Errorf("the shared object before its carrier delivered it: %+v", o)
	}

	carrier := newAssemblageState("ws.carrier")
	carrier.beginVersion(newPlan("ws.carrier", carrierAsm.Spec.Version, &transport.Document{Objects: []transport.Entry{plainConfigMap("app", "common", nil)}},
		nil, testMarks), time.Now())
	carrier.setResult(common, result{outcome: outcomeFailed, reason: "the edge cluster refused it: no"})
	s.states["ws.carrier"] = carrier
	s.mu.Lock()
	in, _ = s.statusInputsLocked(sharer, sharerAsm)
	s.mu.Unlock()
	if o := in.objects[1].state; o.State != edgev1alpha1.ObjectFailed || o.Reason != "the edge cluster refused it: no" {
		t.Errorf("the shared object as its carrier reports it: %+v", o)
	}
	status := buildStatus(in)
	if status.Counts.Failed != 1 || status.Counts.Pending != 1 {
		t.Errorf("counts %+v, want the shared object's failure counted", status.Counts)
	}
}
