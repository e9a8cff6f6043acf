package placementtranslator

import (
	"context"
	"fmt"
	"sort"

	"github.com/kcp-dev/logicalcluster/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// syncerConfigSpec says what the syncer of a mailbox must sync: the resources and namespaces of
// the namespaced copies, the cluster-scoped copies by name, and the placements' upsync rules.
// With ahead, the copies about to be written count too, so that the config names a resource
// before any copy of it exists.
func syncerConfigSpec(d *desiredState, current map[copyKey]copyRecord, ahead bool) edgev1alpha1.SyncerConfigSpec {
	// The resource of each copy, at the version to sync: the one about to be written, if any.
	keys := map[copyKey]schema.GroupVersionResource{}
	for k, rec := range current {
		keys[k] = rec.gvr
	}
	for k, dc := range d.copies {
		if _, ok := keys[k]; ok || ahead {
			keys[k] = dc.resource.gvr
		}
	}
	namespaces := map[string]bool{}
	namespaced := map[metav1.GroupResource]string{}
	clusterScoped := map[metav1.GroupResource]map[string]bool{}
	versions := map[metav1.GroupResource]string{}
	// One version per resource: the one the translator writes, else the lowest one found.
	for _, dc := range d.copies {
		gr := metav1.GroupResource{Group: dc.resource.gvr.Group, Resource: dc.resource.gvr.Resource}
		versions[gr] = dc.resource.gvr.GroupVersion().String()
	}
	fromDesired := map[metav1.GroupResource]bool{}
	for gr := range versions {
		fromDesired[gr] = true
	}
	for _, gvr := range keys {
		gr := metav1.GroupResource{Group: gvr.Group, Resource: gvr.Resource}
		if v := gvr.GroupVersion().String(); !fromDesired[gr] && (versions[gr] == "" || v < versions[gr]) {
			versions[gr] = v
		}
	}
	for k, gvr := range keys {
		gr := metav1.GroupResource{Group: gvr.Group, Resource: gvr.Resource}
		if k.namespace != "" {
			namespaces[k.namespace] = true
			namespaced[gr] = versions[gr]
			continue
		}
		if clusterScoped[gr] == nil {
			clusterScoped[gr] = map[string]bool{}
		}
		clusterScoped[gr][k.name] = true
	}
	var spec edgev1alpha1.SyncerConfigSpec
	spec.NamespaceScope.Namespaces = sortedKeys(namespaces)
	for gr, v := range namespaced {
		spec.NamespaceScope.Resources = append(spec.NamespaceScope.Resources, edgev1alpha1.NamespaceScopeDownsyncResource{GroupResource: gr, APIVersion: v})
	}
	sort.Slice(spec.NamespaceScope.Resources, func(i, j int) bool {
		return spec.NamespaceScope.Resources[i].GroupResource.String() < spec.NamespaceScope.Resources[j].GroupResource.String()
	})
	for gr, names := range clusterScoped {
		spec.ClusterScope = append(spec.ClusterScope, edgev1alpha1.ClusterScopeDownsyncResource{GroupResource: gr, APIVersion: versions[gr], Objects: sortedKeys(names)})
	}
	sort.Slice(spec.ClusterScope, func(i, j int) bool {
		return spec.ClusterScope[i].GroupResource.String() < spec.ClusterScope[j].GroupResource.String()
	})
	seen := map[string]bool{}
	for _, u := range d.upsync {
		id := fmt.Sprintf("%#v", u)
		if !seen[id] {
			seen[id] = true
			spec.Upsync = append(spec.Upsync, u)
		}
	}
	return spec
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// writeSyncerConfig writes the mailbox's SyncerConfig if its spec differs from what was last
// written.
func (c *Controller) writeSyncerConfig(ctx context.Context, mb logicalcluster.Path, name string, state *mailboxState, spec edgev1alpha1.SyncerConfigSpec) error {
	cfg := &edgev1alpha1.SyncerConfig{
		TypeMeta: metav1.TypeMeta{APIVersion: edgev1alpha1.SchemeGroupVersion.String(), Kind: "SyncerConfig"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   edgev1alpha1.SyncerConfigName,
			Labels: map[string]string{LabelMailbox: name},
		},
		Spec: spec,
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cfg)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: content}
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	hash := transport.Hash(u.Object)
	if hash == state.configHash {
		return nil
	}
	u.SetAnnotations(map[string]string{AnnotationProjectionHash: hash})
	if _, err := c.cfg.Admin.Cluster(mb).Resource(syncerConfigGVR).Apply(ctx, edgev1alpha1.SyncerConfigName, u,
		metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
		return fmt.Errorf("writing the SyncerConfig of mailbox %s: %w", mb, err)
	}
	state.configHash = hash
	return nil
}
