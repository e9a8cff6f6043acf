package syncer

import (
	"bytes"
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// TestLoadOrMakeKey: a syncer without a key Secret makes one and stores it; restarted with it,
// it keeps its key; a Secret holding no valid key is replaced; a lost Secret makes a new key.
func TestLoadOrMakeKey(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	secrets := client.CoreV1().Secrets("edge-syncer")
	name := transport.KeySecretName("uid-1")

	first, made, err := loadOrMakeKey(ctx, secrets, name, map[string]string{"a": "b"})
	if err != nil || !made {
		t.Fatalf("first start: made %v, %v", made, err)
	}
	stored, err := secrets.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(stored.Data[transport.KeySecretPrivateKey], first.current.Private[:]) || stored.Labels["a"] != "b" {
		t.Fatalf("stored %v", stored)
	}

	again, made, err := loadOrMakeKey(ctx, secrets, name, nil)
	if err != nil || made || again.current.Public != first.current.Public {
		t.Fatalf("restart: made %v, same key %v, %v", made, again.current != nil && again.current.Public == first.current.Public, err)
	}

	stored.Data[transport.KeySecretPrivateKey] = []byte("cut short")
	if _, err := secrets.Update(ctx, stored, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	replaced, made, err := loadOrMakeKey(ctx, secrets, name, nil)
	if err != nil || !made || replaced.current.Public == first.current.Public {
		t.Fatalf("a Secret without a valid key: made %v, %v", made, err)
	}
	if again, _, _ := loadOrMakeKey(ctx, secrets, name, nil); again.current.Public != replaced.current.Public {
		t.Fatalf("the replaced key was not stored")
	}

	if err := secrets.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	lost, made, err := loadOrMakeKey(ctx, secrets, name, nil)
	if err != nil || !made || lost.current.Public == replaced.current.Public {
		t.Fatalf("a lost Secret: made %v, %v", made, err)
	}
}

// TestLoadOrMakeKeyErrors: a failure to read or to store is an error, and no key is used
// that is not stored (the next try would make another).
func TestLoadOrMakeKeyErrors(t *testing.T) {
	ctx := context.Background()
	for _, verb := range []string{"get", "create"} {
		client := fake.NewClientset()
		client.PrependReactor(verb, "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, errors.New("the edge is down")
		})
		held, _, err := loadOrMakeKey(ctx, client.CoreV1().Secrets("ns"), "k", nil)
		if err == nil || held.current != nil {
			t.Errorf("%s failing: key %v, error %v", verb, held.current, err)
		}
	}
}

// TestRotateKey: a rotation request makes a new pair, keeps the one it replaces as the previous
// one, records the request on the Secret (which keeps its identity), and is acted on once: a
// restart reads all three back, and the same request again changes nothing.
func TestRotateKey(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	secrets := client.CoreV1().Secrets("edge-syncer")
	name := transport.KeySecretName("uid-1")
	first, _, err := loadOrMakeKey(ctx, secrets, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := secrets.Get(ctx, name, metav1.GetOptions{})

	rotated, err := rotateKey(ctx, secrets, name, "2026-11-29T05:00:00Z")
	if err != nil {
		t.Fatal(err)
	}
	if rotated.current.Public == first.current.Public || rotated.previous == nil || rotated.previous.Public != first.current.Public {
		t.Fatalf("rotation: new key %v, previous is the old one %v", rotated.current.Public != first.current.Public,
			rotated.previous != nil && rotated.previous.Public == first.current.Public)
	}
	after, _ := secrets.Get(ctx, name, metav1.GetOptions{})
	if after.UID != before.UID || after.Annotations[transport.AnnotationRotateKey] != "2026-11-29T05:00:00Z" {
		t.Fatalf("the Secret after rotation: %v", after.ObjectMeta)
	}

	restarted, made, err := loadOrMakeKey(ctx, secrets, name, nil)
	if err != nil || made || restarted.current.Public != rotated.current.Public ||
		restarted.previous == nil || restarted.previous.Public != first.current.Public || restarted.rotatedFor != "2026-11-29T05:00:00Z" {
		t.Fatalf("restart after rotation: made %v, %+v, %v", made, restarted, err)
	}
	again, err := rotateKey(ctx, secrets, name, "2026-11-29T05:00:00Z")
	if err != nil || again.current.Public != rotated.current.Public {
		t.Fatalf("the same request twice made another key: %v", err)
	}
	third, err := rotateKey(ctx, secrets, name, "later")
	if err != nil || third.current.Public == rotated.current.Public || third.previous.Public != rotated.current.Public {
		t.Fatalf("a second request: %v", err)
	}
}

// TestEnsureNamespace creates a missing namespace and leaves an existing one.
func TestEnsureNamespace(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "there"}})
	for _, ns := range []string{"there", "missing"} {
		if err := ensureNamespace(ctx, client.CoreV1().Namespaces(), ns); err != nil {
			t.Fatal(err)
		}
		if _, err := client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
			t.Errorf("namespace %s: %v", ns, err)
		}
	}
}

// TestReportedAlreadyComparesTheKey: a new key is published even when nothing else changed.
func TestReportedAlreadyComparesTheKey(t *testing.T) {
	kp, err := transport.NewKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	report := syncerConfigReport{ObservedGeneration: 2, SyncerVersion: "v", Formats: transport.Formats,
		PublicKey: transport.EncodePublicKey(kp.Public), KeyID: transport.KeyID(kp.Public)}
	cfg := &edgev1alpha1.SyncerConfig{Status: edgev1alpha1.SyncerConfigStatus{ObservedGeneration: 2, SyncerVersion: "v", Formats: transport.Formats}}
	if reportedAlready(cfg, report) {
		t.Errorf("a status without the key says it already")
	}
	cfg.Status.PublicKey, cfg.Status.KeyID = report.PublicKey, report.KeyID
	if !reportedAlready(cfg, report) {
		t.Errorf("a status with the key does not say it")
	}
	other := report
	other.PublicKey = "another"
	if other.id() == report.id() {
		t.Errorf("a new key does not change the report's id")
	}
}
