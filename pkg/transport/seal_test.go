package transport

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"golang.org/x/crypto/nacl/box"
)

const secretValue = "hunter2-the-password"

func secretEntry() Entry {
	return Entry{Version: "v1", Resource: "secrets", Namespaced: true, Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{
			"name": "db", "namespace": "shop",
			"labels":      map[string]any{"app": "shop"},
			"annotations": map[string]any{"note": "kept", "kubectl.kubernetes.io/last-applied-configuration": `{"stringData":{"password":"` + secretValue + `"}}`},
			"finalizers":  []any{"example.com/keep"},
		},
		"type":       "Opaque",
		"data":       map[string]any{"password": base64.StdEncoding.EncodeToString([]byte(secretValue))},
		"stringData": map[string]any{"other": secretValue},
		"immutable":  false,
	}}
}

func mustKeyPair(t testing.TB) *KeyPair {
	t.Helper()
	kp, err := NewKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	return kp
}

// leaks reports whether the JSON of v holds the secret value or its base64 form.
func leaks(t testing.TB, v any) bool {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Contains(b, []byte(secretValue)) || bytes.Contains(b, []byte(base64.StdEncoding.EncodeToString([]byte(secretValue))))
}

func TestSealRoundTrip(t *testing.T) {
	kp := mustKeyPair(t)
	for _, tc := range []struct {
		name  string
		entry Entry
	}{
		{"secret", secretEntry()},
		{"annotated config map", Entry{Version: "v1", Resource: "configmaps", Namespaced: true, Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "c", "namespace": "n", "annotations": map[string]any{AnnotationSealed: "true"}},
			"data":     map[string]any{"token": secretValue, "n": int64(3)},
		}}},
		{"no metadata beyond the name", Entry{Group: "example.com", Version: "v1", Resource: "widgets", Object: map[string]any{
			"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w"},
			"spec": map[string]any{"ratio": 1.5, "list": []any{int64(1), "two", secretValue}},
		}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !NeedsSealing(tc.entry.Group, tc.entry.Resource, tc.entry.Object) && tc.name != "no metadata beyond the name" {
				t.Fatalf("NeedsSealing says no")
			}
			orig, _ := json.Marshal(tc.entry.Object)
			sealed, err := Seal(tc.entry, kp.Public)
			if err != nil {
				t.Fatal(err)
			}
			if after, _ := json.Marshal(tc.entry.Object); !bytes.Equal(orig, after) {
				t.Fatalf("Seal changed its input")
			}
			if sealed.Sealed == nil || sealed.Sealed.KeyID != KeyID(kp.Public) || sealed.Sealed.Scheme != SealSchemeV1 {
				t.Fatalf("sealed: %+v", sealed.Sealed)
			}
			if leaks(t, sealed) {
				t.Fatalf("the sealed entry holds the value in the clear: %v", sealed.Object)
			}
			if sealed.Key() != tc.entry.Key() {
				t.Fatalf("key %s, want %s", sealed.Key(), tc.entry.Key())
			}
			// Through a document, as it travels.
			enc, err := Encode([]Entry{sealed})
			if err != nil {
				t.Fatal(err)
			}
			doc, err := Decode(FormatV1, enc.Version, enc.Pieces)
			if err != nil {
				t.Fatal(err)
			}
			opened, err := Open(doc.Objects[0], kp)
			if err != nil {
				t.Fatal(err)
			}
			if opened.Sealed != nil || !jsonEqual(t, opened.Object, tc.entry.Object) {
				t.Fatalf("opened %v\nwant %v", opened.Object, tc.entry.Object)
			}
		})
	}
}

func TestSealKeepsClearFields(t *testing.T) {
	kp := mustKeyPair(t)
	sealed, err := Seal(secretEntry(), kp.Public)
	if err != nil {
		t.Fatal(err)
	}
	md := sealed.Object["metadata"].(map[string]any)
	if md["name"] != "db" || md["namespace"] != "shop" || md["labels"].(map[string]any)["app"] != "shop" {
		t.Errorf("metadata in the clear: %v", md)
	}
	if ann := md["annotations"].(map[string]any); ann["note"] != "kept" || len(ann) != 1 {
		t.Errorf("annotations in the clear: %v", ann)
	}
	if _, ok := md["finalizers"]; ok {
		t.Errorf("finalizers travel in the clear")
	}
	for _, k := range []string{"data", "stringData", "type", "immutable"} {
		if _, ok := sealed.Object[k]; ok {
			t.Errorf("%s travels in the clear", k)
		}
	}
	if _, err := Seal(sealed, kp.Public); err == nil {
		t.Errorf("sealed twice")
	}
}

func TestNeedsSealing(t *testing.T) {
	for _, tc := range []struct {
		group, resource string
		annotations     map[string]any
		want            bool
	}{
		{"", "secrets", nil, true},
		{"", "configmaps", nil, false},
		{"", "configmaps", map[string]any{AnnotationSealed: "true"}, true},
		{"", "configmaps", map[string]any{AnnotationSealed: "false"}, false},
		{"example.com", "secrets", nil, false},
		{"example.com", "widgets", map[string]any{AnnotationSealed: "true"}, true},
	} {
		obj := map[string]any{"metadata": map[string]any{"name": "x"}}
		if tc.annotations != nil {
			obj["metadata"].(map[string]any)["annotations"] = tc.annotations
		}
		if got := NeedsSealing(tc.group, tc.resource, obj); got != tc.want {
			t.Errorf("%s.%s %v: %v, want %v", tc.resource, tc.group, tc.annotations, got, tc.want)
		}
	}
}

func TestOpenRefuses(t *testing.T) {
	kp, other := mustKeyPair(t), mustKeyPair(t)
	sealed, err := Seal(secretEntry(), kp.Public)
	if err != nil {
		t.Fatal(err)
	}
	withBox := func(f func([]byte) []byte) Entry {
		e := sealed
		s := *sealed.Sealed
		s.Box = f(bytes.Clone(s.Box))
		e.Sealed = &s
		return e
	}
	// A box moved to another object of the same edge.
	moved := sealed
	moved.Object = map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "other", "namespace": "shop"}}
	// Another edge's key, claiming this edge's key id.
	otherKeyID := *other
	forged, err := Seal(secretEntry(), other.Public)
	if err != nil {
		t.Fatal(err)
	}
	forged.Sealed.KeyID = KeyID(kp.Public)
	wrongScheme := withBox(func(b []byte) []byte { return b })
	wrongScheme.Sealed.Scheme = "rot13"
	for _, tc := range []struct {
		name  string
		entry Entry
		kp    *KeyPair
		want  string
	}{
		{"another edge's key", sealed, &otherKeyID, "sealed for key"},
		{"no key", sealed, nil, "has no key"},
		{"a box for another key under this key's id", forged, kp, "corrupt"},
		{"truncated", withBox(func(b []byte) []byte { return b[:len(b)-1] }), kp, "corrupt"},
		{"too short", withBox(func(b []byte) []byte { return b[:10] }), kp, "corrupt"},
		{"empty", withBox(func([]byte) []byte { return nil }), kp, "corrupt"},
		{"a flipped bit", withBox(func(b []byte) []byte { b[len(b)/2] ^= 1; return b }), kp, "corrupt"},
		{"moved to another object", moved, kp, "another object"},
		{"unknown scheme", wrongScheme, kp, "unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open(tc.entry, tc.kp)
			var oe *OpenError
			if !errors.As(err, &oe) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want an OpenError saying %q", err, tc.want)
			}
			if strings.Contains(err.Error(), secretValue) {
				t.Fatalf("the error holds the value")
			}
		})
	}
}

func TestOpenClearEntry(t *testing.T) {
	e := secretEntry()
	got, err := Open(e, nil)
	if err != nil || !jsonEqual(t, got.Object, e.Object) {
		t.Fatalf("Open of a clear entry: %v %v", got.Object, err)
	}
}

func TestKeyPairs(t *testing.T) {
	kp := mustKeyPair(t)
	again, err := KeyPairFromPrivate(kp.Private[:])
	if err != nil || again.Public != kp.Public {
		t.Fatalf("KeyPairFromPrivate: %v, public %x want %x", err, again.Public, kp.Public)
	}
	if _, err := KeyPairFromPrivate([]byte("short")); err == nil {
		t.Errorf("a short private key was taken")
	}
	pub, err := ParsePublicKey(EncodePublicKey(kp.Public))
	if err != nil || pub != kp.Public {
		t.Fatalf("ParsePublicKey: %v", err)
	}
	for _, bad := range []string{"", "not base64!", base64.StdEncoding.EncodeToString([]byte("31 bytes, one short of a key.."))} {
		if _, err := ParsePublicKey(bad); err == nil {
			t.Errorf("ParsePublicKey(%q) took it", bad)
		}
	}
	if len(KeyID(kp.Public)) != 16 || KeyID(kp.Public) == KeyID(mustKeyPair(t).Public) {
		t.Errorf("key ids: %s", KeyID(kp.Public))
	}
}

// FuzzOpen feeds Open arbitrary boxes and schemes. It must never panic, and must open nothing
// that Seal did not make for this key and object.
func FuzzOpen(f *testing.F) {
	kp, err := KeyPairFromPrivate(bytes.Repeat([]byte{7}, KeySize))
	if err != nil {
		f.Fatal(err)
	}
	// The same box in every fuzzing process: a fixed ephemeral key.
	sealed, err := sealWith(secretEntry(), kp.Public, func([]byte) io.Reader { return bytes.NewReader(bytes.Repeat([]byte{3}, 64)) })
	if err != nil {
		f.Fatal(err)
	}
	f.Add(sealed.Sealed.Box, SealSchemeV1)
	f.Add(sealed.Sealed.Box[:48], SealSchemeV1)
	f.Add([]byte{}, SealSchemeV1)
	f.Add([]byte("{}"), "")
	f.Fuzz(func(t *testing.T, b []byte, scheme string) {
		e := sealed
		e.Sealed = &Sealed{Scheme: scheme, KeyID: sealed.Sealed.KeyID, Box: b}
		opened, err := Open(e, kp)
		if err != nil {
			var oe *OpenError
			if !errors.As(err, &oe) {
				t.Fatalf("not an OpenError: %v", err)
			}
			return
		}
		if !bytes.Equal(b, sealed.Sealed.Box) {
			t.Fatalf("opened a box Seal did not make: %v", opened.Object)
		}
	})
}

// FuzzOpenContent seals arbitrary content, as a center with the syncer's public key could, and
// opens it: Open must never panic, and what it accepts keeps the object's name and kind.
func FuzzOpenContent(f *testing.F) {
	kp, err := KeyPairFromPrivate(bytes.Repeat([]byte{9}, KeySize))
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(`{"object":"secrets/shop/db","fields":{"data":{"a":"Yg=="}}}`))
	f.Add([]byte(`{"object":"secrets/shop/db","fields":{"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"x"},"uid":"u"}}}`))
	f.Add([]byte(`{"object":"secrets/shop/db","fields":{"metadata":{"name":"evil"}}}`))
	f.Add([]byte(`{"object":"secrets/shop/db","fields":{"kind":"Pod","n":1e400}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, plain []byte) {
		b, err := box.SealAnonymous(nil, plain, &kp.Public, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		e := Entry{Version: "v1", Resource: "secrets", Namespaced: true,
			Object: map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "db", "namespace": "shop"}},
			Sealed: &Sealed{Scheme: SealSchemeV1, KeyID: KeyID(kp.Public), Box: b}}
		opened, err := Open(e, kp)
		if err != nil {
			var oe *OpenError
			if !errors.As(err, &oe) {
				t.Fatalf("not an OpenError: %v", err)
			}
			return
		}
		if opened.Sealed != nil || opened.Key() != e.Key() || opened.Object["kind"] != "Secret" || opened.Object["apiVersion"] != "v1" {
			t.Fatalf("opened into %v", opened.Object)
		}
	})
}

// TestClearView: what kubectl edge diff compares of a sealed object is what Seal leaves in the
// clear, whether read from the workspace or from a sealed entry.
func TestClearView(t *testing.T) {
	kp := mustKeyPair(t)
	e := secretEntry()
	sealed, err := Seal(e, kp.Public)
	if err != nil {
		t.Fatal(err)
	}
	view := ClearView(e.Object)
	if leaks(t, view) || !jsonEqual(t, view, sealed.Object) || !jsonEqual(t, ClearView(sealed.Object), sealed.Object) {
		t.Errorf("ClearView = %v, sealed entry's object %v", view, sealed.Object)
	}
}

// TestSealWithSecret: with the center's secret, the same content sealed for the same key is the
// same bytes; other content, another key or another secret give other bytes; all open.
func TestSealWithSecret(t *testing.T) {
	kp, other := mustKeyPair(t), mustKeyPair(t)
	secret := bytes.Repeat([]byte{1}, SealingSecretBytes)
	seal := func(e Entry, to *KeyPair, secret []byte) []byte {
		t.Helper()
		s, err := SealWithSecret(e, to.Public, secret)
		if err != nil {
			t.Fatal(err)
		}
		if opened, err := Open(s, to); err != nil || !jsonEqual(t, opened.Object, e.Object) {
			t.Fatalf("does not open: %v", err)
		}
		return s.Sealed.Box
	}
	first := seal(secretEntry(), kp, secret)
	if again := seal(secretEntry(), kp, secret); !bytes.Equal(first, again) {
		t.Errorf("the same content sealed twice differs")
	}
	changed := secretEntry()
	changed.Object["stringData"] = map[string]any{"other": "changed"}
	for name, b := range map[string][]byte{
		"other content":  seal(changed, kp, secret),
		"another key":    seal(secretEntry(), other, secret),
		"another secret": seal(secretEntry(), kp, bytes.Repeat([]byte{2}, SealingSecretBytes)),
		"no secret":      func() []byte { s, _ := Seal(secretEntry(), kp.Public); return s.Sealed.Box }(),
	} {
		if bytes.Equal(b, first) {
			t.Errorf("%s: the same bytes", name)
		}
	}
	if _, err := SealWithSecret(secretEntry(), kp.Public, []byte("short")); err == nil {
		t.Errorf("a short secret was taken")
	}
}
