package mailbox

import (
	"context"
	"errors"
	"fmt"

	apisv1alpha2 "github.com/kcp-dev/kcp/sdk/apis/apis/v1alpha2"
	"github.com/kcp-dev/logicalcluster/v3"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/espw"
)

// errNotYet means that the mailbox is not complete yet for reasons that pass by themselves (a
// binding being bound, a token being minted); the SyncTarget is looked at again shortly.
var errNotYet = errors.New("not yet")

// ensureContents checks that the mailbox's WorkspaceType bound mailbox.edge.kcp.io, and puts
// into the mailbox the syncer's identity. It returns errNotYet until all is in place.
func (c *Controller) ensureContents(ctx context.Context, mailbox logicalcluster.Path) error {
	bindings, err := c.cfg.KCP.Cluster(mailbox).ApisV1alpha2().APIBindings().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing APIBindings: %w", err)
	}
	var binding *apisv1alpha2.APIBinding
	for i, b := range bindings.Items {
		ref := b.Spec.Reference.Export
		if ref != nil && ref.Name == edgev1alpha1.MailboxAPIExportName && b.Status.Phase == apisv1alpha2.APIBindingPhaseBound {
			binding = &bindings.Items[i]
		}
	}
	if binding == nil {
		return errNotYet
	}
	if err := c.acceptClaims(ctx, mailbox, binding); err != nil {
		return err
	}
	return c.ensureSyncerIdentity(ctx, mailbox)
}

// acceptClaims makes the mailbox's binding of mailbox.edge.kcp.io accept every permission claim
// the export makes. kcp accepts them all when the WorkspaceType makes the binding; this brings
// along mailboxes made before a newer kubectl edge init added claims.
func (c *Controller) acceptClaims(ctx context.Context, mailbox logicalcluster.Path, binding *apisv1alpha2.APIBinding) error {
	missing := false
	for _, claim := range binding.Status.ExportPermissionClaims {
		if !claimAccepted(binding.Spec.PermissionClaims, claim) {
			missing = true
		}
	}
	if !missing {
		return nil
	}
	updated := binding.DeepCopy()
	updated.Spec.PermissionClaims = espw.AcceptAll(binding.Status.ExportPermissionClaims)
	klog.FromContext(ctx).Info("accepting the permission claims of the mailbox export", "binding", binding.Name)
	if _, err := c.cfg.KCP.Cluster(mailbox).ApisV1alpha2().APIBindings().Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("accepting the permission claims of %s in %s: %w", edgev1alpha1.MailboxAPIExportName, mailbox, err)
	}
	return nil
}

func claimAccepted(accepted []apisv1alpha2.AcceptablePermissionClaim, claim apisv1alpha2.PermissionClaim) bool {
	for _, a := range accepted {
		if a.State == apisv1alpha2.ClaimAccepted && a.EqualGRI(claim) && sets.New(a.Verbs...).HasAll(claim.Verbs...) {
			return true
		}
	}
	return false
}

// ensureSyncerIdentity creates the syncer's ServiceAccount, its token Secret, and a ClusterRole
// and ClusterRoleBinding that give it everything in this mailbox. A token minted in one workspace
// is refused by every other, so the identity reaches this mailbox and nothing else.
func (c *Controller) ensureSyncerIdentity(ctx context.Context, mailbox logicalcluster.Path) error {
	kube := c.cfg.Kube.Cluster(mailbox)
	if _, err := kube.CoreV1().Namespaces().Get(ctx, SyncerNamespace, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		_, err = kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: SyncerNamespace}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s: %w", SyncerNamespace, err)
		}
	} else if err != nil {
		return fmt.Errorf("reading namespace %s: %w", SyncerNamespace, err)
	}
	if err := createIfMissing("ServiceAccount", func() error {
		_, err := kube.CoreV1().ServiceAccounts(SyncerNamespace).Get(ctx, SyncerServiceAccount, metav1.GetOptions{})
		return err
	}, func() error {
		_, err := kube.CoreV1().ServiceAccounts(SyncerNamespace).Create(ctx, &corev1.ServiceAccount{
			ObjectMeta: metav1.ObjectMeta{Name: SyncerServiceAccount},
		}, metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	var token *corev1.Secret
	if err := createIfMissing("token Secret", func() error {
		var err error
		token, err = kube.CoreV1().Secrets(SyncerNamespace).Get(ctx, SyncerTokenSecret, metav1.GetOptions{})
		return err
	}, func() error {
		var err error
		token, err = kube.CoreV1().Secrets(SyncerNamespace).Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Name:        SyncerTokenSecret,
				Annotations: map[string]string{corev1.ServiceAccountNameKey: SyncerServiceAccount},
			},
			Type: corev1.SecretTypeServiceAccountToken,
		}, metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}

	wantRole := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: SyncerClusterRole},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}},
			{NonResourceURLs: []string{"*"}, Verbs: []string{"get"}},
		},
	}
	roles := kube.RbacV1().ClusterRoles()
	role, err := roles.Get(ctx, SyncerClusterRole, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := roles.Create(ctx, wantRole, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating ClusterRole %s: %w", SyncerClusterRole, err)
		}
	case err != nil:
		return fmt.Errorf("reading ClusterRole %s: %w", SyncerClusterRole, err)
	case !equality.Semantic.DeepEqual(role.Rules, wantRole.Rules):
		role.Rules = wantRole.Rules
		if _, err := roles.Update(ctx, role, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("updating ClusterRole %s: %w", SyncerClusterRole, err)
		}
	}

	wantBinding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: SyncerClusterRole},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: SyncerClusterRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: SyncerNamespace, Name: SyncerServiceAccount}},
	}
	crbs := kube.RbacV1().ClusterRoleBindings()
	crb, err := crbs.Get(ctx, SyncerClusterRole, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := crbs.Create(ctx, wantBinding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating ClusterRoleBinding %s: %w", SyncerClusterRole, err)
		}
	case err != nil:
		return fmt.Errorf("reading ClusterRoleBinding %s: %w", SyncerClusterRole, err)
	case !equality.Semantic.DeepEqual(crb.RoleRef, wantBinding.RoleRef) || !equality.Semantic.DeepEqual(crb.Subjects, wantBinding.Subjects):
		// roleRef is immutable: replace the binding.
		if err := crbs.Delete(ctx, SyncerClusterRole, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("replacing ClusterRoleBinding %s: %w", SyncerClusterRole, err)
		}
		return errNotYet
	}

	if token == nil || len(token.Data[corev1.ServiceAccountTokenKey]) == 0 {
		return errNotYet // kcp fills the token in shortly
	}
	return nil
}

// createIfMissing calls create when get finds nothing.
func createIfMissing(what string, get, create func() error) error {
	err := get()
	if apierrors.IsNotFound(err) {
		err = create()
		if apierrors.IsAlreadyExists(err) {
			err = get()
		}
		if err != nil {
			return fmt.Errorf("creating %s: %w", what, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", what, err)
	}
	return nil
}
