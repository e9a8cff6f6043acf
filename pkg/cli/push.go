package cli

import (
	"context"
	"fmt"
	"io"

	kcpkubernetesclientset "github.com/kcp-dev/client-go/kubernetes"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/espw"
	"github.com/kcp-dev/edge-mc/pkg/pushhost"
)

// readEdgeKubeconfig reads the edge kubeconfig given to --edge-kubeconfig and returns it as the
// push host will use it: its current context alone, every file it names inlined, and checked as
// the push host checks it (no credential plugin, which the center does not run).
func readEdgeKubeconfig(path string) ([]byte, error) {
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("--edge-kubeconfig %s: %w", path, err)
	}
	if err := clientcmdapi.MinifyConfig(cfg); err != nil {
		return nil, fmt.Errorf("--edge-kubeconfig %s: %w", path, err)
	}
	if err := clientcmdapi.FlattenConfig(cfg); err != nil {
		return nil, fmt.Errorf("--edge-kubeconfig %s: inlining the files it names: %w", path, err)
	}
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("--edge-kubeconfig %s: %w", path, err)
	}
	if _, err := pushhost.EdgeConfig(data); err != nil {
		return nil, fmt.Errorf("--edge-kubeconfig %s cannot be used by the center: %w", path, err)
	}
	return data, nil
}

// ensurePushCredential stores the edge kubeconfig of SyncTarget name in the inventory workspace
// (Secret edge-mc-push/<name>) and lets edge-controller-manager's user, the push host, read the
// Secrets of that namespace and nothing else there.
func (o *Options) ensurePushCredential(ctx context.Context, inv *inventoryClients, name string, kubeconfig []byte, out io.Writer) error {
	espwPath, err := o.espwPath()
	if err != nil {
		return err
	}
	kcp, base, err := o.kcpClient()
	if err != nil {
		return err
	}
	export, err := kcp.Cluster(espwPath).ApisV1alpha2().APIExports().Get(ctx, edgev1alpha1.EdgeAPIExportName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading APIExport %s in %s, to learn edge-controller-manager's user: %w", edgev1alpha1.EdgeAPIExportName, espwPath, err)
	}
	user := espw.ControllerUserOf(export)
	kube, err := kcpkubernetesclientset.NewForConfig(base)
	if err != nil {
		return err
	}
	ns := edgev1alpha1.PushKubeconfigNamespace
	client := kube.Cluster(inv.path)
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s in %s: %w%s", ns, inv.path, err, inventoryAdminHint(err))
	}
	want := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{edgev1alpha1.LabelSyncTarget: name}},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{edgev1alpha1.PushKubeconfigKey: kubeconfig},
	}
	secrets := client.CoreV1().Secrets(ns)
	got, err := secrets.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := secrets.Create(ctx, want, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("storing the edge kubeconfig in Secret %s/%s of %s: %w", ns, name, inv.path, err)
		}
		fmt.Fprintf(out, "secret %s/%s (edge kubeconfig) created\n", ns, name)
	case err != nil:
		return fmt.Errorf("reading Secret %s/%s of %s: %w%s", ns, name, inv.path, err, inventoryAdminHint(err))
	case string(got.Data[edgev1alpha1.PushKubeconfigKey]) != string(kubeconfig):
		got.Data = want.Data
		if _, err := secrets.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("storing the edge kubeconfig in Secret %s/%s of %s: %w", ns, name, inv.path, err)
		}
		fmt.Fprintf(out, "secret %s/%s (edge kubeconfig) updated\n", ns, name)
	default:
		fmt.Fprintf(out, "secret %s/%s (edge kubeconfig) unchanged\n", ns, name)
	}

	subject := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}
	res := &espw.Result{}
	// kcp lets a user into a workspace only with the verb access on "/" there.
	if err := espw.EnsureClusterRole(ctx, kube, inv.path, edgev1alpha1.PushHostRole,
		[]rbacv1.PolicyRule{{NonResourceURLs: []string{"/"}, Verbs: []string{"access"}}}, res); err != nil {
		return fmt.Errorf("letting edge-controller-manager's user %s into %s: %w", user, inv.path, err)
	}
	if err := espw.EnsureClusterRoleBinding(ctx, kube, inv.path, edgev1alpha1.PushHostRole, edgev1alpha1.PushHostRole, subject, res); err != nil {
		return fmt.Errorf("letting edge-controller-manager's user %s into %s: %w", user, inv.path, err)
	}
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: edgev1alpha1.PushHostRole},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}},
	}
	if _, err := client.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating Role %s/%s in %s: %w", ns, role.Name, inv.path, err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: edgev1alpha1.PushHostRole},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{subject},
	}
	if _, err := client.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		got, err := client.RbacV1().RoleBindings(ns).Get(ctx, binding.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading RoleBinding %s/%s in %s: %w", ns, binding.Name, inv.path, err)
		}
		if len(got.Subjects) != 1 || got.Subjects[0] != subject {
			got.Subjects = binding.Subjects
			if _, err := client.RbacV1().RoleBindings(ns).Update(ctx, got, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("updating RoleBinding %s/%s in %s: %w", ns, binding.Name, inv.path, err)
			}
		}
	} else if err != nil {
		return fmt.Errorf("creating RoleBinding %s/%s in %s: %w", ns, binding.Name, inv.path, err)
	}
	return nil
}

// removePushCredential deletes the stored edge kubeconfig of SyncTarget name, if any.
func (o *Options) removePushCredential(ctx context.Context, inv *inventoryClients, name string, out io.Writer) error {
	_, base, err := o.kcpClient()
	if err != nil {
		return err
	}
	kube, err := kcpkubernetesclientset.NewForConfig(base)
	if err != nil {
		return err
	}
	err = kube.Cluster(inv.path).CoreV1().Secrets(edgev1alpha1.PushKubeconfigNamespace).Delete(ctx, name, metav1.DeleteOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("deleting the stored edge kubeconfig, Secret %s/%s of %s: %w", edgev1alpha1.PushKubeconfigNamespace, name, inv.path, err)
	}
	fmt.Fprintf(out, "secret %s/%s (edge kubeconfig) deleted\n", edgev1alpha1.PushKubeconfigNamespace, name)
	return nil
}
