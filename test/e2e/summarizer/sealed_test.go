package summarizer

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kcp-dev/logicalcluster/v3"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/transport"
	"github.com/kcp-dev/edge-mc/test/framework"
)

const sealedValue = "only-the-edge-reads-this-7f3a"

const sealedWorkload = `apiVersion: v1
kind: Namespace
metadata: {name: vault}
---
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: vault}
stringData: {password: ` + sealedValue + `}
---
apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: vault}
spec:
  locationSelectors: [{matchLabels: {region: vault}}]
  downsync: [{namespaces: [vault]}]
`

// TestSealedSecret upgrades a fleet from the release before sealing, whose mailbox carries a
// Secret in the clear and whose edge holds it: the upgraded syncer publishes its key, the
// upgraded center seals the next version for it, and the Secret at the edge is not recreated.
// Then, on a logical-cluster edge with a real syncer: the syncer
// publishes its key in the SyncerConfig's status, the Secret arrives at the edge with its value,
// and the mailbox holds it sealed for that key only: neither the value nor its base64 form is in
// any assemblage or part, as kubectl shows them or decoded. A restarted syncer keeps its key:
// nothing is sealed again and nothing at the edge is rewritten. kubectl edge rotate-key gives
// the running syncer a new key: the next version is sealed for it and applied, nothing refused
// or recreated at the edge. A syncer whose key Secret is
// gone makes and publishes a new key, the next version is sealed for it and applied, and the
// Secret at the edge is not recreated. A restarted edge-controller-manager writes no new version.
func TestSealedSecret(t *testing.T) {
	t.Parallel()
	made := framework.StartLogicalPClusters(t, "edge-vault")
	f := framework.NewFleet(t, map[string]string{"edge-vault": "vault"})
	p := made()["edge-vault"]
	edge := p.DynamicClient(t)
	mbPath := f.Mailbox(t, "edge-vault")
	mailbox := framework.KCP(t).DynamicClient(t, mbPath)
	encoded := base64.StdEncoding.EncodeToString([]byte(sealedValue))
	syncerConfigs := edgev1alpha1.SchemeGroupVersion.WithResource("syncerconfigs")
	framework.EventuallyObject(t, "the mailbox set up", framework.KCP(t).DynamicClient(t, f.IMW), edgev1alpha1.SchemeGroupVersion.WithResource("synctargets"), "", "edge-vault",
		func(u *unstructured.Unstructured) string {
			if status, reason, msg := framework.ConditionStatus(u, string(edgev1alpha1.SyncTargetMailboxReady)); status != metav1.ConditionTrue {
				return "MailboxReady is " + string(status) + " " + reason + ": " + msg
			}
			return ""
		})

	// The fleet as the release before sealing leaves it: its translator wrote the Secret into the
	// mailbox in the clear, beside a SyncerConfig without a key, and the syncer applied it at the
	// edge. Made here with edge-controller-manager stopped: the workload, then what that release
	// wrote into the mailbox; the syncer applies it (while the center is down nothing seals).
	f.ECM.Kill()
	f.Apply(t, f.WMW, sealedWorkload)
	wmwCluster := logicalcluster.From(framework.GetObject(t, framework.KCP(t).DynamicClient(t, f.WMW), placements, "", "vault")).String()
	asmName := transport.AssemblageName(wmwCluster, "vault")
	inTheClear := framework.Entries(t, `apiVersion: v1
kind: Namespace
metadata: {name: vault}
---
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: vault}
type: Opaque
data: {password: `+encoded+`}
`)
	previous, previousParts := framework.EncodeAssemblage(t, wmwCluster, "vault", inTheClear)
	framework.WriteAssemblage(t, mailbox, previous, previousParts)
	if _, err := mailbox.Resource(syncerConfigs).Create(framework.Context(t, 30*time.Second), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": edgev1alpha1.SchemeGroupVersion.String(), "kind": "SyncerConfig",
		"metadata": map[string]any{"name": edgev1alpha1.SyncerConfigName}, "spec": map[string]any{},
	}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		// The translator may have written one already, when the mailbox was set up.
		t.Fatalf("writing the SyncerConfig as the release before sealing did: %v", err)
	}
	syncer := framework.StartSyncer(t, f.ESPW, f.IMW, "edge-vault", p)
	upgraded := framework.EventuallyObject(t, "the Secret at the edge, from the clear version", edge, secrets, "vault", "creds", framework.FieldIs(encoded, "data", "password"))

	// sealedFor waits until the assemblage carries the Secret sealed for key id, and that version
	// is applied at the edge.
	sealedFor := func(id string) {
		t.Helper()
		framework.Eventually(t, framework.Converge, func() (bool, string) {
			a := framework.GetAssemblage(t, mailbox, asmName)
			d, err := transport.DecodeAssemblage(a, nil)
			if err != nil {
				return false, err.Error()
			}
			for _, e := range d.Objects {
				if e.Key().String() == "secrets/vault/creds" && (e.Sealed == nil || e.Sealed.KeyID != id) {
					return false, "the Secret is not sealed for key " + id + " yet"
				}
			}
			if a.Status.AppliedVersion != a.Spec.Version {
				return false, "version " + a.Spec.Version + " is not applied yet (applied: " + a.Status.AppliedVersion + ")"
			}
			return true, ""
		})
	}

	// The upgraded syncer publishes its key; the upgraded center seals the next version for it,
	// and the syncer applies it: the Secret at the edge is the same object, with the same value.
	var keyID string
	framework.Eventually(t, framework.Converge, func() (bool, string) {
		u, err := mailbox.Resource(syncerConfigs).Get(framework.Context(t, 10*time.Second), edgev1alpha1.SyncerConfigName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		keyID, _, _ = unstructured.NestedString(u.Object, "status", "keyID")
		return keyID != "", "the syncer has published no key"
	})
	if a := framework.GetAssemblage(t, mailbox, asmName); a.Spec.Version != previous.Spec.Version {
		t.Fatalf("the assemblage went from version %s to %s while edge-controller-manager was stopped", previous.Spec.Version, a.Spec.Version)
	}
	f.ECM.Restart()
	f.ECM.WaitReady(t, 2*time.Minute)
	sealedFor(keyID)
	if got := framework.GetObject(t, edge, secrets, "vault", "creds"); got.GetUID() != upgraded.GetUID() || framework.FieldOf(got, "data", "password") != encoded {
		t.Errorf("after the upgrade the Secret at the edge is uid %s with %q, want uid %s with the placed value (not recreated)", got.GetUID(), framework.FieldOf(got, "data", "password"), upgraded.GetUID())
	}

	cfg := &edgev1alpha1.SyncerConfig{}
	u, err := mailbox.Resource(syncerConfigs).Get(framework.Context(t, 10*time.Second), edgev1alpha1.SyncerConfigName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, cfg); err != nil {
		t.Fatal(err)
	}
	if pub, err := transport.ParsePublicKey(cfg.Status.PublicKey); err != nil || transport.KeyID(pub) != keyID {
		t.Fatalf("the SyncerConfig's status publishes key %q with id %q: %v", cfg.Status.PublicKey, keyID, err)
	}

	a := framework.GetAssemblage(t, mailbox, asmName)
	list, err := mailbox.Resource(edgev1alpha1.SchemeGroupVersion.WithResource("assemblageparts")).List(framework.Context(t, 10*time.Second), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := transport.DecodeAssemblage(a, transport.PartsOf(list.Items))
	if err != nil {
		t.Fatal(err)
	}
	var sealedEntry *transport.Entry
	for i := range doc.Objects {
		if doc.Objects[i].Key().String() == "secrets/vault/creds" {
			sealedEntry = &doc.Objects[i]
		}
	}
	if sealedEntry == nil || sealedEntry.Sealed == nil || sealedEntry.Sealed.KeyID != keyID {
		t.Fatalf("the Secret's entry is not sealed for the syncer's key %s: %+v", keyID, sealedEntry)
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	yaml := f.Kubectl(t, mbPath, "get", "assemblages,assemblageparts", "-o", "yaml").Stdout
	for _, v := range []string{sealedValue, encoded} {
		if strings.Contains(string(raw), v) {
			t.Errorf("the decoded assemblage holds %q", v)
		}
		if strings.Contains(yaml, v) {
			t.Errorf("kubectl get assemblages,assemblageparts -o yaml in the mailbox shows %q", v)
		}
	}

	// A restarted syncer keeps its key: the same version stays, the edge object untouched.
	before := framework.GetObject(t, edge, secrets, "vault", "creds")
	syncer.Kill()
	syncer.Restart()
	syncer.WaitReady(t, framework.Converge)
	time.Sleep(3 * time.Second) // a key published anew would have been sealed for by now
	u, err = mailbox.Resource(edgev1alpha1.SchemeGroupVersion.WithResource("syncerconfigs")).Get(framework.Context(t, 10*time.Second), edgev1alpha1.SyncerConfigName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, _, _ := unstructured.NestedString(u.Object, "status", "keyID"); got != keyID {
		t.Errorf("after a restart the syncer publishes key %s, not its key %s", got, keyID)
	}
	if after := framework.GetAssemblage(t, mailbox, asmName); after.Spec.Version != a.Spec.Version {
		t.Errorf("the assemblage went from version %s to %s across the syncer's restart", a.Spec.Version, after.Spec.Version)
	}
	after := framework.GetObject(t, edge, secrets, "vault", "creds")
	if after.GetUID() != before.GetUID() || after.GetResourceVersion() != before.GetResourceVersion() {
		t.Errorf("the Secret at the edge was rewritten across the restart: uid %s rv %s, now uid %s rv %s",
			before.GetUID(), before.GetResourceVersion(), after.GetUID(), after.GetResourceVersion())
	}

	// kubectl edge rotate-key: the running syncer makes and publishes a new key, which the
	// command prints; the next version is sealed for it and applied, and the Secret at the edge
	// is neither recreated nor ever refused meanwhile (the replaced key still opens the version
	// sealed for it).
	out := framework.KubectlEdge(t, "rotate-key", "edge-vault", "--imw", f.IMW.String(), "--espw", f.ESPW.String()).MustSucceed(t).Stdout
	u, err = mailbox.Resource(edgev1alpha1.SchemeGroupVersion.WithResource("syncerconfigs")).Get(framework.Context(t, 10*time.Second), edgev1alpha1.SyncerConfigName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rotatedID, _, _ := unstructured.NestedString(u.Object, "status", "keyID")
	if rotatedID == "" || rotatedID == keyID || !strings.Contains(out, "new key "+rotatedID+" published (was "+keyID+")") {
		t.Fatalf("kubectl edge rotate-key said %q; the SyncerConfig publishes key %s, before %s", out, rotatedID, keyID)
	}
	sealedFor(rotatedID)
	if got := framework.GetObject(t, edge, secrets, "vault", "creds"); got.GetUID() != before.GetUID() || framework.FieldOf(got, "data", "password") != encoded {
		t.Errorf("after kubectl edge rotate-key the Secret at the edge is uid %s with %q, want uid %s with the placed value", got.GetUID(), framework.FieldOf(got, "data", "password"), before.GetUID())
	}
	for _, st := range framework.GetAssemblage(t, mailbox, asmName).Status.Objects {
		if st.State == edgev1alpha1.ObjectFailed {
			t.Errorf("after kubectl edge rotate-key, %s is Failed: %s", st.Object, st.Reason)
		}
	}
	keyID = rotatedID

	// Rotation: the key Secret at the edge goes, and the restarted syncer makes and publishes a
	// new key; the next version is sealed for it, and the Secret at the edge is not recreated.
	if err := edge.Resource(secrets).Namespace(transport.DefaultEdgeSyncerNamespace).Delete(framework.Context(t, 10*time.Second),
		transport.KeySecretName(syncer.UID), metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting the syncer's key Secret at the edge: %v", err)
	}
	syncer.Kill()
	syncer.Restart()
	syncer.WaitReady(t, framework.Converge)
	var newKeyID string
	framework.Eventually(t, framework.Converge, func() (bool, string) {
		u, err := mailbox.Resource(edgev1alpha1.SchemeGroupVersion.WithResource("syncerconfigs")).Get(framework.Context(t, 10*time.Second), edgev1alpha1.SyncerConfigName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		newKeyID, _, _ = unstructured.NestedString(u.Object, "status", "keyID")
		return newKeyID != "" && newKeyID != keyID, "the SyncerConfig still publishes key " + newKeyID
	})
	sealedFor(newKeyID)
	if got := framework.GetObject(t, edge, secrets, "vault", "creds"); got.GetUID() != before.GetUID() || framework.FieldOf(got, "data", "password") != encoded {
		t.Errorf("after the rotation the Secret at the edge is uid %s with %q, want uid %s with the placed value", got.GetUID(), framework.FieldOf(got, "data", "password"), before.GetUID())
	}

	// A restarted edge-controller-manager seals the unchanged Secret into the same bytes (the
	// ESPW's sealing secret): no new version.
	asmBefore := framework.GetAssemblage(t, mailbox, asmName)
	f.ECM.Kill()
	f.ECM.Restart()
	f.ECM.WaitReady(t, 2*time.Minute)
	time.Sleep(3 * time.Second) // a new version would be written by now
	if asmAfter := framework.GetAssemblage(t, mailbox, asmName); asmAfter.Spec.Version != asmBefore.Spec.Version || asmAfter.ResourceVersion != asmBefore.ResourceVersion {
		t.Errorf("edge-controller-manager's restart rewrote the assemblage: version %s (rv %s), now %s (rv %s)",
			asmBefore.Spec.Version, asmBefore.ResourceVersion, asmAfter.Spec.Version, asmAfter.ResourceVersion)
	}
}
