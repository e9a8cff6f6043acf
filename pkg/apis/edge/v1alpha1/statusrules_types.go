package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Bounds of status collectors and their results.
const (
	// MaxCollectorsPerPlacement bounds spec.statusCollectors.
	MaxCollectorsPerPlacement = 10
	// DefaultCollectorLimit is the number of groups or rows a collector keeps unless its limit
	// says otherwise; MaxCollectorLimit is the most it may ask for.
	DefaultCollectorLimit = 20
	MaxCollectorLimit     = 100
)

// StatusCollector, in a workload workspace, collects values from the status of what placements
// deliver: an EdgePlacement names it in spec.statusCollectors. The syncer of each destination
// evaluates its CEL expressions on the objects it applied there, and reports only the results in
// the assemblage's status; the status summarizer combines them over the destinations into the
// placement's status.collected.
//
// Every expression sees the object as the edge has it, as the variable `object`. With combine,
// the objects that pass filter are grouped by the values of groupBy, and each group gets the
// count, sum, min, max or avg of values of select; without combine, each object that passes
// filter is a row of the values of select. limit bounds the groups or rows kept.
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,categories=edge
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.conditions[?(@.type=="Accepted")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type StatusCollector struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +kubebuilder:validation:XValidation:rule="!has(self.combine) || self.combine.all(c, c.type == 'count' || (has(c.select) && has(self.select) && self.select.exists(s, s.name == c.select)))",message="each combine entry but count names, in select, one of spec.select's names: add that select entry, or fix the name"
	// +kubebuilder:validation:XValidation:rule="!has(self.groupBy) || has(self.combine)",message="spec.groupBy needs spec.combine: groups are combined (count, sum, min, max, avg); without combine, each object is one row of spec.select"
	// +kubebuilder:validation:XValidation:rule="has(self.select) || has(self.combine)",message="a collector needs spec.select (rows of values) or spec.combine (values combined per group)"
	Spec StatusCollectorSpec `json:"spec"`
	// +optional
	Status StatusRuleStatus `json:"status,omitempty"`
}

// StatusCollectorSpec is what a collector collects. The rules that check its shape at admission
// are on StatusCollector's spec (SyncerConfig carries it without them).
type StatusCollectorSpec struct {
	// filter is a CEL expression over `object` giving a bool: only the objects for which it is
	// true are collected. Omitted, every object the placement delivers is.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Filter string `json:"filter,omitempty"`

	// select names CEL expressions over `object` giving the values collected.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=10
	Select []NamedExpression `json:"select,omitempty"`

	// groupBy names CEL expressions over `object` whose values group the objects. Needs combine.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=5
	GroupBy []NamedExpression `json:"groupBy,omitempty"`

	// combine says what each group gets: count (the objects), or sum, min, max or avg of one of
	// select's values (values that are not numbers are left out and counted as errors; an object
	// without the value adds nothing).
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=10
	Combine []Combination `json:"combine,omitempty"`

	// limit is the number of groups, or rows, kept in the placement's status (default 20, at
	// most 100); the status says how many there were in all.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	Limit int32 `json:"limit,omitempty"`
}

// NamedExpression is a CEL expression with a name.
type NamedExpression struct {
	// name names the value in results and tables.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-zA-Z][a-zA-Z0-9_]*$`
	Name string `json:"name"`
	// expression is CEL over `object`.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Expression string `json:"expression"`
}

// Combination types, in Combination.Type.
const (
	CombineCount = "count"
	CombineSum   = "sum"
	CombineMin   = "min"
	CombineMax   = "max"
	CombineAvg   = "avg"
)

// Combination is one value of each group.
type Combination struct {
	// name names the result.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-zA-Z][a-zA-Z0-9_]*$`
	Name string `json:"name"`
	// type is count, sum, min, max or avg.
	// +kubebuilder:validation:Enum=count;sum;min;max;avg
	Type string `json:"type"`
	// select names the entry of spec.select combined; not for count.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Select string `json:"select,omitempty"`
}

// HealthRule, in a workload workspace, says when objects of one kind are ready, progressing or
// failed, in place of kstatus, for every placement of the workspace: the syncer evaluates it at
// the edge on the objects of that kind it applied, and what it decides is the object's state
// everywhere (the assemblage's status, the placement's summary, rollouts, kubectl edge status).
// Of two rules for the same kind, the first by name applies.
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,categories=edge
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Group",type=string,JSONPath=`.spec.group`
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.kind`
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.conditions[?(@.type=="Accepted")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type HealthRule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec HealthRuleSpec `json:"spec"`
	// +optional
	Status StatusRuleStatus `json:"status,omitempty"`
}

// HealthRuleSpec decides the state of objects of one kind. failed is looked at first: when it is
// true the object is Failed; else when ready is true it is Ready; else it is progressing
// (Applied, not ready yet).
type HealthRuleSpec struct {
	// group is the kind's API group; "" is the core group.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Group string `json:"group,omitempty"`
	// kind is the kind, e.g. "Database".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`
	// ready is CEL over `object` giving a bool: the object is ready.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Ready string `json:"ready"`
	// failed is CEL over `object` giving a bool: the object failed.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Failed string `json:"failed,omitempty"`
	// message is CEL over `object` giving a string: why it is not ready, for people.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Message string `json:"message,omitempty"`
}

// StatusRuleStatus is a StatusCollector's or HealthRule's status, written by the placement
// translator: the condition Accepted says whether its expressions compile within the cost limit,
// and if not, which expression, where and why.
type StatusRuleStatus struct {
	// observedGeneration is the generation the conditions are of.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// The condition of StatusCollectors and HealthRules, and its reasons.
const (
	RuleAccepted             = "Accepted"
	ReasonExpressionsCompile = "ExpressionsCompile"
	ReasonInvalidExpression  = "InvalidExpression"
	ReasonDuplicateKind      = "DuplicateKind"
)

// StatusCollectorList is a list of StatusCollectors.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type StatusCollectorList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []StatusCollector `json:"items"`
}

// HealthRuleList is a list of HealthRules.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type HealthRuleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HealthRule `json:"items"`
}

// SyncerCollector is a StatusCollector as its placement's destinations get it, in their
// SyncerConfig: the syncer evaluates it on the objects of that placement's assemblage.
type SyncerCollector struct {
	// placement is the placement that names the collector.
	Placement PlacementReference `json:"placement"`
	// name is the StatusCollector's name.
	Name string              `json:"name"`
	Spec StatusCollectorSpec `json:"spec"`
}

// SyncerHealthRule is a HealthRule as the destinations of its workspace's placements get it, in
// their SyncerConfig.
type SyncerHealthRule struct {
	// cluster is the logical cluster of the workload workspace whose placements it applies to.
	Cluster string `json:"cluster"`
	// name is the HealthRule's name.
	Name string         `json:"name"`
	Spec HealthRuleSpec `json:"spec"`
}

// CollectorReport is what the syncer collected for one collector from one assemblage's objects,
// in the assemblage's status: groups (with combine) or rows (without).
type CollectorReport struct {
	// name is the collector's name.
	Name string `json:"name"`
	// matched is the number of objects that passed the filter.
	// +optional
	Matched int32 `json:"matched,omitempty"`
	// groups are, with combine, the groups, each with its partial results.
	// +optional
	// +listType=atomic
	Groups []CollectedGroup `json:"groups,omitempty"`
	// rows are, without combine, the values of select per object.
	// +optional
	// +listType=atomic
	Rows []CollectedObjectRow `json:"rows,omitempty"`
	// omitted counts the groups or rows left out: past the collector's limit, or past the
	// syncer's status size budget.
	// +optional
	Omitted int32 `json:"omitted,omitempty"`
	// errors counts the evaluations that failed at run time (an expression that errs on an
	// object, is over the cost limit, or gives a value of the wrong type).
	// +optional
	Errors int32 `json:"errors,omitempty"`
	// errorExample is one of them.
	// +optional
	ErrorExample *CollectorError `json:"errorExample,omitempty"`
}

// CollectedGroup is one group's partial results at one destination.
type CollectedGroup struct {
	// key are the values of groupBy, in order, as JSON.
	// +optional
	// +listType=atomic
	Key []string `json:"key,omitempty"`
	// count is the number of objects in the group.
	Count int64 `json:"count"`
	// values are the combinations other than count, in the order of spec.combine.
	// +optional
	// +listType=atomic
	Values []CombinedValue `json:"values,omitempty"`
}

// CombinedValue is one combination of one group.
type CombinedValue struct {
	// name is the combination's name.
	Name string `json:"name"`
	// value is the result, as a JSON number; absent when no object of the group had a number.
	// +optional
	Value string `json:"value,omitempty"`
	// count is how many numbers went into it.
	// +optional
	Count int64 `json:"count,omitempty"`
}

// CollectedObjectRow is one object's values of select.
type CollectedObjectRow struct {
	// object is the object's key (see CopyKey).
	Object string `json:"object"`
	// values are the values of select, in order, as JSON ("" where the object has none).
	// +listType=atomic
	Values []string `json:"values"`
}

// CollectorError is one failure of a collector's or health rule's expression at run time.
type CollectorError struct {
	// destination is the SyncTarget, as <inventory cluster>:<name>; only in a placement's status.
	// +optional
	Destination string `json:"destination,omitempty"`
	// object is the object's key.
	Object string `json:"object"`
	// error is what failed: the expression's name and the error.
	Error string `json:"error"`
}

// CollectedStatus is one collector's results over all of a placement's destinations, in the
// placement's status.collected: a table whose columns are, with combine, groupBy's names then
// combine's; without, destination, object and select's names.
type CollectedStatus struct {
	// name is the collector's name.
	Name string `json:"name"`
	// columns name the values of each row.
	// +listType=atomic
	Columns []string `json:"columns"`
	// rows are the groups or rows, at most the collector's limit.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	Rows []CollectedRow `json:"rows,omitempty"`
	// rowCount is the number of groups or rows in all, of which rows holds at most limit (groups
	// or rows that syncers left out past their budget are not known here; see omitted).
	// +optional
	RowCount int32 `json:"rowCount,omitempty"`
	// omitted counts the groups or rows that syncers left out of their reports.
	// +optional
	Omitted int32 `json:"omitted,omitempty"`
	// destinations is the number of destinations whose report went in.
	// +optional
	Destinations int32 `json:"destinations,omitempty"`
	// matched is the number of objects that passed the filter, over the destinations.
	// +optional
	Matched int64 `json:"matched,omitempty"`
	// errors counts the evaluations that failed at run time, over the destinations.
	// +optional
	Errors int64 `json:"errors,omitempty"`
	// errorExample is one of them, with its destination.
	// +optional
	ErrorExample *CollectorError `json:"errorExample,omitempty"`
	// problem says why the collector yields nothing, if it cannot: it does not exist, or is not
	// accepted.
	// +optional
	Problem string `json:"problem,omitempty"`
}

// CollectedRow is one row of a CollectedStatus.
type CollectedRow struct {
	// values are the row's values, one per column, as the expressions gave them (null where an
	// object has none).
	// +listType=atomic
	Values []apiextensionsv1.JSON `json:"values"`
}
