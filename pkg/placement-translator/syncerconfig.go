package placementtranslator

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	rbacv1 "k8s.io/api/rbac/v1"
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
		Upsync:    allowedUpsync(ctx, dedupUpsync(d.upsync)),
		Heartbeat: &edgev1alpha1.HeartbeatSettings{IntervalSeconds: int32(c.cfg.HeartbeatInterval / time.Second)},
	}
	spec.Collectors, spec.HealthRules = c.statusRulesOf(d.placements)
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
	// The syncer may write what it up-syncs before it reads the rules that bring it back, and
	// keeps the right only while rules ask for it: granted before the SyncerConfig is written,
	// taken back after. A syncer of the release before assemblages, which reads the per-object
	// copies, keeps reading them until it is upgraded.
	grant := transport.UpsyncRules(spec.Upsync)
	if have != nil && hasLegacyScope(&have.Spec) && !slices.Contains(have.Status.Formats, transport.FormatV1) {
		grant = append(grant, legacyCopyRules(&have.Spec)...)
	}
	if len(grant) > 0 {
		if err := c.ensureUpsyncRights(ctx, mb, state, grant); err != nil {
			return 0, err
		}
	}
	// Nothing to grant: take back what this process granted, or, after a restart, what the
	// SyncerConfig shows was granted (ensureUpsyncRights writes nothing if already taken back).
	revoke := len(grant) == 0 && (state.upsyncGranted != "" || have != nil && (len(have.Spec.Upsync) > 0 || hasLegacyScope(&have.Spec)))
	if have != nil && hasLegacyScope(&have.Spec) {
		if !slices.Contains(have.Status.Formats, transport.FormatV1) {
			spec.NamespaceScope, spec.ClusterScope = have.Spec.NamespaceScope, have.Spec.ClusterScope
		} else if err := c.removeLegacyCopies(ctx, mb, &have.Spec); err != nil {
			spec.NamespaceScope, spec.ClusterScope = have.Spec.NamespaceScope, have.Spec.ClusterScope
			return recheck, err
		}
	}
	if have == nil || !equality.Semantic.DeepEqual(have.Spec, spec) || have.Labels[LabelMailbox] != name {
		cfg := &edgev1alpha1.SyncerConfig{
			TypeMeta:   metav1.TypeMeta{APIVersion: edgev1alpha1.SchemeGroupVersion.String(), Kind: "SyncerConfig"},
			ObjectMeta: metav1.ObjectMeta{Name: edgev1alpha1.SyncerConfigName, Labels: map[string]string{LabelMailbox: name}},
			Spec:       spec,
		}
		if err := c.apply(ctx, mb, syncerConfigGVR, edgev1alpha1.SyncerConfigName, cfg); err != nil {
			return 0, fmt.Errorf("writing the SyncerConfig: %w", err)
		}
	}
	if revoke {
		return recheck, c.ensureUpsyncRights(ctx, mb, state, nil)
	}
	return recheck, nil
}

var (
	clusterRolesGVR        = rbacv1.SchemeGroupVersion.WithResource("clusterroles")
	clusterRoleBindingsGVR = rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings")
)

// upsyncGrantKey identifies a set of up-sync rights, to write them only when they change.
func upsyncGrantKey(rules []rbacv1.PolicyRule) string {
	return fmt.Sprintf("%v", rules)
}

// ensureUpsyncRights makes the mailbox's ClusterRole transport.UpsyncClusterRole grant exactly
// rules to the syncer (nothing, for nil): transport.UpsyncRules, and legacyCopyRules until the
// syncer is upgraded; unless this process wrote the same already: two writes
// when a mailbox's up-sync rules change, none otherwise.
func (c *Controller) ensureUpsyncRights(ctx context.Context, mb logicalcluster.Path, state *mailboxState, rules []rbacv1.PolicyRule) error {
	key := upsyncGrantKey(rules)
	if state.upsyncGranted == key {
		return nil
	}
	role := &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: transport.UpsyncClusterRole},
		Rules:      rules,
	}
	if rules == nil {
		role.Rules = []rbacv1.PolicyRule{}
	}
	if err := c.apply(ctx, mb, clusterRolesGVR, role.Name, role); err != nil {
		return fmt.Errorf("granting the syncer the rights to up-sync: %w", err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: transport.UpsyncClusterRole},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: transport.UpsyncClusterRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: transport.SyncerNamespace, Name: transport.SyncerServiceAccount}},
	}
	if err := c.apply(ctx, mb, clusterRoleBindingsGVR, binding.Name, binding); err != nil {
		return fmt.Errorf("granting the syncer the rights to up-sync: %w", err)
	}
	klog.FromContext(ctx).V(2).Info("the syncer's rights to up-sync written", "mailbox", mb, "rules", len(rules))
	state.upsyncGranted = key
	return nil
}

// legacyCopyRules are what a syncer of the release before assemblages needs of the per-object
// copies in its mailbox: reading those of the kinds its legacy scope names, and reporting in
// their status.
func legacyCopyRules(spec *edgev1alpha1.SyncerConfigSpec) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	add := func(gr metav1.GroupResource) {
		out = append(out,
			rbacv1.PolicyRule{APIGroups: []string{gr.Group}, Resources: []string{gr.Resource}, Verbs: []string{"get", "list", "watch"}},
			rbacv1.PolicyRule{APIGroups: []string{gr.Group}, Resources: []string{gr.Resource + "/status"}, Verbs: []string{"get", "update", "patch"}})
	}
	if spec.NamespaceScope != nil {
		for _, r := range spec.NamespaceScope.Resources {
			add(r.GroupResource)
		}
	}
	for _, r := range spec.ClusterScope {
		add(r.GroupResource)
	}
	return out
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

// allowedUpsync leaves out the rules whose API group never comes back (transport.UpsyncForbiddenGroups),
// which EdgePlacement's admission refuses; a placement stored before that rule may still hold one.
func allowedUpsync(ctx context.Context, rules []edgev1alpha1.UpsyncSet) []edgev1alpha1.UpsyncSet {
	var out []edgev1alpha1.UpsyncSet
	for _, r := range rules {
		if slices.Contains(transport.UpsyncForbiddenGroups, r.APIGroup) {
			klog.FromContext(ctx).Info("an upsync rule names an API group whose objects cannot come back; left out", "apiGroup", r.APIGroup)
			continue
		}
		out = append(out, r)
	}
	return out
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
