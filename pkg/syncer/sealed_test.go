package syncer

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kcp-dev/edge-mc/pkg/transport"
)

const testSecretValue = "the-value-nobody-else-reads"

func testSecret(name string) transport.Entry {
	return transport.Entry{Version: "v1", Resource: "secrets", Namespaced: true, Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": name, "namespace": "app"},
		"stringData": map[string]any{"password": testSecretValue}}}
}

// TestPlanOpensSealed: a sealed entry opened with the syncer's key is applied with its content;
// one that does not open (another edge's key, a corrupt box, no key) is refused with the reason,
// and never applied without its content; the others still go.
func TestPlanOpensSealed(t *testing.T) {
	mine, err := transport.NewKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := transport.NewKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	rotated, err := transport.NewKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	seal := func(e transport.Entry, kp *transport.KeyPair) transport.Entry {
		out, err := transport.Seal(e, kp.Public)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	corrupt := seal(testSecret("corrupt"), mine)
	corrupt.Sealed.Box = bytes.Clone(corrupt.Sealed.Box)
	corrupt.Sealed.Box[40] ^= 0xff
	newDoc := func() *transport.Document {
		return &transport.Document{Objects: []transport.Entry{
			seal(testSecret("good"), mine), seal(testSecret("other-edge"), theirs), corrupt, plainConfigMap("app", "plain", nil),
		}}
	}

	for _, tc := range []struct {
		name   string
		keys   []*transport.KeyPair
		opened []string
		refuse map[string]string
	}{
		{"this edge's key", []*transport.KeyPair{mine}, []string{"good"}, map[string]string{"other-edge": "sealed for key", "corrupt": "corrupt"}},
		// Rotated: boxes sealed for the key it replaced open until the center seals for the new one.
		{"a new key, and the one it replaced", []*transport.KeyPair{rotated, mine}, []string{"good"}, map[string]string{"other-edge": "sealed for key", "corrupt": "corrupt"}},
		{"no key", nil, nil, map[string]string{"good": "no key", "other-edge": "no key", "corrupt": "no key"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := newDoc()
			p := newPlan(testAssemblage, "v", doc, nil, testMarks)
			for _, d := range p.objects {
				if d.key.Resource == "secrets" && d.invalid == "" {
					t.Errorf("%s would be applied without opening it", d.key)
				}
			}
			p2doc := newDoc()
			unopened := openSealed(p2doc, tc.keys...)
			p2 := newPlan(testAssemblage, "v", p2doc, nil, testMarks)
			p2.refuse(unopened)
			for _, name := range tc.opened {
				d := p2.byKey[transport.Key{Resource: "secrets", Namespace: "app", Name: name}]
				if d == nil || d.invalid != "" || d.obj == nil {
					t.Fatalf("%s: %+v", name, d)
				}
				if v, _, _ := unstructured.NestedString(d.obj.Object, "stringData", "password"); v != testSecretValue {
					t.Errorf("%s is applied without its value", name)
				}
			}
			for name, want := range tc.refuse {
				d := p2.byKey[transport.Key{Resource: "secrets", Namespace: "app", Name: name}]
				if d == nil || d.obj != nil || !strings.Contains(d.invalid, want) {
					t.Errorf("%s: want refused for %q, got %+v", name, want, d)
					continue
				}
				if strings.Contains(d.invalid, testSecretValue) {
					t.Errorf("the reason holds the value: %s", d.invalid)
				}
			}
			if d := p2.byKey[transport.Key{Resource: "configmaps", Namespace: "app", Name: "plain"}]; d == nil || d.invalid != "" {
				t.Errorf("an object in the clear is held up: %+v", d)
			}
		})
	}
}
