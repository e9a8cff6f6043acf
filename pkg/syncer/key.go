package syncer

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/klog/v2"

	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// The syncer's key pair lives in a Secret of the edge cluster, in the namespace the syncer runs
// in (Config.KeyNamespace), named transport.KeySecretName of its SyncTarget's UID, so that the
// syncers of several SyncTargets may share a namespace. Its private half is read and written
// there only: it is never logged, reported or sent to the mailbox. The public half and its id
// go into the SyncerConfig's status, where the placement translator reads them.

// loadOrMakeKey returns the key pair held in the Secret name of secrets; if there is none, or
// it holds no valid key, it makes a new pair and stores it there. made says that the pair is
// new.
func loadOrMakeKey(ctx context.Context, secrets typedcorev1.SecretInterface, name string, labels map[string]string) (kp *transport.KeyPair, made bool, err error) {
	logger := klog.FromContext(ctx)
	have, err := secrets.Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		if kp, err := transport.KeyPairFromPrivate(have.Data[transport.KeySecretPrivateKey]); err == nil {
			return kp, false, nil
		}
		// Not a key (edited by hand, or cut short): a new one replaces it, and the center seals
		// the next versions for it once it is published.
		kp, err := transport.NewKeyPair()
		if err != nil {
			return nil, false, err
		}
		have.Data = map[string][]byte{transport.KeySecretPrivateKey: kp.Private[:]}
		if _, err := secrets.Update(ctx, have, metav1.UpdateOptions{}); err != nil {
			return nil, false, fmt.Errorf("replacing Secret %s, which holds no valid key: %w", name, err)
		}
		logger.Info("the syncer's key Secret held no valid key; made a new key pair", "secret", name, "keyID", transport.KeyID(kp.Public))
		return kp, true, nil
	case !apierrors.IsNotFound(err):
		return nil, false, fmt.Errorf("reading the syncer's key Secret %s: %w", name, err)
	}
	kp, err = transport.NewKeyPair()
	if err != nil {
		return nil, false, err
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{transport.KeySecretPrivateKey: kp.Private[:]},
	}
	if _, err := secrets.Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			// Another process of this syncer made one meanwhile: the next try reads it.
			return nil, false, fmt.Errorf("the syncer's key Secret %s appeared meanwhile: %w", name, err)
		}
		return nil, false, fmt.Errorf("storing a new key pair in Secret %s: %w", name, err)
	}
	logger.Info("made a new key pair for sealed objects", "secret", name, "keyID", transport.KeyID(kp.Public))
	return kp, true, nil
}

// ensureNamespace creates the namespace if it does not exist.
func ensureNamespace(ctx context.Context, namespaces typedcorev1.NamespaceInterface, name string) error {
	if _, err := namespaces.Get(ctx, name, metav1.GetOptions{}); err == nil || !apierrors.IsNotFound(err) {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app.kubernetes.io/part-of": "edge-mc"}}}
	if _, err := namespaces.Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s for the syncer's key: %w", name, err)
	}
	return nil
}

// loadKeyUntilDone loads or makes the syncer's key pair, retrying with backoff until it succeeds
// or ctx ends.
func (s *Syncer) loadKeyUntilDone(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	name := transport.KeySecretName(s.cfg.SyncTargetUID)
	labels := map[string]string{"app.kubernetes.io/part-of": "edge-mc", transport.LabelKeyOf: transport.LabelValue(s.cfg.SyncTargetName)}
	delay := time.Second
	for {
		err := ensureNamespace(ctx, s.edgeKube.CoreV1().Namespaces(), s.cfg.KeyNamespace)
		var kp *transport.KeyPair
		if err == nil {
			kp, _, err = loadOrMakeKey(ctx, s.edgeKube.CoreV1().Secrets(s.cfg.KeyNamespace), name, labels)
		}
		if err == nil {
			s.mu.Lock()
			s.key = kp
			s.mu.Unlock()
			logger.Info("using the key pair for sealed objects", "namespace", s.cfg.KeyNamespace, "secret", name, "keyID", transport.KeyID(kp.Public))
			return nil
		}
		logger.Error(err, "loading the syncer's key pair; retrying")
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(jitter(delay)):
		}
		delay = min(2*delay, time.Minute)
	}
}

// keyPair returns the syncer's key pair, nil before it is loaded.
func (s *Syncer) keyPair() *transport.KeyPair {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.key
}
