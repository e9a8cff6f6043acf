package projection

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

// list splits a comma-separated fuzz argument; "" is no list at all.
func list(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// pairs reads "k=v,k2=v2" into a map; nil for "".
func pairs(s string) map[string]string {
	if s == "" {
		return nil
	}
	m := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

var operators = []metav1.LabelSelectorOperator{
	metav1.LabelSelectorOpIn, metav1.LabelSelectorOpNotIn, metav1.LabelSelectorOpExists,
	metav1.LabelSelectorOpDoesNotExist, "Equals",
}

// fuzzSelector builds a selector from fuzz arguments: matchLabels from "k=v,..." and, unless
// key is "", one requirement.
func fuzzSelector(matchLabels, key string, op uint8, values string) edgev1alpha1.LabelSelector {
	s := edgev1alpha1.LabelSelector{MatchLabels: pairs(matchLabels)}
	if key != "" {
		s.MatchExpressions = []edgev1alpha1.LabelSelectorRequirement{{
			Key: key, Operator: operators[int(op)%len(operators)], Values: list(values),
		}}
	}
	return s
}

// FuzzMatches checks selection on tests and objects that the fuzzer builds:
//   - it never panics, and a broken selector is a *SelectorError whatever the object, with the
//     same message for every object, and a path that locates it;
//   - removing any one field of a test never unselects an object (each field only narrows);
//   - a test of label selectors alone selects exactly what metav1's selectors select;
//   - Selects over several tests is the OR of Matches, and refuses them all if one is broken.
func FuzzMatches(f *testing.F) {
	f.Add("apps", true, "deployments,services", "web", "front", "app=front", "env=prod",
		"app=front", "tier", uint8(0), "web,db", "", "", uint8(2), "",
		"apps", "deployments", true, "web", "front", "app=front,tier=web", "env=prod")
	f.Add("", false, "*", "*", "*", "", "", "", "", uint8(0), "", "", "env", uint8(3), "",
		"", "configmaps", false, "", "settings", "", "")
	f.Add("", true, "", "", "", "bad key!=x", "", "", "k", uint8(2), "v", "", "", uint8(0), "",
		"", "configmaps", true, "web", "settings", "", "")
	f.Add("", true, "", "", "", "", "", "", "k", uint8(4), "v", "", "", uint8(0), "",
		"", "configmaps", true, "web", "settings", "", "")
	f.Fuzz(func(t *testing.T,
		group string, hasGroup bool, resources, namespaces, names string,
		labelMatch, nsMatch string, labelMatch2, labelKey string, labelOp uint8, labelValues string,
		nsMatch2, nsKey string, nsOp uint8, nsValues string,
		objGroup, objResource string, objNamespaced bool, objNamespace, objName, objLabels, nsLabels string,
	) {
		test := edgev1alpha1.DownsyncObjectTest{
			Resources: list(resources), Namespaces: list(namespaces), ObjectNames: list(names),
		}
		if hasGroup {
			test.APIGroup = &group
		}
		if labelMatch != "" || labelMatch2 != "" || labelKey != "" {
			test.LabelSelectors = []edgev1alpha1.LabelSelector{{MatchLabels: pairs(labelMatch)}, fuzzSelector(labelMatch2, labelKey, labelOp, labelValues)}
		}
		if nsMatch != "" || nsMatch2 != "" || nsKey != "" {
			test.NamespaceSelectors = []edgev1alpha1.LabelSelector{{MatchLabels: pairs(nsMatch)}, fuzzSelector(nsMatch2, nsKey, nsOp, nsValues)}
		}
		obj := Object{Group: objGroup, Resource: objResource, Namespaced: objNamespaced, Name: objName, Labels: pairs(objLabels)}
		if objNamespaced {
			obj.Namespace = objNamespace
		}
		nsl := pairs(nsLabels)

		got, err := Matches(&test, obj, nsl)
		other := Object{Group: "x", Resource: "y", Namespaced: !objNamespaced, Name: "z"}
		if !objNamespaced {
			other.Namespace = "n"
		}
		_, otherErr := Matches(&test, other, map[string]string{})
		if (err == nil) != (otherErr == nil) || (err != nil && err.Error() != otherErr.Error()) {
			t.Fatalf("a broken selector is reported differently for different objects: %v / %v", err, otherErr)
		}
		if err != nil {
			var se *SelectorError
			if got || !errors.As(err, &se) {
				t.Fatalf("Matches = %v, %v; want false and a *SelectorError", got, err)
			}
			if !strings.HasPrefix(se.Path, "labelSelectors[") && !strings.HasPrefix(se.Path, "namespaceSelectors[") {
				t.Fatalf("the error's path %q does not locate a selector", se.Path)
			}
			sok, serr := Selects([]edgev1alpha1.DownsyncObjectTest{{}, test}, obj, nsl)
			if sok || serr == nil || !strings.HasPrefix(serr.Error(), "downsync[1]."+se.Path) {
				t.Fatalf("Selects with a broken test = %v, %v; want false and an error at downsync[1].%s", sok, serr, se.Path)
			}
			return
		}

		// Each field only narrows: without it, what matched still matches.
		if got {
			for name, drop := range map[string]func(*edgev1alpha1.DownsyncObjectTest){
				"apiGroup":           func(d *edgev1alpha1.DownsyncObjectTest) { d.APIGroup = nil },
				"resources":          func(d *edgev1alpha1.DownsyncObjectTest) { d.Resources = nil },
				"namespaces":         func(d *edgev1alpha1.DownsyncObjectTest) { d.Namespaces = nil },
				"namespaceSelectors": func(d *edgev1alpha1.DownsyncObjectTest) { d.NamespaceSelectors = nil },
				"objectNames":        func(d *edgev1alpha1.DownsyncObjectTest) { d.ObjectNames = nil },
				"labelSelectors":     func(d *edgev1alpha1.DownsyncObjectTest) { d.LabelSelectors = nil },
			} {
				wider := *test.DeepCopy()
				drop(&wider)
				if ok, err := Matches(&wider, obj, nsl); !ok || err != nil {
					t.Fatalf("without %s the test no longer selects the object: %v, %v", name, ok, err)
				}
			}
		}

		// Label selectors alone select as metav1's selectors do.
		if len(test.LabelSelectors) > 0 {
			alone := edgev1alpha1.DownsyncObjectTest{LabelSelectors: test.LabelSelectors}
			ok, err := Matches(&alone, obj, nsl)
			if err != nil {
				t.Fatalf("label selectors alone: %v", err)
			}
			want := false
			for i := range test.LabelSelectors {
				s, err := metav1.LabelSelectorAsSelector(test.LabelSelectors[i].AsMetav1())
				if err != nil {
					t.Fatalf("metav1 refuses a selector that Matches accepted: %v", err)
				}
				want = want || s.Matches(labels.Set(obj.Labels))
			}
			if ok != want {
				t.Fatalf("label selectors %+v on labels %v: Matches = %v, metav1 = %v", test.LabelSelectors, obj.Labels, ok, want)
			}
		}

		// Several tests: the OR of each.
		all := edgev1alpha1.DownsyncObjectTest{ObjectNames: []string{obj.Name + "-other"}}
		sok, serr := Selects([]edgev1alpha1.DownsyncObjectTest{all, test}, obj, nsl)
		if serr != nil || sok != got {
			t.Fatalf("Selects = %v, %v; Matches of the same test = %v", sok, serr, got)
		}
	})
}
