package espw

import (
	"context"
	"fmt"
	"time"

	kcpkubernetesclientset "github.com/kcp-dev/client-go/kubernetes"
	"github.com/kcp-dev/logicalcluster/v3"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kcp-dev/edge-mc/pkg/pki"
)

// The admission webhook's trust: 'kubectl edge init' makes, once, a certificate authority for
// edge-controller-manager's admission webhook (pkg/webhook) and keeps it in a Secret of the ESPW,
// which edge-controller-manager may get and nothing else of the ESPW's Secrets. Every replica
// signs its own serving certificate with it for the host that kcp calls, so that replicas agree
// on the caBundle without sharing a certificate. init also makes the ValidatingWebhookConfiguration
// that the leader fills in with its URL and the CA: kcp applies a webhook configuration of an
// APIExport's workspace to the objects of that export in every workspace that binds it.
const (
	WebhookCASecretNamespace = "default"
	WebhookCASecretName      = "edge-mc-webhook-ca"
	// WebhookConfigurationName names the ESPW's ValidatingWebhookConfiguration.
	WebhookConfigurationName = "edge-mc"
)

// EnsureWebhookCA makes the ESPW's webhook CA at path if it is missing; it never replaces one.
func EnsureWebhookCA(ctx context.Context, kube kcpkubernetesclientset.ClusterInterface, path logicalcluster.Path, res *Result) error {
	return ensureSecret(ctx, kube, path, WebhookCASecretNamespace, WebhookCASecretName, corev1.SecretTypeTLS, NewWebhookCA, res)
}

// NewWebhookCA makes a CA for the webhook (a P-256 key, a self-signed certificate valid for ten
// years): the data of a Secret of type kubernetes.io/tls, PEM.
func NewWebhookCA() (map[string][]byte, error) {
	ca, err := pki.NewCA("edge-mc admission webhook CA", 10*365*24*time.Hour)
	if err != nil {
		return nil, fmt.Errorf("making the webhook CA: %w", err)
	}
	return map[string][]byte{corev1.TLSCertKey: ca.CertPEM, corev1.TLSPrivateKeyKey: ca.KeyPEM}, nil
}

// ReadWebhookCA reads the ESPW's webhook CA (PEM certificate and key); nil, with the reason, if
// there is none to use (an ESPW made by an older 'kubectl edge init').
func ReadWebhookCA(ctx context.Context, kube kcpkubernetesclientset.ClusterInterface, path logicalcluster.Path) (certPEM, keyPEM []byte, why string, err error) {
	s, err := kube.Cluster(path).CoreV1().Secrets(WebhookCASecretNamespace).Get(ctx, WebhookCASecretName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err), apierrors.IsForbidden(err):
		return nil, nil, fmt.Sprintf("the ESPW %s has no webhook CA this identity may read (%v): run this release's kubectl edge init", path, err), nil
	case err != nil:
		return nil, nil, "", fmt.Errorf("reading the webhook CA in %s: %w", path, err)
	}
	certPEM, keyPEM = s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey]
	if len(certPEM) == 0 || len(keyPEM) == 0 {
		return nil, nil, fmt.Sprintf("the Secret %s/%s in %s lacks %s or %s: delete it and run kubectl edge init", WebhookCASecretNamespace, WebhookCASecretName, path, corev1.TLSCertKey, corev1.TLSPrivateKeyKey), nil
	}
	return certPEM, keyPEM, "", nil
}

// EnsureWebhookConfiguration makes the ESPW's ValidatingWebhookConfiguration, with no webhook, if
// it is missing: edge-controller-manager, which may get and update it alone (RBAC cannot limit a
// create to one name), fills it in.
func EnsureWebhookConfiguration(ctx context.Context, kube kcpkubernetesclientset.ClusterInterface, path logicalcluster.Path, res *Result) error {
	configs := kube.Cluster(path).AdmissionregistrationV1().ValidatingWebhookConfigurations()
	what := "ValidatingWebhookConfiguration " + WebhookConfigurationName
	_, err := configs.Get(ctx, WebhookConfigurationName, metav1.GetOptions{})
	switch {
	case err == nil:
		res.Unchanged = append(res.Unchanged, what)
		return nil
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("reading %s in %s: %w", what, path, err)
	}
	config := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: WebhookConfigurationName, Labels: map[string]string{"app.kubernetes.io/part-of": "edge-mc"}},
	}
	if _, err := configs.Create(ctx, config, metav1.CreateOptions{}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			res.Unchanged = append(res.Unchanged, what)
			return nil
		}
		return fmt.Errorf("creating %s in %s: %w", what, path, err)
	}
	res.Created = append(res.Created, what)
	return nil
}
