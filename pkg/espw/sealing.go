package espw

import (
	"context"
	"crypto/rand"
	"fmt"

	kcpkubernetesclientset "github.com/kcp-dev/client-go/kubernetes"
	"github.com/kcp-dev/logicalcluster/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// The center's sealing secret: a Secret of the ESPW that 'kubectl edge init' makes once, and
// that edge-controller-manager reads (and may read nothing else of the ESPW's Secrets). With it
// the placement translator seals deterministically (transport.SealWithSecret), so that after a
// restart unchanged Secrets seal into the same bytes and no assemblage gets a new version.
const (
	SealingSecretNamespace = "default"
	SealingSecretName      = "edge-mc-sealing-secret"
	// SealingSecretKey is the data key of the secret's bytes.
	SealingSecretKey = "secret"
)

// EnsureSealingSecret makes the ESPW's sealing secret at path if it is missing. It never
// replaces one: a new secret would make every sealed object's next seal other bytes.
func EnsureSealingSecret(ctx context.Context, kube kcpkubernetesclientset.ClusterInterface, path logicalcluster.Path, res *Result) error {
	return ensureSecret(ctx, kube, path, SealingSecretNamespace, SealingSecretName, corev1.SecretTypeOpaque, func() (map[string][]byte, error) {
		b := make([]byte, transport.SealingSecretBytes)
		if _, err := rand.Read(b); err != nil {
			return nil, fmt.Errorf("making the sealing secret: %w", err)
		}
		return map[string][]byte{SealingSecretKey: b}, nil
	}, res)
}

// ensureSecret makes the Secret namespace/name of the ESPW at path, of type typ, with the data
// that makeData makes, if it is missing; it never replaces one.
func ensureSecret(ctx context.Context, kube kcpkubernetesclientset.ClusterInterface, path logicalcluster.Path, namespace, name string, typ corev1.SecretType,
	makeData func() (map[string][]byte, error), res *Result) error {
	secrets := kube.Cluster(path).CoreV1().Secrets(namespace)
	what := "Secret " + namespace + "/" + name
	_, err := secrets.Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		res.Unchanged = append(res.Unchanged, what)
		return nil
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("reading %s in %s: %w", what, path, err)
	}
	data, err := makeData()
	if err != nil {
		return err
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{"app.kubernetes.io/part-of": "edge-mc"}},
		Type:       typ,
		Data:       data,
	}
	if _, err := secrets.Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			res.Unchanged = append(res.Unchanged, what)
			return nil
		}
		return fmt.Errorf("creating %s in %s: %w", what, path, err)
	}
	res.Created = append(res.Created, what)
	return nil
}

// ReadSealingSecret reads the ESPW's sealing secret; nil, with the reason, if there is none to
// use (an ESPW made by an older 'kubectl edge init', or a secret too short).
func ReadSealingSecret(ctx context.Context, kube kcpkubernetesclientset.ClusterInterface, path logicalcluster.Path) ([]byte, string, error) {
	s, err := kube.Cluster(path).CoreV1().Secrets(SealingSecretNamespace).Get(ctx, SealingSecretName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err), apierrors.IsForbidden(err):
		return nil, fmt.Sprintf("the ESPW %s has no sealing secret this identity may read (%v): run this release's kubectl edge init", path, err), nil
	case err != nil:
		return nil, "", fmt.Errorf("reading the sealing secret in %s: %w", path, err)
	}
	b := s.Data[SealingSecretKey]
	if len(b) < transport.SealingSecretBytes {
		return nil, fmt.Sprintf("the sealing secret in %s holds %d bytes, fewer than %d: delete it and run kubectl edge init", path, len(b), transport.SealingSecretBytes), nil
	}
	return b, "", nil
}
