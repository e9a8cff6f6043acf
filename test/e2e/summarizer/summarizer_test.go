package summarizer

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kcp-dev/logicalcluster/v3"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/transport"
	"github.com/kcp-dev/edge-mc/test/framework"
)

var (
	deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	configMaps  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	placements  = schema.GroupVersionResource{Group: "edge.kcp.io", Version: "v1alpha1", Resource: "edgeplacements"}
)

const workload = `apiVersion: v1
kind: Namespace
metadata: {name: app}
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
data: {mode: edge}
---
apiVersion: v1
kind: Namespace
metadata: {name: solo}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: solo, namespace: solo}
spec:
  replicas: 1
  selector: {matchLabels: {app: solo}}
  template:
    metadata: {labels: {app: solo}}
    spec: {containers: [{name: solo, image: nginx}]}
`

const appPlacement = `apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: app}
spec:
  locationSelectors: [{matchExpressions: [{key: region, operator: In, values: [east, west, north]}]}]
  downsync: [{namespaces: [app]}]
`

const soloPlacement = `apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: solo}
spec:
  locationSelectors: [{matchLabels: {region: %s}}]
  downsync: [{namespaces: [solo]}]
  wantSingletonReportedState: true
`

// placementStatus reads an EdgePlacement's status.
func placementStatus(t *testing.T, u *unstructured.Unstructured) edgev1alpha1.EdgePlacementStatus {
	t.Helper()
	p := &edgev1alpha1.EdgePlacement{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
		t.Fatal(err)
	}
	return p.Status
}

// summaryIs checks an EdgePlacement's destination counts and Ready condition.
func summaryIs(t *testing.T, want edgev1alpha1.DestinationCounts, ready metav1.ConditionStatus) func(*unstructured.Unstructured) string {
	return func(u *unstructured.Unstructured) string {
		if u == nil {
			return "absent"
		}
		s := placementStatus(t, u)
		if s.Summary == nil {
			return "no summary yet"
		}
		if *s.Summary != want {
			return fmt.Sprintf("summary %+v, want %+v", *s.Summary, want)
		}
		if st, reason, msg := framework.ConditionStatus(u, "Ready"); st != ready {
			return fmt.Sprintf("Ready is %s (%s: %s), want %s", st, reason, msg, ready)
		}
		return ""
	}
}

// setEdgeStatus writes a Deployment's status at a logical-cluster edge, as its controllers
// would: progressing and available when ready, else failed with ProgressDeadlineExceeded.
func setEdgeStatus(t *testing.T, edge dynamic.Interface, namespace, name string, ready bool) {
	t.Helper()
	framework.Eventually(t, framework.Converge, func() (bool, string) {
		dep := framework.GetObject(t, edge, deployments, namespace, name)
		if dep == nil {
			return false, "not at the edge yet"
		}
		replicas, _, _ := unstructured.NestedInt64(dep.Object, "spec", "replicas")
		progressing := map[string]any{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable", "message": "ok"}
		available := map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "message": "ok"}
		readyReplicas := replicas
		if !ready {
			progressing = map[string]any{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded", "message": "image pull back-off"}
			available["status"], available["reason"] = "False", "MinimumReplicasUnavailable"
			readyReplicas = 0
		}
		dep.Object["status"] = map[string]any{
			"observedGeneration": dep.GetGeneration(), "replicas": replicas, "updatedReplicas": replicas,
			"readyReplicas": readyReplicas, "availableReplicas": readyReplicas,
			"conditions": []any{progressing, available},
		}
		if readyReplicas == 0 {
			delete(dep.Object["status"].(map[string]any), "readyReplicas")
			delete(dep.Object["status"].(map[string]any), "availableReplicas")
		}
		if _, err := edge.Resource(deployments).Namespace(namespace).UpdateStatus(framework.Context(t, 10*time.Second), dep, metav1.UpdateOptions{}); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}

// TestSummaries places a workload on three logical-cluster edges and follows, through the
// EdgePlacement's status, kubectl edge status and the objects' annotations, the objects becoming
// ready, one failing, one syncer going silent and coming back, and singleton status.
func TestSummaries(t *testing.T) {
	t.Parallel()
	regions := map[string]string{"edge-east": "east", "edge-west": "west", "edge-north": "north"}
	made := framework.StartLogicalPClusters(t, "edge-east", "edge-west", "edge-north")
	f := framework.NewFleet(t, regions)
	edges := map[string]dynamic.Interface{}
	syncers := map[string]*framework.Syncer{}
	for name, p := range made() {
		syncers[name] = framework.StartSyncer(t, f.ESPW, f.IMW, name, p)
		edges[name] = p.DynamicClient(t)
	}
	wmw := framework.KCP(t).DynamicClient(t, f.WMW)
	f.Apply(t, f.WMW, workload)
	f.Apply(t, f.WMW, appPlacement)

	// Applied everywhere; the Deployments report no status yet, so nothing is ready.
	framework.EventuallyObject(t, "applied at three destinations", wmw, placements, "", "app",
		summaryIs(t, edgev1alpha1.DestinationCounts{Applied: 3}, metav1.ConditionFalse))
	for _, o := range []struct {
		gvr       schema.GroupVersionResource
		namespace string
		name      string
	}{{deployments, "app", "web"}, {configMaps, "app", "settings"}} {
		framework.EventuallyObject(t, "executing count", wmw, o.gvr, o.namespace, o.name,
			framework.FieldIs("3", "metadata", "annotations", edgev1alpha1.AnnotationExecutingCount))
	}

	// The summarizer's reports stay in the workload workspace: they are not delivered to the
	// mailboxes, where every change of a count would be a new version to apply everywhere.
	for name := range regions {
		doc := deliveredDocument(t, f, name, "app")
		for _, e := range doc.Objects {
			if k := e.Key(); k.String() == "deployments.apps/app/web" {
				md, _ := e.Object["metadata"].(map[string]any)
				annotations, _ := md["annotations"].(map[string]any)
				if v, ok := annotations[edgev1alpha1.AnnotationExecutingCount]; ok {
					t.Errorf("the Deployment delivered to %s carries %s=%v", name, edgev1alpha1.AnnotationExecutingCount, v)
				}
			}
		}
	}

	// Ready at each edge as its status arrives.
	for name := range regions {
		setEdgeStatus(t, edges[name], "app", "web", true)
	}
	u := framework.EventuallyObject(t, "ready at three destinations", wmw, placements, "", "app",
		summaryIs(t, edgev1alpha1.DestinationCounts{Ready: 3}, metav1.ConditionTrue))
	s := placementStatus(t, u)
	if s.ObjectCount != 3 || len(s.Objects) != 3 || len(s.Broken) != 0 {
		t.Errorf("status: %d objects (%d listed), %d broken; want 3 objects (namespace, Deployment, ConfigMap) and none broken: %+v", s.ObjectCount, len(s.Objects), len(s.Broken), s)
	}
	for _, o := range s.Objects {
		if o.Ready != 3 {
			t.Errorf("object %s: %+v, want ready at 3", o.Object, o.DestinationCounts)
		}
	}
	out := framework.KubectlEdge(t, "status", "--server", framework.KCP(t).ServerURL(f.WMW)).MustSucceed(t).Stdout
	if !strings.Contains(out, "app") || !strings.Contains(out, "3/3") {
		t.Errorf("kubectl edge status does not show the placement ready at 3 of 3:\n%s", out)
	}

	// One edge fails: the destination and the object are broken, with the reason.
	setEdgeStatus(t, edges["edge-west"], "app", "web", false)
	u = framework.EventuallyObject(t, "failing at one destination", wmw, placements, "", "app",
		summaryIs(t, edgev1alpha1.DestinationCounts{Ready: 2, Failed: 1}, metav1.ConditionFalse))
	s = placementStatus(t, u)
	if len(s.Broken) != 1 || s.BrokenCount != 1 || s.Broken[0].Object != "deployments.apps/app/web" ||
		!strings.HasSuffix(s.Broken[0].Destination, ":edge-west") || s.Broken[0].Since == nil {
		t.Errorf("broken = %+v (count %d), want one entry for deployments.apps/app/web at edge-west with a since", s.Broken, s.BrokenCount)
	}
	out = framework.KubectlEdge(t, "status", "app", "--server", framework.KCP(t).ServerURL(f.WMW)).MustSucceed(t).Stdout
	if !strings.Contains(out, "edge-west") || !strings.Contains(out, "deployments.apps/app/web") {
		t.Errorf("kubectl edge status app does not list the broken entry:\n%s", out)
	}
	setEdgeStatus(t, edges["edge-west"], "app", "web", true)
	framework.EventuallyObject(t, "recovered", wmw, placements, "", "app",
		summaryIs(t, edgev1alpha1.DestinationCounts{Ready: 3}, metav1.ConditionTrue))

	// A syncer goes silent: its destination turns stale after the grace period, and comes back.
	syncers["edge-north"].Kill()
	u = framework.EventuallyObject(t, "stale", wmw, placements, "", "app",
		summaryIs(t, edgev1alpha1.DestinationCounts{Ready: 2, Stale: 1}, metav1.ConditionFalse))
	s = placementStatus(t, u)
	if len(s.Broken) != 1 || !strings.HasSuffix(s.Broken[0].Destination, ":edge-north") || !strings.Contains(s.Broken[0].Reason, "silent") {
		t.Errorf("broken = %+v, want the silent syncer of edge-north", s.Broken)
	}
	syncers["edge-north"].Restart()
	framework.EventuallyObject(t, "no longer stale", wmw, placements, "", "app",
		summaryIs(t, edgev1alpha1.DestinationCounts{Ready: 3}, metav1.ConditionTrue))

	// Singleton status: with one destination, the status at that edge is copied back.
	f.Apply(t, f.WMW, fmt.Sprintf(soloPlacement, "east"))
	setEdgeStatus(t, edges["edge-east"], "solo", "solo", true)
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
	framework.EventuallyObject(t, "SingletonStatus True", wmw, placements, "", "solo", conditionIs(edgev1alpha1.PlacementSingletonStatus, metav1.ConditionTrue))

	// A second destination: the copied status is withdrawn, and the placement says why.
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"locationSelectors": []any{
		map[string]any{"matchExpressions": []any{map[string]any{"key": "region", "operator": "In", "values": []any{"east", "west"}}}}}}})
	f.Kubectl(t, f.WMW, "patch", "edgeplacement", "solo", "--type=merge", "-p", string(patch))
	framework.EventuallyObject(t, "singleton status withdrawn", wmw, deployments, "solo", "solo", func(u *unstructured.Unstructured) string {
		if u == nil {
			return "absent"
		}
		if st, found, _ := unstructured.NestedMap(u.Object, "status"); found && len(st) > 0 {
			return fmt.Sprintf("status still %v", st)
		}
		if from, ok := u.GetAnnotations()[edgev1alpha1.AnnotationSingletonStatusFrom]; ok {
			return "singleton-status-from still " + from
		}
		return ""
	})
	framework.EventuallyObject(t, "SingletonStatus False", wmw, placements, "", "solo", conditionIs(edgev1alpha1.PlacementSingletonStatus, metav1.ConditionFalse))
}

// deliveredDocument reads, from the mailbox of a SyncTarget, the objects that the placement's
// assemblage delivers there, as its syncer reads them.
func deliveredDocument(t *testing.T, f *framework.Fleet, syncTarget, placement string) *transport.Document {
	t.Helper()
	wmwCluster := logicalcluster.From(framework.GetObject(t, framework.KCP(t).DynamicClient(t, f.WMW), placements, "", placement))
	mb := framework.KCP(t).DynamicClient(t, f.Mailbox(t, syncTarget))
	var doc *transport.Document
	framework.Eventually(t, framework.Converge, func() (bool, string) {
		ctx := framework.Context(t, 30*time.Second)
		u, err := mb.Resource(edgev1alpha1.SchemeGroupVersion.WithResource("assemblages")).Get(ctx, transport.AssemblageName(wmwCluster.String(), placement), metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		a := &edgev1alpha1.Assemblage{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, a); err != nil {
			t.Fatal(err)
		}
		list, err := mb.Resource(edgev1alpha1.SchemeGroupVersion.WithResource("assemblageparts")).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var parts []*edgev1alpha1.AssemblagePart
		for i := range list.Items {
			p := &edgev1alpha1.AssemblagePart{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, p); err != nil {
				t.Fatal(err)
			}
			parts = append(parts, p)
		}
		if doc, err = transport.DecodeAssemblage(a, parts); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	return doc
}

func conditionIs(condType string, want metav1.ConditionStatus) func(*unstructured.Unstructured) string {
	return func(u *unstructured.Unstructured) string {
		if u == nil {
			return "absent"
		}
		if st, reason, msg := framework.ConditionStatus(u, condType); st != want {
			return fmt.Sprintf("%s is %s (%s: %s), want %s", condType, st, reason, msg, want)
		}
		return ""
	}
}

// TestRealKubernetesEdge places a Deployment on a real Kubernetes edge cluster, whose controllers
// and kwok node make it ready, and checks the summary and the singleton status from there.
func TestRealKubernetesEdge(t *testing.T) {
	t.Parallel()
	startingKube := framework.StartKubeClusterInBackground(t, "kube-edge")
	f := framework.NewFleet(t, map[string]string{"kube-edge": "east"})
	kube := startingKube()
	framework.StartSyncer(t, f.ESPW, f.IMW, "kube-edge", kube.PCluster())
	wmw := framework.KCP(t).DynamicClient(t, f.WMW)
	f.Apply(t, f.WMW, workload)
	f.Apply(t, f.WMW, fmt.Sprintf(soloPlacement, "east"))

	framework.EventuallyObject(t, "ready at the Kubernetes edge", wmw, placements, "", "solo",
		summaryIs(t, edgev1alpha1.DestinationCounts{Ready: 1}, metav1.ConditionTrue))
	framework.EventuallyObject(t, "status from the real controllers", wmw, deployments, "solo", "solo", func(u *unstructured.Unstructured) string {
		if u == nil {
			return "absent"
		}
		if r, _, _ := unstructured.NestedInt64(u.Object, "status", "readyReplicas"); r != 1 {
			return fmt.Sprintf("status.readyReplicas %d, want 1", r)
		}
		if n := u.GetAnnotations()[edgev1alpha1.AnnotationExecutingCount]; n != "1" {
			return "executing-count " + n
		}
		return ""
	})
	out := framework.KubectlEdge(t, "status", "--target", "kube-edge", "--imw", f.IMW.String(), "--espw", f.ESPW.String()).MustSucceed(t).Stdout
	if !strings.Contains(out, "deployments.apps/solo/solo") || !strings.Contains(out, "Ready") {
		t.Errorf("kubectl edge status --target does not show the Deployment ready:\n%s", out)
	}
}

// TestCustomKindInSummary places objects of a custom kind, defined by a CRD in the workload
// workspace, on a logical-cluster edge: they travel in the assemblage with their CRD, and the
// placement's summary and the objects' executing-count count them like any other.
func TestCustomKindInSummary(t *testing.T) {
	t.Parallel()
	pending := framework.StartLogicalPClusters(t, "edge-1")
	f := framework.NewFleet(t, map[string]string{"edge-1": "east"})
	p := pending()["edge-1"]
	framework.StartSyncer(t, f.ESPW, f.IMW, "edge-1", p)
	wmw := framework.KCP(t).DynamicClient(t, f.WMW)
	f.Apply(t, f.WMW, "apiVersion: v1\nkind: Namespace\nmetadata: {name: gadgets}\n")
	applyWidget(t, f, "gadgets")
	f.Apply(t, f.WMW, `apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: gadgets}
spec:
  locationSelectors: [{matchLabels: {region: east}}]
  downsync: [{namespaces: [gadgets]}, {apiGroup: apiextensions.k8s.io, resources: [customresourcedefinitions], objectNames: [widgets.example.com]}]
`)
	u := framework.EventuallyObject(t, "ready at the edge", wmw, placements, "", "gadgets",
		summaryIs(t, edgev1alpha1.DestinationCounts{Ready: 1}, metav1.ConditionTrue))
	s := placementStatus(t, u)
	found := false
	for _, o := range s.Objects {
		if o.Object == "widgets.example.com/gadgets/w1" {
			found = true
			if o.Ready != 1 {
				t.Errorf("the Widget: %+v, want ready at its one destination", o.DestinationCounts)
			}
		}
	}
	if !found {
		t.Errorf("the placement's summary does not list the Widget: %+v", s.Objects)
	}
	framework.EventuallyObject(t, "the Widget's executing count", wmw, widgetsGVR, "gadgets", "w1",
		framework.FieldIs("1", "metadata", "annotations", edgev1alpha1.AnnotationExecutingCount))
	// The CRD too: kcp's virtual workspace cannot write a CRD (kcp issue 3389), so the summarizer
	// writes this one with its own identity.
	framework.EventuallyObject(t, "the CRD's executing count", wmw, crdsGVR, "", "widgets.example.com",
		framework.FieldIs("1", "metadata", "annotations", edgev1alpha1.AnnotationExecutingCount))
	if framework.GetObject(t, p.DynamicClient(t), widgetsGVR, "gadgets", "w1") == nil {
		t.Error("the Widget is not at the edge")
	}
}
