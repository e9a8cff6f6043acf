package syncer

import (
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

func mustKey(t *testing.T, s string) transport.Key {
	t.Helper()
	k, ok := transport.ParseKey(s)
	if !ok {
		t.Fatalf("bad key %q", s)
	}
	return k
}

func cmRef(name string) objectRef {
	return objectRef{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Namespace: "app", Name: name}
}

func TestWhatLeft(t *testing.T) {
	doc := &transport.Document{Objects: []transport.Entry{
		plainConfigMap("app", "kept", nil),
		denaturedEntry("not a manifest"), // still in the version, though it cannot be applied
	}}
	shared := []edgev1alpha1.SharedObject{{Object: "configmaps/app/moved", Assemblage: testForeignAssemblageName}}
	p := newPlan(testAssemblage, "v2", doc, shared, testMarks)
	owned := map[transport.Key]objectRef{
		mustKey(t, "configmaps/app/kept"):           cmRef("kept"),
		mustKey(t, "configmaps/web/check-web-hook"): {GVR: schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}, Name: "check-web"},
		mustKey(t, "configmaps/app/moved"):          cmRef("moved"),
		mustKey(t, "configmaps/app/gone"):           cmRef("gone"),
		mustKey(t, "namespaces/old"):                {GVR: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, Name: "old"},
	}
	renamed := orphan{key: mustKey(t, "configmaps/app/kept"), ref: cmRef("kept-before")}
	got := whatLeft(owned, []orphan{renamed}, p)
	var names []string
	for _, d := range got {
		names = append(names, d.key.String()+"@"+d.ref.Name+map[bool]string{true: "(replaced)", false: ""}[d.replaced])
	}
	sort.Strings(names)
	want := []string{"configmaps/app/gone@gone", "configmaps/app/kept@kept-before(replaced)", "namespaces/old@old"}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("whatLeft = %v, want %v", names, want)
	}
	if len(whatLeft(nil, nil, p)) != 0 {
		t.Errorf("something left an assemblage that had put nothing at the edge")
	}
}

func TestDeletionVerdict(t *testing.T) {
	key := mustKey(t, "configmaps/app/cm")
	marked := func(owner, asm, source string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}}
		u.SetName("cm")
		u.SetNamespace("app")
		labels := map[string]string{"app": "x"}
		if owner != "" {
			labels[testOwnerLabel] = owner
		}
		u.SetLabels(labels)
		annotations := map[string]string{}
		if asm != "" {
			annotations[testAssemblageAnnotation] = asm
		}
		if source != "" {
			annotations[testSourceAnnotation] = source
		}
		u.SetAnnotations(annotations)
		return u
	}
	other := transport.MarksFor("another-uid")
	otherSyncers := marked("", "", "")
	otherSyncers.SetLabels(map[string]string{other.Label: "created"})
	otherSyncers.SetAnnotations(map[string]string{other.AssemblageAnnotation: testAssemblage, other.SourceAnnotation: "configmaps/app/cm"})
	cases := []struct {
		name    string
		live    *unstructured.Unstructured
		want    verdict
		whyPart string
	}{
		{"created from this assemblage", marked("created", testAssemblage, "configmaps/app/cm"), verdictDelete, ""},
		{"adopted by this assemblage", marked("adopted", testAssemblage, "configmaps/app/cm"), verdictRelease, ""},
		{"owner label removed at the edge", marked("", testAssemblage, "configmaps/app/cm"), verdictRelease, ""},
		{"applied from another assemblage now", marked("created", testForeignAssemblageName, "configmaps/app/cm"), verdictKeep, testForeignAssemblageName},
		{"another key of this assemblage", marked("created", testAssemblage, "configmaps/app/other"), verdictKeep, "configmaps/app/other"},
		{"created by a syncer before assemblages", marked("created", "", "/configmaps/app/cm"), verdictKeep, "not say"},
		{"another syncer's", otherSyncers, verdictKeep, "not say"},
		{"gone", nil, verdictKeep, "not at the edge"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, why := deletionVerdict(c.live, testMarks, testAssemblage, key)
			if got != c.want {
				t.Errorf("deletionVerdict = %v (%s), want %v", got, why, c.want)
			}
			if !strings.Contains(why, c.whyPart) {
				t.Errorf("why = %q, want it to say %q", why, c.whyPart)
			}
		})
	}
}
