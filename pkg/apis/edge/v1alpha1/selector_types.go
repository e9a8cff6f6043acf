package v1alpha1

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// LabelSelector has the shape of metav1.LabelSelector (YAML written for one is valid for the
// other), with bounds, so that admission can check each requirement and refuse a malformed one
// with a message that says what is wrong. A selector with neither field selects everything.
type LabelSelector struct {
	// matchLabels: each key=value pair must be among the object's labels.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	MatchLabels map[string]string `json:"matchLabels,omitempty"`

	// matchExpressions: each requirement must hold.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	MatchExpressions []LabelSelectorRequirement `json:"matchExpressions,omitempty"`
}

// LabelSelectorRequirement is one requirement of a LabelSelector, as in metav1.
//
// +kubebuilder:validation:XValidation:rule="(self.operator in ['In', 'NotIn']) == (has(self.values) && size(self.values) > 0)",message="operator In and NotIn need at least one value; Exists and DoesNotExist take no values"
type LabelSelectorRequirement struct {
	// key is the label key: an optional DNS subdomain prefix and '/', then a name of at most 63
	// letters, digits, '-', '_' or '.', starting and ending with a letter or digit.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`
	Key string `json:"key"`

	// operator is In, NotIn, Exists or DoesNotExist.
	// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist
	Operator metav1.LabelSelectorOperator `json:"operator"`

	// values for In and NotIn.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	Values []string `json:"values,omitempty"`
}

// AsMetav1 returns the selector as a metav1.LabelSelector, for metav1.LabelSelectorAsSelector.
func (s *LabelSelector) AsMetav1() *metav1.LabelSelector {
	if s == nil {
		return nil
	}
	out := &metav1.LabelSelector{MatchLabels: s.MatchLabels}
	for _, r := range s.MatchExpressions {
		out.MatchExpressions = append(out.MatchExpressions, metav1.LabelSelectorRequirement{
			Key: r.Key, Operator: r.Operator, Values: r.Values,
		})
	}
	return out
}

// AsSelector converts the selector into a labels.Selector, as metav1.LabelSelectorAsSelector
// does. On error it also returns the path of the first invalid part, below path, in a stable
// order (matchLabels by key, then matchExpressions by index), so that the same input always
// gives the same message.
func (s *LabelSelector) AsSelector(path string) (selector labels.Selector, badPath string, err error) {
	selector, err = metav1.LabelSelectorAsSelector(s.AsMetav1())
	if err == nil {
		return selector, "", nil
	}
	keys := make([]string, 0, len(s.MatchLabels))
	for k := range s.MatchLabels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		one := &metav1.LabelSelector{MatchLabels: map[string]string{k: s.MatchLabels[k]}}
		if _, err := metav1.LabelSelectorAsSelector(one); err != nil {
			return nil, fmt.Sprintf("%s.matchLabels[%q]", path, k), err
		}
	}
	for i, r := range s.MatchExpressions {
		one := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: r.Key, Operator: r.Operator, Values: r.Values,
		}}}
		if _, err := metav1.LabelSelectorAsSelector(one); err != nil {
			return nil, fmt.Sprintf("%s.matchExpressions[%d]", path, i), err
		}
	}
	return nil, path, err
}
