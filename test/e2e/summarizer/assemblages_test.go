package summarizer

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/transport"
	"github.com/kcp-dev/edge-mc/test/framework"
)

var (
	assemblagesGVR = edgev1alpha1.SchemeGroupVersion.WithResource("assemblages")
	widgetsGVR     = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	crdsGVR        = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

const widgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`

// applyWidget defines the custom kind Widget in the workload workspace and makes one, w1, in
// the namespace, which must exist.
func applyWidget(t *testing.T, f *framework.Fleet, namespace string) {
	t.Helper()
	f.Apply(t, f.WMW, widgetCRD)
	widget := fmt.Sprintf("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: %s}\nspec: {size: 3}\n", namespace)
	framework.Eventually(t, framework.Converge, func() (bool, string) {
		r := framework.KubectlApply(t, framework.KCP(t).ServerURL(f.WMW), widget)
		if r.Err != nil {
			return false, "the Widget kind is not served yet: " + r.Stderr
		}
		return true, ""
	})
}

// The objects the hand-written assemblages carry, by key.
const (
	nsKey       = "namespaces/app"
	webKey      = "deployments.apps/app/web"
	settingsKey = "configmaps/app/settings"
	widgetKey   = "widgets.example.com/app/w1"
	soloKey     = "deployments.apps/solo/solo"
)

// report is what a syncer reports on one object of an assemblage.
type report struct {
	object, state, reason string
	status                map[string]any
}

// mailboxWriter writes, into the mailboxes of a fleet, the assemblages the placement translator
// would write and the status their syncers would report: the summarizer's input, without the
// translator and the syncers.
type mailboxWriter struct {
	t          *testing.T
	f          *framework.Fleet
	wmwCluster string
}

func (m *mailboxWriter) client(syncTarget string) dynamic.ResourceInterface {
	return framework.KCP(m.t).DynamicClient(m.t, m.f.Mailbox(m.t, syncTarget)).Resource(assemblagesGVR)
}

// deliver writes the placement's assemblage of the objects into the mailbox of syncTarget, with
// no status, as the placement translator does, and returns its version.
func (m *mailboxWriter) deliver(syncTarget, placement string, objects ...string) string {
	m.t.Helper()
	var entries []transport.Entry
	for _, o := range objects {
		k, _ := transport.ParseKey(o)
		md := map[string]any{"name": k.Name}
		if k.Namespace != "" {
			md["namespace"] = k.Namespace
		}
		entries = append(entries, transport.Entry{Group: k.Group, Version: "v1", Resource: k.Resource, Namespaced: k.Namespace != "",
			Object: map[string]any{"metadata": md}})
	}
	enc, err := transport.Encode(entries)
	if err != nil {
		m.t.Fatal(err)
	}
	a := &edgev1alpha1.Assemblage{
		TypeMeta: metav1.TypeMeta{APIVersion: edgev1alpha1.SchemeGroupVersion.String(), Kind: "Assemblage"},
		ObjectMeta: metav1.ObjectMeta{Name: transport.AssemblageName(m.wmwCluster, placement), Labels: map[string]string{
			transport.LabelPlacementCluster: m.wmwCluster, transport.LabelPlacementName: transport.LabelValue(placement)}},
		Spec: edgev1alpha1.AssemblageSpec{
			Placement: edgev1alpha1.PlacementReference{Cluster: m.wmwCluster, Name: placement},
			Version:   enc.Version, Format: transport.FormatV1, Parts: 1, Data: enc.Pieces[0], Digest: enc.Digests[0],
			Objects: enc.Objects, ObjectCount: int32(len(enc.Objects)),
		},
	}
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(a)
	if err != nil {
		m.t.Fatal(err)
	}
	ctx := framework.Context(m.t, 30*time.Second)
	if _, err := m.client(syncTarget).Create(ctx, &unstructured.Unstructured{Object: raw}, metav1.CreateOptions{}); err != nil {
		m.t.Fatalf("writing the assemblage of %s into the mailbox of %s: %v", placement, syncTarget, err)
	}
	return enc.Version
}

// report writes the status that the syncer of syncTarget writes on the placement's assemblage
// once it has taken in its current version: applied when no object is pending or failed.
func (m *mailboxWriter) report(syncTarget, placement string, refused string, objects ...report) {
	m.t.Helper()
	client := m.client(syncTarget)
	framework.Eventually(m.t, framework.Converge, func() (bool, string) {
		ctx := framework.Context(m.t, 30*time.Second)
		u, err := client.Get(ctx, transport.AssemblageName(m.wmwCluster, placement), metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		a := &edgev1alpha1.Assemblage{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, a); err != nil {
			m.t.Fatal(err)
		}
		now := metav1.Now()
		a.Status = edgev1alpha1.AssemblageStatus{ObservedVersion: a.Spec.Version, AppliedVersion: a.Spec.Version, ReportTime: &now}
		if refused != "" {
			a.Status.ObservedVersion, a.Status.AppliedVersion = "", ""
			a.Status.Conditions = []metav1.Condition{{Type: edgev1alpha1.AssemblageRefused, Status: metav1.ConditionTrue,
				Reason: edgev1alpha1.ReasonCorrupt, Message: refused, LastTransitionTime: now, ObservedGeneration: a.Generation}}
		}
		for _, o := range objects {
			st := edgev1alpha1.ObjectState{Object: o.object, State: o.state, Reason: o.reason}
			if o.status != nil {
				raw, err := json.Marshal(o.status)
				if err != nil {
					m.t.Fatal(err)
				}
				st.Status = &runtime.RawExtension{Raw: raw}
			}
			a.Status.Objects = append(a.Status.Objects, st)
			if o.state == edgev1alpha1.ObjectPending || o.state == edgev1alpha1.ObjectFailed {
				a.Status.AppliedVersion = ""
			}
		}
		raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(a)
		if err != nil {
			m.t.Fatal(err)
		}
		if _, err := client.UpdateStatus(ctx, &unstructured.Unstructured{Object: raw}, metav1.UpdateOptions{}); err != nil {
			if apierrors.IsConflict(err) {
				return false, err.Error()
			}
			m.t.Fatalf("writing the status of the assemblage of %s in the mailbox of %s: %v", placement, syncTarget, err)
		}
		return true, ""
	})
}

// TestSummariesFromAssemblages runs the summarizer (with the mailbox controller and the scheduler,
// and no placement translator or syncer) on assemblages and their status written into the
// mailboxes by the test, and checks what a user reads: the placements' status, the workload
// objects' annotations and status, and kubectl edge status, custom kinds included.
func TestSummariesFromAssemblages(t *testing.T) {
	t.Parallel()
	base := framework.NewWorkspace(t)
	f := &framework.Fleet{ESPW: base.Join("espw"), WMW: base.Join("wmw"), IMW: base.Join("imw")}
	framework.KubectlEdge(t, "init", "--espw", f.ESPW.String()).MustSucceed(t)
	framework.KubectlEdge(t, "ensure", "wmw", f.WMW.String(), "--espw", f.ESPW.String()).MustSucceed(t)
	framework.KubectlEdge(t, "ensure", "imw", f.IMW.String(), "--espw", f.ESPW.String()).MustSucceed(t)
	for name, region := range map[string]string{"edge-east": "east", "edge-west": "west"} {
		framework.KubectlEdge(t, "ensure", "location", name, "region="+region, "--imw", f.IMW.String(), "--espw", f.ESPW.String()).MustSucceed(t)
	}
	f.ECM = framework.StartControllerManager(t, f.ESPW, "--controllers", "mailbox,scheduler,status-summarizer")
	wmw := framework.KCP(t).DynamicClient(t, f.WMW)
	f.Apply(t, f.WMW, workload)
	applyWidget(t, f, "app")
	f.Apply(t, f.WMW, `apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: app}
spec:
  locationSelectors: [{matchExpressions: [{key: region, operator: In, values: [east, west]}]}]
  downsync: [{namespaces: [app]}]
`)
	p := framework.EventuallyObject(t, "placement", wmw, placements, "", "app", framework.Present)
	m := &mailboxWriter{t: t, f: f, wmwCluster: logicalcluster.From(p).String()}

	// Nothing delivered yet: both destinations pending.
	framework.EventuallyObject(t, "pending at both destinations", wmw, placements, "", "app",
		summaryIs(t, edgev1alpha1.DestinationCounts{Pending: 2}, metav1.ConditionFalse))

	// Delivered to both; the east syncer applied it, the west one has not read it yet.
	objects := []string{nsKey, webKey, settingsKey, widgetKey}
	m.deliver("edge-east", "app", objects...)
	m.deliver("edge-west", "app", objects...)
	m.report("edge-east", "app", "", report{object: nsKey, state: "Ready"}, report{object: webKey, state: "Applied", reason: "Deployment is progressing"},
		report{object: settingsKey, state: "Ready"}, report{object: widgetKey, state: "Ready"})
	u := framework.EventuallyObject(t, "applied at one destination, pending at the other", wmw, placements, "", "app",
		summaryIs(t, edgev1alpha1.DestinationCounts{Applied: 1, Pending: 1}, metav1.ConditionFalse))
	s := placementStatus(t, u)
	counts := map[string]edgev1alpha1.DestinationCounts{}
	for _, o := range s.Objects {
		counts[o.Object] = o.DestinationCounts
	}
	if s.ObjectCount != 4 || counts[widgetKey] != (edgev1alpha1.DestinationCounts{Ready: 1, Pending: 1}) {
		t.Errorf("objects %+v (%d), want the 4 objects, the custom kind's Widget ready at one destination and pending at the other", s.Objects, s.ObjectCount)
	}
	for _, o := range []struct {
		gvr       schema.GroupVersionResource
		namespace string
		name      string
	}{{deployments, "app", "web"}, {configMaps, "app", "settings"}, {widgetsGVR, "app", "w1"}} {
		framework.EventuallyObject(t, "executing count", wmw, o.gvr, o.namespace, o.name,
			framework.FieldIs("1", "metadata", "annotations", edgev1alpha1.AnnotationExecutingCount))
	}

	// Ready in the east; in the west the Deployment fails.
	m.report("edge-east", "app", "", report{object: nsKey, state: "Ready"}, report{object: webKey, state: "Ready"},
		report{object: settingsKey, state: "Ready"}, report{object: widgetKey, state: "Ready"})
	m.report("edge-west", "app", "", report{object: nsKey, state: "Ready"}, report{object: webKey, state: "Failed", reason: "ProgressDeadlineExceeded: image pull back-off"},
		report{object: settingsKey, state: "Ready"}, report{object: widgetKey, state: "Ready"})
	u = framework.EventuallyObject(t, "ready at one destination, failing at the other", wmw, placements, "", "app",
		summaryIs(t, edgev1alpha1.DestinationCounts{Ready: 1, Failed: 1}, metav1.ConditionFalse))
	s = placementStatus(t, u)
	if len(s.Broken) != 1 || s.Broken[0].Object != webKey || !strings.HasSuffix(s.Broken[0].Destination, ":edge-west") || !strings.Contains(s.Broken[0].Reason, "image pull") {
		t.Errorf("broken = %+v, want the Deployment at edge-west with the syncer's reason", s.Broken)
	}
	framework.EventuallyObject(t, "executing count of the failing Deployment", wmw, deployments, "app", "web",
		framework.FieldIs("1", "metadata", "annotations", edgev1alpha1.AnnotationExecutingCount))
	framework.EventuallyObject(t, "executing count of the Widget", wmw, widgetsGVR, "app", "w1",
		framework.FieldIs("2", "metadata", "annotations", edgev1alpha1.AnnotationExecutingCount))
	out := framework.KubectlEdge(t, "status", "app", "--server", framework.KCP(t).ServerURL(f.WMW)).MustSucceed(t).Stdout
	for _, want := range []string{"1/2", "Failing", "edge-west", webKey, widgetKey} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl edge status app lacks %q:\n%s", want, out)
		}
	}
	out = framework.KubectlEdge(t, "status", "--target", "edge-west", "--imw", f.IMW.String(), "--espw", f.ESPW.String()).MustSucceed(t).Stdout
	for _, want := range []string{"app", "Failed", "3/4 ready", webKey, "image pull back-off", "version not reported yet"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl edge status --target edge-west lacks %q:\n%s", want, out)
		}
	}

	// The west syncer refuses a corrupt assemblage: the destination fails as a whole.
	m.report("edge-west", "app", "the data does not match its digest")
	u = framework.EventuallyObject(t, "refused at one destination", wmw, placements, "", "app",
		summaryIs(t, edgev1alpha1.DestinationCounts{Ready: 1, Failed: 1}, metav1.ConditionFalse))
	framework.EventuallyObject(t, "the refusal is broken", wmw, placements, "", "app", func(u *unstructured.Unstructured) string {
		s := placementStatus(t, u)
		if len(s.Broken) != 1 || s.Broken[0].Object != "" || !strings.Contains(s.Broken[0].Reason, "digest") {
			return fmt.Sprintf("broken = %+v, want one entry for edge-west as a whole, with the refusal", s.Broken)
		}
		return ""
	})

	// Singleton status: one destination, its Deployment's status copied back.
	f.Apply(t, f.WMW, fmt.Sprintf(soloPlacement, "east"))
	framework.EventuallyObject(t, "solo scheduled", wmw, placements, "", "solo", func(u *unstructured.Unstructured) string {
		if n, _, _ := unstructured.NestedInt64(u.Object, "status", "matchingSyncTargetCount"); n != 1 {
			return fmt.Sprintf("%d destinations", n)
		}
		return ""
	})
	m.deliver("edge-east", "solo", "namespaces/solo", soloKey)
	m.report("edge-east", "solo", "", report{object: "namespaces/solo", state: "Ready"},
		report{object: soloKey, state: "Ready", status: map[string]any{"observedGeneration": int64(5), "replicas": int64(1), "readyReplicas": int64(1), "availableReplicas": int64(1)}})
	framework.EventuallyObject(t, "singleton status", wmw, deployments, "solo", "solo", func(u *unstructured.Unstructured) string {
		if u == nil {
			return "absent"
		}
		if r, _, _ := unstructured.NestedInt64(u.Object, "status", "readyReplicas"); r != 1 {
			return fmt.Sprintf("status.readyReplicas %d, want 1", r)
		}
		if og, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration"); og != u.GetGeneration() {
			return fmt.Sprintf("status.observedGeneration %d, want the object's generation %d", og, u.GetGeneration())
		}
		if from := u.GetAnnotations()[edgev1alpha1.AnnotationSingletonStatusFrom]; !strings.HasSuffix(from, ":edge-east") {
			return "singleton-status-from is " + from
		}
		return ""
	})
	framework.EventuallyObject(t, "solo ready", wmw, placements, "", "solo",
		summaryIs(t, edgev1alpha1.DestinationCounts{Ready: 1}, metav1.ConditionTrue))
}
