package manager

import (
	"context"
	"sync/atomic"
	"time"

	kcpkubernetesclientset "github.com/kcp-dev/client-go/kubernetes"
	"github.com/kcp-dev/logicalcluster/v3"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/kcp-dev/edge-mc/pkg/espw"
	"github.com/kcp-dev/edge-mc/pkg/webhook"
)

// webhookRound gives the webhook server, if there is one, a certificate signed by the ESPW's
// webhook CA, and returns the webhooks the leader is to configure: none when there is no server
// or no CA (an ESPW of an older 'kubectl edge init': the translator's condition still refuses
// what does not compile, after it is stored).
func webhookRound(ctx context.Context, kube kcpkubernetesclientset.ClusterInterface, o Options, hook *webhook.Server) ([]admissionregistrationv1.ValidatingWebhook, error) {
	if hook == nil {
		return nil, nil
	}
	caCert, caKey, why, err := espw.ReadWebhookCA(ctx, kube, o.ESPW)
	if err != nil {
		return nil, err
	}
	if why != "" {
		klog.FromContext(ctx).Info("no admission webhook: CEL that does not compile is refused by the Accepted condition only", "reason", why)
		return nil, nil
	}
	cert, err := webhook.ServingCertificate(caCert, caKey, o.WebhookURL)
	if err != nil {
		return nil, err
	}
	hook.SetCertificate(cert)
	return webhook.Webhooks(o.WebhookURL, caCert), nil
}

// configureWebhook is the leader's runnable that writes webhooks into the ESPW's webhook
// configuration, retrying with backoff until it succeeds; it is synced once written.
func configureWebhook(kube kcpkubernetesclientset.ClusterInterface, path logicalcluster.Path, webhooks []admissionregistrationv1.ValidatingWebhook) runnable {
	var done atomic.Bool
	return runnable{
		name:   "admission-webhook",
		synced: done.Load,
		start: func(ctx context.Context) error {
			logger := klog.FromContext(ctx)
			backoff := wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Steps: 1 << 30, Cap: 30 * time.Second}
			_ = wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
				ok, why, err := webhook.Configure(ctx, kube, path, webhooks)
				switch {
				case err != nil:
					logger.Error(err, "configuring the admission webhook; retrying")
					return false, nil
				case !ok:
					logger.Info("not configuring the admission webhook", "reason", why)
				}
				return true, nil
			})
			done.Store(true)
			<-ctx.Done()
			return nil
		},
	}
}
