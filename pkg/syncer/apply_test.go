package syncer

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// planned returns the desired form of one entry, as newPlan makes it.
func planned(t *testing.T, e transport.Entry) *desired {
	t.Helper()
	p := newPlan(testAssemblage, "v", &transport.Document{Objects: []transport.Entry{e}}, nil, testMarks)
	d := p.byKey[e.Key()]
	if d == nil || d.invalid != "" {
		t.Fatalf("no valid plan for %s: %+v", e.Key(), d)
	}
	return d
}

// atEdge is d's object as the edge holds it after the syncer applied it with owner label owner.
func atEdge(d *desired, owner string) *unstructured.Unstructured {
	l := withLabel(d.obj, testOwnerLabel, owner)
	l.SetUID("edge-uid")
	l.SetResourceVersion("7")
	l.SetCreationTimestamp(metav1.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC))
	return l
}

func TestDecideApply(t *testing.T) {
	cm := func() *desired { return planned(t, plainConfigMap("app", "cm", nil)) }
	once := func() *desired {
		return planned(t, plainConfigMap("app", "once", map[string]any{"edge.kcp.io/create-only": "true"}))
	}
	edited := func(d *desired) *unstructured.Unstructured {
		l := atEdge(d, "created")
		l.Object["data"] = map[string]any{"k": "changed at the edge"}
		return l
	}
	foreign := func(d *desired) *unstructured.Unstructured {
		l := d.obj.DeepCopy()
		l.SetAnnotations(map[string]string{"made": "by hand"})
		l.SetUID("edge-uid")
		return l
	}
	olderVersion := func(d *desired) *unstructured.Unstructured {
		l := atEdge(d, "created")
		a := l.GetAnnotations()
		a[testHashAnnotation] = "0000000000000000"
		l.SetAnnotations(a)
		l.Object["data"] = map[string]any{"k": "the previous version"}
		return l
	}
	labelRemoved := func(d *desired) *unstructured.Unstructured {
		l := atEdge(d, "created")
		l.SetLabels(nil)
		return l
	}
	cases := []struct {
		name                         string
		d                            *desired
		live                         func(d *desired) *unstructured.Unstructured
		createdBefore, appliedBefore bool
		want                         applyDecision
	}{
		{"new object", cm(), nil, false, false, applyDecision{action: actionApply, owner: "created"}},
		{"in sync, created", cm(), func(d *desired) *unstructured.Unstructured { return atEdge(d, "created") }, false, true,
			applyDecision{action: actionNone, owner: "created"}},
		{"in sync, adopted", cm(), func(d *desired) *unstructured.Unstructured { return atEdge(d, "adopted") }, false, true,
			applyDecision{action: actionNone, owner: "adopted"}},
		{"edited at the edge", cm(), edited, false, true, applyDecision{action: actionApply, owner: "created", drift: "edited"}},
		{"deleted at the edge after it was applied", cm(), nil, false, true, applyDecision{action: actionApply, owner: "created", drift: "deleted"}},
		{"a new version of an applied object", cm(), olderVersion, false, true, applyDecision{action: actionApply, owner: "created"}},
		{"there before, made by someone else", cm(), foreign, false, false, applyDecision{action: actionApply, owner: "adopted"}},
		{"owner label removed at the edge", cm(), labelRemoved, false, true, applyDecision{action: actionApply, owner: "adopted", drift: "edited"}},
		{"create-only, missing, never created", once(), nil, false, false, applyDecision{action: actionApply, owner: "created"}},
		{"create-only, created once and deleted since", once(), nil, true, true, applyDecision{action: actionCreatedOnce, owner: "created", drift: "deleted"}},
		{"create-only, edited at the edge: reported, not repaired", once(), edited, true, true, applyDecision{action: actionNone, owner: "created", drift: "edited"}},
		{"create-only, an older version at the edge", once(), olderVersion, true, true, applyDecision{action: actionNone, owner: "created"}},
		{"create-only, there, creation not recorded", once(), func(d *desired) *unstructured.Unstructured { return atEdge(d, "created") }, false, false,
			applyDecision{action: actionNone, owner: "created", setCreated: true}},
		{"create-only, made by someone else", once(), foreign, false, false,
			applyDecision{action: actionNone, owner: "adopted", setCreated: true, foreign: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var live *unstructured.Unstructured
			if c.live != nil {
				live = c.live(c.d)
			}
			if got := decideApply(live, c.d, testMarks, c.createdBefore, c.appliedBefore); got != c.want {
				t.Errorf("decideApply = %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestMissingAtEdge(t *testing.T) {
	cm := objectRef{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Namespace: "app", Name: "cm"}
	widget := objectRef{GVR: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, Name: "w"}
	terminating := apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "cm", errors.New("namespace app is being terminated"))
	terminating.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause, Message: "namespace app is being terminated"}}
	cases := []struct {
		name string
		err  error
		ref  objectRef
		want string
	}{
		{"namespace missing", apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "app"), cm, "namespace app"},
		{"kind or namespace missing", apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "cm"), cm, "namespace app or the kind configmaps"},
		{"kind missing", apierrors.NewNotFound(schema.GroupResource{Group: "example.com", Resource: "widgets"}, "w"), widget, "the kind widgets.example.com"},
		{"namespace terminating", terminating, cm, "namespace app to finish terminating"},
		{"refused", apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "cm", field.ErrorList{field.Invalid(field.NewPath("data"), "x", "bad")}), cm, ""},
		{"unreachable", errors.New("connection refused"), cm, ""},
	}
	for _, c := range cases {
		if got := missingAtEdge(c.err, c.ref); got != c.want {
			t.Errorf("%s: missingAtEdge = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestRefusedByEdge(t *testing.T) {
	gr := schema.GroupResource{Group: "apps", Resource: "deployments"}
	for name, c := range map[string]struct {
		err  error
		want bool
	}{
		"invalid":        {apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "d", nil), true},
		"bad request":    {apierrors.NewBadRequest("no"), true},
		"forbidden":      {apierrors.NewForbidden(gr, "d", errors.New("no")), true},
		"too large":      {apierrors.NewRequestEntityTooLargeError("big"), true},
		"timeout":        {apierrors.NewTimeoutError("slow", 1), false},
		"unavailable":    {apierrors.NewServiceUnavailable("down"), false},
		"conflict":       {apierrors.NewConflict(gr, "d", errors.New("modified")), false},
		"internal error": {apierrors.NewInternalError(errors.New("oops")), false},
		"a field of the wrong type": {apierrors.NewInternalError(errors.New(
			"failed to create typed patch object (app/o; /v1, Kind=ConfigMap): .data.x: expected string, got &value.valueUnstructured{Value:true}")), true},
		"connection lost": {errors.New("connection reset by peer"), false},
	} {
		if got := refusedByEdge(c.err); got != c.want {
			t.Errorf("%s: refusedByEdge = %v, want %v", name, got, c.want)
		}
	}
}

func TestCRDEstablished(t *testing.T) {
	crd := func(conditions ...any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition"}}
		if conditions != nil {
			u.Object["status"] = map[string]any{"conditions": conditions}
		}
		return u
	}
	cond := func(typ, status, msg string) map[string]any {
		return map[string]any{"type": typ, "status": status, "message": msg}
	}
	cases := []struct {
		name        string
		crd         *unstructured.Unstructured
		established bool
		failed      bool
	}{
		{"no status yet", crd(), false, false},
		{"names accepted, not established", crd(cond("NamesAccepted", "True", ""), cond("Established", "False", "installing")), false, false},
		{"established", crd(cond("NamesAccepted", "True", ""), cond("Established", "True", "")), true, false},
		{"names refused", crd(cond("NamesAccepted", "False", "widgets is already in use")), false, true},
	}
	for _, c := range cases {
		established, failure := crdEstablished(c.crd)
		if established != c.established || (failure != "") != c.failed {
			t.Errorf("%s: crdEstablished = %v, %q; want %v, failed %v", c.name, established, failure, c.established, c.failed)
		}
	}
}
