package v1alpha1

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// SyncerConfigName is the name of the one SyncerConfig in each mailbox workspace.
const SyncerConfigName = "the-one"

// SyncerConfig, one per mailbox workspace, tells that mailbox's syncer what to sync: which
// resources to watch and apply in the edge cluster, in which namespaces, and what comes back.
// The placement translator writes it; the syncer reads it and reports in its status.
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

// SyncerConfigSpec says what the syncer syncs.
type SyncerConfigSpec struct {
	// namespaceScope lists the namespaced resources to down-sync, and the namespaces.
	// +optional
	NamespaceScope NamespaceScopeDownsyncs `json:"namespaceScope,omitempty"`

	// clusterScope lists the cluster-scoped resources to down-sync.
	// +optional
	ClusterScope []ClusterScopeDownsyncResource `json:"clusterScope,omitempty"`

	// upsync says which objects created at the edge go back into the mailbox.
	// +optional
	Upsync []UpsyncSet `json:"upsync,omitempty"`
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
	// applied says, per copy in the mailbox, which version of it is applied at the edge: the
	// copy's projection hash (annotation edge.kcp.io/projection-hash) when it was applied. The key
	// names the copy as placement summaries do: <resource>.<group>/<namespace>/<name> (see
	// CopyKey). The status summarizer tells copies applied from copies pending by it. The syncer
	// writes it together with its other reports, so that a mailbox whose copies all change costs
	// one write, not one per copy.
	// +optional
	Applied map[string]string `json:"applied,omitempty"`
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
