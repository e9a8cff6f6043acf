package kcpfacts

import (
	"fmt"
	"testing"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/kcp-dev/edge-mc/pkg/transport"
	"github.com/kcp-dev/edge-mc/test/framework"
)

// TestServiceAccountTokenStaysInItsWorkspace: the mailbox controller gives each mailbox a
// ServiceAccount whose legacy token Secret prep-for-syncer hands to the syncer, and a
// ClusterRoleBinding granting it everything in that mailbox. Every mailbox has the same names,
// so the syncer's credential reaches its mailbox alone only because kcp scopes a ServiceAccount
// token to the workspace that minted it. Here two sibling workspaces each get that identity, as
// the mailbox controller makes it; A's token works in A, and is refused in B (by path and by
// logical cluster), in their parent, in root, and in all workspaces at once, while B's own token
// works in B.
func TestServiceAccountTokenStaysInItsWorkspace(t *testing.T) {
	t.Parallel()
	s := framework.KCP(t)
	base := framework.NewWorkspace(t)
	a, b := base.Join("mailbox-a"), base.Join("mailbox-b")
	plainWorkspace(t, a)
	plainWorkspace(t, b)
	tokenA, tokenB := syncerIdentity(t, a), syncerIdentity(t, b)
	credA, credB := tokenConfig(s, tokenA), tokenConfig(s, tokenB)

	configMaps := "/api/v1/namespaces/default/configmaps"
	// kcp's authorizer learns of the new ClusterRoleBindings a moment after they are written.
	for who, c := range map[string]struct {
		cfg *rest.Config
		ws  logicalcluster.Path
	}{"A's token": {credA, a}, "B's token": {credB, b}} {
		framework.Eventually(t, framework.Converge, func() (bool, string) {
			code, body := framework.Send(t, c.cfg, framework.Get("list ConfigMaps in its own workspace", c.ws, configMaps))
			return code == 200, fmt.Sprintf("%s: list ConfigMaps in %s: %d %s", who, c.ws, code, body)
		})
	}
	framework.ExpectAllowed(t, "A's token", credA,
		framework.Get("list ConfigMaps in A", a, configMaps),
		framework.Get("read its token Secret in A", a, "/api/v1/namespaces/default/secrets/"+transport.SyncerTokenSecret))
	framework.ExpectAllowed(t, "B's token", credB, framework.Get("list ConfigMaps in B", b, configMaps))
	framework.ExpectRefused(t, "A's token", credA,
		framework.Get("list ConfigMaps in B", b, configMaps),
		framework.Get("read B's token Secret", b, "/api/v1/namespaces/default/secrets/"+transport.SyncerTokenSecret),
		framework.Create("create a ConfigMap in B", b, configMaps, `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "intruder"}}`),
		framework.Get("list ConfigMaps in B by its logical cluster", clusterOf(t, b).Path(), configMaps),
		framework.Get("list ConfigMaps in the parent of A and B", base, configMaps),
		framework.Get("list Workspaces in the parent of A and B", base, "/apis/tenancy.kcp.io/v1alpha1/workspaces"),
		framework.Get("list Namespaces in root", logicalcluster.NewPath("root"), "/api/v1/namespaces"),
		framework.Get("list ConfigMaps in every workspace at once", logicalcluster.NewPath("*"), "/api/v1/configmaps"))
}

// syncerIdentity makes in the workspace ws what the mailbox controller makes in a mailbox (a
// ServiceAccount, its token Secret, a ClusterRole granting everything and its binding) and
// returns the token once kcp has filled it in.
func syncerIdentity(t *testing.T, ws logicalcluster.Path) string {
	t.Helper()
	ctx := framework.Context(t, 2*time.Minute)
	kube := framework.KCP(t).KubeClient(t, ws)
	ns := transport.SyncerNamespace
	if _, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: transport.SyncerServiceAccount}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the ServiceAccount in %s: %v", ws, err)
	}
	if _, err := kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: transport.SyncerTokenSecret, Annotations: map[string]string{corev1.ServiceAccountNameKey: transport.SyncerServiceAccount}},
		Type:       corev1.SecretTypeServiceAccountToken,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the token Secret in %s: %v", ws, err)
	}
	if _, err := kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: transport.SyncerClusterRole},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}},
			{NonResourceURLs: []string{"*"}, Verbs: []string{"get"}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the ClusterRole in %s: %v", ws, err)
	}
	if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: transport.SyncerClusterRole},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: transport.SyncerClusterRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: transport.SyncerServiceAccount}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the ClusterRoleBinding in %s: %v", ws, err)
	}
	var token string
	framework.Eventually(t, 2*time.Minute, func() (bool, string) {
		secret, err := kube.CoreV1().Secrets(ns).Get(ctx, transport.SyncerTokenSecret, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		token = string(secret.Data[corev1.ServiceAccountTokenKey])
		return token != "", fmt.Sprintf("kcp has not filled the token into the Secret %s/%s in %s", ns, transport.SyncerTokenSecret, ws)
	})
	return token
}

// tokenConfig is a client config of the server s that authenticates with token alone.
func tokenConfig(s *framework.Server, token string) *rest.Config {
	cfg := rest.AnonymousClientConfig(s.Base)
	cfg.BearerToken = token
	return cfg
}
