package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Location is a place where workloads can run, in an inventory workspace. EdgePlacements select
// Locations by their labels; a Location stands for the SyncTargets of its workspace that its
// instanceSelector selects.
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,categories=edge,shortName=loc
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Instances",type=integer,JSONPath=`.status.instances`
// +kubebuilder:printcolumn:name="Available",type=integer,JSONPath=`.status.availableInstances`
// +kubebuilder:printcolumn:name="Description",type=string,JSONPath=`.spec.description`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Location struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec LocationSpec `json:"spec"`
	// +optional
	Status LocationStatus `json:"status,omitempty"`
}

// LocationSpec says which SyncTargets a Location stands for.
type LocationSpec struct {
	// instanceSelector selects the SyncTargets of this Location's workspace that belong to it.
	// An empty selector selects them all.
	//
	InstanceSelector LabelSelector `json:"instanceSelector"`

	// description is free text for people.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Description string `json:"description,omitempty"`
}

// LocationStatus counts the SyncTargets a Location stands for.
type LocationStatus struct {
	// instances is the number of SyncTargets that the instanceSelector selects.
	// +optional
	Instances int32 `json:"instances"`
	// availableInstances is the number of those that are schedulable.
	// +optional
	AvailableInstances int32 `json:"availableInstances"`
}

// LocationList is a list of Locations.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type LocationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Location `json:"items"`
}

// SyncTarget describes one edge cluster (pcluster), in an inventory workspace. Its labels and
// annotations are the parameters that customise workloads for it. The mailbox controller gives
// each SyncTarget a mailbox workspace and reports on it and on its syncer here.
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,categories=edge,shortName=st
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Unschedulable",type=boolean,JSONPath=`.spec.unschedulable`
// +kubebuilder:printcolumn:name="Mailbox",type=string,JSONPath=`.status.mailboxWorkspace`,priority=1
// +kubebuilder:printcolumn:name="MailboxReady",type=string,JSONPath=`.status.conditions[?(@.type=="MailboxReady")].status`
// +kubebuilder:printcolumn:name="SyncerReady",type=string,JSONPath=`.status.conditions[?(@.type=="SyncerReady")].status`
// +kubebuilder:printcolumn:name="SyncerCompatible",type=string,JSONPath=`.status.conditions[?(@.type=="SyncerCompatible")].status`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type SyncTarget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec SyncTargetSpec `json:"spec,omitempty"`
	// +optional
	Status SyncTargetStatus `json:"status,omitempty"`
}

// SyncTargetSpec holds what an inventory admin says about an edge cluster.
type SyncTargetSpec struct {
	// unschedulable keeps new placements off this edge cluster when true. What is already there
	// is not removed by this flag alone: the scheduler drops it as a destination.
	// +optional
	Unschedulable bool `json:"unschedulable,omitempty"`
}

// SyncTargetStatus is maintained by the mailbox controller.
type SyncTargetStatus struct {
	// mailboxWorkspace is the path of this SyncTarget's mailbox workspace, e.g.
	// root:espw:2x8k1n-mb-6a3c....
	// +optional
	MailboxWorkspace string `json:"mailboxWorkspace,omitempty"`

	// mailboxCluster is the logical cluster name of the mailbox workspace.
	// +optional
	MailboxCluster string `json:"mailboxCluster,omitempty"`

	// syncerVersion is the version that the SyncTarget's syncer reports in its SyncerConfig
	// (edge-mc's, as edge-syncer --version prints), empty until a syncer has reported.
	// +optional
	SyncerVersion string `json:"syncerVersion,omitempty"`

	// conditions: MailboxReady, SyncerReady (Unknown once the syncer has been silent longer than
	// the fleet's grace period), SyncerCompatible (whether the syncer reads the assemblage
	// format the center writes). They are written when they change, not on every heartbeat: the
	// heartbeat itself is the Lease in the mailbox.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// SyncTargetList is a list of SyncTargets.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type SyncTargetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SyncTarget `json:"items"`
}
