package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// MaxBrokenEntries bounds the list of broken (destination, object) entries in an EdgePlacement's
// status, so that the status stays small however large the fleet.
const MaxBrokenEntries = 20

// MaxObjectSummaries bounds the per-object counts in an EdgePlacement's status.
const MaxObjectSummaries = 100

// EdgePlacement, in a workload workspace, says which of the workspace's objects go to which edge
// clusters: those of the Locations that its locationSelectors select.
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,categories=edge,shortName=epl
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Locations",type=integer,JSONPath=`.status.matchingLocationCount`
// +kubebuilder:printcolumn:name="Destinations",type=integer,JSONPath=`.status.matchingSyncTargetCount`
// +kubebuilder:printcolumn:name="Scheduled",type=string,JSONPath=`.status.conditions[?(@.type=="Scheduled")].status`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Ready Destinations",type=integer,JSONPath=`.status.summary.ready`
// +kubebuilder:printcolumn:name="Paused",type=boolean,JSONPath=`.spec.rollout.paused`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type EdgePlacement struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec EdgePlacementSpec `json:"spec"`
	// +optional
	Status EdgePlacementStatus `json:"status,omitempty"`
}

// EdgePlacementSpec says what goes where.
type EdgePlacementSpec struct {
	// locationSelectors select Locations, in any inventory workspace, by their labels. A Location
	// is selected when any one of the selectors matches it. An empty list selects nothing.
	//
	// +optional
	// +kubebuilder:validation:MaxItems=100
	LocationSelectors []LabelSelector `json:"locationSelectors,omitempty"`

	// downsync selects the objects of this workspace that go to the edge clusters. An object is
	// selected when any one of the tests matches it.
	//
	// +optional
	// +kubebuilder:validation:MaxItems=100
	Downsync []DownsyncObjectTest `json:"downsync,omitempty"`

	// upsync says which objects created at the edge come back to the mailboxes and on to this
	// workspace.
	//
	// +optional
	// +kubebuilder:validation:MaxItems=100
	Upsync []UpsyncSet `json:"upsync,omitempty"`

	// wantSingletonReportedState asks, when the placement has exactly one destination, for each
	// workload object's status at that destination to be copied back onto the object here.
	//
	// +optional
	WantSingletonReportedState bool `json:"wantSingletonReportedState,omitempty"`

	// rollout paces how changes reach the destinations.
	//
	// +optional
	Rollout *RolloutStrategy `json:"rollout,omitempty"`

	// dependsOn names EdgePlacements of this workspace whose objects must be ready at a
	// destination before this placement's objects are projected there.
	//
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=20
	// +kubebuilder:validation:items:MinLength=1
	DependsOn []string `json:"dependsOn,omitempty"`
}

// DownsyncObjectTest selects objects. Each field that is given narrows the test; an object
// matches the test when it passes every given field.
type DownsyncObjectTest struct {
	// apiGroup is the object's API group; "" is the core group. Omitted, any group matches.
	// +optional
	APIGroup *string `json:"apiGroup,omitempty"`

	// resources are lower-case plural resource names, e.g. "deployments"; "*" matches all.
	// Omitted, any resource matches.
	// +optional
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MinLength=1
	Resources []string `json:"resources,omitempty"`

	// namespaces are the names of the namespaces the object must be in; "*" matches all.
	// Cluster-scoped objects never match a test that gives namespaces or namespaceSelectors.
	// +optional
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MinLength=1
	Namespaces []string `json:"namespaces,omitempty"`

	// namespaceSelectors select the namespaces, by their labels, that the object must be in.
	// +optional
	// +kubebuilder:validation:MaxItems=20
	NamespaceSelectors []LabelSelector `json:"namespaceSelectors,omitempty"`

	// objectNames are the names the object may have; "*" matches all.
	// +optional
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MinLength=1
	ObjectNames []string `json:"objectNames,omitempty"`

	// labelSelectors select objects by their labels; any one matching is enough.
	// +optional
	// +kubebuilder:validation:MaxItems=20
	LabelSelectors []LabelSelector `json:"labelSelectors,omitempty"`
}

// UpsyncSet selects objects that are created at the edge and come back.
type UpsyncSet struct {
	// apiGroup is the objects' API group; "" is the core group.
	// +optional
	APIGroup string `json:"apiGroup,omitempty"`

	// resources are lower-case plural resource names; "*" matches all.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MinLength=1
	Resources []string `json:"resources"`

	// namespaces the objects are in; "*" or omitted matches all, and cluster-scoped objects.
	// +optional
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MinLength=1
	Namespaces []string `json:"namespaces,omitempty"`

	// names of the objects; "*" or omitted matches all.
	// +optional
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MinLength=1
	Names []string `json:"names,omitempty"`
}

// RolloutStrategy paces how changes reach the destinations of an EdgePlacement.
type RolloutStrategy struct {
	// maxInFlight is how many destinations may be being updated at once: a number, or a
	// percentage of the destinations ("25%"). Omitted, all at once.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=4
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self > 0 : self.matches('^[1-9][0-9]?%$|^100%$')",message="maxInFlight must be a positive number or a percentage from 1% to 100%"
	MaxInFlight *intstr.IntOrString `json:"maxInFlight,omitempty"`

	// maxUnavailable is how many destinations may be not ready during a rollout before it stops:
	// a number, or a percentage of the destinations. Omitted, no limit.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=4
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 : self.matches('^[0-9]{1,2}%$|^100%$')",message="maxUnavailable must be a number or a percentage from 0% to 100%"
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// paused stops new changes from going out; what is at the edge stays.
	// +optional
	Paused bool `json:"paused,omitempty"`
}

// EdgePlacementStatus is written by the edge-mc controllers.
type EdgePlacementStatus struct {
	// observedGeneration is the generation of the spec that this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// matchingLocationCount is the number of Locations that the locationSelectors select.
	// +optional
	MatchingLocationCount int32 `json:"matchingLocationCount"`

	// matchingSyncTargetCount is the number of destinations: schedulable SyncTargets of those
	// Locations.
	// +optional
	MatchingSyncTargetCount int32 `json:"matchingSyncTargetCount"`

	// conditions: Scheduled, Projected, Ready, and problem conditions such as Conflict.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// summary counts the destinations by state.
	// +optional
	Summary *DestinationCounts `json:"summary,omitempty"`

	// broken lists at most 20 (destination, object) pairs that are failing, oldest first.
	// +optional
	// +kubebuilder:validation:MaxItems=20
	Broken []BrokenEntry `json:"broken,omitempty"`

	// brokenCount is the number of broken (destination, object) pairs, of which broken lists
	// the first 20.
	// +optional
	BrokenCount int32 `json:"brokenCount,omitempty"`

	// objects counts, for each object the placement selects, the destinations by the object's
	// state there: at most 100 objects, those not ready everywhere first.
	// +optional
	// +kubebuilder:validation:MaxItems=100
	Objects []ObjectSummary `json:"objects,omitempty"`

	// objectCount is the number of objects the placement selects, of which objects lists at most
	// 100.
	// +optional
	ObjectCount int32 `json:"objectCount,omitempty"`

	// summaryTime is when the status summarizer last wrote summary, broken and objects.
	// +optional
	SummaryTime *metav1.Time `json:"summaryTime,omitempty"`
}

// ObjectSummary counts the destinations of one object by the object's state there.
type ObjectSummary struct {
	// object is <resource>.<group>/<namespace>/<name>, or without the namespace if cluster-scoped.
	Object string `json:"object"`

	DestinationCounts `json:",inline"`
}

// DestinationCounts counts destinations by the state of what was placed there.
type DestinationCounts struct {
	// +optional
	Pending int32 `json:"pending"`
	// +optional
	Applied int32 `json:"applied"`
	// +optional
	Ready int32 `json:"ready"`
	// +optional
	Failed int32 `json:"failed"`
	// stale counts destinations whose syncer has been silent past the grace period.
	// +optional
	Stale int32 `json:"stale"`
}

// BrokenEntry says what is wrong with one object at one destination.
type BrokenEntry struct {
	// destination is the SyncTarget, as <inventory cluster>:<name>.
	Destination string `json:"destination"`
	// object is <resource>.<group>/<namespace>/<name>, or without the namespace if cluster-scoped.
	Object string `json:"object"`
	// reason is the error or state, for people.
	Reason string `json:"reason"`
	// since is when this entry was first seen broken.
	// +optional
	Since *metav1.Time `json:"since,omitempty"`
}

// EdgePlacementList is a list of EdgePlacements.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type EdgePlacementList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EdgePlacement `json:"items"`
}

// SinglePlacementSlice holds destinations of one EdgePlacement, which owns it. A placement with
// many destinations has several slices, each holding at most MaxDestinationsPerSlice.
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,categories=edge,shortName=sps
// +kubebuilder:printcolumn:name="Placement",type=string,JSONPath=`.metadata.labels.edge\.kcp\.io/placement`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type SinglePlacementSlice struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// destinations are the edge clusters, in a stable order.
	// +optional
	// +kubebuilder:validation:MaxItems=1000
	Destinations []SinglePlacement `json:"destinations,omitempty"`
}

// MaxDestinationsPerSlice bounds the size of one SinglePlacementSlice.
const MaxDestinationsPerSlice = 1000

// SinglePlacement is one destination: a SyncTarget, and the Location through which it was
// selected.
type SinglePlacement struct {
	// cluster is the logical cluster name of the inventory workspace.
	Cluster string `json:"cluster"`
	// locationName is the Location that selected the SyncTarget.
	LocationName string `json:"locationName"`
	// syncTargetName is the SyncTarget's name.
	SyncTargetName string `json:"syncTargetName"`
	// syncTargetUID is the SyncTarget's UID, which names its mailbox.
	SyncTargetUID types.UID `json:"syncTargetUID"`
}

// SinglePlacementSliceList is a list of SinglePlacementSlices.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type SinglePlacementSliceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SinglePlacementSlice `json:"items"`
}
