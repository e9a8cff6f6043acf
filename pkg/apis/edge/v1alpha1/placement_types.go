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
// +kubebuilder:validation:XValidation:rule="!has(self.spec.dependsOn) || !(self.metadata.name in self.spec.dependsOn)",message="spec.dependsOn names the placement itself: a placement cannot wait for itself"
type EdgePlacement struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec EdgePlacementSpec `json:"spec"`
	// +optional
	Status EdgePlacementStatus `json:"status,omitempty"`
}

// EdgePlacementSpec says what goes where.
//
// +kubebuilder:validation:XValidation:rule="!has(self.spreadBy) || has(self.numberOfDestinations)",message="spec.spreadBy needs spec.numberOfDestinations: it spreads the destinations that numberOfDestinations picks; set both, or remove spreadBy"
type EdgePlacementSpec struct {
	// locationSelectors select Locations, in any inventory workspace, by their labels. A Location
	// is selected when any one of the selectors matches it. An empty list selects nothing.
	//
	// +optional
	// +kubebuilder:validation:MaxItems=100
	LocationSelectors []LabelSelector `json:"locationSelectors,omitempty"`

	// numberOfDestinations, when set, makes the placement go to that many of the schedulable
	// SyncTargets that its locationSelectors reach, not to all of them. The picks are sticky: a
	// picked SyncTarget stays picked while it stays eligible (it exists, is schedulable and is
	// still reached), so a change elsewhere moves nothing, and a pick that stops being eligible is
	// replaced. With fewer eligible SyncTargets than asked for, all of them are picked and the
	// condition DestinationsPicked says so. Omitted, every eligible SyncTarget is a destination.
	//
	// +optional
	// +kubebuilder:validation:Minimum=1
	NumberOfDestinations *int32 `json:"numberOfDestinations,omitempty"`

	// spreadBy is a label key: the picks of numberOfDestinations are spread evenly over the
	// values of that label (the counts per value differ by at most one, unless a value has too
	// few SyncTargets). A destination's value is its Location's label, or, if the Location lacks
	// it, its SyncTarget's. SyncTargets with the label on neither are picked only when the
	// labelled ones cannot fill numberOfDestinations. Needs numberOfDestinations.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`
	SpreadBy string `json:"spreadBy,omitempty"`

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
	// +kubebuilder:validation:XValidation:rule="self.all(u, !has(u.apiGroup) || !(u.apiGroup in ['rbac.authorization.k8s.io', 'admissionregistration.k8s.io', 'apiregistration.k8s.io', 'apiextensions.k8s.io', 'authentication.k8s.io', 'authorization.k8s.io', 'certificates.k8s.io', 'apis.kcp.io', 'tenancy.kcp.io', 'core.kcp.io', 'topology.kcp.io', 'cache.kcp.io', 'edge.kcp.io']))",message="objects of this API group cannot be up-synced: in a mailbox they would change who may do what there (RBAC), what it serves (kcp's APIs, CRDs, API services), what it admits, or edge-mc's own objects; up-sync the objects your workload makes instead"
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
	// destination before this placement's objects are delivered there, checked per destination.
	// A dependency that does not exist, that has no assemblage at the destination, or a cycle, is
	// reported on the condition DependenciesReady; removing a dependency deletes nothing.
	//
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=20
	// +kubebuilder:validation:items:MinLength=1
	DependsOn []string `json:"dependsOn,omitempty"`

	// statusCollectors names StatusCollectors of this workspace to evaluate, at each destination,
	// on the objects this placement delivers; their results, combined over the destinations, are
	// in status.collected. A change of a collector reaches the edges without delivering the
	// workload again.
	//
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=10
	// +kubebuilder:validation:items:MinLength=1
	StatusCollectors []string `json:"statusCollectors,omitempty"`
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
	// apiGroup is the objects' API group; "" is the core group. Objects of RBAC, of kcp's own
	// APIs, of edge.kcp.io and of the API server's configuration (admission, API services,
	// CRDs, authentication, authorization, certificates) never come back: in a mailbox they
	// would change who may do what there and what it serves.
	// +optional
	// +kubebuilder:validation:MaxLength=253
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

// RolloutStrategy paces how a new version of what a placement delivers reaches its destinations.
// A destination's version changes when anything it gets changes: an object, a Customizer, the
// placement's selection, the destination's labels. The placement translator enforces every field
// on the versions it writes into the mailboxes; see docs/rollouts.md.
type RolloutStrategy struct {
	// maxInFlight bounds how many destinations at once have a new version delivered but are not
	// done with it (done: ready at the edge, by kstatus, for minReadySeconds): a number, or a
	// percentage of the destinations, rounded up. Omitted, every destination gets a new version at
	// once.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=4
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self > 0 : self.matches('^[1-9][0-9]?%$|^100%$')",message="maxInFlight must be a positive number or a percentage from 1% to 100%"
	MaxInFlight *intstr.IntOrString `json:"maxInFlight,omitempty"`

	// minReadySeconds is how long a destination must be ready with a new version to be done with
	// it: a soak time before the next destinations get it.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=86400
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`

	// progressDeadlineSeconds: a destination not done this long after its delivery counts as
	// failed (default 600).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=604800
	ProgressDeadlineSeconds *int32 `json:"progressDeadlineSeconds,omitempty"`

	// maxFailures is how many destinations may be failed (refused by the edge, failing by
	// kstatus, past the progress deadline) or stale (their syncer silent) before the rollout stops:
	// a number, or a percentage of the destinations, rounded down. The stop shows as the condition
	// RolloutStalled, naming the first of them; the rollout goes on when they recover or a newer
	// version is published. Omitted, no limit.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=4
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 : self.matches('^[0-9]{1,2}%$|^100%$')",message="maxFailures must be a number or a percentage from 0% to 100%"
	MaxFailures *intstr.IntOrString `json:"maxFailures,omitempty"`

	// paused: no destination gets a version it does not have yet; deliveries already in flight
	// finish.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// jitter spreads a change that goes everywhere at once (no maxInFlight, no stages) over this
	// window: each destination gets it at its own point in the window, drawn anew for each version
	// from the destination's name and the version, so no destination is always first.
	// +optional
	Jitter *metav1.Duration `json:"jitter,omitempty"`

	// stages are the rollout's steps, in order: a destination gets a new version only once every
	// destination of the stages before its own is done with it. A destination belongs to the first
	// stage whose selector matches its SyncTarget's and Location's labels (the Location's win where
	// both have a key); a destination in no stage goes last.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=20
	Stages []RolloutStage `json:"stages,omitempty"`

	// resume opens the pause gate of one stage for one revision: `kubectl edge rollout resume`
	// writes it when the rollout waits at a gate. The next revision stops at the gate again.
	// +optional
	Resume *RolloutResume `json:"resume,omitempty"`
}

// RolloutStage is one step of a rollout.
type RolloutStage struct {
	// name names the stage in status and in resume.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// selector selects the destinations of the stage by their SyncTarget's and Location's labels.
	// An empty selector selects every destination not in an earlier stage.
	Selector LabelSelector `json:"selector"`

	// maxInFlight bounds the stage's own deliveries at once, within the rollout's maxInFlight: a
	// number, or a percentage of the stage's destinations, rounded up.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=4
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self > 0 : self.matches('^[1-9][0-9]?%$|^100%$')",message="maxInFlight must be a positive number or a percentage from 1% to 100%"
	MaxInFlight *intstr.IntOrString `json:"maxInFlight,omitempty"`

	// pause stops the rollout after this stage, once every destination of it is done, until a
	// person resumes it (spec.rollout.resume, `kubectl edge rollout resume`).
	// +optional
	Pause bool `json:"pause,omitempty"`
}

// RolloutResume opens a stage's pause gate for one revision.
type RolloutResume struct {
	// stage is the stage whose gate opens.
	Stage string `json:"stage"`
	// revision is the revision (status.rollout.revision) the gate opens for.
	Revision string `json:"revision"`
}

// RolloutStatus is what the placement translator knows of a placement's rollout.
type RolloutStatus struct {
	// revision is the newest revision published: a hash of what the placement selects before
	// customisation (the objects, their Customizers, the selection).
	// +optional
	Revision string `json:"revision,omitempty"`
	// publishedTime is when the translator first saw the revision.
	// +optional
	PublishedTime *metav1.Time `json:"publishedTime,omitempty"`
	// stages counts the destinations of each stage (a last, unnamed one for those in no stage) by
	// their state with the newest version.
	// +optional
	// +kubebuilder:validation:MaxItems=21
	Stages []StageStatus `json:"stages,omitempty"`
	// pausedAt is the stage whose pause gate the rollout waits at.
	// +optional
	PausedAt string `json:"pausedAt,omitempty"`
	// history lists the last revisions, newest first, with when each was done everywhere.
	// +optional
	// +kubebuilder:validation:MaxItems=10
	History []RevisionHistory `json:"history,omitempty"`
}

// StageStatus counts the destinations of one stage.
type StageStatus struct {
	// name is the stage's name; "" for the destinations in no stage.
	Name string `json:"name"`
	// +optional
	Destinations int32 `json:"destinations"`
	// updated are done with their newest version.
	// +optional
	Updated int32 `json:"updated"`
	// inFlight have their newest version delivered and are not done with it yet.
	// +optional
	InFlight int32 `json:"inFlight"`
	// failed are failed or stale.
	// +optional
	Failed int32 `json:"failed"`
	// waiting have not got their newest version yet.
	// +optional
	Waiting int32 `json:"waiting"`
}

// RevisionHistory is one revision of a rollout.
type RevisionHistory struct {
	Revision string `json:"revision"`
	// publishedTime is when the translator first saw it.
	// +optional
	PublishedTime *metav1.Time `json:"publishedTime,omitempty"`
	// completedTime is when every destination was done with it; unset for a revision superseded
	// before that.
	// +optional
	CompletedTime *metav1.Time `json:"completedTime,omitempty"`
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
	// Locations, or, with spec.numberOfDestinations, those picked from them.
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

	// collected holds, per collector that spec.statusCollectors names, its results combined
	// over the destinations, written by the status summarizer.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=10
	Collected []CollectedStatus `json:"collected,omitempty"`

	// rollout says how the newest revision goes out, written by the placement translator.
	// +optional
	Rollout *RolloutStatus `json:"rollout,omitempty"`
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
	// drifted counts, apart from the states above, destinations whose syncer reported drift
	// (an object edited or deleted at the edge, repaired or, create-only, left) while keeping
	// the current version of the placement's assemblage there.
	// +optional
	Drifted int32 `json:"drifted,omitempty"`
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
