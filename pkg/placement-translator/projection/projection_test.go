package projection

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

func ptr(s string) *string { return &s }

var (
	deployment = Object{Group: "apps", Resource: "deployments", Namespaced: true,
		Namespace: "web", Name: "front", Labels: map[string]string{"app": "front", "tier": "web"}}
	configMap = Object{Resource: "configmaps", Namespaced: true, Namespace: "web", Name: "settings"}
	crd       = Object{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions",
		Name: "widgets.example.com", Labels: map[string]string{"app": "front"}}
	webNS = map[string]string{"env": "prod", "kubernetes.io/metadata.name": "web"}
)

func sel(kv ...string) edgev1alpha1.LabelSelector {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return edgev1alpha1.LabelSelector{MatchLabels: m}
}

func TestMatches(t *testing.T) {
	cases := []struct {
		name     string
		test     edgev1alpha1.DownsyncObjectTest
		obj      Object
		nsLabels map[string]string
		want     bool
	}{
		{name: "empty test matches namespaced", obj: deployment, nsLabels: webNS, want: true},
		{name: "empty test matches cluster-scoped", obj: crd, want: true},

		{name: "apiGroup nil matches core", test: edgev1alpha1.DownsyncObjectTest{}, obj: configMap, want: true},
		{name: "apiGroup equal", test: edgev1alpha1.DownsyncObjectTest{APIGroup: ptr("apps")}, obj: deployment, want: true},
		{name: "apiGroup differs", test: edgev1alpha1.DownsyncObjectTest{APIGroup: ptr("batch")}, obj: deployment},
		{name: "apiGroup core matches core", test: edgev1alpha1.DownsyncObjectTest{APIGroup: ptr("")}, obj: configMap, want: true},
		{name: "apiGroup core refuses apps", test: edgev1alpha1.DownsyncObjectTest{APIGroup: ptr("")}, obj: deployment},

		{name: "resources listed", test: edgev1alpha1.DownsyncObjectTest{Resources: []string{"services", "deployments"}}, obj: deployment, want: true},
		{name: "resources not listed", test: edgev1alpha1.DownsyncObjectTest{Resources: []string{"services"}}, obj: deployment},
		{name: "resources star", test: edgev1alpha1.DownsyncObjectTest{Resources: []string{"*"}}, obj: crd, want: true},

		{name: "namespaces listed", test: edgev1alpha1.DownsyncObjectTest{Namespaces: []string{"web"}}, obj: deployment, want: true},
		{name: "namespaces not listed", test: edgev1alpha1.DownsyncObjectTest{Namespaces: []string{"db"}}, obj: deployment},
		{name: "namespaces star", test: edgev1alpha1.DownsyncObjectTest{Namespaces: []string{"*"}}, obj: deployment, want: true},
		{name: "namespaces star refuses cluster-scoped", test: edgev1alpha1.DownsyncObjectTest{Namespaces: []string{"*"}}, obj: crd},
		{name: "namespaces empty-name refuses cluster-scoped", test: edgev1alpha1.DownsyncObjectTest{Namespaces: []string{""}}, obj: crd},

		{name: "namespaceSelectors one of several matches", obj: deployment, nsLabels: webNS, want: true,
			test: edgev1alpha1.DownsyncObjectTest{NamespaceSelectors: []edgev1alpha1.LabelSelector{sel("env", "dev"), sel("env", "prod")}}},
		{name: "namespaceSelectors none matches", obj: deployment, nsLabels: webNS,
			test: edgev1alpha1.DownsyncObjectTest{NamespaceSelectors: []edgev1alpha1.LabelSelector{sel("env", "dev")}}},
		{name: "namespaceSelectors nil nsLabels never match", obj: deployment,
			test: edgev1alpha1.DownsyncObjectTest{NamespaceSelectors: []edgev1alpha1.LabelSelector{{}}}},
		{name: "namespaceSelectors nil nsLabels refuse DoesNotExist", obj: deployment,
			test: edgev1alpha1.DownsyncObjectTest{NamespaceSelectors: []edgev1alpha1.LabelSelector{{MatchExpressions: []edgev1alpha1.LabelSelectorRequirement{
				{Key: "env", Operator: metav1.LabelSelectorOpDoesNotExist}}}}}},
		{name: "namespaceSelectors empty selector, known unlabelled namespace", obj: deployment, nsLabels: map[string]string{}, want: true,
			test: edgev1alpha1.DownsyncObjectTest{NamespaceSelectors: []edgev1alpha1.LabelSelector{{}}}},
		{name: "namespaceSelectors refuse cluster-scoped", obj: crd, nsLabels: map[string]string{},
			test: edgev1alpha1.DownsyncObjectTest{NamespaceSelectors: []edgev1alpha1.LabelSelector{{}}}},

		{name: "objectNames listed", test: edgev1alpha1.DownsyncObjectTest{ObjectNames: []string{"back", "front"}}, obj: deployment, want: true},
		{name: "objectNames not listed", test: edgev1alpha1.DownsyncObjectTest{ObjectNames: []string{"back"}}, obj: deployment},
		{name: "objectNames star", test: edgev1alpha1.DownsyncObjectTest{ObjectNames: []string{"*"}}, obj: crd, want: true},

		{name: "labelSelectors one of several matches", obj: deployment, want: true,
			test: edgev1alpha1.DownsyncObjectTest{LabelSelectors: []edgev1alpha1.LabelSelector{sel("app", "back"), sel("tier", "web")}}},
		{name: "labelSelectors all pairs of one selector needed", obj: deployment,
			test: edgev1alpha1.DownsyncObjectTest{LabelSelectors: []edgev1alpha1.LabelSelector{sel("app", "front", "tier", "db")}}},
		{name: "labelSelectors match cluster-scoped", obj: crd, want: true,
			test: edgev1alpha1.DownsyncObjectTest{LabelSelectors: []edgev1alpha1.LabelSelector{sel("app", "front")}}},
		{name: "labelSelectors expression", obj: deployment, want: true,
			test: edgev1alpha1.DownsyncObjectTest{LabelSelectors: []edgev1alpha1.LabelSelector{{MatchExpressions: []edgev1alpha1.LabelSelectorRequirement{
				{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"web", "api"}}}}}}},
		{name: "labelSelectors on unlabelled object", obj: configMap,
			test: edgev1alpha1.DownsyncObjectTest{LabelSelectors: []edgev1alpha1.LabelSelector{sel("app", "front")}}},

		{name: "all fields pass", obj: deployment, nsLabels: webNS, want: true, test: edgev1alpha1.DownsyncObjectTest{
			APIGroup: ptr("apps"), Resources: []string{"deployments"}, Namespaces: []string{"web"},
			NamespaceSelectors: []edgev1alpha1.LabelSelector{sel("env", "prod")}, ObjectNames: []string{"front"},
			LabelSelectors: []edgev1alpha1.LabelSelector{sel("app", "front")}}},
		{name: "all fields but labelSelectors pass", obj: deployment, nsLabels: webNS, test: edgev1alpha1.DownsyncObjectTest{
			APIGroup: ptr("apps"), Resources: []string{"deployments"}, Namespaces: []string{"web"},
			NamespaceSelectors: []edgev1alpha1.LabelSelector{sel("env", "prod")}, ObjectNames: []string{"front"},
			LabelSelectors: []edgev1alpha1.LabelSelector{sel("app", "back")}}},
		{name: "namespaces pass but namespaceSelectors fail", obj: deployment, nsLabels: webNS, test: edgev1alpha1.DownsyncObjectTest{
			Namespaces: []string{"*"}, NamespaceSelectors: []edgev1alpha1.LabelSelector{sel("env", "dev")}}},
		{name: "group passes but resource fails", obj: deployment, test: edgev1alpha1.DownsyncObjectTest{
			APIGroup: ptr("apps"), Resources: []string{"statefulsets"}}},
		{name: "resource passes but name fails", obj: deployment, test: edgev1alpha1.DownsyncObjectTest{
			Resources: []string{"*"}, ObjectNames: []string{"back"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Matches(&c.test, c.obj, c.nsLabels)
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if got != c.want {
				t.Errorf("Matches = %v, want %v", got, c.want)
			}
		})
	}
}

func TestSelects(t *testing.T) {
	apps := edgev1alpha1.DownsyncObjectTest{APIGroup: ptr("apps"), Resources: []string{"deployments"}}
	core := edgev1alpha1.DownsyncObjectTest{APIGroup: ptr(""), Resources: []string{"configmaps"}, Namespaces: []string{"web"}}
	cases := []struct {
		name  string
		tests []edgev1alpha1.DownsyncObjectTest
		obj   Object
		want  bool
	}{
		{name: "no tests select nothing", obj: deployment},
		{name: "first of two", tests: []edgev1alpha1.DownsyncObjectTest{apps, core}, obj: deployment, want: true},
		{name: "second of two", tests: []edgev1alpha1.DownsyncObjectTest{apps, core}, obj: configMap, want: true},
		{name: "neither", tests: []edgev1alpha1.DownsyncObjectTest{apps, core}, obj: crd},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Selects(c.tests, c.obj, webNS)
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if got != c.want {
				t.Errorf("Selects = %v, want %v", got, c.want)
			}
		})
	}
}

func TestInvalidSelectors(t *testing.T) {
	good := edgev1alpha1.DownsyncObjectTest{Resources: []string{"*"}}
	badKey := sel("bad key!", "x")
	badOp := edgev1alpha1.LabelSelector{MatchExpressions: []edgev1alpha1.LabelSelectorRequirement{
		{Key: "ok", Operator: metav1.LabelSelectorOpExists},
		{Key: "env", Operator: metav1.LabelSelectorOpIn}, // In without values
	}}
	cases := []struct {
		name     string
		tests    []edgev1alpha1.DownsyncObjectTest
		obj      Object
		wantPath string
	}{
		{name: "label selector matchLabels key", obj: deployment,
			tests:    []edgev1alpha1.DownsyncObjectTest{good, good, {LabelSelectors: []edgev1alpha1.LabelSelector{badKey}}},
			wantPath: `downsync[2].labelSelectors[0].matchLabels["bad key!"]`},
		{name: "second label selector expression", obj: deployment,
			tests:    []edgev1alpha1.DownsyncObjectTest{{LabelSelectors: []edgev1alpha1.LabelSelector{{}, badOp}}},
			wantPath: `downsync[0].labelSelectors[1].matchExpressions[1]`},
		{name: "namespace selector, reported even for a cluster-scoped object", obj: crd,
			tests:    []edgev1alpha1.DownsyncObjectTest{good, {NamespaceSelectors: []edgev1alpha1.LabelSelector{badKey}}},
			wantPath: `downsync[1].namespaceSelectors[0].matchLabels["bad key!"]`},
		{name: "reported even when another test matches and this one's other fields fail", obj: deployment,
			tests: []edgev1alpha1.DownsyncObjectTest{good,
				{APIGroup: ptr("nope"), LabelSelectors: []edgev1alpha1.LabelSelector{badOp}}},
			wantPath: `downsync[1].labelSelectors[0].matchExpressions[1]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Selects(c.tests, c.obj, webNS)
			if got {
				t.Errorf("Selects = true with an invalid selector")
			}
			var se *SelectorError
			if !errors.As(err, &se) {
				t.Fatalf("error %v is not a *SelectorError", err)
			}
			if se.Path != c.wantPath {
				t.Errorf("Path = %q, want %q", se.Path, c.wantPath)
			}
			if !strings.HasPrefix(err.Error(), c.wantPath+": ") || se.Unwrap() == nil {
				t.Errorf("error %q does not start with %q and wrap the cause", err, c.wantPath+": ")
			}
		})
	}

	// Matches alone gives a path relative to the test.
	_, err := Matches(&edgev1alpha1.DownsyncObjectTest{LabelSelectors: []edgev1alpha1.LabelSelector{{}, badKey}}, deployment, nil)
	if err == nil || !strings.HasPrefix(err.Error(), `labelSelectors[1].matchLabels["bad key!"]: `) {
		t.Errorf("Matches error = %v", err)
	}
	// No error means a nil interface, not a nil *SelectorError.
	if _, err := Matches(&good, deployment, nil); err != nil {
		t.Errorf("Matches error = %#v, want nil", err)
	}
}
