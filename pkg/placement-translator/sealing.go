package placementtranslator

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// problemNotSealed: the destination's syncer has published no key for sealed objects, so the
// placement's Secrets (and objects annotated edge.kcp.io/sealed: "true") are not delivered
// there; whatever version of them the destination had stays.
const problemNotSealed = edgev1alpha1.PlacementSecretsNotSealed

// destinationKey is the public key a destination's syncer published in its SyncerConfig's
// status, or why there is none to use.
type destinationKey struct {
	public [transport.KeySize]byte
	id     string
	// missing says why there is no key; "" when there is one.
	missing string
}

// destinationKeyOf reads the key a SyncerConfig's status publishes. A key whose id does not
// match it is not used: the syncer would refuse what is sealed for it.
func destinationKeyOf(cfg *edgev1alpha1.SyncerConfig) destinationKey {
	if cfg == nil || cfg.Status.PublicKey == "" {
		return destinationKey{missing: "its syncer has published no key for sealed objects in the mailbox's SyncerConfig (it has not started yet, or it is older than sealed objects: upgrade it)"}
	}
	pub, err := transport.ParsePublicKey(cfg.Status.PublicKey)
	if err != nil {
		return destinationKey{missing: fmt.Sprintf("the key its syncer published in the mailbox's SyncerConfig is not valid: %v", err)}
	}
	if id := transport.KeyID(pub); id != cfg.Status.KeyID {
		return destinationKey{missing: fmt.Sprintf("the key its syncer published in the mailbox's SyncerConfig has id %s, not the %q it says", id, cfg.Status.KeyID)}
	}
	return destinationKey{public: pub, id: cfg.Status.KeyID}
}

// sealedMemo is an entry as last sealed for a mailbox, with the hash of its clear form: the
// translator seals an object again only when it or the destination's key changed, since each
// sealing makes other bytes and so a new version of the assemblage. The hash stays in memory.
type sealedMemo struct {
	keyID  string
	clear  [sha256.Size]byte
	sealed transport.Entry
}

// sealer seals the entries of one mailbox's assemblages in one pass, for the destination's key.
type sealer struct {
	key destinationKey
	// secret, when set, makes sealing deterministic (transport.SealWithSecret).
	secret []byte
	memo   map[string]sealedMemo
	// used are the objects sealed or recalled in this pass.
	used map[string]bool
	// withheld are the objects not delivered for want of a key, by placement.
	withheld map[placementKey][]string
	// destination names the destination in problems.
	destination func(placementKey) string
}

func newSealer(key destinationKey, secret []byte, memo map[string]sealedMemo, destination func(placementKey) string) *sealer {
	if memo == nil {
		memo = map[string]sealedMemo{}
	}
	if destination == nil {
		destination = func(placementKey) string { return "" }
	}
	return &sealer{key: key, secret: secret, memo: memo, used: map[string]bool{}, withheld: map[placementKey][]string{}, destination: destination}
}

// seal returns the entry as it travels: unchanged if it needs no sealing, else sealed for the
// destination's key. ok is false if it needs sealing and there is no key: it is not delivered.
func (s *sealer) seal(pk placementKey, e transport.Entry) (out transport.Entry, ok bool, err error) {
	if !transport.NeedsSealing(e.Group, e.Resource, e.Object) {
		return e, true, nil
	}
	key := e.Key().String()
	if s.key.missing != "" {
		s.withheld[pk] = append(s.withheld[pk], key)
		return transport.Entry{}, false, nil
	}
	clear, err := json.Marshal(e)
	if err != nil {
		return transport.Entry{}, false, fmt.Errorf("sealing %s: %w", key, err)
	}
	sum := sha256.Sum256(clear)
	s.used[key] = true
	if m, ok := s.memo[key]; ok && m.keyID == s.key.id && m.clear == sum {
		return m.sealed, true, nil
	}
	var sealed transport.Entry
	if s.secret != nil {
		sealed, err = transport.SealWithSecret(e, s.key.public, s.secret)
	} else {
		sealed, err = transport.Seal(e, s.key.public)
	}
	if err != nil {
		return transport.Entry{}, false, err
	}
	s.memo[key] = sealedMemo{keyID: s.key.id, clear: sum, sealed: sealed}
	return sealed, true, nil
}

// problems are the SecretsNotSealed problems of this pass, one per placement.
func (s *sealer) problems() []problem {
	var out []problem
	for pk, keys := range s.withheld {
		sort.Strings(keys)
		shown := keys
		if len(shown) > 3 {
			shown = append(shown[:3:3], fmt.Sprintf("%d more", len(keys)-3))
		}
		where := "this destination"
		if d := s.destination(pk); d != "" {
			where = "destination " + d
		}
		out = append(out, problem{pk, problemNotSealed, fmt.Sprintf("%s: %s; %d objects that travel sealed (%s) are not delivered there, and what it has of them stays as it is",
			where, s.key.missing, len(keys), strings.Join(shown, ", "))})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].placement.String() < out[j].placement.String() })
	return out
}

// keep returns the memo to keep for the next pass: the entries of objects still desired.
func (s *sealer) keep(desired map[copyKey]*desiredCopy) map[string]sealedMemo {
	for key := range s.memo {
		if s.used[key] {
			continue
		}
		k, ok := transport.ParseKey(key)
		if _, still := desired[copyKeyOf(k)]; !ok || !still {
			delete(s.memo, key)
		}
	}
	return s.memo
}
