// Package projection decides which objects of a workload workspace an EdgePlacement selects, and
// prepares them to be copied into mailbox workspaces: it keeps back objects that never travel
// (IsSystemObject) or that would act on the server holding them (IsActiveInCenter), unwraps such
// objects from their denatured form (ParseDenatured), strips what belongs to the source server
// (Sanitize), and fingerprints content (Hash).
package projection

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/labels"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

// Object identifies a workload object for selection.
type Object struct {
	// Group and Resource name the object's API resource, e.g. "apps" and "deployments"; Group ""
	// is the core group.
	Group, Resource string
	// Namespaced is whether the resource is namespaced.
	Namespaced bool
	// Namespace ("" when cluster-scoped) and Name of the object.
	Namespace, Name string
	// Labels of the object.
	Labels map[string]string
}

// SelectorError reports an invalid label selector in a DownsyncObjectTest. Path locates the
// selector, and where possible the offending part of it, e.g.
// `downsync[2].labelSelectors[0].matchLabels["bad key!"]`; Matches gives paths relative to the
// test ("labelSelectors[0]..."), Selects prefixes them with "downsync[i].". A caller reporting
// against the whole object may prefix "spec.".
type SelectorError struct {
	Path string
	Err  error
}

// Error implements error.
func (e *SelectorError) Error() string { return e.Path + ": " + e.Err.Error() }

// Unwrap returns the underlying parse error.
func (e *SelectorError) Unwrap() error { return e.Err }

// Matches reports whether test selects obj. nsLabels are the labels of obj's namespace; nil
// means unknown (or cluster-scoped), and then no namespaceSelector matches, not even an empty one,
// whereas an empty non-nil map is a namespace known to have no labels.
//
// Every field that test gives must pass: apiGroup (nil matches any group, "" the core group),
// resources ("*" matches any), namespaces ("*" matches any namespace), namespaceSelectors (any
// one matching nsLabels), objectNames ("*" matches any) and labelSelectors (any one matching
// obj.Labels). A test that gives no field matches everything. A cluster-scoped object never
// matches a test that gives namespaces or namespaceSelectors.
//
// Every selector of test is parsed whatever obj is, so that an invalid one is reported the same
// way for every object: as a *SelectorError, with false.
func Matches(test *edgev1alpha1.DownsyncObjectTest, obj Object, nsLabels map[string]string) (bool, error) {
	ok, err := matches(test, obj, nsLabels)
	if err != nil { // not a nil *SelectorError in a non-nil error
		return false, err
	}
	return ok, nil
}

func matches(test *edgev1alpha1.DownsyncObjectTest, obj Object, nsLabels map[string]string) (bool, *SelectorError) {
	nsSelectors, err := parseSelectors(test.NamespaceSelectors, "namespaceSelectors")
	if err != nil {
		return false, err
	}
	objSelectors, err := parseSelectors(test.LabelSelectors, "labelSelectors")
	if err != nil {
		return false, err
	}
	if test.APIGroup != nil && *test.APIGroup != obj.Group {
		return false, nil
	}
	if !nameMatches(test.Resources, obj.Resource) || !nameMatches(test.ObjectNames, obj.Name) {
		return false, nil
	}
	if len(test.Namespaces) > 0 || len(nsSelectors) > 0 {
		if !obj.Namespaced || !nameMatches(test.Namespaces, obj.Namespace) {
			return false, nil
		}
		if len(nsSelectors) > 0 && (nsLabels == nil || !anySelects(nsSelectors, nsLabels)) {
			return false, nil
		}
	}
	if len(objSelectors) > 0 && !anySelects(objSelectors, obj.Labels) {
		return false, nil
	}
	return true, nil
}

// Selects reports whether any of tests matches obj (see Matches). If any test has an invalid
// selector it returns false and a *SelectorError for the first such test, whose Path begins with
// "downsync[i].", whether or not another test matches: a placement with a broken test selects
// nothing rather than a partial set.
func Selects(tests []edgev1alpha1.DownsyncObjectTest, obj Object, nsLabels map[string]string) (bool, error) {
	selected := false
	for i := range tests {
		ok, err := matches(&tests[i], obj, nsLabels)
		if err != nil {
			return false, &SelectorError{Path: fmt.Sprintf("downsync[%d].%s", i, err.Path), Err: err.Err}
		}
		selected = selected || ok
	}
	return selected, nil
}

// nameMatches reports whether name is among names, "*" matching any; an empty list matches all.
func nameMatches(names []string, name string) bool {
	return len(names) == 0 || slices.Contains(names, "*") || slices.Contains(names, name)
}

func anySelects(selectors []labels.Selector, set map[string]string) bool {
	for _, s := range selectors {
		if s.Matches(labels.Set(set)) {
			return true
		}
	}
	return false
}

// parseSelectors parses each selector; the error names the first invalid one as field[i].
func parseSelectors(raw []edgev1alpha1.LabelSelector, field string) ([]labels.Selector, *SelectorError) {
	out := make([]labels.Selector, 0, len(raw))
	for i := range raw {
		s, err := parseSelector(&raw[i], fmt.Sprintf("%s[%d]", field, i))
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// parseSelector converts s into a labels.Selector; the error locates the first invalid part,
// below path.
func parseSelector(s *edgev1alpha1.LabelSelector, path string) (labels.Selector, *SelectorError) {
	selector, badPath, err := s.AsSelector(path)
	if err != nil {
		return nil, &SelectorError{Path: badPath, Err: err}
	}
	return selector, nil
}
