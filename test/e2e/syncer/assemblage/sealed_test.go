package assemblage

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/transport"
	"github.com/kcp-dev/edge-mc/test/framework"
)

// TestSealedEntriesRefused writes sealed assemblages into a mailbox by hand, as a center (or
// someone who can write the mailbox) would: a Secret sealed for the syncer's published key is
// applied with its value; a later version whose box is corrupt, or sealed for another edge's
// key, is Failed with the reason, and the Secret at the edge keeps its last good value.
func TestSealedEntriesRefused(t *testing.T) {
	t.Parallel()
	af := newLogicalAssemblageFleet(t, "edge-sealed")
	cfg := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "edge.kcp.io/v1alpha1", "kind": "SyncerConfig",
		"metadata": map[string]any{"name": edgev1alpha1.SyncerConfigName},
	}}
	if _, err := af.mailbox.Resource(syncerConfigs).Create(framework.Context(t, 30*time.Second), cfg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var public [transport.KeySize]byte
	eventually(t, "the syncer's key published", af.mailbox, syncerConfigs, "", edgev1alpha1.SyncerConfigName, func(u *unstructured.Unstructured) string {
		if u == nil {
			return "absent"
		}
		s, _, _ := unstructured.NestedString(u.Object, "status", "publicKey")
		pub, err := transport.ParsePublicKey(s)
		if err != nil {
			return "no key: " + err.Error()
		}
		public = pub
		return ""
	})
	other, err := transport.NewKeyPair()
	if err != nil {
		t.Fatal(err)
	}

	secret := func(value string) []transport.Entry {
		return framework.Entries(t, `apiVersion: v1
kind: Namespace
metadata: {name: sealed}
---
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: sealed}
stringData: {password: `+value+`}
`)
	}
	sealed := func(value string, to [transport.KeySize]byte, corrupt bool) []transport.Entry {
		entries := secret(value)
		for i := range entries {
			if entries[i].Resource != "secrets" {
				continue
			}
			s, err := transport.Seal(entries[i], to)
			if err != nil {
				t.Fatal(err)
			}
			if corrupt {
				s.Sealed.Box = bytes.Clone(s.Sealed.Box)
				s.Sealed.Box[len(s.Sealed.Box)/2] ^= 0x40
			}
			entries[i] = s
		}
		return entries
	}
	write := func(entries []transport.Entry) *edgev1alpha1.Assemblage {
		a, parts := framework.EncodeAssemblage(t, wsCluster, "sealed", entries)
		return framework.WriteAssemblage(t, af.mailbox, a, parts)
	}
	holds := func(value string) func(u *unstructured.Unstructured) string {
		want := base64.StdEncoding.EncodeToString([]byte(value))
		return func(u *unstructured.Unstructured) string {
			if got := framework.FieldOf(u, "data", "password"); got != want {
				return "password is " + got
			}
			return ""
		}
	}

	a := write(sealed("first-good-value", public, false))
	af.waitApplied(t, a)
	framework.EventuallyObject(t, "the opened Secret at the edge", af.edge, secrets, "sealed", "creds", holds("first-good-value"))
	before := framework.GetObject(t, af.edge, secrets, "sealed", "creds")

	for _, tc := range []struct {
		name    string
		entries []transport.Entry
		reason  string
	}{
		{"a corrupt box", sealed("second-value", public, true), "corrupt"},
		{"a box for another edge's key", sealed("third-value", other.Public, false), "sealed for key " + transport.KeyID(other.Public)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := write(tc.entries)
			framework.EventuallyAssemblage(t, af.mailbox, a.Name, func(got *edgev1alpha1.Assemblage) string {
				if got == nil || got.Status.ObservedVersion != a.Spec.Version {
					return "version " + a.Spec.Version + " not observed yet"
				}
				for _, o := range got.Status.Objects {
					if o.Object == "secrets/sealed/creds" {
						if o.State != edgev1alpha1.ObjectFailed || !strings.Contains(o.Reason, tc.reason) {
							return "the Secret is " + string(o.State) + ": " + o.Reason
						}
						return ""
					}
				}
				return "the Secret is not in the status"
			})
			after := framework.GetObject(t, af.edge, secrets, "sealed", "creds")
			if after.GetUID() != before.GetUID() || framework.FieldOf(after, "data", "password") != framework.FieldOf(before, "data", "password") {
				t.Errorf("the Secret at the edge changed: uid %s, password %s", after.GetUID(), framework.FieldOf(after, "data", "password"))
			}
		})
	}
}
