package statussummarizer

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	apisv1alpha2 "github.com/kcp-dev/sdk/apis/apis/v1alpha2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kcp-dev/edge-mc/config/exports"
	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/centerview"
	"github.com/kcp-dev/edge-mc/pkg/espw"
)

var crdsGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// customKindMemory is how long the version of a custom kind is trusted without reading its CRD
// again.
const customKindMemory = 10 * time.Minute

// kindResolver tells, for a workload object's group and resource, the version to write it at, and
// whether it is a custom kind. Objects travel in assemblages by key, without their version: the
// kinds that edge.kcp.io claims have the versions this release's exports serve, and a custom kind
// has the storage version of the CRD that defines it in the workload workspace (read through the
// virtual workspace, which claims CRDs).
type kindResolver struct {
	claimed map[schema.GroupResource]string
	getCRD  func(ctx context.Context, cluster logicalcluster.Name, name string) (*unstructured.Unstructured, error)

	mu     sync.Mutex
	custom map[string]customKind
}

type customKind struct {
	version string
	at      time.Time
}

func newKindResolver(edgeVW centerview.ClusterClient) (*kindResolver, error) {
	claimed, err := claimedResources()
	if err != nil {
		return nil, err
	}
	return &kindResolver{
		claimed: claimed,
		getCRD: func(ctx context.Context, cluster logicalcluster.Name, name string) (*unstructured.Unstructured, error) {
			return edgeVW.Cluster(cluster.Path()).Resource(crdsGVR).Get(ctx, name, metav1.GetOptions{})
		},
		custom: map[string]customKind{},
	}, nil
}

// claimedResources are the resources that edge.kcp.io claims in workload workspaces, with the
// version at which each is served: kcp's built-in kinds (v1 all), and the workloads export's
// kinds at their schemas' storage versions.
func claimedResources() (map[schema.GroupResource]string, error) {
	schemas, apiExports, err := exports.Load()
	if err != nil {
		return nil, fmt.Errorf("loading the embedded APIExports: %w", err)
	}
	var workloads *apisv1alpha2.APIExport
	for _, e := range apiExports {
		if e.Name == edgev1alpha1.WorkloadsAPIExportName {
			workloads = e
		}
	}
	if workloads == nil {
		return nil, fmt.Errorf("the embedded APIExports lack %s", edgev1alpha1.WorkloadsAPIExportName)
	}
	versions := map[schema.GroupResource]string{}
	for _, s := range schemas {
		for _, v := range s.Spec.Versions {
			if v.Served && v.Storage {
				versions[schema.GroupResource{Group: s.Spec.Group, Resource: s.Spec.Names.Plural}] = v.Name
			}
		}
	}
	out := map[schema.GroupResource]string{}
	for _, c := range espw.EdgeClaims(workloads) {
		gr := schema.GroupResource{Group: c.Group, Resource: c.Resource}
		if v := versions[gr]; v != "" {
			out[gr] = v
		} else {
			out[gr] = "v1" // kcp's own: core, RBAC and CRDs are v1
		}
	}
	return out, nil
}

// resolve returns the resource of the given group and resource in the workload workspace, and
// whether it is a custom kind. A custom kind whose CRD is gone returns the NotFound error.
func (r *kindResolver) resolve(ctx context.Context, cluster logicalcluster.Name, gr schema.GroupResource) (schema.GroupVersionResource, bool, error) {
	if v, ok := r.claimed[gr]; ok {
		return gr.WithVersion(v), false, nil
	}
	key := cluster.String() + "|" + gr.String()
	r.mu.Lock()
	known, ok := r.custom[key]
	r.mu.Unlock()
	if ok && time.Since(known.at) < customKindMemory {
		return gr.WithVersion(known.version), true, nil
	}
	crd, err := r.getCRD(ctx, cluster, gr.String())
	if err != nil {
		return schema.GroupVersionResource{}, true, fmt.Errorf("reading the CRD of %s in workspace %s: %w", gr, cluster, err)
	}
	version := storageVersion(crd)
	if version == "" {
		return schema.GroupVersionResource{}, true, fmt.Errorf("the CRD %s in workspace %s has no storage version", crd.GetName(), cluster)
	}
	r.mu.Lock()
	r.custom[key] = customKind{version: version, at: time.Now()}
	if len(r.custom) > 10000 {
		for k, c := range r.custom {
			if time.Since(c.at) > customKindMemory {
				delete(r.custom, k)
			}
		}
	}
	r.mu.Unlock()
	return gr.WithVersion(version), true, nil
}

// storageVersion is the name of a CRD's storage version ("" if none).
func storageVersion(crd *unstructured.Unstructured) string {
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		m, _ := v.(map[string]any)
		if storage, _ := m["storage"].(bool); storage {
			name, _ := m["name"].(string)
			return name
		}
	}
	return ""
}
