package assemblage

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/test/framework"
)

// shopV1 is a workload for a real Kubernetes edge: a Namespace, a CRD and an object of its kind,
// a Deployment that becomes ready, a denatured webhook configuration, and a Deployment that
// Kubernetes refuses (its selector does not match its template's labels).
const shopV1 = `apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec: {containers: [{name: api, image: registry.example/api:1}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: broken, namespace: shop}
spec:
  replicas: 1
  selector: {matchLabels: {app: broken}}
  template:
    metadata: {labels: {app: something-else}}
    spec: {containers: [{name: broken, image: registry.example/broken:1}]}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w1, namespace: shop}
spec: {size: 3}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: gadget-webhook
  namespace: shop
  labels: {edge.kcp.io/denatured: "true"}
data:
  object: |
    apiVersion: admissionregistration.k8s.io/v1
    kind: ValidatingWebhookConfiguration
    metadata: {name: gadget-check}
    webhooks:
    - name: gadgets.example.com
      clientConfig: {url: "https://127.0.0.1:1/validate"}
      rules: [{apiGroups: [example.com], apiVersions: [v1], operations: [CREATE], resources: [gadgets]}]
      failurePolicy: Ignore
      sideEffects: None
      admissionReviewVersions: [v1]
---
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
` + widgetsCRD

// TestAssemblageKubeEdge applies an assemblage at a real Kubernetes edge (kube-apiserver,
// controllers, a kwok node): the Deployment becomes Ready there and the assemblage's status says
// so, with its .status; the Deployment the edge refuses is Failed with the edge's reason while
// the rest is applied; and the fixed version is applied and ready.
func TestAssemblageKubeEdge(t *testing.T) {
	t.Parallel()
	kube := framework.StartKubeCluster(t, "kube1")
	af := newAssemblageFleet(t, kube.PCluster())
	ec := af.edge

	v1 := af.write(t, "shop", shopV1)
	eventually(t, "ready at the edge", ec, deployments, "shop", "api", fieldIs("2", "status", "readyReplicas"))
	eventually(t, "custom object", ec, widgets, "shop", "w1", present)
	webhooks := schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}
	eventually(t, "re-natured", ec, webhooks, "", "gadget-check", present)
	if framework.GetObject(t, ec, configMaps, "shop", "gadget-webhook") != nil {
		t.Errorf("the denatured ConfigMap itself reached the edge")
	}
	a := framework.EventuallyAssemblage(t, af.mailbox, v1.Name, func(a *edgev1alpha1.Assemblage) string {
		if a == nil {
			return "absent"
		}
		api := framework.ObjectStateOf(a, "deployments.apps/shop/api")
		if api == nil || api.State != edgev1alpha1.ObjectReady || api.Status == nil || !strings.Contains(string(api.Status.Raw), `"readyReplicas":2`) {
			return fmt.Sprintf("deployments.apps/shop/api: %+v", api)
		}
		broken := framework.ObjectStateOf(a, "deployments.apps/shop/broken")
		if broken == nil || broken.State != edgev1alpha1.ObjectFailed || !strings.Contains(broken.Reason, "refused") || !strings.Contains(broken.Reason, "selector") {
			return fmt.Sprintf("deployments.apps/shop/broken: %+v", broken)
		}
		if a.Status.Counts != (edgev1alpha1.ObjectCounts{Ready: 5, Failed: 1}) {
			return fmt.Sprintf("counts %+v, want 5 ready and 1 failed", a.Status.Counts)
		}
		return ""
	})
	if c := framework.AssemblageCondition(a, "Applied"); c == nil || c.Status != metav1.ConditionFalse || c.Reason != "ObjectsFailed" || !strings.Contains(c.Message, "broken") {
		t.Errorf("condition Applied = %v, want False ObjectsFailed naming the broken Deployment", c)
	}
	if c := framework.AssemblageCondition(a, "Ready"); c == nil || c.Status != metav1.ConditionFalse || c.Reason != "ObjectsFailed" {
		t.Errorf("condition Ready = %v, want False ObjectsFailed", c)
	}
	if framework.GetObject(t, ec, deployments, "shop", "broken") != nil {
		t.Errorf("the refused Deployment exists at the edge")
	}

	fixed := af.write(t, "shop", strings.Replace(shopV1, "labels: {app: something-else}", "labels: {app: broken}", 1))
	eventually(t, "fixed at the edge", ec, deployments, "shop", "broken", fieldIs("1", "status", "readyReplicas"))
	a = framework.EventuallyAssemblage(t, af.mailbox, fixed.Name, func(a *edgev1alpha1.Assemblage) string {
		if why := appliedAt(fixed.Spec.Version)(a); why != "" {
			return why
		}
		if c := framework.AssemblageCondition(a, "Ready"); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Sprintf("condition Ready is %v", c)
		}
		return ""
	})
	if a.Status.Counts != (edgev1alpha1.ObjectCounts{Ready: 6}) || a.Status.StatusOmitted {
		t.Errorf("counts %+v (statusOmitted %v), want all 6 ready with their status", a.Status.Counts, a.Status.StatusOmitted)
	}
	// Scaling at the edge is drift: the syncer puts the replicas back.
	framework.Kubectl(t, "--kubeconfig", kube.KubeconfigPath, "scale", "deployment", "api", "-n", "shop", "--replicas=3").MustSucceed(t)
	eventually(t, "scale repaired", ec, deployments, "shop", "api", fieldIs("2", "spec", "replicas"))
}
