package main

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

var (
	deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	configMapsGVR  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secretsGVR     = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	namespacesGVR  = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	placementsGVR  = edgev1alpha1.SchemeGroupVersion.WithResource("edgeplacements")
	collectorsGVR  = edgev1alpha1.SchemeGroupVersion.WithResource("statuscollectors")
	healthRulesGVR = edgev1alpha1.SchemeGroupVersion.WithResource("healthrules")
	syncTargetsGVR = edgev1alpha1.SchemeGroupVersion.WithResource("synctargets")
)

const (
	// groupLabel is the Location (and SyncTarget) label that placement j selects: g<j>.
	groupLabel = "bench-group"
	// deploymentName names the one Deployment of each placement's namespace.
	deploymentName = "app"
	// payloadAnnotation carries a Deployment's payload on its pod template.
	payloadAnnotation = "bench.edge.kcp.io/payload"
	// rawNamespace holds the raw client's objects in every mailbox and pcluster; no syncer or
	// controller looks at it.
	rawNamespace = "bench-raw"
	// pclusterCRD is the only workload CRD a pcluster needs: every other one would cost the edge
	// kcp memory in every pcluster for nothing.
	pclusterCRD = "deployments.apps.yaml"

	initialImage = "registry.example/bench:1"
	updatedImage = "registry.example/bench:2"
)

func groupName(j int) string       { return fmt.Sprintf("g%d", j) }
func groupNamespace(j int) string  { return "bench-" + groupName(j) }
func placementName(j int) string   { return "bench-" + groupName(j) }
func destinationName(i int) string { return fmt.Sprintf("edge-%04d", i) }

// objectKey names an object of a destination's workload within its namespace.
func objectKey(gvr schema.GroupVersionResource, name string) string { return gvr.Resource + "/" + name }

// workloadKeys are the keys of the k objects that workloadObjects makes.
func workloadKeys(k int, secrets bool) map[string]bool {
	keys := map[string]bool{}
	for _, u := range workloadObjects("x", k, 0, secrets) {
		keys[objectKey(gvrOf(u), u.GetName())] = true
	}
	return keys
}

// payload is size bytes of a workload object's data.
func payload(size int) string { return strings.Repeat("0123456789abcdef", size/16+1)[:size] }

// updatedPayload is other data of the same size as payload's (one byte if size is 0), for an
// update that changes something.
func updatedPayload(size int) string {
	return strings.Repeat("fedcba9876543210", max(size, 1)/16+1)[:max(size, 1)]
}

func configMapName(i int) string { return fmt.Sprintf("cm-%03d", i) }

func configMapObject(namespace, name, payload string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "ConfigMap",
		"metadata":   map[string]any{"name": name, "namespace": namespace},
		"data":       map[string]any{"payload": payload},
	}}
}

// configMapObjects are k ConfigMaps with size bytes of payload each: what the raw client writes
// into a mailbox, which serves no Deployments, in place of a placement's k objects.
func configMapObjects(namespace string, k, size int) []*unstructured.Unstructured {
	var objs []*unstructured.Unstructured
	for i := range k {
		objs = append(objs, configMapObject(namespace, configMapName(i), payload(size)))
	}
	return objs
}

// secretObject is a Secret with the payload as its one value: the translator seals it for each
// destination's key.
func secretObject(namespace, name, payload string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "Secret",
		"metadata":   map[string]any{"name": name, "namespace": namespace},
		"stringData": map[string]any{"payload": payload},
	}}
}

// workloadObjects are the k objects of one placement's namespace: a Deployment and k-1
// ConfigMaps (Secrets, with secrets), each with size bytes of payload.
func workloadObjects(namespace string, k, size int, secrets bool) []*unstructured.Unstructured {
	payload := payload(size)
	objs := []*unstructured.Unstructured{{Object: map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata":   map[string]any{"name": deploymentName, "namespace": namespace},
		"spec": map[string]any{
			"replicas": int64(1),
			"selector": map[string]any{"matchLabels": map[string]any{"app": deploymentName}},
			"template": map[string]any{
				"metadata": map[string]any{
					"labels":      map[string]any{"app": deploymentName},
					"annotations": map[string]any{payloadAnnotation: payload},
				},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": initialImage}}},
			},
		},
	}}}
	for i := 1; i < k; i++ {
		if secrets {
			objs = append(objs, secretObject(namespace, configMapName(i), payload))
		} else {
			objs = append(objs, configMapObject(namespace, configMapName(i), payload))
		}
	}
	return objs
}

func gvrOf(u *unstructured.Unstructured) schema.GroupVersionResource {
	switch u.GetKind() {
	case "Deployment":
		return deploymentsGVR
	case "Secret":
		return secretsGVR
	}
	return configMapsGVR
}

func namespaceObject(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name},
	}}
}

// placementObject is EdgePlacement j: the destinations of group j, the objects of its namespace;
// with collect, it names the benchmark's status collector.
func placementObject(j int, collect bool) *unstructured.Unstructured {
	spec := map[string]any{
		"locationSelectors": []any{map[string]any{"matchLabels": map[string]any{groupLabel: groupName(j)}}},
		"downsync":          []any{map[string]any{"namespaces": []any{groupNamespace(j)}}},
	}
	if collect {
		spec["statusCollectors"] = []any{collectorName}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": edgev1alpha1.SchemeGroupVersion.String(),
		"kind":       "EdgePlacement",
		"metadata":   map[string]any{"name": placementName(j)},
		"spec":       spec,
	}}
}

// The status collector and the health rule of -collect.
const (
	// collectorName sums the Deployments' status.availableReplicas and counts the Deployments,
	// over each placement's destinations: every destination's syncer evaluates its filter on
	// each of the K objects it applied, and its select on the Deployment.
	collectorName = "bench-available"
	// healthRuleName decides when a Deployment is ready, in place of kstatus, at every
	// destination: when its available replicas reach spec.replicas, which is what kstatus
	// decides of the benchmark's Deployments too (the status phase writes them as a Deployment
	// controller would), so the run completes as without it. A Deployment it calls not ready
	// carries its reason, ruleNotReady, in the assemblage's status: what shows that the rule, not
	// kstatus, decided.
	healthRuleName = "bench-deployments"
	ruleNotReady   = "health rule " + healthRuleName + " says not ready yet"
)

// collectorObject is the StatusCollector of -collect.
func collectorObject() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": edgev1alpha1.SchemeGroupVersion.String(),
		"kind":       "StatusCollector",
		"metadata":   map[string]any{"name": collectorName},
		"spec": map[string]any{
			"filter": `object.kind == "Deployment"`,
			"select": []any{map[string]any{"name": "available", "expression": "object.status.availableReplicas"}},
			"combine": []any{
				map[string]any{"name": "available", "type": "sum", "select": "available"},
				map[string]any{"name": "deployments", "type": "count"},
			},
		},
	}}
}

// healthRuleObject is the HealthRule of -collect.
func healthRuleObject() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": edgev1alpha1.SchemeGroupVersion.String(),
		"kind":       "HealthRule",
		"metadata":   map[string]any{"name": healthRuleName},
		"spec": map[string]any{
			"group": "apps",
			"kind":  "Deployment",
			"ready": "object.status.availableReplicas >= object.spec.replicas",
		},
	}}
}

// imageOf is the image of a Deployment's first container.
func imageOf(u *unstructured.Unstructured) string {
	containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	if len(containers) == 0 {
		return ""
	}
	c, _ := containers[0].(map[string]any)
	image, _ := c["image"].(string)
	return image
}
