package syncer

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

func TestDriftPaths(t *testing.T) {
	want := map[string]any{
		"metadata": map[string]any{
			"name":        "web",
			"labels":      map[string]any{"app.kubernetes.io/name": "web", "tier": "front"},
			"annotations": map[string]any{},
		},
		"data": map[string]any{"mode": "edge", "level": int64(3)},
		"spec": map[string]any{
			"replicas": int64(2),
			"template": map[string]any{"spec": map[string]any{"containers": []any{
				map[string]any{"name": "web", "image": "nginx", "ports": []any{map[string]any{"containerPort": int64(80)}}},
				map[string]any{"name": "side", "image": "busybox"},
			}}},
			"tolerations": []any{},
			"nothing":     nil,
		},
	}
	edit := func(change func(m map[string]any)) map[string]any {
		m := (&unstructured.Unstructured{Object: want}).DeepCopy().Object
		change(m)
		return m
	}
	containers := func(m map[string]any) []any {
		return m["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)
	}
	cases := []struct {
		name string
		have map[string]any
		want []string
	}{
		{"in sync", edit(func(map[string]any) {}), nil},
		{"fields and defaults only the edge has", edit(func(m map[string]any) {
			m["status"] = map[string]any{"ready": true}
			m["metadata"].(map[string]any)["uid"] = "u"
			containers(m)[0].(map[string]any)["imagePullPolicy"] = "Always"
		}), nil},
		{"numbers of another Go type", edit(func(m map[string]any) { m["spec"].(map[string]any)["replicas"] = float64(2) }), nil},
		{"a scalar changed", edit(func(m map[string]any) { m["data"].(map[string]any)["mode"] = "local" }), []string{"data.mode"}},
		{"a key deleted", edit(func(m map[string]any) { delete(m["data"].(map[string]any), "level") }), []string{"data.level"}},
		{"a whole map deleted", edit(func(m map[string]any) { delete(m, "data") }), []string{"data"}},
		{"a map turned scalar", edit(func(m map[string]any) { m["data"] = "x" }), []string{"data"}},
		{"a key that is not a plain name", edit(func(m map[string]any) {
			m["metadata"].(map[string]any)["labels"].(map[string]any)["app.kubernetes.io/name"] = "other"
		}), []string{`metadata.labels["app.kubernetes.io/name"]`}},
		{"nested in a list", edit(func(m map[string]any) {
			c := containers(m)
			c[0].(map[string]any)["ports"].([]any)[0].(map[string]any)["containerPort"] = int64(8080)
			c[1].(map[string]any)["image"] = "alpine"
		}), []string{"spec.template.spec.containers[0].ports[0].containerPort", "spec.template.spec.containers[1].image"}},
		{"a list of another length", edit(func(m map[string]any) {
			tpl := m["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
			tpl["containers"] = containers(m)[:1]
		}), []string{"spec.template.spec.containers"}},
		{"an empty list or null the edge left out", edit(func(m map[string]any) {
			delete(m["spec"].(map[string]any), "tolerations")
			delete(m["spec"].(map[string]any), "nothing")
			delete(m["metadata"].(map[string]any), "annotations")
		}), nil},
		{"an empty list filled at the edge", edit(func(m map[string]any) {
			m["spec"].(map[string]any)["tolerations"] = []any{"x"}
		}), []string{"spec.tolerations"}},
		{"several, sorted", edit(func(m map[string]any) {
			m["spec"].(map[string]any)["replicas"] = int64(5)
			m["data"].(map[string]any)["mode"] = "local"
			delete(m["metadata"].(map[string]any)["labels"].(map[string]any), "tier")
		}), []string{"data.mode", "metadata.labels.tier", "spec.replicas"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := driftPaths(c.have, want)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("driftPaths = %q, want %q", got, c.want)
			}
			if in := containsAll(c.have, want); in != (len(got) == 0) {
				t.Errorf("containsAll = %v while driftPaths = %q: they must agree", in, got)
			}
		})
	}
	if got := driftPaths("x", map[string]any{"a": "b"}); !reflect.DeepEqual(got, []string{"."}) {
		t.Errorf("a whole object of another type: %q, want the root", got)
	}
}

// TestDriftPathsNeverValues checks that a Secret's values reach neither the paths nor their text.
func TestDriftPathsNeverValues(t *testing.T) {
	want := map[string]any{"data": map[string]any{"password": "czNjcjN0", "user": "YWRtaW4="}}
	have := map[string]any{"data": map[string]any{"password": "aHVudGVyMg==", "user": "YWRtaW4="}}
	paths := driftPaths(have, want)
	e := driftEntry(&desired{key: transport.Key{Resource: "secrets", Namespace: "app", Name: "db"}}, "v1", edgev1alpha1.DriftEdited, true, paths, time.Now())
	text := fmt.Sprintf("%v %s", e, pathsText(e))
	for _, secret := range []string{"czNjcjN0", "aHVudGVyMg==", "s3cr3t", "hunter2"} {
		if strings.Contains(text, secret) {
			t.Errorf("the report holds the value %q: %s", secret, text)
		}
	}
	if !reflect.DeepEqual(e.Paths, []string{"data.password"}) {
		t.Errorf("paths = %q, want data.password", e.Paths)
	}
}

func TestBoundPaths(t *testing.T) {
	var many []string
	for i := 0; i < 25; i++ {
		many = append(many, fmt.Sprintf("data.k%02d", i))
	}
	kept, n := boundPaths(many)
	if len(kept) != edgev1alpha1.MaxDriftPaths || n != 25 || kept[0] != "data.k00" {
		t.Errorf("boundPaths(25) = %d kept, count %d, first %q; want %d, 25, data.k00", len(kept), n, kept[0], edgev1alpha1.MaxDriftPaths)
	}
	if kept, n := boundPaths(nil); kept != nil || n != 0 {
		t.Errorf("boundPaths(nil) = %q, %d", kept, n)
	}
	e := edgev1alpha1.DriftEntry{Paths: kept, PathCount: 25}
	if got := pathsText(e); !strings.HasSuffix(got, "and 15 more)") {
		t.Errorf("pathsText = %q, want it to say 15 more", got)
	}
}

func TestRecordDrift(t *testing.T) {
	at := func(object, change string, repaired bool, paths ...string) edgev1alpha1.DriftEntry {
		e := edgev1alpha1.DriftEntry{Object: object, Change: change, Repaired: repaired, Version: "v1", Paths: paths, PathCount: int32(len(paths))}
		return e
	}
	var r *edgev1alpha1.DriftReport
	r = recordDrift(r, at("configmaps/app/a", edgev1alpha1.DriftEdited, true, "data.mode"))
	r = recordDrift(r, at("configmaps/app/a", edgev1alpha1.DriftEdited, true, "data.mode"))
	if r.Count != 2 || r.Repairs != 2 || len(r.Recent) != 1 || r.Recent[0].Count != 2 {
		t.Fatalf("the same drift twice: %+v, want one entry counted twice", r)
	}
	r = recordDrift(r, at("configmaps/app/a", edgev1alpha1.DriftEdited, true, "data.other"))
	r = recordDrift(r, at("configmaps/app/once", edgev1alpha1.DriftEdited, false, "data.mode"))
	if r.Count != 4 || r.Repairs != 3 || len(r.Recent) != 3 || r.Recent[0].Object != "configmaps/app/once" || r.Recent[0].Repaired {
		t.Fatalf("other drifts: %+v, want three entries, the create-only one first and not repaired", r)
	}
	// The same drift again moves its entry first.
	r = recordDrift(r, at("configmaps/app/a", edgev1alpha1.DriftEdited, true, "data.mode"))
	if r.Recent[0].Paths[0] != "data.mode" || r.Recent[0].Count != 3 || len(r.Recent) != 3 {
		t.Fatalf("a repeated drift: %+v, want its entry first with count 3", r.Recent)
	}
	for i := 0; i < 10; i++ {
		r = recordDrift(r, at(fmt.Sprintf("configmaps/app/n%d", i), edgev1alpha1.DriftDeleted, true))
	}
	if r.Count != 15 || len(r.Recent) != edgev1alpha1.MaxDriftEntries || r.Recent[0].Object != "configmaps/app/n9" || r.Recent[4].Object != "configmaps/app/n5" {
		t.Errorf("past the bound: count %d, recent %+v; want 15 and the newest %d, newest first", r.Count, r.Recent, edgev1alpha1.MaxDriftEntries)
	}
}

func TestLeftDriftReportedOncePerChange(t *testing.T) {
	d := planned(t, plainConfigMap("app", "once", map[string]any{"edge.kcp.io/create-only": "true"}))
	st := newAssemblageState(testAssemblage)
	now := time.Now()
	live := atEdge(d, "created")
	live.Object["data"] = map[string]any{"k": "first edit"}
	note := func(live *unstructured.Unstructured) bool {
		var paths []string
		var have map[string]any
		change := edgev1alpha1.DriftDeleted
		if live != nil {
			paths, have, change = driftPaths(live.Object, d.obj.Object), live.Object, edgev1alpha1.DriftEdited
		}
		_, isNew := st.noteLeftDriftLocked(d, change, paths, driftFingerprint(have, d.obj.Object), now)
		return isNew
	}
	if !note(live) {
		t.Fatal("a first edit is not reported")
	}
	status := live.DeepCopy()
	status.Object["metadata"].(map[string]any)["resourceVersion"] = "99"
	if note(status) {
		t.Error("the same edit, seen again with another resourceVersion, is reported again")
	}
	second := live.DeepCopy()
	second.Object["data"] = map[string]any{"k": "second edit"}
	if !note(second) {
		t.Error("a second edit of the same field is not reported")
	}
	if st.drift.Count != 2 || len(st.drift.Recent) != 1 || st.drift.Recent[0].Count != 2 || st.drift.Recent[0].Repaired {
		t.Errorf("report = %+v, want two drifts in one entry, not repaired", st.drift)
	}
	if !note(nil) || note(nil) {
		t.Error("a deletion is not reported exactly once")
	}

	// After a restart, the drift the status reports is not reported again when found again.
	restarted := newAssemblageState(testAssemblage)
	restarted.restoreDrift(st.drift)
	st = restarted
	if note(nil) {
		t.Error("a deletion the status reports already is reported again after a restart")
	}
	if st.drift.Count != 3 {
		t.Errorf("restored count = %d, want 3", st.drift.Count)
	}
}
