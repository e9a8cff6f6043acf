package espw

import (
	"context"
	"fmt"
	"os"
	"strings"

	kcpkubernetesclientset "github.com/kcp-dev/client-go/kubernetes"
	"github.com/kcp-dev/logicalcluster/v3"
	apisv1alpha2 "github.com/kcp-dev/sdk/apis/apis/v1alpha2"
	"github.com/kcp-dev/sdk/apis/core"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/workspaces"
)

// edge-controller-manager's identity is a kcp user, by default named edge-controller-manager, that
// kcp's authentication knows (a client certificate signed by kcp's client CA, a token of its
// --token-auth-file, or a user of an OIDC provider), not a ServiceAccount of the ESPW: kcp
// v0.31.2 knows a ServiceAccount outside its own workspace only under another name
// (system:kcp:serviceaccount:<cluster>:<namespace>:<name>), and when a ServiceAccount creates
// a mailbox, kcp binds cluster-admin in it to the ServiceAccount's local name and creates the
// mailbox type's default APIBinding impersonating it, which the new workspace then refuses: the
// mailbox never leaves its initialization. A kcp user has one name everywhere, and kcp makes it
// the admin of the workspaces it creates, as it does for any person. The rights that the user
// gets, and where, are listed in docs/operations.md; ControllerESPWRules and ControllerWMWRules
// are what grant them.
const (
	// DefaultControllerUser is the default name of the user.
	DefaultControllerUser = "edge-controller-manager"
	// ControllerRole names the ClusterRole and ClusterRoleBinding of the identity, in the ESPW
	// and in each workload workspace.
	ControllerRole = "edge-mc:controller-manager"
	// ControllerUserAnnotation, on the APIExport edge.kcp.io, names the user, so that
	// 'kubectl edge ensure wmw' grants it its rights there.
	ControllerUserAnnotation = "edge.kcp.io/controller-user"
)

// ControllerESPWRules are the rights of edge-controller-manager in the ESPW:
//   - access: kcp lets a user into a workspace only with this verb on "/" there;
//   - the three APIExports: read them, and their virtual workspaces (apiexports/content), through
//     which the controllers watch every bound workspace and read and write what the exports'
//     permission claims cover;
//   - their APIExportEndpointSlices, which list those virtual workspaces (one per shard);
//   - Workspaces: the mailboxes, children of the ESPW, which the mailbox controller creates and
//     deletes, of the mailbox WorkspaceType (use), whose default APIBinding of
//     mailbox.edge.kcp.io kcp makes in the creator's name (bind);
//   - binding workloads.edge.kcp.io, which the placement translator does in a mailbox whose
//     placements up-sync kinds of that export (Services, Deployments...), so that the syncer can
//     put them there (without it, up-sync of those kinds waits forever, seen in
//     test/e2e/syncer TestUpsyncReturn);
//   - Leases: the leader election among replicas;
//   - the sealing secret (sealing.go) and the admission webhook's CA (webhook.go), get alone: no
//     other Secret of the ESPW;
//   - the ESPW's ValidatingWebhookConfiguration edge-mc (webhook.go), get and update alone, to
//     point kcp at the leader's admission webhook.
func ControllerESPWRules() []rbacv1.PolicyRule {
	exports := []string{edgev1alpha1.EdgeAPIExportName, edgev1alpha1.MailboxAPIExportName, edgev1alpha1.WorkloadsAPIExportName}
	return []rbacv1.PolicyRule{
		{NonResourceURLs: []string{"/"}, Verbs: []string{"access"}},
		{APIGroups: []string{"apis.kcp.io"}, Resources: []string{"apiexports"}, ResourceNames: exports, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"apis.kcp.io"}, Resources: []string{"apiexports/content"}, ResourceNames: exports, Verbs: []string{"*"}},
		{APIGroups: []string{"apis.kcp.io"}, Resources: []string{"apiexports"}, ResourceNames: []string{edgev1alpha1.MailboxAPIExportName, edgev1alpha1.WorkloadsAPIExportName}, Verbs: []string{"bind"}},
		{APIGroups: []string{"apis.kcp.io"}, Resources: []string{"apiexportendpointslices"}, ResourceNames: exports, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"tenancy.kcp.io"}, Resources: []string{"workspaces"}, Verbs: []string{"get", "list", "watch", "create", "delete"}},
		{APIGroups: []string{"tenancy.kcp.io"}, Resources: []string{"workspacetypes"}, ResourceNames: []string{edgev1alpha1.MailboxWorkspaceType}, Verbs: []string{"get", "use"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{SealingSecretName, WebhookCASecretName}, Verbs: []string{"get"}},
		{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingwebhookconfigurations"}, ResourceNames: []string{WebhookConfigurationName}, Verbs: []string{"get", "update"}},
	}
}

// ShardReaderRole names the ClusterRole in root that lets edge-controller-manager read the
// Shards, and, followed by ":<user>", its ClusterRoleBinding to the controllers' user.
const ShardReaderRole = "edge-mc:shard-reader"

// ControllerRootRules are the rights of edge-controller-manager in root: reading the Shards, so
// that a condition can name the shard of a mailbox that cannot be reached. Nothing else: kcp
// makes the creator of each mailbox its admin, and a mailbox is made in the ESPW.
func ControllerRootRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{NonResourceURLs: []string{"/"}, Verbs: []string{"access"}},
		{APIGroups: []string{"core.kcp.io"}, Resources: []string{"shards"}, Verbs: []string{"get", "list", "watch"}},
	}
}

// ControllerWMWRules are the rights of edge-controller-manager in a workload workspace, given
// by 'kubectl edge ensure wmw'. Everything of kcp's built-in kinds and of the workloads export
// the controllers reach through the virtual workspace of edge.kcp.io, as its permission claims
// allow; but a custom kind, defined by a CRD of the workspace, belongs to no export and can be
// claimed by none, so the placement translator watches it, and the status summarizer records on
// its objects where they run, with this identity directly. RBAC cannot name "the kinds CRDs
// define" and the kinds are learnt only when their CRDs appear, so the rule covers every kind:
// read, and update (the executing-count annotation, the status copied back), but never create
// or delete, and no RBAC escalation (neither bind nor escalate).
func ControllerWMWRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{NonResourceURLs: []string{"/"}, Verbs: []string{"access"}},
		{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
	}
}

// EnsureControllerRights gives the kcp user named user edge-controller-manager's rights in the
// ESPW at path (ControllerESPWRules) and records its name on the APIExport edge.kcp.io, for
// 'kubectl edge ensure wmw'.
func EnsureControllerRights(ctx context.Context, kcp kcpclientset.ClusterInterface, kube kcpkubernetesclientset.ClusterInterface, path logicalcluster.Path, user string, res *Result) error {
	if user == "" || strings.HasPrefix(user, "system:") {
		return fmt.Errorf("%q cannot name edge-controller-manager's user: give the name of a kcp user (as kcp's authentication knows it), such as %s", user, DefaultControllerUser)
	}
	if err := EnsureClusterRole(ctx, kube, path, ControllerRole, ControllerESPWRules(), res); err != nil {
		return err
	}
	if err := EnsureClusterRoleBinding(ctx, kube, path, ControllerRole, ControllerRole,
		rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}, res); err != nil {
		return err
	}
	if err := EnsureSealingSecret(ctx, kube, path, res); err != nil {
		return err
	}
	if err := EnsureWebhookCA(ctx, kube, path, res); err != nil {
		return err
	}
	if err := EnsureWebhookConfiguration(ctx, kube, path, res); err != nil {
		return err
	}
	// In root, reading the Shards alone: on a sharded center the mailbox controller names the
	// shard of an unreachable mailbox by its Shard's name (a URL's host otherwise).
	root := core.RootCluster.Path()
	if err := EnsureClusterRole(ctx, kube, root, ShardReaderRole, ControllerRootRules(), res); err != nil {
		return err
	}
	if err := EnsureClusterRoleBinding(ctx, kube, root, ShardReaderRole+":"+user, ShardReaderRole,
		rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}, res); err != nil {
		return err
	}
	exports := kcp.Cluster(path).ApisV1alpha2().APIExports()
	edge, err := exports.Get(ctx, edgev1alpha1.EdgeAPIExportName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading APIExport %s in %s: %w", edgev1alpha1.EdgeAPIExportName, path, err)
	}
	if edge.Annotations[ControllerUserAnnotation] == user {
		return nil
	}
	if edge.Annotations == nil {
		edge.Annotations = map[string]string{}
	}
	edge.Annotations[ControllerUserAnnotation] = user
	if _, err := exports.Update(ctx, edge, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("recording edge-controller-manager's user on APIExport %s in %s: %w", edgev1alpha1.EdgeAPIExportName, path, err)
	}
	res.Updated = append(res.Updated, "APIExport "+edgev1alpha1.EdgeAPIExportName+" (annotation "+ControllerUserAnnotation+")")
	return nil
}

// ControllerUserOf returns the user recorded on the APIExport edge.kcp.io by 'kubectl edge init'
// (DefaultControllerUser for an ESPW made before it recorded one).
func ControllerUserOf(edge *apisv1alpha2.APIExport) string {
	if u := edge.Annotations[ControllerUserAnnotation]; u != "" {
		return u
	}
	return DefaultControllerUser
}

// EnsureClusterRole makes sure the workspace at path has a ClusterRole name with exactly rules.
func EnsureClusterRole(ctx context.Context, kube kcpkubernetesclientset.ClusterInterface, path logicalcluster.Path, name string, rules []rbacv1.PolicyRule, res *Result) error {
	roles := kube.Cluster(path).RbacV1().ClusterRoles()
	want := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
	return ensure(ctx, res, "ClusterRole "+name, roles, want, func(got *rbacv1.ClusterRole) bool {
		if equality.Semantic.DeepEqual(got.Rules, rules) {
			return false
		}
		got.Rules = rules
		return true
	})
}

// EnsureClusterRoleBinding makes sure the workspace at path has a ClusterRoleBinding name of
// the ClusterRole role to subject alone, replacing one that differs (a roleRef is immutable).
func EnsureClusterRoleBinding(ctx context.Context, kube kcpkubernetesclientset.ClusterInterface, path logicalcluster.Path, name, role string, subject rbacv1.Subject, res *Result) error {
	bindings := kube.Cluster(path).RbacV1().ClusterRoleBindings()
	want := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{subject},
	}
	// Two inits at once (of two ESPWs of one center: the root binding is shared) may both find
	// the binding missing; the one whose create meets the other's binding reads it again.
	for attempt := 0; ; attempt++ {
		got, err := bindings.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return fmt.Errorf("reading ClusterRoleBinding %s in %s: %w", name, path, err)
		case equality.Semantic.DeepEqual(got.RoleRef, want.RoleRef) && equality.Semantic.DeepEqual(got.Subjects, want.Subjects):
			res.Unchanged = append(res.Unchanged, "ClusterRoleBinding "+name)
			return nil
		default:
			if err := bindings.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("replacing ClusterRoleBinding %s in %s: %w", name, path, err)
			}
		}
		_, err = bindings.Create(ctx, want, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) && attempt < 3 {
			continue
		}
		if err != nil {
			return fmt.Errorf("creating ClusterRoleBinding %s in %s: %w", name, path, err)
		}
		if got != nil && got.Name != "" {
			res.Updated = append(res.Updated, "ClusterRoleBinding "+name)
		} else {
			res.Created = append(res.Created, "ClusterRoleBinding "+name)
		}
		return nil
	}
}

// getCreateUpdater is the part of a typed client that ensure uses.
type getCreateUpdater[T metav1.Object] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// ensure creates want if it is missing, or, when update says that the existing object needs a
// change (update nil: never), writes the object update changed.
func ensure[T metav1.Object](ctx context.Context, res *Result, kind string, client getCreateUpdater[T], want T, update func(got T) bool) error {
	got, err := client.Get(ctx, want.GetName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := client.Create(ctx, want, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %s: %w", kind, err)
		}
		res.Created = append(res.Created, kind)
		return nil
	case err != nil:
		return fmt.Errorf("reading %s: %w", kind, err)
	}
	if update == nil || !update(got) {
		res.Unchanged = append(res.Unchanged, kind)
		return nil
	}
	if _, err := client.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating %s: %w", kind, err)
	}
	res.Updated = append(res.Updated, kind)
	return nil
}

// WriteControllerKubeconfig writes to file a kubeconfig for edge-controller-manager: kcp's
// server (the address and TLS settings of server, pointed at the ESPW) with the user's bearer
// token.
func WriteControllerKubeconfig(file string, server *rest.Config, espw logicalcluster.Path, user string, token []byte) error {
	base, _ := workspaces.Split(server)
	if len(base.CAData) == 0 && base.CAFile != "" {
		ca, err := os.ReadFile(base.CAFile)
		if err != nil {
			return fmt.Errorf("reading kcp's CA %s: %w", base.CAFile, err)
		}
		base.CAData, base.CAFile = ca, ""
	}
	cluster := &clientcmdapi.Cluster{
		Server:                   workspaces.ConfigFor(base, espw).Host,
		CertificateAuthorityData: base.CAData,
		CertificateAuthority:     base.CAFile,
		InsecureSkipTLSVerify:    base.Insecure,
		TLSServerName:            base.ServerName,
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["kcp"] = cluster
	kc.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: strings.TrimSpace(string(token))}
	kc.Contexts[user] = &clientcmdapi.Context{Cluster: "kcp", AuthInfo: user}
	kc.CurrentContext = user
	if err := clientcmd.WriteToFile(*kc, file); err != nil {
		return fmt.Errorf("writing the kubeconfig of edge-controller-manager to %s: %w", file, err)
	}
	return nil
}
