package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Customizer, in a namespace of a workload workspace, rewrites parts of the workload objects that
// opt in with the annotation edge.kcp.io/customizer: <name> (a Customizer of the same namespace,
// or of the namespace given as <namespace>/<name> for cluster-scoped objects) before they are
// written to each destination's mailbox.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,categories=edge
// +kubebuilder:printcolumn:name="Replacements",type=string,JSONPath=`.replacements[*].path`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Customizer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// replacements are applied in order.
	// +optional
	// +kubebuilder:validation:MaxItems=100
	Replacements []Replacement `json:"replacements,omitempty"`
}

// Replacement sets the value at a path of the object.
type Replacement struct {
	// path is a JSONPath to the field to set, e.g. "$.spec.replicas" or
	// "$.spec.template.spec.containers[0].image". Strings in value may use %(key) expansion.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.startsWith('$') || self.startsWith('.') || self.startsWith('{')",message="path must be a JSONPath such as $.spec.replicas (starting with '$', '.' or '{')"
	Path string `json:"path"`

	// value is the JSON value to put there.
	Value apiextensionsv1.JSON `json:"value"`
}

// CustomizerList is a list of Customizers.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type CustomizerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Customizer `json:"items"`
}
