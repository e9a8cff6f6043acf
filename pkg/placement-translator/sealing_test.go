package placementtranslator

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kcp-dev/logicalcluster/v3"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

const sealedValue = "s3cret-value-of-the-test"

func publishedKey(t *testing.T) (*transport.KeyPair, *edgev1alpha1.SyncerConfig) {
	t.Helper()
	kp, err := transport.NewKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	return kp, &edgev1alpha1.SyncerConfig{Status: edgev1alpha1.SyncerConfigStatus{
		PublicKey: transport.EncodePublicKey(kp.Public), KeyID: transport.KeyID(kp.Public)}}
}

func TestDestinationKeyOf(t *testing.T) {
	kp, cfg := publishedKey(t)
	if k := destinationKeyOf(cfg); k.missing != "" || k.public != kp.Public || k.id != transport.KeyID(kp.Public) {
		t.Errorf("a published key: %+v", k)
	}
	wrongID := cfg.DeepCopy()
	wrongID.Status.KeyID = "0123456789abcdef"
	notBase64 := cfg.DeepCopy()
	notBase64.Status.PublicKey = "%%%"
	for name, c := range map[string]*edgev1alpha1.SyncerConfig{
		"no SyncerConfig": nil, "no key": {}, "a wrong id": wrongID, "not a key": notBase64,
	} {
		if k := destinationKeyOf(c); k.missing == "" {
			t.Errorf("%s: a key to use: %+v", name, k)
		}
	}
}

func sealedConfigMap(value string) transport.Entry {
	return transport.Entry{Version: "v1", Resource: "configmaps", Namespaced: true, Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "c", "namespace": "app", "annotations": map[string]any{transport.AnnotationSealed: "true"}},
		"data":     map[string]any{"token": value},
	}}
}

// TestSealerSealsOnceUntilAChange: an object sealed again for an unchanged key and content is
// the same entry (the assemblage's version does not move); a change of either seals anew.
func TestSealerSealsOnceUntilAChange(t *testing.T) {
	kp, cfg := publishedKey(t)
	pk := placementKey{cluster: "ws1", name: "p1"}
	s := newSealer(destinationKeyOf(cfg), nil, nil, nil)
	first, ok, err := s.seal(pk, sealedConfigMap(sealedValue))
	if err != nil || !ok || first.Sealed == nil {
		t.Fatalf("seal: %v %v %+v", ok, err, first)
	}
	if _, has := first.Object["data"]; has {
		t.Fatalf("the data travels in the clear")
	}
	opened, err := transport.Open(first, kp)
	if err != nil || opened.Object["data"].(map[string]any)["token"] != sealedValue {
		t.Fatalf("the destination cannot open it: %v", err)
	}
	desired := map[copyKey]*desiredCopy{ck(configMapsGVR, "app", "c"): {}}

	next := newSealer(destinationKeyOf(cfg), nil, s.keep(desired), nil)
	again, _, _ := next.seal(pk, sealedConfigMap(sealedValue))
	if !bytes.Equal(again.Sealed.Box, first.Sealed.Box) {
		t.Errorf("an unchanged object was sealed anew")
	}
	changed, _, _ := next.seal(pk, sealedConfigMap("another value"))
	if bytes.Equal(changed.Sealed.Box, first.Sealed.Box) {
		t.Errorf("a changed object kept its old box")
	}

	_, cfg2 := publishedKey(t)
	rotated := newSealer(destinationKeyOf(cfg2), nil, next.keep(desired), nil)
	newKey, _, _ := rotated.seal(pk, sealedConfigMap("another value"))
	if newKey.Sealed.KeyID != cfg2.Status.KeyID {
		t.Errorf("sealed for %s after the key became %s", newKey.Sealed.KeyID, cfg2.Status.KeyID)
	}
	if memo := rotated.keep(map[copyKey]*desiredCopy{}); len(memo) != 1 {
		t.Errorf("the memo of an object sealed in this pass was dropped: %v", memo)
	}
	if memo := newSealer(destinationKeyOf(cfg2), nil, rotated.memo, nil).keep(map[copyKey]*desiredCopy{}); len(memo) != 0 {
		t.Errorf("the memo of an object no longer desired was kept: %v", memo)
	}

	clear := transport.Entry{Version: "v1", Resource: "configmaps", Namespaced: true, Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "plain", "namespace": "app"}}}
	if out, ok, err := rotated.seal(pk, clear); err != nil || !ok || out.Sealed != nil {
		t.Errorf("an object that needs no sealing: %v %v %+v", ok, err, out.Sealed)
	}
}

// TestSealerWithoutKey: without a key nothing that needs sealing goes, and the placement's
// problem names the destination and the objects, never their content.
func TestSealerWithoutKey(t *testing.T) {
	pk := placementKey{cluster: "ws1", name: "p1"}
	s := newSealer(destinationKeyOf(nil), nil, nil, func(placementKey) string { return "root:imw:edge-1" })
	if _, ok, err := s.seal(pk, sealedConfigMap(sealedValue)); ok || err != nil {
		t.Fatalf("sealed without a key: %v %v", ok, err)
	}
	problems := s.problems()
	if len(problems) != 1 || problems[0].reason != edgev1alpha1.PlacementSecretsNotSealed || problems[0].placement != pk {
		t.Fatalf("problems %+v", problems)
	}
	msg := problems[0].message
	for _, want := range []string{"destination root:imw:edge-1", "configmaps/app/c", "published no key"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the problem lacks %q: %s", want, msg)
		}
	}
	if strings.Contains(msg, sealedValue) {
		t.Errorf("the problem holds the value: %s", msg)
	}
}

// TestPlanAssemblagesSeals: an annotated object travels sealed for the destination's key, and not
// at all without one, while the rest of the placement goes.
func TestPlanAssemblagesSeals(t *testing.T) {
	w := newTestWorld(t)
	w.placement(t, "ws1", "p1", []any{map[string]any{"resources": []any{"configmaps"}, "namespaces": []any{"app"}}})
	w.workload(t, namespacesGVR, obj("v1", "Namespace", "ws1", "", "app", nil))
	secretish := obj("v1", "ConfigMap", "ws1", "app", "c", nil)
	ann := secretish.GetAnnotations() // the logical cluster's annotation stays
	ann[transport.AnnotationSealed] = "true"
	secretish.SetAnnotations(ann)
	secretish.Object["data"] = map[string]any{"token": sealedValue}
	w.workload(t, configMapsGVR, secretish)
	plain := obj("v1", "ConfigMap", "ws1", "app", "plain", nil)
	w.workload(t, configMapsGVR, plain)

	kp, cfg := publishedKey(t)
	for _, tc := range []struct {
		name   string
		cfg    *edgev1alpha1.SyncerConfig
		carry  []string
		sealed bool
	}{
		{"with a key", cfg, []string{"namespaces/app", "configmaps/app/c", "configmaps/app/plain"}, true},
		{"without a key", nil, []string{"namespaces/app", "configmaps/app/plain"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, ok := w.c.computeDesired(testMailbox, nil)
			if !ok {
				t.Fatal("computeDesired() not ok")
			}
			s := newSealer(destinationKeyOf(tc.cfg), nil, nil, nil)
			plans := w.c.planAssemblages(context.Background(), logicalcluster.Path{}, d, nil, s)
			if len(plans) != 1 || plans[0].hold {
				t.Fatalf("plans %+v", plans)
			}
			enc := plans[0].encoded
			if strings.Join(enc.Objects, " ") != strings.Join(tc.carry, " ") {
				t.Errorf("carries %v, want %v", enc.Objects, tc.carry)
			}
			doc, err := transport.Decode(transport.FormatV1, enc.Version, enc.Pieces)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := jsonOf(doc)
			if strings.Contains(raw, sealedValue) {
				t.Fatalf("the document holds the value in the clear")
			}
			var sealedSeen bool
			for _, e := range doc.Objects {
				if e.Sealed == nil {
					continue
				}
				sealedSeen = true
				opened, err := transport.Open(e, kp)
				if err != nil || opened.Object["data"].(map[string]any)["token"] != sealedValue {
					t.Errorf("the destination cannot open %s: %v", e.Key(), err)
				}
			}
			if sealedSeen != tc.sealed {
				t.Errorf("sealed entry seen: %v, want %v", sealedSeen, tc.sealed)
			}
			if problems := s.problems(); (len(problems) > 0) == tc.sealed {
				t.Errorf("problems %+v", problems)
			}
		})
	}
}

func jsonOf(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

// TestSealerWithSecretSurvivesARestart: with the center's sealing secret, a sealer that
// remembers nothing (a restarted translator) seals an unchanged object into the same bytes.
func TestSealerWithSecretSurvivesARestart(t *testing.T) {
	_, cfg := publishedKey(t)
	pk := placementKey{cluster: "ws1", name: "p1"}
	secret := bytes.Repeat([]byte{5}, transport.SealingSecretBytes)
	before, _, err := newSealer(destinationKeyOf(cfg), secret, nil, nil).seal(pk, sealedConfigMap(sealedValue))
	if err != nil {
		t.Fatal(err)
	}
	after, _, err := newSealer(destinationKeyOf(cfg), secret, nil, nil).seal(pk, sealedConfigMap(sealedValue))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before.Sealed.Box, after.Sealed.Box) {
		t.Errorf("an unchanged object was sealed into other bytes after a restart")
	}
}
