package v1alpha1

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// SyncerConfigName is the name of the one SyncerConfig in each mailbox workspace.
const SyncerConfigName = "the-one"

// SyncerConfig, one per mailbox workspace, tells that mailbox's syncer what else it must know
// besides the mailbox's Assemblages: what comes back from the edge (upsync) and how often to
// renew its heartbeat. The placement translator writes it; the syncer reads it and reports in its
// status which version it is and which assemblage formats it reads.
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,categories=edge
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Namespaces",type=string,JSONPath=`.spec.namespaceScope.namespaces`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type SyncerConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec SyncerConfigSpec `json:"spec,omitempty"`
	// +optional
	Status SyncerConfigStatus `json:"status,omitempty"`
}

// SyncerConfigSpec says what the syncer syncs besides the assemblages.
type SyncerConfigSpec struct {
	// namespaceScope is the down-sync scope of per-object copies, the transport before
	// assemblages. The placement translator keeps it as it was, and the copies it names in the
	// mailbox, until the mailbox's syncer reports that it reads assemblages (status.formats), so
	// that a syncer not yet upgraded deletes nothing at its edge; then it removes both.
	// +optional
	NamespaceScope *NamespaceScopeDownsyncs `json:"namespaceScope,omitempty"`

	// clusterScope is the cluster-scoped part of the same legacy scope.
	// +optional
	ClusterScope []ClusterScopeDownsyncResource `json:"clusterScope,omitempty"`

	// upsync says which objects created at the edge go back into the mailbox.
	// +optional
	Upsync []UpsyncSet `json:"upsync,omitempty"`

	// heartbeat says how often the syncer renews its heartbeat Lease. It is set for the whole
	// fleet by edge-controller-manager (--heartbeat-interval).
	// +optional
	Heartbeat *HeartbeatSettings `json:"heartbeat,omitempty"`

	// collectors are the StatusCollectors that the placements of this mailbox's assemblages name,
	// per placement: the syncer evaluates each on its placement's objects and reports the results
	// in that assemblage's status. Only collectors whose expressions compile are here.
	// +optional
	// +listType=atomic
	Collectors []SyncerCollector `json:"collectors,omitempty"`

	// healthRules are the HealthRules of the workspaces of this mailbox's placements: the syncer
	// decides with them, in place of kstatus, the state of objects of their kinds. Only rules
	// whose expressions compile are here.
	// +optional
	// +listType=atomic
	HealthRules []SyncerHealthRule `json:"healthRules,omitempty"`
}

// HeartbeatSettings pace a syncer's heartbeat.
type HeartbeatSettings struct {
	// intervalSeconds is how often the syncer renews its heartbeat Lease.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600
	IntervalSeconds int32 `json:"intervalSeconds"`
}

// NamespaceScopeDownsyncs: every object of these resources in these namespaces is down-synced.
type NamespaceScopeDownsyncs struct {
	// +optional
	Namespaces []string `json:"namespaces,omitempty"`
	// +optional
	Resources []NamespaceScopeDownsyncResource `json:"resources,omitempty"`
}

// NamespaceScopeDownsyncResource is a namespaced resource at one version.
type NamespaceScopeDownsyncResource struct {
	metav1.GroupResource `json:",inline"`
	// apiVersion is the version to read and write.
	APIVersion string `json:"apiVersion"`
}

// ClusterScopeDownsyncResource is a cluster-scoped resource at one version, and which of its
// objects to down-sync.
type ClusterScopeDownsyncResource struct {
	metav1.GroupResource `json:",inline"`
	// apiVersion is the version to read and write.
	APIVersion string `json:"apiVersion"`
	// objects are the names to down-sync; "*" means all.
	// +optional
	Objects []string `json:"objects,omitempty"`
}

// SyncerConfigStatus is written by the syncer.
type SyncerConfigStatus struct {
	// observedGeneration is the generation of the spec the syncer is acting on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// lastSyncerConfigUpdateTime is when the syncer last took in a change of this config.
	// +optional
	LastSyncerConfigUpdateTime *metav1.Time `json:"lastSyncerConfigUpdateTime,omitempty"`
	// errors the syncer met acting on this config, at most 20.
	// +optional
	// +kubebuilder:validation:MaxItems=20
	Errors []string `json:"errors,omitempty"`
	// applied is what syncers before assemblages reported per copy; syncers since leave it
	// unset.
	// +optional
	Applied map[string]string `json:"applied,omitempty"`
	// syncerVersion is the version of the syncer serving this mailbox.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	SyncerVersion string `json:"syncerVersion,omitempty"`
	// formats are the assemblage formats the syncer reads. Empty: a syncer from before
	// assemblages, which applies the per-object copies of spec.namespaceScope and
	// spec.clusterScope.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	Formats []string `json:"formats,omitempty"`
	// publicKey is the public half of the syncer's key pair (X25519, standard base64), made at
	// the edge: the placement translator seals Secrets, and objects annotated
	// edge.kcp.io/sealed: "true", for it. Empty: a syncer that opens nothing sealed, to which no
	// such object is delivered.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	PublicKey string `json:"publicKey,omitempty"`
	// keyID names publicKey: the first 16 hex digits of its SHA-256. A sealed object names the
	// key it is sealed for.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	KeyID string `json:"keyID,omitempty"`
}

// CopyKey names an object in a mailbox, in SyncerConfig status.applied and in placement
// summaries: <resource>.<group>/<namespace>/<name>, without the group for the core group and
// without the namespace for a cluster-scoped object. Resource names hold no dot and object names
// no slash, so the key can be parsed back (ParseCopyKey).
func CopyKey(gr schema.GroupResource, namespace, name string) string {
	var b strings.Builder
	b.WriteString(gr.String())
	if namespace != "" {
		b.WriteString("/" + namespace)
	}
	b.WriteString("/" + name)
	return b.String()
}

// ParseCopyKey is the inverse of CopyKey.
func ParseCopyKey(key string) (gr schema.GroupResource, namespace, name string, ok bool) {
	parts := strings.Split(key, "/")
	switch len(parts) {
	case 2:
		name = parts[1]
	case 3:
		namespace, name = parts[1], parts[2]
	default:
		return gr, "", "", false
	}
	gr = schema.ParseGroupResource(parts[0])
	if gr.Resource == "" || name == "" {
		return gr, "", "", false
	}
	return gr, namespace, name, true
}

// SyncerConfigList is a list of SyncerConfigs.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type SyncerConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SyncerConfig `json:"items"`
}
