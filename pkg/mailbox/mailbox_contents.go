package mailbox

import (
	"context"
	"errors"
	"fmt"

	"github.com/kcp-dev/logicalcluster/v3"
	apisv1alpha2 "github.com/kcp-dev/sdk/apis/apis/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/espw"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// errNotYet means that the mailbox is not complete yet for reasons that pass by themselves (a
// binding being bound, a token being minted); the SyncTarget is looked at again shortly.
var errNotYet = errors.New("not yet")

// ensureContents checks that the mailbox's WorkspaceType bound mailbox.edge.kcp.io, and puts
// into the mailbox the syncer's identity. It returns errNotYet until all is in place. fresh says
// that this process created the mailbox workspace just now, so that the identity's objects are
// created without being looked for first; once they are written, later checks only look for the
// token.
func (c *Controller) ensureContents(ctx context.Context, mailbox logicalcluster.Path, uid types.UID, fresh bool) error {
	if c.contentsStageOf(uid) == contentsWritten {
		token, err := c.cfg.Kube.Cluster(mailbox).CoreV1().Secrets(SyncerNamespace).Get(ctx, SyncerTokenSecret, metav1.GetOptions{})
		if err != nil {
			// Gone, or unreadable: go through every object again.
			c.setContentsStage(uid, contentsUnknown)
			return fmt.Errorf("reading the token Secret: %w", err)
		}
		return tokenPresent(token)
	}
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
	token, err := c.ensureSyncerIdentity(ctx, mailbox, fresh)
	if err != nil {
		return err
	}
	c.setContentsStage(uid, contentsWritten)
	return tokenPresent(token)
}

// tokenPresent returns errNotYet until kcp has filled the token into the Secret.
func tokenPresent(token *corev1.Secret) error {
	if len(token.Data[corev1.ServiceAccountTokenKey]) == 0 {
		return errNotYet
	}
	return nil
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
// and ClusterRoleBinding that give it what it needs in this mailbox (transport.SyncerRules: up-sync
// aside, which the placement translator grants), and returns the Secret. A mailbox made when the
// role granted everything gets the narrow rules at the controller's next check of it. A token
// minted in one workspace is refused by every other, so the identity reaches this mailbox and
// nothing else. With fresh, each object is created at once (a new mailbox holds none: four
// requests fewer per mailbox than reading each first); otherwise each is read first, so that a
// restarted controller's check of a thousand complete mailboxes writes nothing.
func (c *Controller) ensureSyncerIdentity(ctx context.Context, mailbox logicalcluster.Path, fresh bool) (*corev1.Secret, error) {
	kube := c.cfg.Kube.Cluster(mailbox)
	if _, err := ensureObject(ctx, fresh, "namespace "+SyncerNamespace, kube.CoreV1().Namespaces(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: SyncerNamespace}}); err != nil {
		return nil, err
	}
	if _, err := ensureObject(ctx, fresh, "ServiceAccount "+SyncerServiceAccount, kube.CoreV1().ServiceAccounts(SyncerNamespace),
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: SyncerServiceAccount}}); err != nil {
		return nil, err
	}
	token, err := ensureObject(ctx, fresh, "token Secret "+SyncerTokenSecret, kube.CoreV1().Secrets(SyncerNamespace), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:        SyncerTokenSecret,
			Annotations: map[string]string{corev1.ServiceAccountNameKey: SyncerServiceAccount},
		},
		Type: corev1.SecretTypeServiceAccountToken,
	})
	if err != nil {
		return nil, err
	}

	wantRole := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: SyncerClusterRole},
		Rules:      transport.SyncerRules(),
	}
	roles := kube.RbacV1().ClusterRoles()
	role, err := ensureObject(ctx, fresh, "ClusterRole "+SyncerClusterRole, roles, wantRole)
	if err != nil {
		return nil, err
	}
	if !equality.Semantic.DeepEqual(role.Rules, wantRole.Rules) {
		role.Rules = wantRole.Rules
		if _, err := roles.Update(ctx, role, metav1.UpdateOptions{}); err != nil {
			return nil, fmt.Errorf("updating ClusterRole %s: %w", SyncerClusterRole, err)
		}
	}

	wantBinding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: SyncerClusterRole},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: SyncerClusterRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: SyncerNamespace, Name: SyncerServiceAccount}},
	}
	crbs := kube.RbacV1().ClusterRoleBindings()
	crb, err := ensureObject(ctx, fresh, "ClusterRoleBinding "+SyncerClusterRole, crbs, wantBinding)
	if err != nil {
		return nil, err
	}
	if !equality.Semantic.DeepEqual(crb.RoleRef, wantBinding.RoleRef) || !equality.Semantic.DeepEqual(crb.Subjects, wantBinding.Subjects) {
		// roleRef is immutable: replace the binding.
		if err := crbs.Delete(ctx, SyncerClusterRole, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("replacing ClusterRoleBinding %s: %w", SyncerClusterRole, err)
		}
		return nil, errNotYet
	}
	return token, nil
}

// getCreator is the part of a typed client that ensureObject uses.
type getCreator[T metav1.Object] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
}

// ensureObject returns the object named like want, creating it as want if it is missing. With
// createFirst it tries the create before any read (and reads only if the object exists).
func ensureObject[T metav1.Object](ctx context.Context, createFirst bool, what string, client getCreator[T], want T) (T, error) {
	if !createFirst {
		got, err := client.Get(ctx, want.GetName(), metav1.GetOptions{})
		if err == nil {
			return got, nil
		}
		if !apierrors.IsNotFound(err) {
			return got, fmt.Errorf("reading %s: %w", what, err)
		}
	}
	got, err := client.Create(ctx, want, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		got, err = client.Get(ctx, want.GetName(), metav1.GetOptions{})
	}
	if err != nil {
		return got, fmt.Errorf("creating %s: %w", what, err)
	}
	return got, nil
}
