package transport

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const testUID = "7c2f5e1a-0b7d-4d0e-9a61-3f2d8c1b9e40"

// TestMarksFor spells the keys out: they are what the syncers before assemblages wrote, and a
// change would make a new syncer blind to the objects they applied.
func TestMarksFor(t *testing.T) {
	want := Marks{
		Label:                testUID + ".syncer.edge.kcp.io/owner",
		SourceAnnotation:     testUID + ".syncer.edge.kcp.io/source",
		HashAnnotation:       testUID + ".syncer.edge.kcp.io/hash",
		AssemblageAnnotation: testUID + ".syncer.edge.kcp.io/assemblage",
		FieldManager:         "edge-syncer-" + testUID,
	}
	if got := MarksFor(testUID); got != want {
		t.Errorf("MarksFor = %+v, want %+v", got, want)
	}
	other := MarksFor("another-uid")
	mine := MarksFor(testUID)
	if other.Label == mine.Label || other.SourceAnnotation == mine.SourceAnnotation || other.HashAnnotation == mine.HashAnnotation ||
		other.AssemblageAnnotation == mine.AssemblageAnnotation || other.FieldManager == mine.FieldManager {
		t.Errorf("the marks of two SyncTargets collide: %+v and %+v", other, mine)
	}
}

func marked(labels, annotations map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}}
	u.SetName("settings")
	u.SetLabels(labels)
	u.SetAnnotations(annotations)
	return u
}

func TestManagedBy(t *testing.T) {
	m, other := MarksFor(testUID), MarksFor("another-uid")
	cases := []struct {
		name             string
		live             *unstructured.Unstructured
		managed, created bool
	}{
		{"created", marked(map[string]string{m.Label: "created"}, map[string]string{m.SourceAnnotation: "configmaps/web/settings"}), true, true},
		{"adopted", marked(map[string]string{m.Label: "adopted"}, map[string]string{m.SourceAnnotation: "configmaps/web/settings"}), true, false},
		{"created by a syncer before assemblages", marked(map[string]string{m.Label: "created"}, map[string]string{m.SourceAnnotation: "/configmaps/web/settings"}), true, true},
		{"label removed, source annotation kept", marked(map[string]string{"app": "web"}, map[string]string{m.SourceAnnotation: "configmaps/web/settings"}), true, false},
		{"label with an unknown value, source kept", marked(map[string]string{m.Label: "mine"}, map[string]string{m.SourceAnnotation: "configmaps/web/settings"}), true, false},
		{"label with an unknown value, no source", marked(map[string]string{m.Label: "mine"}, nil), false, false},
		{"foreign object", marked(map[string]string{"app": "web"}, map[string]string{"team": "storefront"}), false, false},
		{"no labels or annotations", marked(nil, nil), false, false},
		{"another syncer's object", marked(map[string]string{other.Label: "created"}, map[string]string{other.SourceAnnotation: "configmaps/web/settings"}), false, false},
		{"nil", nil, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			managed, created := m.ManagedBy(c.live)
			if managed != c.managed || created != c.created {
				t.Errorf("ManagedBy = (managed %v, created %v), want (%v, %v)", managed, created, c.managed, c.created)
			}
		})
	}
}

func TestOrigin(t *testing.T) {
	m := MarksFor(testUID)
	cases := []struct {
		name       string
		live       *unstructured.Unstructured
		assemblage string
		key        string
		ok         bool
	}{
		{"from an assemblage", marked(map[string]string{m.Label: "created"},
			map[string]string{m.SourceAnnotation: "deployments.apps/web/front", m.AssemblageAnnotation: "2abc.web"}), "2abc.web", "deployments.apps/web/front", true},
		{"cluster-scoped", marked(nil,
			map[string]string{m.SourceAnnotation: "clusterroles.rbac.authorization.k8s.io/system:reader", m.AssemblageAnnotation: "2abc.web"}),
			"2abc.web", "clusterroles.rbac.authorization.k8s.io/system:reader", true},
		{"before assemblages", marked(map[string]string{m.Label: "created"},
			map[string]string{m.SourceAnnotation: "apps/deployments/web/front"}), "", "", false},
		{"assemblage without a readable source", marked(nil,
			map[string]string{m.SourceAnnotation: "apps/deployments//front", m.AssemblageAnnotation: "2abc.web"}), "", "", false},
		{"unmarked", marked(nil, nil), "", "", false},
		{"nil", nil, "", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			asm, key, ok := m.Origin(c.live)
			if ok != c.ok || asm != c.assemblage || (ok && key.String() != c.key) {
				t.Errorf("Origin = (%q, %q, %v), want (%q, %q, %v)", asm, key, ok, c.assemblage, c.key, c.ok)
			}
		})
	}
}
