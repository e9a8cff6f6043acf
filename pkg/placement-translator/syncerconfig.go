package placementtranslator

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// DefaultHeartbeatInterval is how often syncers renew their heartbeat unless edge-controller-manager
// is told otherwise: one write per edge cluster every 30 s.
const DefaultHeartbeatInterval = 30 * time.Second

// reconcileSyncerConfig makes the mailbox's SyncerConfig say what the syncer needs besides the
// assemblages: the placements' upsync rules and the fleet's heartbeat interval. It also moves a
// mailbox from the per-object copies of the transport before assemblages: the legacy scope and
// the copies stay as they are until the mailbox's syncer reports that it reads assemblages, so
// that a syncer not upgraded yet deletes nothing at its edge; then both go.
func (c *Controller) reconcileSyncerConfig(ctx context.Context, mb logicalcluster.Path, mbc logicalcluster.Name, name string, d *desiredState) (time.Duration, error) {
	var recheck time.Duration
	spec := edgev1alpha1.SyncerConfigSpec{
		Upsync:    dedupUpsync(d.upsync),
		Heartbeat: &edgev1alpha1.HeartbeatSettings{IntervalSeconds: int32(c.cfg.HeartbeatInterval / time.Second)},
	}
	if spec.Heartbeat.IntervalSeconds < 1 {
		spec.Heartbeat.IntervalSeconds = int32(DefaultHeartbeatInterval / time.Second)
	}
	state := c.mailboxState(name)
	if upsyncNeedsWorkloads(spec.Upsync, c.workload.resources) && !state.workloadsBound {
		bound, _, err := c.ensureWorkloadsBinding(ctx, mb)
		if err != nil {
			return 0, err
		}
		if bound {
			state.workloadsBound = true
		} else {
			// The rules go out once the mailbox serves their kinds; until then the syncer would
			// fail to write what it up-syncs.
			spec.Upsync = nil
			recheck = time.Second
		}
	}
	have := c.view.syncerConfigOf(mbc)
	if have != nil && hasLegacyScope(&have.Spec) {
		if !slices.Contains(have.Status.Formats, transport.FormatV1) {
			spec.NamespaceScope, spec.ClusterScope = have.Spec.NamespaceScope, have.Spec.ClusterScope
		} else if err := c.removeLegacyCopies(ctx, mb, &have.Spec); err != nil {
			spec.NamespaceScope, spec.ClusterScope = have.Spec.NamespaceScope, have.Spec.ClusterScope
			return recheck, err
		}
	}
	if have != nil && equality.Semantic.DeepEqual(have.Spec, spec) && have.Labels[LabelMailbox] == name {
		return recheck, nil
	}
	cfg := &edgev1alpha1.SyncerConfig{
		TypeMeta:   metav1.TypeMeta{APIVersion: edgev1alpha1.SchemeGroupVersion.String(), Kind: "SyncerConfig"},
		ObjectMeta: metav1.ObjectMeta{Name: edgev1alpha1.SyncerConfigName, Labels: map[string]string{LabelMailbox: name}},
		Spec:       spec,
	}
	if err := c.apply(ctx, mb, syncerConfigGVR, edgev1alpha1.SyncerConfigName, cfg); err != nil {
		return 0, fmt.Errorf("writing the SyncerConfig: %w", err)
	}
	return recheck, nil
}

func hasLegacyScope(spec *edgev1alpha1.SyncerConfigSpec) bool {
	return spec.NamespaceScope != nil || len(spec.ClusterScope) > 0
}

// removeLegacyCopies deletes, from a mailbox whose syncer reads assemblages, the per-object
// copies that the translator wrote before assemblages: those labelled edge.kcp.io/projected, of
// every resource that the legacy scope names. The syncer no longer looks at them, so nothing is
// deleted at the edge.
func (c *Controller) removeLegacyCopies(ctx context.Context, mb logicalcluster.Path, spec *edgev1alpha1.SyncerConfigSpec) error {
	var gvrs []schema.GroupVersionResource
	if spec.NamespaceScope != nil {
		for _, r := range spec.NamespaceScope.Resources {
			gvrs = append(gvrs, gvrOf(r.GroupResource, r.APIVersion))
		}
	}
	for _, r := range spec.ClusterScope {
		gvrs = append(gvrs, gvrOf(r.GroupResource, r.APIVersion))
	}
	deleted := 0
	for _, gvr := range gvrs {
		client := c.cfg.Admin.Cluster(mb).Resource(gvr)
		list, err := client.List(ctx, metav1.ListOptions{LabelSelector: LabelProjected + "=true"})
		if apierrors.IsNotFound(err) {
			continue // the mailbox no longer serves the kind: no copies of it
		}
		if err != nil {
			return fmt.Errorf("listing the legacy copies of %s in mailbox %s: %w", gvr.Resource, mb, err)
		}
		for _, item := range list.Items {
			err := client.Namespace(item.GetNamespace()).Delete(ctx, item.GetName(), metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting the legacy copy %s/%s of %s from mailbox %s: %w", item.GetNamespace(), item.GetName(), gvr.Resource, mb, err)
			}
			deleted++
		}
	}
	klog.FromContext(ctx).Info("the syncer reads assemblages: removed the per-object copies of the previous transport from the mailbox", "copies", deleted)
	return nil
}

func gvrOf(gr metav1.GroupResource, apiVersion string) schema.GroupVersionResource {
	gv, _ := schema.ParseGroupVersion(apiVersion)
	return schema.GroupVersionResource{Group: gr.Group, Version: gv.Version, Resource: gr.Resource}
}

// dedupUpsync lists each rule once, in the order met.
func dedupUpsync(rules []edgev1alpha1.UpsyncSet) []edgev1alpha1.UpsyncSet {
	var out []edgev1alpha1.UpsyncSet
	seen := map[string]bool{}
	for _, u := range rules {
		id := fmt.Sprintf("%#v", u)
		if !seen[id] {
			seen[id] = true
			out = append(out, u)
		}
	}
	return out
}
