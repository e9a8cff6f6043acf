package cli

import (
	"bytes"
	"encoding/json"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

func TestBar(t *testing.T) {
	for _, tc := range []struct {
		ready, total int32
		want         string
	}{
		{0, 0, "[     ]"}, {0, 4, "[.....]"}, {2, 4, "[##...]"}, {4, 4, "[#####]"}, {999, 1000, "[####.]"},
	} {
		if got := bar(tc.ready, tc.total, 5); got != tc.want {
			t.Errorf("bar(%d, %d) = %q, want %q", tc.ready, tc.total, got, tc.want)
		}
	}
}

func placementWith(destinations int32, summary *edgev1alpha1.DestinationCounts, paused bool) edgev1alpha1.EdgePlacement {
	p := edgev1alpha1.EdgePlacement{ObjectMeta: metav1.ObjectMeta{Name: "app"}}
	p.Status.MatchingSyncTargetCount = destinations
	p.Status.Summary = summary
	if paused {
		p.Spec.Rollout = &edgev1alpha1.RolloutStrategy{Paused: true}
	}
	return p
}

func TestPlacementState(t *testing.T) {
	for _, tc := range []struct {
		p    edgev1alpha1.EdgePlacement
		want string
	}{
		{placementWith(3, nil, false), "Unknown"},
		{placementWith(0, &edgev1alpha1.DestinationCounts{}, false), "NoDestinations"},
		{placementWith(3, &edgev1alpha1.DestinationCounts{Ready: 3}, false), "Ready"},
		{placementWith(3, &edgev1alpha1.DestinationCounts{Ready: 2, Failed: 1}, false), "Failing"},
		{placementWith(3, &edgev1alpha1.DestinationCounts{Ready: 2, Stale: 1}, false), "Stale"},
		{placementWith(3, &edgev1alpha1.DestinationCounts{Ready: 1, Pending: 1, Stale: 1}, false), "RollingOut"},
		{placementWith(3, &edgev1alpha1.DestinationCounts{Ready: 1, Pending: 1, Applied: 1}, false), "RollingOut"},
		{placementWith(3, &edgev1alpha1.DestinationCounts{Ready: 1, Applied: 2}, false), "NotReady"},
		{placementWith(3, &edgev1alpha1.DestinationCounts{Applied: 2, Stale: 1}, false), "NotReady"},
		{placementWith(3, &edgev1alpha1.DestinationCounts{Ready: 3}, true), "Paused"},
	} {
		if got := placementState(&tc.p); !strings.HasPrefix(got, tc.want) {
			t.Errorf("placementState(%+v) = %q, want %q", tc.p.Status.Summary, got, tc.want)
		}
	}
}

func TestPrintPlacementsShowsBrokenEntries(t *testing.T) {
	p := placementWith(3, &edgev1alpha1.DestinationCounts{Ready: 2, Failed: 1}, false)
	p.Status.BrokenCount = 25
	p.Status.Broken = []edgev1alpha1.BrokenEntry{{Destination: "imw:edge-2", Object: "deployments.apps/app/web", Reason: "Progress deadline\nexceeded"}}
	var out bytes.Buffer
	so := &statusOptions{Options: &Options{}}
	if err := so.printPlacements(&out, "root:wmw", []edgev1alpha1.EdgePlacement{p}, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"2/3", "Failing", "Broken in app (25, the oldest 1 shown)", "imw:edge-2", "deployments.apps/app/web", "Progress deadline exceeded"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestPrintPlacementsShowsProblemConditions(t *testing.T) {
	p := placementWith(2, &edgev1alpha1.DestinationCounts{Ready: 2}, false)
	p.Status.Conditions = []metav1.Condition{
		{Type: edgev1alpha1.PlacementScheduled, Status: metav1.ConditionTrue, Reason: "Scheduled", Message: "1 Location, 2 SyncTargets"},
		{Type: edgev1alpha1.PlacementProjected, Status: metav1.ConditionFalse, Reason: "ProjectionFailed", Message: `spec.downsync[0].resources names "nosuchthings"`},
		{Type: edgev1alpha1.PlacementConflict, Status: metav1.ConditionFalse, Reason: "NoConflict", Message: "no object collides"},
	}
	var out bytes.Buffer
	so := &statusOptions{Options: &Options{}}
	if err := so.printPlacements(&out, "root:wmw", []edgev1alpha1.EdgePlacement{p}, false); err != nil {
		t.Fatal(err)
	}
	if want := `Projected False (ProjectionFailed): spec.downsync[0].resources names "nosuchthings"`; !strings.Contains(out.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, out.String())
	}
	for _, unwanted := range []string{"1 Location, 2 SyncTargets", "no object collides"} {
		if strings.Contains(out.String(), unwanted) {
			t.Errorf("output shows a condition that is no problem (%q):\n%s", unwanted, out.String())
		}
	}
}

// mailboxAssemblage is an assemblage as a mailbox holds it, with a status as its syncer writes it.
func mailboxAssemblage(t *testing.T, cluster, placement string, objects []string, shared map[string]string, states map[string]string) unstructured.Unstructured {
	t.Helper()
	a := &edgev1alpha1.Assemblage{
		TypeMeta:   metav1.TypeMeta{APIVersion: edgev1alpha1.SchemeGroupVersion.String(), Kind: "Assemblage"},
		ObjectMeta: metav1.ObjectMeta{Name: transport.AssemblageName(cluster, placement)},
		Spec: edgev1alpha1.AssemblageSpec{Placement: edgev1alpha1.PlacementReference{Cluster: cluster, Name: placement},
			Version: "v2", Format: transport.FormatV1, Parts: 1, Objects: objects},
	}
	for o, from := range shared {
		a.Spec.Shared = append(a.Spec.Shared, edgev1alpha1.SharedObject{Object: o, Assemblage: from})
	}
	if states != nil {
		a.Status.ObservedVersion, a.Status.AppliedVersion = "v2", "v1"
		for o, s := range states {
			state, reason, _ := strings.Cut(s, "=")
			a.Status.Objects = append(a.Status.Objects, edgev1alpha1.ObjectState{Object: o, State: state, Reason: reason})
		}
	}
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(a)
	if err != nil {
		t.Fatal(err)
	}
	return unstructured.Unstructured{Object: raw}
}

func TestPrintTarget(t *testing.T) {
	items := []unstructured.Unstructured{
		mailboxAssemblage(t, "wmw2", "web", []string{"namespaces/app", "deployments.apps/app/web"},
			map[string]string{"configmaps/app/c": "wmw2.base"},
			map[string]string{"namespaces/app": "Ready", "deployments.apps/app/web": "Failed=ProgressDeadlineExceeded", "configmaps/app/c": "Ready"}),
		mailboxAssemblage(t, "wmw1", "app", []string{"widgets.example.com/app/w1"}, nil, nil),
	}
	views, err := assemblageViews(items)
	if err != nil {
		t.Fatal(err)
	}
	if len(views) != 2 || views[0].Workspace != "wmw1" || views[1].Placement != "web" {
		t.Fatalf("views %+v, want sorted by workspace", views)
	}
	if views[0].State != "Pending" || views[0].Objects[0].State != "Pending" || views[0].AppliedVersion != "" {
		t.Errorf("an assemblage the syncer has not read: %+v", views[0])
	}
	if views[1].State != "Failed" || views[1].AppliedVersion != "v1" || len(views[1].Objects) != 3 || views[1].Objects[2].SharedFrom != "wmw2.base" {
		t.Errorf("a failing assemblage: %+v", views[1])
	}
	views[1].Collected = []edgev1alpha1.CollectorReport{
		{Name: "images", Matched: 2, Groups: []edgev1alpha1.CollectedGroup{{Key: []string{`"nginx:1.25"`}, Count: 2, Values: []edgev1alpha1.CombinedValue{{Name: "available", Value: "4"}}}}},
		{Name: "phases", Matched: 3, Rows: []edgev1alpha1.CollectedObjectRow{{Object: "widgets.example.com/app/w1", Values: []string{`"Running"`, "null"}}},
			Omitted: 2, Errors: 1, ErrorExample: &edgev1alpha1.CollectorError{Object: "widgets.example.com/app/w2", Error: "no such key: phase"}},
	}
	so := &statusOptions{Options: &Options{}}
	var out bytes.Buffer
	v := &targetView{SyncTarget: "edge-1", Mailbox: "root:espw:x-mb-1", SyncerVersion: "v0.9.0", Placements: views,
		SyncerReady: &metav1.Condition{Type: edgev1alpha1.SyncTargetSyncerReady, Status: metav1.ConditionTrue, Message: "heartbeat 3s ago"}}
	if err := so.printTarget(&out, "root:imw", v); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"SyncTarget edge-1 in root:imw, mailbox root:espw:x-mb-1", "SyncerReady True", "version v0.9.0",
		"wmw2  ", "web", "v2", "Failed", "2/3 ready", "0/1 ready", "widgets.example.com/app/w1", "not read version v2",
		"deployments.apps/app/web", "ProgressDeadlineExceeded", "(carried by wmw2.base)",
		"Collected at this edge for web in wmw2:", "images: 2 objects matched", "[nginx:1.25] count=2 available=4",
		"phases: 3 objects matched", "widgets.example.com/app/w1: Running, <none>", "2 more left out",
		"1 errors at run time; for example widgets.example.com/app/w2: no such key: phase"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}

	so.output = "json"
	out.Reset()
	if err := so.printTarget(&out, "root:imw", v); err != nil {
		t.Fatal(err)
	}
	var back targetView
	if err := json.Unmarshal(out.Bytes(), &back); err != nil {
		t.Fatalf("-o json: %v\n%s", err, out.String())
	}
	if back.SyncerVersion != "v0.9.0" || len(back.Placements) != 2 || back.Placements[1].Objects[1].Reason != "ProgressDeadlineExceeded" ||
		len(back.Placements[1].Collected) != 2 || back.Placements[1].Collected[1].Errors != 1 {
		t.Errorf("-o json: %+v", back)
	}

	so.output = ""
	out.Reset()
	if err := so.printTarget(&out, "root:imw", &targetView{SyncTarget: "edge-2"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "version not reported yet") || !strings.Contains(out.String(), "Nothing is placed") {
		t.Errorf("an empty mailbox:\n%s", out.String())
	}
}

// TestPrintPlacementsWideAndName: -o wide adds the columns kubectl's wide would, -o name prints
// what kubectl's name output does, one resource/name a line.
func TestPrintPlacementsWideAndName(t *testing.T) {
	p := placementWith(3, &edgev1alpha1.DestinationCounts{Ready: 3}, false)
	p.Status.MatchingLocationCount = 2
	p.Status.ObjectCount = 7
	p.Status.Rollout = &edgev1alpha1.RolloutStatus{Revision: "3f2a9c0d1e2b4a5f"}
	when := metav1.NewTime(time.Date(2026, 11, 28, 20, 0, 0, 0, time.UTC))
	p.Status.SummaryTime = &when
	q := placementWith(1, nil, false)
	q.Name = "db"

	var out bytes.Buffer
	so := &statusOptions{Options: &Options{}, output: "wide"}
	if err := so.printPlacements(&out, "root:wmw", []edgev1alpha1.EdgePlacement{p, q}, false); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.HasSuffix(strings.Join(strings.Fields(lines[0]), " "), "STATE LOCATIONS OBJECTS REVISION SUMMARIZED") {
		t.Fatalf("-o wide:\n%s", out.String())
	}
	if f := strings.Fields(lines[1]); strings.Join(f[len(f)-4:], " ") != "2 7 3f2a9c0d1e2b 2026-11-28T20:00:00Z" {
		t.Errorf("-o wide, web's line: %q", lines[1])
	}
	if f := strings.Fields(lines[2]); strings.Join(f[len(f)-2:], " ") != "- -" {
		t.Errorf("-o wide, db's line (no rollout, no summary yet): %q", lines[2])
	}

	out.Reset()
	so.output = "name"
	if err := so.printPlacements(&out, "root:wmw", []edgev1alpha1.EdgePlacement{p, q}, false); err != nil {
		t.Fatal(err)
	}
	if want := "edgeplacement.edge.kcp.io/" + p.Name + "\nedgeplacement.edge.kcp.io/db\n"; out.String() != want {
		t.Errorf("-o name:\n%s\nwant:\n%s", out.String(), want)
	}
}

// A placement's conditions that need the user's attention are shown; those that pass by
// themselves are not.
func TestProblemConditions(t *testing.T) {
	p := &edgev1alpha1.EdgePlacement{Status: edgev1alpha1.EdgePlacementStatus{Conditions: []metav1.Condition{
		{Type: edgev1alpha1.PlacementScheduled, Status: metav1.ConditionTrue, Reason: edgev1alpha1.ReasonScheduled},
		{Type: edgev1alpha1.PlacementDestinationsPicked, Status: metav1.ConditionFalse, Reason: edgev1alpha1.ReasonTooFewSyncTargets,
			Message: "picked 1 of 2: only 1 SyncTarget matches"},
		{Type: edgev1alpha1.PlacementProjected, Status: metav1.ConditionFalse, Reason: "Pending"},
	}}}
	got := problemConditions(p)
	if len(got) != 1 || got[0].Type != edgev1alpha1.PlacementDestinationsPicked {
		t.Fatalf("problem conditions %+v, want only DestinationsPicked", got)
	}
	p.Status.Conditions[1].Status, p.Status.Conditions[1].Reason = metav1.ConditionTrue, edgev1alpha1.ReasonPicked
	if got := problemConditions(p); len(got) != 0 {
		t.Fatalf("problem conditions %+v, want none", got)
	}
}

// TestStatusShowsDrift: the placements' table has a DRIFTED column, and --target lists the
// latest drift of each assemblage with its paths, count and time, marking drift of an older
// version.
func TestStatusShowsDrift(t *testing.T) {
	p := placementWith(3, &edgev1alpha1.DestinationCounts{Ready: 3, Drifted: 2}, false)
	p.Status.Objects = []edgev1alpha1.ObjectSummary{{Object: "configmaps/app/c", DestinationCounts: edgev1alpha1.DestinationCounts{Ready: 3, Drifted: 2}}}
	var out bytes.Buffer
	so := &statusOptions{Options: &Options{}}
	if err := so.printPlacements(&out, "root:wmw", []edgev1alpha1.EdgePlacement{p}, true); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	header, row := strings.Fields(lines[0]), strings.Fields(lines[1])
	col := slices.Index(header, "DRIFTED")
	// READY spans two fields in a row (the count and the bar) under one heading.
	if col < 0 || len(row) != len(header)+1 || row[col+1] != "2" {
		t.Fatalf("no DRIFTED column showing 2:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "STALE  DRIFTED") {
		t.Errorf("the objects' table lacks DRIFTED:\n%s", out.String())
	}

	item := mailboxAssemblage(t, "wmw1", "app", []string{"configmaps/app/c", "secrets/app/s"}, nil,
		map[string]string{"configmaps/app/c": "Ready", "secrets/app/s": "Ready"})
	when := metav1.NewTime(time.Now().Add(-3 * time.Second))
	drift := &edgev1alpha1.DriftReport{Count: 4, Repairs: 3, Recent: []edgev1alpha1.DriftEntry{
		{Object: "configmaps/app/c", Change: edgev1alpha1.DriftEdited, Repaired: true, Paths: []string{"data.mode"}, PathCount: 1, Version: "v2", Count: 2, Time: when},
		{Object: "configmaps/app/once", Change: edgev1alpha1.DriftEdited, Paths: []string{"data.a", "data.b"}, PathCount: 12, Version: "v2", Count: 1, Time: when},
		{Object: "secrets/app/s", Change: edgev1alpha1.DriftDeleted, Repaired: true, Version: "v1", Count: 1, Time: when},
	}}
	if err := unstructured.SetNestedField(item.Object, mustUnstructured(t, drift), "status", "drift"); err != nil {
		t.Fatal(err)
	}
	views, err := assemblageViews([]unstructured.Unstructured{item})
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := so.printTarget(&out, "root:imw", &targetView{SyncTarget: "edge-1", Mailbox: "m", Placements: views}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Drift of app in wmw1: 4 found at the edge, 3 repaired; the latest 3:",
		"configmaps/app/c", "Edited", "data.mode", "no (create-only)", "data.a,data.b (+10 more)",
		"secrets/app/s", "Deleted", "s ago (version v1)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--target lacks %q:\n%s", want, out.String())
		}
	}
}

func mustUnstructured(t *testing.T, v any) map[string]any {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestStatusCollect(t *testing.T) {
	p := placementWith(3, &edgev1alpha1.DestinationCounts{Ready: 3}, false)
	p.Spec.StatusCollectors = []string{"images", "missing"}
	p.Status.Collected = []edgev1alpha1.CollectedStatus{{Name: "images", Columns: []string{"image", "count"},
		Rows:     []edgev1alpha1.CollectedRow{{Values: jsonValues(`"nginx:1.25"`, "2")}, {Values: jsonValues(`"nginx:1.26"`, "1")}},
		RowCount: 2, Destinations: 3, Matched: 3, Errors: 1,
		ErrorExample: &edgev1alpha1.CollectorError{Destination: "imw:edge-2", Object: "deployments.apps/app/web", Error: "spec.select[x]: division by zero"}}}
	var out bytes.Buffer
	so := &statusOptions{Options: &Options{}, collect: "images"}
	if err := so.printPlacements(&out, "root:wmw", []edgev1alpha1.EdgePlacement{p}, true); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"IMAGE       COUNT", "nginx:1.25  2", "nginx:1.26  1", "2 of 2 rows; 3 destinations reported, 3 objects matched",
		"1 errors at run time; for example at imw:edge-2, deployments.apps/app/web: spec.select[x]: division by zero"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	so.output = "json"
	if err := so.printPlacements(&out, "root:wmw", []edgev1alpha1.EdgePlacement{p}, true); err != nil {
		t.Fatal(err)
	}
	var back edgev1alpha1.CollectedStatus
	if err := json.Unmarshal(out.Bytes(), &back); err != nil || string(back.Rows[0].Values[0].Raw) != `"nginx:1.25"` || back.Errors != 1 {
		t.Errorf("-o json: %v %s", err, out.String())
	}
	so.collect, so.output = "missing", ""
	if err := so.printPlacements(&out, "root:wmw", []edgev1alpha1.EdgePlacement{p}, true); err == nil || !strings.Contains(err.Error(), "no results") {
		t.Errorf("a collector without results yet: %v", err)
	}
	so.collect = "other"
	if err := so.printPlacements(&out, "root:wmw", []edgev1alpha1.EdgePlacement{p}, true); err == nil || !strings.Contains(err.Error(), "does not name") {
		t.Errorf("a collector the placement does not name: %v", err)
	}
}

func jsonValues(raw ...string) []apiextensionsv1.JSON {
	out := make([]apiextensionsv1.JSON, len(raw))
	for i, r := range raw {
		out[i] = apiextensionsv1.JSON{Raw: []byte(r)}
	}
	return out
}
