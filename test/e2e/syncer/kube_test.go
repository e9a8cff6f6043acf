package syncer

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/test/framework"
)

const kubeWorkload = `apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec: {containers: [{name: api, image: registry.example/api:1}]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: api-settings, namespace: shop}
data: {mode: fast}
---
# A webhook configuration travels denatured and is re-natured at the edge.
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
# kcp stores this Deployment, but Kubernetes refuses it: its selector does not match its
# template's labels.
apiVersion: apps/v1
kind: Deployment
metadata: {name: broken, namespace: shop}
spec:
  replicas: 1
  selector: {matchLabels: {app: broken}}
  template:
    metadata: {labels: {app: something-else}}
    spec: {containers: [{name: broken, image: registry.example/broken:1}]}
`

const kubePlacement = `apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: shop}
spec:
  locationSelectors: [{matchLabels: {region: north}}]
  downsync:
  - namespaces: [shop]
`

// TestRealKubernetesEdge syncs into a real Kubernetes control plane with a kwok node: the
// Deployment's status from the real controllers comes back to the assemblage's status, and an
// object the cluster refuses shows why there while the others are applied.
func TestRealKubernetesEdge(t *testing.T) {
	t.Parallel()
	startingKube := framework.StartKubeClusterInBackground(t, "kube1")
	f := setUp(t, map[string]string{"kube1": "north"})
	kube := startingKube()
	framework.StartSyncer(t, f.ESPW, f.IMW, "kube1", kube.PCluster())
	mailbox := framework.KCP(t).DynamicClient(t, f.Mailbox(t, "kube1"))
	ec := kube.DynamicClient(t)

	f.Apply(t, f.WMW, kubeWorkload)
	f.Apply(t, f.WMW, kubePlacement)

	eventually(t, "applied", ec, configMaps, "shop", "api-settings", fieldIs("fast", "data", "mode"))
	webhooks := schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}
	eventually(t, "re-natured", ec, webhooks, "", "gadget-check", func(u *unstructured.Unstructured) string {
		if u == nil {
			return "absent"
		}
		list, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
		if len(list) != 1 || list[0].(map[string]any)["name"] != "gadgets.example.com" {
			return fmt.Sprintf("webhooks are %v", list)
		}
		return ""
	})
	if framework.GetObject(t, ec, configMaps, "shop", "gadget-webhook") != nil {
		t.Errorf("the denatured ConfigMap itself reached the edge")
	}
	eventually(t, "ready at the edge", ec, deployments, "shop", "api", fieldIs("2", "status", "readyReplicas"))
	asm := placementAssemblage(t, f, "shop")
	objectReported(t, mailbox, asm, "deployments.apps/shop/api", func(o *edgev1alpha1.ObjectState) string {
		if o.State != edgev1alpha1.ObjectReady || o.Status == nil || !strings.Contains(string(o.Status.Raw), `"readyReplicas":2`) {
			return fmt.Sprintf("state %s, status %v", o.State, o.Status)
		}
		return ""
	})

	objectReported(t, mailbox, asm, "deployments.apps/shop/broken", func(o *edgev1alpha1.ObjectState) string {
		if o.State != edgev1alpha1.ObjectFailed || !strings.Contains(o.Reason, "refused") || !strings.Contains(o.Reason, "selector") {
			return fmt.Sprintf("state %s: %s", o.State, o.Reason)
		}
		return ""
	})
	if framework.GetObject(t, ec, deployments, "shop", "broken") != nil {
		t.Errorf("the refused Deployment exists at the edge")
	}

	// Fixing it in the workload workspace clears the report.
	f.Kubectl(t, f.WMW, "patch", "deployment", "broken", "-n", "shop", "--type=merge", "-p", `{"spec":{"template":{"metadata":{"labels":{"app":"broken"}}}}}`)
	eventually(t, "fixed at the edge", ec, deployments, "shop", "broken", fieldIs("1", "status", "readyReplicas"))
	objectReported(t, mailbox, asm, "deployments.apps/shop/broken", func(o *edgev1alpha1.ObjectState) string {
		if o.State != edgev1alpha1.ObjectReady || o.Reason != "" {
			return fmt.Sprintf("state %s: %s", o.State, o.Reason)
		}
		return ""
	})
}
