package transport

// Sealed objects: every Secret, and every object annotated edge.kcp.io/sealed: "true", travels in
// its assemblage with its content encrypted to the public key of the destination's syncer. The
// key pair is made at the edge and its private half never leaves it, so a mailbox, the center's
// storage and its backups hold ciphertext only.
//
// The box is golang.org/x/crypto/nacl/box's anonymous sealed box (X25519, XSalsa20-Poly1305,
// the libsodium crypto_box_seal construction): authenticated, made for one recipient's public
// key with a fresh ephemeral key per message, maintained by the Go team in x/crypto, which the
// module graph already resolves at the version that its golang.org/x pins need. An object is at
// most MaxObjectBytes, so a one-shot box serves; age (filippo.io/age) would add streaming and
// a file format that an object does not need, and would move every golang.org/x pin.

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"

	"golang.org/x/crypto/curve25519"
	"golang.org/x/crypto/hkdf"
	"golang.org/x/crypto/nacl/box"
)

// AnnotationSealed, set to "true" on a workload object, makes it travel sealed like a Secret.
const AnnotationSealed = "edge.kcp.io/sealed"

// The syncer's key pair at the edge: a Secret in the namespace the syncer runs in there.
const (
	// DefaultEdgeSyncerNamespace is the edge cluster's namespace the syncer runs in, unless
	// kubectl edge prep-for-syncer is told another.
	DefaultEdgeSyncerNamespace = "edge-syncer"
	// KeySecretPrivateKey is the data key of the private key in the key Secret.
	KeySecretPrivateKey = "private-key"
	// KeySecretPreviousKey is the data key of the private key the current one replaced, kept so
	// that the versions sealed for it before the center read the new key still open.
	KeySecretPreviousKey = "previous-private-key"
	// LabelKeyOf labels the key Secret with the name of its SyncTarget.
	LabelKeyOf = "edge.kcp.io/key-of"
	// AnnotationRotateKey, set on a mailbox's SyncerConfig (kubectl edge rotate-key), asks its
	// syncer for a new key pair; its value is a token of the request, which the syncer records
	// on its key Secret once done, so that a request is acted on once.
	AnnotationRotateKey = "edge.kcp.io/rotate-key"
)

// KeySecretName is the name of the Secret holding the key pair of the syncer of the SyncTarget
// with the given UID: syncers of several SyncTargets may share a namespace.
func KeySecretName(syncTargetUID string) string {
	return "edge-syncer-key-" + syncTargetUID
}

// SealSchemeV1 is the only sealing scheme: a nacl/box anonymous sealed box of the JSON of a
// sealedContent.
const SealSchemeV1 = "nacl-box-seal-v1"

// KeySize is the size of a public or private key.
const KeySize = 32

// Sealed is the ciphertext of an entry's hidden content, and the key it is sealed for.
type Sealed struct {
	Scheme string `json:"scheme"`
	// KeyID is the recipient's KeyID.
	KeyID string `json:"keyID"`
	// Box is the sealed box (base64 in JSON).
	Box []byte `json:"box"`
}

// sealedContent is what a box holds: the object's key, so that a box moved to another object
// does not open there, and the fields that the entry's object lacks.
type sealedContent struct {
	Object string         `json:"object"`
	Fields map[string]any `json:"fields"`
}

// KeyPair is a syncer's key pair.
type KeyPair struct {
	Public, Private [KeySize]byte
}

// NewKeyPair makes a key pair from crypto/rand.
func NewKeyPair() (*KeyPair, error) {
	pub, priv, err := box.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("making a key pair: %w", err)
	}
	return &KeyPair{Public: *pub, Private: *priv}, nil
}

// KeyPairFromPrivate rebuilds a key pair from its private half.
func KeyPairFromPrivate(private []byte) (*KeyPair, error) {
	if len(private) != KeySize {
		return nil, fmt.Errorf("a private key has %d bytes, not %d", KeySize, len(private))
	}
	kp := &KeyPair{}
	copy(kp.Private[:], private)
	pub, err := curve25519.X25519(kp.Private[:], curve25519.Basepoint)
	if err != nil {
		return nil, fmt.Errorf("deriving the public key: %w", err)
	}
	copy(kp.Public[:], pub)
	return kp, nil
}

// KeyID names a public key: the first 16 hex digits of its SHA-256.
func KeyID(public [KeySize]byte) string {
	sum := sha256.Sum256(public[:])
	return hex.EncodeToString(sum[:8])
}

// EncodePublicKey is the text form of a public key (standard base64), as published in a
// SyncerConfig's status.
func EncodePublicKey(public [KeySize]byte) string {
	return base64.StdEncoding.EncodeToString(public[:])
}

// ParsePublicKey reads EncodePublicKey's form.
func ParsePublicKey(s string) ([KeySize]byte, error) {
	var pub [KeySize]byte
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b) != KeySize {
		return pub, fmt.Errorf("a public key is %d bytes in standard base64", KeySize)
	}
	copy(pub[:], b)
	return pub, nil
}

// NeedsSealing says whether an object travels sealed: a core Secret, or an object annotated
// edge.kcp.io/sealed: "true".
func NeedsSealing(group, resource string, obj map[string]any) bool {
	if group == "" && resource == "secrets" {
		return true
	}
	md, _ := obj["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	return ann[AnnotationSealed] == "true"
}

// visibleMetadata are the metadata fields a sealed entry keeps in the clear: what the edge needs
// to name, select and own the object.
var visibleMetadata = []string{"name", "namespace", "labels", "annotations"}

// hiddenAnnotations are annotations sealed with the content even though annotations stay in the
// clear: they repeat it.
var hiddenAnnotations = []string{"kubectl.kubernetes.io/last-applied-configuration"}

// splitSealed cuts obj into what stays in the clear (apiVersion, kind, visibleMetadata) and the
// rest, without changing obj.
func splitSealed(obj map[string]any) (visible, hidden map[string]any) {
	visible, hidden = map[string]any{}, map[string]any{}
	for k, v := range obj {
		switch k {
		case "apiVersion", "kind":
			visible[k] = v
		case "metadata":
		default:
			hidden[k] = v
		}
	}
	md, _ := obj["metadata"].(map[string]any)
	if md == nil {
		return visible, hidden
	}
	vmd, hmd := map[string]any{}, map[string]any{}
	for k, v := range md {
		hmd[k] = v
	}
	for _, k := range visibleMetadata {
		if v, ok := md[k]; ok {
			vmd[k] = v
			delete(hmd, k)
		}
	}
	if ann, ok := md["annotations"].(map[string]any); ok {
		shown, held := map[string]any{}, map[string]any{}
		for k, v := range ann {
			if isHiddenAnnotation(k) {
				held[k] = v
			} else {
				shown[k] = v
			}
		}
		vmd["annotations"] = shown
		if len(held) > 0 {
			hmd["annotations"] = held
		}
	}
	visible["metadata"] = vmd
	if len(hmd) > 0 {
		hidden["metadata"] = hmd
	}
	return visible, hidden
}

func isHiddenAnnotation(k string) bool { return slices.Contains(hiddenAnnotations, k) }

// mergeSealed puts hidden back into visible (metadata and annotations merged key by key).
func mergeSealed(visible, hidden map[string]any) (map[string]any, error) {
	out := maps.Clone(visible)
	for k, v := range hidden {
		switch k {
		case "apiVersion", "kind":
			return nil, fmt.Errorf("the sealed content holds %s, which travels in the clear", k)
		case "metadata":
			hmd, ok := v.(map[string]any)
			if !ok {
				return nil, errors.New("the sealed content's metadata is not an object")
			}
			vmd, _ := visible["metadata"].(map[string]any)
			md := maps.Clone(vmd)
			if md == nil {
				md = map[string]any{}
			}
			for mk, mv := range hmd {
				if mk == "annotations" {
					hann, ok := mv.(map[string]any)
					if !ok {
						return nil, errors.New("the sealed content's annotations are not an object")
					}
					vann, _ := md["annotations"].(map[string]any)
					ann := maps.Clone(vann)
					if ann == nil {
						ann = map[string]any{}
					}
					for ak, av := range hann {
						if !isHiddenAnnotation(ak) {
							return nil, fmt.Errorf("the sealed content holds annotation %s, which travels in the clear", ak)
						}
						ann[ak] = av
					}
					md["annotations"] = ann
					continue
				}
				if _, clear := md[mk]; clear || slices.Contains(visibleMetadata, mk) {
					return nil, fmt.Errorf("the sealed content holds metadata.%s, which travels in the clear", mk)
				}
				md[mk] = mv
			}
			out["metadata"] = md
		default:
			out[k] = v
		}
	}
	return out, nil
}

// ClearView is what anyone but the destination's syncer may see of an object that travels
// sealed: the fields Seal leaves in the clear. kubectl edge diff compares sealed objects by it.
func ClearView(obj map[string]any) map[string]any {
	visible, _ := splitSealed(obj)
	return visible
}

// Seal returns the entry with its object's content sealed for the recipient's public key: the
// object keeps apiVersion, kind, and metadata name, namespace, labels and annotations; the rest
// is in e.Sealed. Each call makes other bytes (a fresh ephemeral key). It does not change e.
func Seal(e Entry, recipient [KeySize]byte) (Entry, error) {
	return sealWith(e, recipient, func([]byte) io.Reader { return rand.Reader })
}

// SealingSecretBytes is the size of the center's sealing secret (SealWithSecret).
const SealingSecretBytes = 32

// SealWithSecret is Seal made deterministic by a secret only the center holds: the box's
// ephemeral key is derived (HKDF-SHA256) from the secret, the recipient's key and the content, so
// that the same content sealed for the same key is the same bytes, after a restart too, and
// sealing an unchanged object again does not make a new version of its assemblage. Equal boxes
// tell a mailbox reader only that the content did not change; without the secret they confirm
// no guess of it. Other content gives another ephemeral key, so no key seals two messages.
func SealWithSecret(e Entry, recipient [KeySize]byte, secret []byte) (Entry, error) {
	if len(secret) < SealingSecretBytes {
		return Entry{}, fmt.Errorf("the sealing secret has %d bytes, fewer than %d", len(secret), SealingSecretBytes)
	}
	return sealWith(e, recipient, func(plain []byte) io.Reader {
		info := append([]byte("edge-mc "+SealSchemeV1+" ephemeral key\x00"), plain...)
		return hkdf.New(sha256.New, secret, recipient[:], info)
	})
}

// sealWith seals e for recipient with the randomness that random gives for the content to seal.
func sealWith(e Entry, recipient [KeySize]byte, random func(plain []byte) io.Reader) (Entry, error) {
	if e.Sealed != nil {
		return Entry{}, fmt.Errorf("%s is sealed already", e.Key())
	}
	visible, hidden := splitSealed(e.Object)
	plain, err := json.Marshal(sealedContent{Object: e.Key().String(), Fields: hidden})
	if err != nil {
		return Entry{}, fmt.Errorf("sealing %s: %w", e.Key(), err)
	}
	sealedBox, err := box.SealAnonymous(nil, plain, &recipient, random(plain))
	if err != nil {
		return Entry{}, fmt.Errorf("sealing %s: %w", e.Key(), err)
	}
	e.Object = visible
	e.Sealed = &Sealed{Scheme: SealSchemeV1, KeyID: KeyID(recipient), Box: sealedBox}
	return e, nil
}

// OpenError says why a sealed entry does not open. It never holds any of the content.
type OpenError struct {
	Key     Key
	Message string
}

func (e *OpenError) Error() string {
	return fmt.Sprintf("sealed %s does not open: %s", e.Key, e.Message)
}

// Open returns the entry with its sealed content put back into its object, opened with kp. An
// entry that is not sealed is returned as it is. It does not change e.
func Open(e Entry, kp *KeyPair) (Entry, error) {
	if e.Sealed == nil {
		return e, nil
	}
	key := e.Key()
	fail := func(format string, args ...any) (Entry, error) {
		return Entry{}, &OpenError{Key: key, Message: fmt.Sprintf(format, args...)}
	}
	if e.Sealed.Scheme != SealSchemeV1 {
		return fail("scheme %q is unknown to this syncer (it reads %s): upgrade the syncer", e.Sealed.Scheme, SealSchemeV1)
	}
	if kp == nil {
		return fail("this syncer has no key")
	}
	if want := KeyID(kp.Public); e.Sealed.KeyID != want {
		return fail("it is sealed for key %s, and this syncer's key is %s; the center seals the next version for the key it reads in the SyncerConfig's status", e.Sealed.KeyID, want)
	}
	plain, ok := box.OpenAnonymous(nil, e.Sealed.Box, &kp.Public, &kp.Private)
	if !ok {
		return fail("the box is corrupt, truncated or not sealed for this syncer's key")
	}
	var content sealedContent
	dec := json.NewDecoder(bytes.NewReader(plain))
	dec.UseNumber()
	if err := dec.Decode(&content); err != nil {
		return fail("the opened content is not JSON")
	}
	if content.Object != key.String() {
		return fail("the box was sealed for another object")
	}
	if err := normalizeNumbers(content.Fields); err != nil {
		return fail("the opened content holds a bad number")
	}
	obj, err := mergeSealed(e.Object, content.Fields)
	if err != nil {
		return fail("%v", err)
	}
	e.Object = obj
	e.Sealed = nil
	return e, nil
}
