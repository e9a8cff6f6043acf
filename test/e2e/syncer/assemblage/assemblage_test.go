package assemblage

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/transport"
	"github.com/kcp-dev/edge-mc/test/framework"
)

// These tests write assemblages into a mailbox themselves, as the placement translator would,
// with only the mailbox controller running at the center, and watch what edge-syncer makes of
// them at a real edge cluster and in the assemblages' status.

// wsCluster stands for the logical cluster of the workload workspace the assemblages come from.
const wsCluster = "2e2etest"

var leases = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}

// assemblageFleet is a center with the mailbox controller only, one edge cluster with its syncer,
// and clients of its mailbox and of the edge.
type assemblageFleet struct {
	*framework.Fleet
	syncer  *framework.Syncer
	mailbox dynamic.Interface
	edge    dynamic.Interface
	pc      *framework.PCluster
}

func newAssemblageFleet(t *testing.T, pc *framework.PCluster, syncerArgs ...string) *assemblageFleet {
	t.Helper()
	return withEdge(t, framework.NewMailboxFleet(t, map[string]string{pc.Name: "east"}), pc, syncerArgs...)
}

// newLogicalAssemblageFleet is newAssemblageFleet with a logical-cluster edge cluster of that
// name, made while the fleet is.
func newLogicalAssemblageFleet(t *testing.T, name string, syncerArgs ...string) *assemblageFleet {
	t.Helper()
	pending := framework.StartLogicalPClusters(t, name)
	f := framework.NewMailboxFleet(t, map[string]string{name: "east"})
	return withEdge(t, f, pending()[name], syncerArgs...)
}

// withEdge gives the fleet f the edge cluster pc and starts its syncer.
func withEdge(t *testing.T, f *framework.Fleet, pc *framework.PCluster, syncerArgs ...string) *assemblageFleet {
	t.Helper()
	mb := f.Mailbox(t, pc.Name)
	af := &assemblageFleet{Fleet: f, mailbox: framework.KCP(t).DynamicClient(t, mb), edge: pc.DynamicClient(t), pc: pc}
	af.syncer = framework.StartSyncer(t, f.ESPW, f.IMW, pc.Name, pc, syncerArgs...)
	return af
}

// write encodes the manifest as the assemblage of placement and writes it into the mailbox.
func (af *assemblageFleet) write(t *testing.T, placement, manifest string) *edgev1alpha1.Assemblage {
	t.Helper()
	a, parts := framework.EncodeAssemblage(t, wsCluster, placement, framework.Entries(t, manifest))
	return framework.WriteAssemblage(t, af.mailbox, a, parts)
}

// waitApplied waits until the assemblage's status says its version is applied at the edge.
func (af *assemblageFleet) waitApplied(t *testing.T, a *edgev1alpha1.Assemblage) *edgev1alpha1.Assemblage {
	t.Helper()
	return framework.EventuallyAssemblage(t, af.mailbox, a.Name, appliedAt(a.Spec.Version))
}

// appliedAt is a check for EventuallyAssemblage: the version is observed and applied, and the
// Applied condition says so.
func appliedAt(version string) func(a *edgev1alpha1.Assemblage) string {
	return func(a *edgev1alpha1.Assemblage) string {
		if a == nil {
			return "absent"
		}
		c := framework.AssemblageCondition(a, "Applied")
		if a.Status.ObservedVersion != version || a.Status.AppliedVersion != version || c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Sprintf("version %s: observed %q, applied %q, condition Applied %v", version, a.Status.ObservedVersion, a.Status.AppliedVersion, c)
		}
		return ""
	}
}

// refusedWith is a check for EventuallyAssemblage: the Refused condition is True with the reason.
func refusedWith(reason string) func(a *edgev1alpha1.Assemblage) string {
	return func(a *edgev1alpha1.Assemblage) string {
		c := framework.AssemblageCondition(a, "Refused")
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != reason {
			return fmt.Sprintf("condition Refused is %v, want True %s", c, reason)
		}
		return ""
	}
}

func (o objectID) String() string { return o.gvr.Resource + "/" + o.namespace + "/" + o.name }

// edgeState is each object's UID and resourceVersion at the edge ("absent" if missing).
type edgeState map[objectID][2]string

func snapshot(t *testing.T, client dynamic.Interface, ids ...objectID) edgeState {
	t.Helper()
	out := edgeState{}
	for _, o := range ids {
		if u := framework.GetObject(t, client, o.gvr, o.namespace, o.name); u != nil {
			out[o] = [2]string{string(u.GetUID()), u.GetResourceVersion()}
		} else {
			out[o] = [2]string{"absent", ""}
		}
	}
	return out
}

// sameState fails the test for each object whose UID changed and, unless only the UIDs matter,
// whose resourceVersion changed: it was recreated, or written.
func sameState(t *testing.T, what string, before, after edgeState, uidsOnly bool) {
	t.Helper()
	for id, b := range before {
		a := after[id]
		if a[0] != b[0] {
			t.Errorf("%s: %s was deleted or recreated: uid %s, now %s", what, id, b[0], a[0])
		} else if !uidsOnly && a[1] != b[1] {
			t.Errorf("%s: %s was written though it did not change: resourceVersion %s, now %s", what, id, b[1], a[1])
		}
	}
}

// logOrder returns the positions in the syncer's log of the first "created" line of each of the
// objects (as the syncer names them: <resource>.<group> [<namespace>/]<name>), -1 if none.
func logOrder(t *testing.T, s *framework.Syncer, refs ...string) []int {
	t.Helper()
	raw, err := os.ReadFile(s.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	out := make([]int, len(refs))
	for i, ref := range refs {
		out[i] = -1
		for n, line := range lines {
			if strings.Contains(line, `"created"`) && strings.Contains(line, `object="`+ref+`"`) {
				out[i] = n
				break
			}
		}
	}
	return out
}

const widgetsCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`

// appV1 has objects of several kinds, a CRD and an object of its kind, a Namespace, a
// create-only object, and a cluster-scoped object, in an order that is not the apply order.
const appV1 = `apiVersion: example.com/v1
kind: Widget
metadata: {name: w1, namespace: app}
spec: {size: 3}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: app}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: app}
data: {region: east}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: local-tuning
  namespace: app
  annotations: {edge.kcp.io/create-only: "true"}
data: {threads: "4"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: doomed, namespace: app}
data: {a: b}
---
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: app}
stringData: {password: s3cret}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: app-reader}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get]}]
---
apiVersion: v1
kind: Namespace
metadata: {name: app, labels: {team: a}}
---
` + widgetsCRD

var (
	nsApp       = objectID{namespaces, "", "app"}
	crdWidgets  = objectID{crds, "", "widgets.example.com"}
	widgetW1    = objectID{widgets, "app", "w1"}
	deployWeb   = objectID{deployments, "app", "web"}
	cmSettings  = objectID{configMaps, "app", "settings"}
	cmTuning    = objectID{configMaps, "app", "local-tuning"}
	cmDoomed    = objectID{configMaps, "app", "doomed"}
	secretCreds = objectID{secrets, "app", "creds"}
	roleReader  = objectID{clusterRoles, "", "app-reader"}
	cmFresh     = objectID{configMaps, "app", "fresh"}
)

// appV2 edits settings, removes doomed and adds fresh.
var appV2 = strings.Replace(strings.Replace(appV1, "data: {region: east}", "data: {region: east-2}", 1),
	"metadata: {name: doomed, namespace: app}\ndata: {a: b}", "metadata: {name: fresh, namespace: app}\ndata: {a: b}", 1)

// TestAssemblageLifecycle runs one assemblage through a logical-cluster edge: applied in order,
// reported, edited, repaired, create-only, refused when corrupt or of an unknown format, and
// removed, with the SyncerConfig's report and heartbeat interval.
func TestAssemblageLifecycle(t *testing.T) {
	t.Parallel()
	af := newLogicalAssemblageFleet(t, "edge1")
	ec := af.edge
	owner := af.syncer.UID + ".syncer.edge.kcp.io/owner"
	assemblageMark := af.syncer.UID + ".syncer.edge.kcp.io/assemblage"

	// A Namespace made at the edge by hand before the assemblage carries it is adopted, not
	// taken over as the syncer's own.
	framework.Kubectl(t, "--kubeconfig", af.pc.KubeconfigPath, "create", "namespace", "app").MustSucceed(t)
	nsUID := string(framework.GetObject(t, ec, namespaces, "", "app").GetUID())

	v1 := af.write(t, "app", appV1)
	all := []objectID{crdWidgets, nsApp, widgetW1, deployWeb, cmSettings, cmTuning, cmDoomed, secretCreds, roleReader}
	for _, o := range all {
		eventually(t, "applied", ec, o.gvr, o.namespace, o.name, func(u *unstructured.Unstructured) string {
			if u == nil {
				return "absent"
			}
			want := "created"
			if o == nsApp {
				want = "adopted"
			}
			if u.GetLabels()[owner] != want || u.GetAnnotations()[assemblageMark] != v1.Name {
				return fmt.Sprintf("marks: owner %q (want %s), assemblage %q", u.GetLabels()[owner], want, u.GetAnnotations()[assemblageMark])
			}
			return ""
		})
	}
	if u := framework.GetObject(t, ec, namespaces, "", "app"); string(u.GetUID()) != nsUID || u.GetLabels()["team"] != "a" {
		t.Errorf("the adopted namespace was recreated or not updated: %v", u)
	}
	if u := framework.GetObject(t, ec, secrets, "app", "creds"); fieldOf(u, "data", "password") != "czNjcmV0" {
		t.Errorf("the Secret's data did not arrive as written: %v", u)
	}
	// Staged: the CRD, then the Namespace (adopted: updated, not created), then the rest.
	order := logOrder(t, af.syncer, "customresourcedefinitions.apiextensions.k8s.io widgets.example.com",
		"widgets.example.com app/w1", "configmaps app/settings", "deployments.apps app/web")
	for i := 1; i < len(order); i++ {
		if order[0] < 0 || order[i] < order[0] {
			t.Errorf("the objects were not created CRD first: log lines %v", order)
		}
	}
	a := af.waitApplied(t, v1)
	uids := snapshot(t, ec, all...)
	for _, o := range a.Status.Objects {
		var id objectID
		for _, cand := range all {
			if strings.HasSuffix(o.Object, "/"+cand.name) && strings.HasPrefix(o.Object, cand.gvr.Resource) {
				id = cand
			}
		}
		wantState := edgev1alpha1.ObjectReady
		if id == deployWeb {
			wantState = edgev1alpha1.ObjectApplied // no controller runs in a logical cluster
		}
		if o.State != wantState || string(o.UID) != uids[id][0] {
			t.Errorf("status of %s: %s (%s), uid %s; want %s, uid %s", o.Object, o.State, o.Reason, o.UID, wantState, uids[id][0])
		}
	}
	if a.Status.Counts != (edgev1alpha1.ObjectCounts{Applied: 1, Ready: 8}) {
		t.Errorf("counts = %+v, want 8 ready and the Deployment applied", a.Status.Counts)
	}
	if c := framework.AssemblageCondition(a, "Ready"); c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "deployments.apps/app/web") {
		t.Errorf("condition Ready = %v, want False naming the Deployment", c)
	}
	if c := framework.AssemblageCondition(a, "Refused"); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("condition Refused = %v, want False", c)
	}

	t.Run("the SyncerConfig's report and heartbeat interval", func(t *testing.T) {
		cfg := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "edge.kcp.io/v1alpha1", "kind": "SyncerConfig",
			"metadata": map[string]any{"name": edgev1alpha1.SyncerConfigName},
			"spec":     map[string]any{"heartbeat": map[string]any{"intervalSeconds": int64(5)}},
		}}
		if _, err := af.mailbox.Resource(syncerConfigs).Create(framework.Context(t, 30*time.Second), cfg, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "reported", af.mailbox, syncerConfigs, "", edgev1alpha1.SyncerConfigName, func(u *unstructured.Unstructured) string {
			if u == nil {
				return "absent"
			}
			formats, _, _ := unstructured.NestedStringSlice(u.Object, "status", "formats")
			version, _, _ := unstructured.NestedString(u.Object, "status", "syncerVersion")
			if nestedInt(u, "status", "observedGeneration") != u.GetGeneration() || !slices.Equal(formats, transport.Formats) || version == "" {
				return fmt.Sprintf("status %v", u.Object["status"])
			}
			return ""
		})
		// The Lease is renewed at the fleet's interval: it lasts four of them.
		eventually(t, "heartbeat interval", af.mailbox, leases, transport.SyncerNamespace, transport.HeartbeatLease, fieldIs("20", "spec", "leaseDurationSeconds"))
	})

	var v2 *edgev1alpha1.Assemblage
	t.Run("a new version: an edit, a removal, an addition", func(t *testing.T) {
		before := snapshot(t, ec, crdWidgets, widgetW1, deployWeb, secretCreds, roleReader, cmTuning)
		v2 = af.write(t, "app", appV2)
		eventually(t, "edited", ec, configMaps, "app", "settings", fieldIs("east-2", "data", "region"))
		eventually(t, "removed", ec, configMaps, "app", "doomed", absent)
		eventually(t, "added", ec, configMaps, "app", "fresh", present)
		af.waitApplied(t, v2)
		sameState(t, "a new version", before, snapshot(t, ec, crdWidgets, widgetW1, deployWeb, secretCreds, roleReader, cmTuning), false)
	})

	t.Run("drift is repaired and reported", func(t *testing.T) {
		framework.Kubectl(t, "--kubeconfig", af.pc.KubeconfigPath, "patch", "configmap", "settings", "-n", "app", "--type=merge", "-p", `{"data":{"region":"hacked"}}`).MustSucceed(t)
		framework.Kubectl(t, "--kubeconfig", af.pc.KubeconfigPath, "delete", "secret", "creds", "-n", "app").MustSucceed(t)
		eventually(t, "edit repaired", ec, configMaps, "app", "settings", fieldIs("east-2", "data", "region"))
		eventually(t, "deletion repaired", ec, secrets, "app", "creds", present)
		framework.Eventually(t, converge, func() (bool, string) {
			out := framework.Kubectl(t, "--kubeconfig", af.pc.KubeconfigPath, "get", "events", "-n", "app", "--field-selector", "reason=DriftRepaired", "-o", "name")
			return strings.Count(out.Stdout, "\n") >= 2, "DriftRepaired events: " + out.Stdout
		})
	})

	t.Run("a create-only object is created once and left alone", func(t *testing.T) {
		a := framework.GetAssemblage(t, af.mailbox, v2.Name)
		st := framework.ObjectStateOf(a, "configmaps/app/local-tuning")
		if st == nil || st.CreatedAt == nil {
			t.Fatalf("the create-only object's state has no createdAt: %+v", st)
		}
		createdAt := st.CreatedAt.Time
		framework.Kubectl(t, "--kubeconfig", af.pc.KubeconfigPath, "patch", "configmap", "local-tuning", "-n", "app", "--type=merge", "-p", `{"data":{"threads":"16"}}`).MustSucceed(t)
		time.Sleep(3 * time.Second) // time for the syncer to (wrongly) put it back
		if got := fieldOf(framework.GetObject(t, ec, configMaps, "app", "local-tuning"), "data", "threads"); got != "16" {
			t.Errorf("the create-only ConfigMap was changed back at the edge: threads = %s", got)
		}
		framework.Kubectl(t, "--kubeconfig", af.pc.KubeconfigPath, "delete", "configmap", "local-tuning", "-n", "app").MustSucceed(t)
		// Another version comes; the deleted create-only object is not created again.
		v3 := af.write(t, "app", strings.Replace(appV2, "data: {a: b}", "data: {a: c}", 1))
		eventually(t, "the next version", ec, configMaps, "app", "fresh", fieldIs("c", "data", "a"))
		a = framework.EventuallyAssemblage(t, af.mailbox, v3.Name, appliedAt(v3.Spec.Version))
		if u := framework.GetObject(t, ec, configMaps, "app", "local-tuning"); u != nil {
			t.Errorf("the create-only ConfigMap deleted at the edge was created again")
		}
		st = framework.ObjectStateOf(a, "configmaps/app/local-tuning")
		if st == nil || st.CreatedAt == nil || !st.CreatedAt.Time.Equal(createdAt) || st.State != edgev1alpha1.ObjectApplied || !strings.Contains(st.Reason, "not created again") {
			t.Errorf("the create-only object's state = %+v, want Applied, createdAt %v kept, saying it is not created again", st, createdAt)
		}
	})

	t.Run("a corrupt version and an unknown format are refused; the edge keeps the last good version", func(t *testing.T) {
		good := framework.GetAssemblage(t, af.mailbox, v2.Name)
		kept := good.Status.AppliedVersion
		ids := []objectID{crdWidgets, nsApp, widgetW1, deployWeb, cmSettings, cmFresh, secretCreds, roleReader}
		before := snapshot(t, ec, ids...)

		corrupt, _ := framework.EncodeAssemblage(t, wsCluster, "app", framework.Entries(t, strings.Replace(appV2, "kind: ClusterRole", "kind: ClusterRole\n# v4", 1)))
		corrupt.Spec.Data = append([]byte{}, corrupt.Spec.Data...)
		corrupt.Spec.Data[len(corrupt.Spec.Data)/2] ^= 0xff
		framework.WriteAssemblage(t, af.mailbox, corrupt, nil)
		a := framework.EventuallyAssemblage(t, af.mailbox, v2.Name, refusedWith("Corrupt"))
		if a.Status.AppliedVersion != kept {
			t.Errorf("appliedVersion moved from %s to %s on a refused version", kept, a.Status.AppliedVersion)
		}
		if c := framework.AssemblageCondition(a, "Applied"); c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "keeps version") {
			t.Errorf("condition Applied = %v, want False saying the edge keeps the last good version", c)
		}

		unknown, _ := framework.EncodeAssemblage(t, wsCluster, "app", framework.Entries(t, appV2))
		unknown.Spec.Format = "edge.kcp.io/a-format-from-the-future"
		framework.WriteAssemblage(t, af.mailbox, unknown, nil)
		a = framework.EventuallyAssemblage(t, af.mailbox, v2.Name, refusedWith("UnknownFormat"))
		if c := framework.AssemblageCondition(a, "Refused"); !strings.Contains(c.Message, "upgrade the syncer") {
			t.Errorf("the refusal of an unknown format does not say to upgrade the syncer: %s", c.Message)
		}
		time.Sleep(3 * time.Second)
		sameState(t, "refused versions", before, snapshot(t, ec, ids...), false)

		// The next good version is applied.
		next := af.write(t, "app", strings.Replace(appV2, "data: {a: b}", "data: {a: d}", 1))
		eventually(t, "the good version after the refusals", ec, configMaps, "app", "fresh", fieldIs("d", "data", "a"))
		a = framework.EventuallyAssemblage(t, af.mailbox, next.Name, appliedAt(next.Spec.Version))
		if c := framework.AssemblageCondition(a, "Refused"); c == nil || c.Status != metav1.ConditionFalse {
			t.Errorf("condition Refused = %v after a good version, want False", c)
		}
	})

	t.Run("a removed assemblage takes what the syncer created, and releases what it adopted", func(t *testing.T) {
		framework.DeleteAssemblage(t, af.mailbox, v2.Name)
		for _, o := range []objectID{widgetW1, deployWeb, cmSettings, cmFresh, secretCreds, roleReader, crdWidgets} {
			eventually(t, "removed", ec, o.gvr, o.namespace, o.name, absent)
		}
		eventually(t, "released", ec, namespaces, "", "app", func(u *unstructured.Unstructured) string {
			if u == nil {
				return "the adopted namespace was deleted"
			}
			if string(u.GetUID()) != nsUID {
				return "the adopted namespace was recreated"
			}
			for k := range u.GetLabels() {
				if strings.Contains(k, "syncer.edge.kcp.io") {
					return "still marked: label " + k
				}
			}
			for k := range u.GetAnnotations() {
				if strings.Contains(k, "syncer.edge.kcp.io") {
					return "still marked: annotation " + k
				}
			}
			return ""
		})
	})
	if af.syncer.Exited() {
		t.Errorf("edge-syncer exited")
	}
}

// bigConfigMap is the manifest of a ConfigMap in namespace app with n bytes of data that do
// not compress much.
func bigConfigMap(name string, n int) string {
	var b strings.Builder
	x := uint64(88172645463325252)
	for b.Len() < n {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b.WriteByte("abcdefghijklmnopqrstuvwxyz0123456789"[x%36])
	}
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: app}\ndata: {blob: %s}\n", name, b.String())
}

// TestAssemblageInParts sends a 900 KiB object in an assemblage of several parts, whose parts
// arrive after the assemblage: it is refused as incomplete until they are all there, then
// applied.
func TestAssemblageInParts(t *testing.T) {
	t.Parallel()
	af := newLogicalAssemblageFleet(t, "edge-parts")
	manifest := "apiVersion: v1\nkind: Namespace\nmetadata: {name: app}\n---\n" + bigConfigMap("big", 900<<10)
	a, parts := framework.EncodeAssemblage(t, wsCluster, "big", framework.Entries(t, manifest))
	if len(parts) < 2 {
		t.Fatalf("the assemblage has %d parts; the test needs several", len(parts))
	}
	framework.WriteAssemblage(t, af.mailbox, a, nil)
	refused := framework.EventuallyAssemblage(t, af.mailbox, a.Name, refusedWith("PartsMissing"))
	if c := framework.AssemblageCondition(refused, "Refused"); !strings.Contains(c.Message, parts[0].Name) {
		t.Errorf("the refusal does not name the missing part %s: %s", parts[0].Name, c.Message)
	}
	if u := framework.GetObject(t, af.edge, namespaces, "", "app"); u != nil {
		t.Errorf("an incomplete assemblage was applied in part")
	}
	framework.WriteAssemblage(t, af.mailbox, a, parts)
	eventually(t, "the big object", af.edge, configMaps, "app", "big", func(u *unstructured.Unstructured) string {
		if got := len(fieldOf(u, "data", "blob")); got != 900<<10 {
			return fmt.Sprintf("data.blob has %d bytes, want %d", got, 900<<10)
		}
		return ""
	})
	done := af.waitApplied(t, a)
	if st := framework.ObjectStateOf(done, "configmaps/app/big"); st == nil || st.State != edgev1alpha1.ObjectReady {
		t.Errorf("the big object's state: %+v", st)
	}
	if c := framework.AssemblageCondition(done, "Refused"); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("condition Refused = %v once every part is there, want False", c)
	}
}

// TestAssemblageSyncerRestart stops edge-syncer, changes the mailbox and the edge meanwhile, and
// starts it again: what left an assemblage, or whose assemblage left, is deleted; what came is
// created; an object deleted at the edge meanwhile is put back; and nothing else is recreated
// or even written (UIDs and resourceVersions compared).
func TestAssemblageSyncerRestart(t *testing.T) {
	t.Parallel()
	af := newLogicalAssemblageFleet(t, "edge-restart")
	ec := af.edge
	var many strings.Builder
	many.WriteString("apiVersion: v1\nkind: Namespace\nmetadata: {name: many}\n")
	var ids []objectID
	for i := 0; i < 12; i++ {
		fmt.Fprintf(&many, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%02d, namespace: many}\ndata: {i: \"%d\"}\n", i, i)
		ids = append(ids, objectID{configMaps, "many", fmt.Sprintf("cm-%02d", i)})
	}
	ids = append(ids, objectID{namespaces, "", "many"})
	a := af.write(t, "many", many.String())
	b := af.write(t, "other", "apiVersion: v1\nkind: Namespace\nmetadata: {name: other}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: o, namespace: other}\ndata: {x: \"y\"}\n")
	af.waitApplied(t, a)
	af.waitApplied(t, b)
	time.Sleep(3 * time.Second) // let the status writes settle
	before := snapshot(t, ec, ids...)

	af.syncer.Stop()
	t.Log("stopped edge-syncer")
	// Meanwhile: cm-00 leaves its assemblage, cm-new comes, the assemblage "other" goes, and
	// cm-01 is deleted at the edge.
	next := strings.Replace(many.String(), "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-00, namespace: many}\ndata: {i: \"0\"}\n", "", 1) +
		"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-new, namespace: many}\ndata: {i: new}\n"
	a2 := af.write(t, "many", next)
	framework.DeleteAssemblage(t, af.mailbox, b.Name)
	framework.Kubectl(t, "--kubeconfig", af.pc.KubeconfigPath, "delete", "configmap", "cm-01", "-n", "many").MustSucceed(t)

	af.syncer.Restart()
	t.Log("restarted edge-syncer")
	eventually(t, "left the assemblage", ec, configMaps, "many", "cm-00", absent)
	eventually(t, "came", ec, configMaps, "many", "cm-new", present)
	eventually(t, "put back", ec, configMaps, "many", "cm-01", present)
	eventually(t, "its assemblage left", ec, configMaps, "other", "o", absent)
	eventually(t, "its assemblage left", ec, namespaces, "", "other", func(u *unstructured.Unstructured) string {
		if u != nil && u.GetDeletionTimestamp() == nil {
			return "still there"
		}
		return ""
	})
	af.waitApplied(t, a2)
	after := snapshot(t, ec, ids...)
	for _, gone := range []objectID{{configMaps, "many", "cm-00"}, {configMaps, "many", "cm-01"}} {
		delete(before, gone)
	}
	sameState(t, "after the restart", before, after, false)

	// Restarted with nothing changed, it writes nothing: not at the edge, not even the status.
	time.Sleep(5 * time.Second)
	quiet := snapshot(t, ec, ids...)
	for _, id := range []objectID{{configMaps, "many", "cm-00"}, {configMaps, "many", "cm-01"}} {
		delete(quiet, id)
	}
	asmVersion := framework.GetAssemblage(t, af.mailbox, a.Name).ResourceVersion
	af.syncer.Stop()
	af.syncer.Restart()
	framework.Eventually(t, converge, func() (bool, string) {
		code, body, err := framework.Readyz(af.syncer.HTTPAddress)
		return err == nil && code == 200, fmt.Sprintf("/readyz: %d %s %v", code, body, err)
	})
	time.Sleep(10 * time.Second)
	sameState(t, "a restart without changes", quiet, snapshot(t, ec, ids...), false)
	if got := framework.GetAssemblage(t, af.mailbox, a.Name); got.ResourceVersion != asmVersion {
		t.Errorf("a restart without changes wrote the assemblage's status: resourceVersion %s, now %s; status %+v", asmVersion, got.ResourceVersion, got.Status)
	}
	if af.syncer.Exited() {
		t.Errorf("edge-syncer exited")
	}
}

// TestAssemblageUpgradeFromCopies starts edge-syncer on an edge and a mailbox as the previous
// release left them: objects at the edge with that syncer's marks, per-object copies in the
// mailbox, a SyncerConfig with the copies' scope. The new syncer ignores the copies and deletes
// nothing; an assemblage that carries some of those objects adopts them with their UIDs; they go
// only when they leave the assemblage, and the others stay.
func TestAssemblageUpgradeFromCopies(t *testing.T) {
	t.Parallel()
	pending := framework.StartLogicalPClusters(t, "edge-upgrade")
	f := framework.NewMailboxFleet(t, map[string]string{"edge-upgrade": "east"})
	pc := pending()["edge-upgrade"]
	mailbox := framework.KCP(t).DynamicClient(t, f.Mailbox(t, pc.Name))
	ec := pc.DynamicClient(t)
	uid := strings.TrimSpace(framework.Kubectl(t, "--server", framework.KCP(t).ServerURL(f.IMW), "get", "synctarget", pc.Name,
		"-o", "jsonpath={.metadata.uid}").MustSucceed(t).Stdout)
	prefix := uid + ".syncer.edge.kcp.io/"
	ctx := framework.Context(t, 2*time.Minute)

	// The edge as the previous syncer left it: applied with its field manager and marks.
	legacy := func(gvr schema.GroupVersionResource, kind, namespace, name string) {
		t.Helper()
		md := map[string]any{
			"name":        name,
			"labels":      map[string]any{prefix + "owner": "created"},
			"annotations": map[string]any{prefix + "source": "/" + gvr.Resource + "/" + namespace + "/" + name, prefix + "hash": "0123456789abcdef"},
		}
		obj := map[string]any{"apiVersion": "v1", "kind": kind, "metadata": md}
		if namespace != "" {
			md["namespace"] = namespace
			obj["data"] = map[string]any{"v": "1"}
		}
		if _, err := ec.Resource(gvr).Namespace(namespace).Apply(ctx, name, &unstructured.Unstructured{Object: obj},
			metav1.ApplyOptions{FieldManager: "edge-syncer-" + uid, Force: true}); err != nil {
			t.Fatal(err)
		}
	}
	legacy(namespaces, "Namespace", "", "app")
	legacy(configMaps, "ConfigMap", "app", "a")
	legacy(configMaps, "ConfigMap", "app", "b")
	// The mailbox as the previous release left it: a copy and the SyncerConfig's scope.
	for _, o := range framework.Entries(t, `apiVersion: v1
kind: Namespace
metadata: {name: app}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: a, namespace: app, labels: {edge.kcp.io/projected: "true"}}
data: {v: "1"}
---
apiVersion: edge.kcp.io/v1alpha1
kind: SyncerConfig
metadata: {name: the-one}
spec:
  namespaceScope:
    namespaces: [app]
    resources: [{group: "", resource: configmaps, apiVersion: v1}]
`) {
		framework.Eventually(t, converge, func() (bool, string) {
			_, err := mailbox.Resource(o.GVR()).Namespace(o.Key().Namespace).Create(ctx, &unstructured.Unstructured{Object: o.Object}, metav1.CreateOptions{})
			return err == nil, fmt.Sprintf("creating %s in the mailbox: %v", o.Key(), err)
		})
	}
	ids := []objectID{{namespaces, "", "app"}, {configMaps, "app", "a"}, {configMaps, "app", "b"}}
	before := snapshot(t, ec, ids...)

	s := framework.StartSyncer(t, f.ESPW, f.IMW, pc.Name, pc)
	eventually(t, "the new syncer reports its formats", mailbox, syncerConfigs, "", edgev1alpha1.SyncerConfigName, func(u *unstructured.Unstructured) string {
		if formats, _, _ := unstructured.NestedStringSlice(u.Object, "status", "formats"); !slices.Equal(formats, transport.Formats) {
			return fmt.Sprintf("status.formats = %v", formats)
		}
		return ""
	})
	time.Sleep(5 * time.Second) // time for the syncer to (wrongly) act on the copies or the old marks
	sameState(t, "the new syncer's start", before, snapshot(t, ec, ids...), false)

	a, parts := framework.EncodeAssemblage(t, wsCluster, "app", framework.Entries(t,
		"apiVersion: v1\nkind: Namespace\nmetadata: {name: app}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: app}\ndata: {v: \"2\"}\n"))
	a = framework.WriteAssemblage(t, mailbox, a, parts)
	eventually(t, "adopted by the assemblage", ec, configMaps, "app", "a", func(u *unstructured.Unstructured) string {
		if u == nil {
			return "absent"
		}
		if u.GetAnnotations()[prefix+"assemblage"] != a.Name || u.GetLabels()[prefix+"owner"] != "created" || fieldOf(u, "data", "v") != "2" {
			return fmt.Sprintf("labels %v, annotations %v, data %v", u.GetLabels(), u.GetAnnotations(), u.Object["data"])
		}
		return ""
	})
	framework.EventuallyAssemblage(t, mailbox, a.Name, appliedAt(a.Spec.Version))
	after := snapshot(t, ec, ids...)
	sameState(t, "adopted", before, after, true)
	if after[ids[2]] != before[ids[2]] {
		t.Errorf("configmap b, which no assemblage carries, was written: %v, before %v", after[ids[2]], before[ids[2]])
	}
	if framework.GetObject(t, mailbox, configMaps, "app", "a") == nil {
		t.Errorf("the syncer deleted the copy in the mailbox")
	}

	next, parts := framework.EncodeAssemblage(t, wsCluster, "app", framework.Entries(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: app}\n"))
	next = framework.WriteAssemblage(t, mailbox, next, parts)
	eventually(t, "left the assemblage", ec, configMaps, "app", "a", absent)
	framework.EventuallyAssemblage(t, mailbox, next.Name, appliedAt(next.Spec.Version))
	if got := snapshot(t, ec, ids[2])[ids[2]]; got != before[ids[2]] {
		t.Errorf("configmap b, which no assemblage carried, changed: %v, before %v", got, before[ids[2]])
	}
	if s.Exited() {
		t.Errorf("edge-syncer exited")
	}
}
