package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// Assemblage, in a mailbox workspace, is what one EdgePlacement delivers to one destination: the
// objects the placement selects, customised for that destination, as one exactly-versioned unit.
// The placement translator writes it, one write per change; the syncer applies it at the edge as
// a unit and reports in its status, one write per coalescing window.
//
// The objects travel as data (spec.data): a gzip-compressed JSON document in the format named by
// spec.format (package transport encodes and decodes it), so that objects of any kind, custom
// kinds and their CRDs, cluster-scoped and denatured objects included, travel without the mailbox
// serving their kinds. When the compressed document is larger than one part may hold, the rest
// of it is in AssemblageParts of the same mailbox; the syncer applies a version only once it has
// every part of it, each matching its digest, and the whole matching spec.version.
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,categories=edge,shortName=asm
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Placement",type=string,JSONPath=`.spec.placement.name`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="Applied",type=string,JSONPath=`.status.appliedVersion`
// +kubebuilder:printcolumn:name="Objects",type=integer,JSONPath=`.spec.objectCount`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.counts.ready`
// +kubebuilder:printcolumn:name="Failed",type=integer,JSONPath=`.status.counts.failed`
// +kubebuilder:printcolumn:name="Workspace",type=string,JSONPath=`.spec.placement.cluster`,priority=1
// +kubebuilder:printcolumn:name="Parts",type=integer,JSONPath=`.spec.parts`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Assemblage struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec AssemblageSpec `json:"spec"`
	// +optional
	Status AssemblageStatus `json:"status,omitempty"`
}

// AssemblageSpec is written by the placement translator.
type AssemblageSpec struct {
	// placement is the EdgePlacement this assemblage delivers.
	Placement PlacementReference `json:"placement"`

	// version identifies the content: a hash of the uncompressed document. The syncer checks it,
	// and reports in status.appliedVersion the version it applied.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Version string `json:"version"`

	// revision is the placement's revision this version was made from: a hash of what the
	// placement selects in its workspace before customisation. Destinations of one placement
	// share a revision while their versions differ by their customisation.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Revision string `json:"revision,omitempty"`

	// format names the encoding of data. A syncer that does not know it reports so and changes
	// nothing at the edge.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Format string `json:"format"`

	// objects names the objects carried here, each as <resource>.<group>/<namespace>/<name>
	// (see CopyKey), in the order they are applied. It is the index of the document, for the
	// status summarizer and for people.
	// +optional
	// +listType=atomic
	Objects []string `json:"objects,omitempty"`

	// objectCount is the number of objects carried here.
	// +optional
	ObjectCount int32 `json:"objectCount,omitempty"`

	// shared names the objects that the placement selects for this destination but that travel
	// in another placement's assemblage of the same mailbox: the first, by name, of the
	// workspace's placements that select them. Their state is reported here too.
	// +optional
	// +listType=atomic
	Shared []SharedObject `json:"shared,omitempty"`

	// parts is the number of pieces the document is cut into: this object holds the first, and
	// AssemblageParts named <name>-<index> hold the others.
	// +kubebuilder:validation:Minimum=1
	Parts int32 `json:"parts"`

	// data is the first piece of the compressed document.
	// +optional
	Data []byte `json:"data,omitempty"`

	// digest is the hash of data.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Digest string `json:"digest,omitempty"`
}

// PlacementReference names an EdgePlacement in a workload workspace.
type PlacementReference struct {
	// cluster is the logical cluster name of the workload workspace.
	Cluster string `json:"cluster"`
	// name is the EdgePlacement's name.
	Name string `json:"name"`
}

// SharedObject is an object selected by a placement but carried by another placement's
// assemblage.
type SharedObject struct {
	// object is the object's key, as in spec.objects.
	Object string `json:"object"`
	// assemblage is the name of the assemblage that carries it.
	Assemblage string `json:"assemblage"`
}

// AssemblageStatus is written by the syncer, at most once per coalescing window.
type AssemblageStatus struct {
	// observedVersion is the newest version the syncer has read and acted on.
	// +optional
	ObservedVersion string `json:"observedVersion,omitempty"`

	// appliedVersion is the version whose every object is applied at the edge (or, create-only,
	// was created there once). Until a new version is, the edge keeps the objects of this one.
	// +optional
	AppliedVersion string `json:"appliedVersion,omitempty"`

	// conditions: Applied (appliedVersion is spec.version), Ready (every object is ready at the
	// edge, by kstatus), and Refused (the syncer could not read the assemblage: an unknown format,
	// a digest or version that does not match, a missing part; the edge keeps the last good
	// version).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// counts counts the objects of observedVersion, carried and shared, by state.
	// +optional
	Counts ObjectCounts `json:"counts,omitempty"`

	// objects reports, per object of observedVersion, its state at the edge. Objects are listed
	// with their edge status while the status stays within the syncer's size budget, and with
	// their state only past it (statusOmitted).
	// +optional
	// +listType=atomic
	Objects []ObjectState `json:"objects,omitempty"`

	// statusOmitted is true when some objects are listed without their edge status, to keep the
	// status within the syncer's size budget.
	// +optional
	StatusOmitted bool `json:"statusOmitted,omitempty"`

	// drift reports what the syncer found changed at the edge, by someone else, in the objects it
	// applied from this assemblage: edited or deleted there. The syncer puts such an object back
	// as the assemblage has it, except a create-only one, which it leaves as the edge has it. It
	// names the fields that differed, never their values. Absent until the first drift.
	// +optional
	Drift *DriftReport `json:"drift,omitempty"`

	// collected holds the results of the placement's status collectors on the objects of
	// observedVersion, one report per collector, within the syncer's size budget.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	Collected []CollectorReport `json:"collected,omitempty"`

	// reportTime is when the syncer wrote this status.
	// +optional
	ReportTime *metav1.Time `json:"reportTime,omitempty"`
}

// The bounds of an assemblage's drift report: the entries kept, and the field paths kept per
// entry.
const (
	MaxDriftEntries = 5
	MaxDriftPaths   = 10
)

// Kinds of drift, in DriftEntry.Change.
const (
	// DriftEdited: fields that the syncer sets had other values at the edge, or were missing.
	DriftEdited = "Edited"
	// DriftDeleted: the object was deleted at the edge.
	DriftDeleted = "Deleted"
)

// DriftReport is the syncer's account of drift at the edge for one assemblage.
type DriftReport struct {
	// count is the number of drifts the syncer found in this assemblage's objects, repaired or
	// not, since it first reported on the assemblage.
	Count int64 `json:"count"`

	// repairs is how many of them it repaired.
	// +optional
	Repairs int64 `json:"repairs,omitempty"`

	// recent are the latest drifts, newest first, at most 5. An object that drifts again in the
	// same way (the same change of the same fields at the same version) keeps one entry, with
	// its count raised and its time renewed.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=5
	Recent []DriftEntry `json:"recent,omitempty"`
}

// DriftEntry is one drift of one object at the edge.
type DriftEntry struct {
	// object is the object's key (see CopyKey).
	Object string `json:"object"`

	// change is Edited or Deleted.
	Change string `json:"change"`

	// repaired is true when the syncer put the object back as the assemblage has it; false for a
	// create-only object, which is left as the edge has it.
	Repaired bool `json:"repaired"`

	// paths are the fields, among those the syncer sets, whose value at the edge differed or
	// that were missing there, as dotted paths (list elements as [index], keys that are not
	// plain names as ["key"]), sorted; at most 10, pathCount counts them all. Values are never
	// reported. Empty for Deleted.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	Paths []string `json:"paths,omitempty"`

	// pathCount is the number of fields that differed.
	// +optional
	PathCount int32 `json:"pathCount,omitempty"`

	// version is the assemblage's version the syncer was keeping at the edge when it found the
	// drift.
	// +optional
	Version string `json:"version,omitempty"`

	// count is how many times this object drifted in this way.
	Count int32 `json:"count"`

	// time is when the syncer last found it.
	Time metav1.Time `json:"time"`
}

// ObjectCounts counts objects by state.
type ObjectCounts struct {
	// +optional
	Pending int32 `json:"pending"`
	// +optional
	Applied int32 `json:"applied"`
	// +optional
	Ready int32 `json:"ready"`
	// +optional
	Failed int32 `json:"failed"`
}

// Object states at the edge, in ObjectState.State.
const (
	// ObjectPending: not applied yet at this version (waiting for its namespace or kind, or for
	// the syncer).
	ObjectPending = "Pending"
	// ObjectApplied: applied, not ready yet (kstatus InProgress or Unknown).
	ObjectApplied = "Applied"
	// ObjectReady: applied and ready (kstatus Current).
	ObjectReady = "Ready"
	// ObjectFailed: the edge refused it, or kstatus says Failed.
	ObjectFailed = "Failed"
)

// ObjectState is one object's state at the edge.
type ObjectState struct {
	// object is the object's key (see CopyKey).
	Object string `json:"object"`
	// state is Pending, Applied, Ready or Failed.
	State string `json:"state"`
	// reason says why an object is Pending or Failed, for people.
	// +optional
	Reason string `json:"reason,omitempty"`
	// uid is the object's UID at the edge.
	// +optional
	UID types.UID `json:"uid,omitempty"`
	// createdAt, for a create-only object, is when the syncer created it at the edge; it is not
	// created again.
	// +optional
	CreatedAt *metav1.Time `json:"createdAt,omitempty"`
	// status is the object's .status at the edge, unless past the size budget.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	Status *runtime.RawExtension `json:"status,omitempty"`
}

// AssemblageList is a list of Assemblages.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type AssemblageList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Assemblage `json:"items"`
}

// AssemblagePart holds one further piece of an Assemblage's document, when the document is larger
// than one object may hold. It is named <assemblage>-<index> (index from 1) and carries the
// version it belongs to; the placement translator writes the parts of a version before the
// Assemblage that names it, and deletes parts that no version needs any more.
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,categories=edge
// +kubebuilder:printcolumn:name="Assemblage",type=string,JSONPath=`.spec.assemblage`
// +kubebuilder:printcolumn:name="Index",type=integer,JSONPath=`.spec.index`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type AssemblagePart struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec AssemblagePartSpec `json:"spec"`
}

// AssemblagePartSpec is one piece of a document.
type AssemblagePartSpec struct {
	// assemblage names the Assemblage this is a part of.
	Assemblage string `json:"assemblage"`
	// version is the version of the Assemblage this part belongs to.
	// +kubebuilder:validation:MaxLength=64
	Version string `json:"version"`
	// index is this part's place in the document, from 1 (the Assemblage holds piece 0).
	// +kubebuilder:validation:Minimum=1
	Index int32 `json:"index"`
	// data is the piece.
	Data []byte `json:"data"`
	// digest is the hash of data.
	// +kubebuilder:validation:MaxLength=64
	Digest string `json:"digest"`
}

// AssemblagePartList is a list of AssemblageParts.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type AssemblagePartList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AssemblagePart `json:"items"`
}
