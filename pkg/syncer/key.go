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

// heldKeys is what the key Secret holds: the current pair, the one it replaced (nil if none),
// and the token of the last rotation request acted on ("" if none).
type heldKeys struct {
	current, previous *transport.KeyPair
	rotatedFor        string
}

// keysIn reads the key Secret; current is nil where it holds no valid key.
func keysIn(secret *corev1.Secret) heldKeys {
	var held heldKeys
	held.current, _ = transport.KeyPairFromPrivate(secret.Data[transport.KeySecretPrivateKey])
	if prev, ok := secret.Data[transport.KeySecretPreviousKey]; ok {
		held.previous, _ = transport.KeyPairFromPrivate(prev)
	}
	held.rotatedFor = secret.Annotations[transport.AnnotationRotateKey]
	return held
}

// keyData is the key Secret's data for a current pair and, if not nil, the previous one.
func keyData(current, previous *transport.KeyPair) map[string][]byte {
	data := map[string][]byte{transport.KeySecretPrivateKey: current.Private[:]}
	if previous != nil {
		data[transport.KeySecretPreviousKey] = previous.Private[:]
	}
	return data
}

// loadOrMakeKey returns the key pairs held in the Secret name of secrets; if there is none, or
// it holds no valid key, it makes a new pair and stores it there. made says that the pair is
// new.
func loadOrMakeKey(ctx context.Context, secrets typedcorev1.SecretInterface, name string, labels map[string]string) (held heldKeys, made bool, err error) {
	logger := klog.FromContext(ctx)
	have, err := secrets.Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		if held := keysIn(have); held.current != nil {
			return held, false, nil
		}
		// Not a key (edited by hand, or cut short): a new one replaces it, and the center seals
		// the next versions for it once it is published.
		kp, err := transport.NewKeyPair()
		if err != nil {
			return heldKeys{}, false, err
		}
		have.Data = keyData(kp, nil)
		if _, err := secrets.Update(ctx, have, metav1.UpdateOptions{}); err != nil {
			return heldKeys{}, false, fmt.Errorf("replacing Secret %s, which holds no valid key: %w", name, err)
		}
		logger.Info("the syncer's key Secret held no valid key; made a new key pair", "secret", name, "keyID", transport.KeyID(kp.Public))
		return heldKeys{current: kp, rotatedFor: have.Annotations[transport.AnnotationRotateKey]}, true, nil
	case !apierrors.IsNotFound(err):
		return heldKeys{}, false, fmt.Errorf("reading the syncer's key Secret %s: %w", name, err)
	}
	kp, err := transport.NewKeyPair()
	if err != nil {
		return heldKeys{}, false, err
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Type:       corev1.SecretTypeOpaque,
		Data:       keyData(kp, nil),
	}
	if _, err := secrets.Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			// Another process of this syncer made one meanwhile: the next try reads it.
			return heldKeys{}, false, fmt.Errorf("the syncer's key Secret %s appeared meanwhile: %w", name, err)
		}
		return heldKeys{}, false, fmt.Errorf("storing a new key pair in Secret %s: %w", name, err)
	}
	logger.Info("made a new key pair for sealed objects", "secret", name, "keyID", transport.KeyID(kp.Public))
	return heldKeys{current: kp}, true, nil
}

// rotateKey makes a new key pair for the rotation request token and stores it in the key
// Secret, with the pair it replaces as the previous one: versions the center sealed for that
// one still open until it seals for the new one. The Secret keeps its identity (it is updated,
// with its resourceVersion, so a concurrent change fails the write and is retried).
func rotateKey(ctx context.Context, secrets typedcorev1.SecretInterface, name, token string) (heldKeys, error) {
	have, err := secrets.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return heldKeys{}, fmt.Errorf("reading the syncer's key Secret %s to rotate the key: %w", name, err)
	}
	held := keysIn(have)
	if held.rotatedFor == token && held.current != nil {
		return held, nil // done already, by this process before a restart
	}
	kp, err := transport.NewKeyPair()
	if err != nil {
		return heldKeys{}, err
	}
	have.Data = keyData(kp, held.current)
	if have.Annotations == nil {
		have.Annotations = map[string]string{}
	}
	have.Annotations[transport.AnnotationRotateKey] = token
	if _, err := secrets.Update(ctx, have, metav1.UpdateOptions{}); err != nil {
		return heldKeys{}, fmt.Errorf("storing the new key pair in Secret %s: %w", name, err)
	}
	return heldKeys{current: kp, previous: held.current, rotatedFor: token}, nil
}

// rotateKeyIfAsked acts on a rotation request (the SyncerConfig's annotation
// transport.AnnotationRotateKey) not acted on yet: a new key pair, published with the next
// report.
func (s *Syncer) rotateKeyIfAsked(ctx context.Context, token string) error {
	s.mu.Lock()
	done := token == "" || s.key == nil || token == s.keys.rotatedFor
	s.mu.Unlock()
	if done {
		return nil
	}
	before := transport.KeyID(s.keyPair().Public)
	held, err := rotateKey(ctx, s.edgeKube.CoreV1().Secrets(s.cfg.KeyNamespace), transport.KeySecretName(s.cfg.SyncTargetUID), token)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.key, s.keys = held.current, held
	s.mu.Unlock()
	klog.FromContext(ctx).Info("rotated the key pair for sealed objects, as the SyncerConfig asks", "request", token,
		"keyID", transport.KeyID(held.current.Public), "previousKeyID", before)
	return nil
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
		var held heldKeys
		if err == nil {
			held, _, err = loadOrMakeKey(ctx, s.edgeKube.CoreV1().Secrets(s.cfg.KeyNamespace), name, labels)
		}
		if err == nil {
			s.mu.Lock()
			s.key, s.keys = held.current, held
			s.mu.Unlock()
			logger.Info("using the key pair for sealed objects", "namespace", s.cfg.KeyNamespace, "secret", name, "keyID", transport.KeyID(held.current.Public))
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

// keyPairs returns the syncer's key pairs for opening sealed entries: the current one, then the
// one it replaced if any; none before they are loaded.
func (s *Syncer) keyPairs() []*transport.KeyPair {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.key == nil {
		return nil
	}
	if s.keys.previous != nil {
		return []*transport.KeyPair{s.key, s.keys.previous}
	}
	return []*transport.KeyPair{s.key}
}

// keyPair returns the syncer's key pair, nil before it is loaded.
func (s *Syncer) keyPair() *transport.KeyPair {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.key
}
