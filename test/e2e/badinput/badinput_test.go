package badinput

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/test/framework"
)

// TestPlacementSelectingNothing applies an EdgePlacement whose locationSelector matches no
// Location: Scheduled False says so, quoting the selector and how to compare it with the
// Locations, and `kubectl edge status` shows it; nothing of it reaches an edge, the good
// placement keeps converging, and once the selector is fixed the condition clears and the
// workload arrives where the new selector says.
func TestPlacementSelectingNothing(t *testing.T) {
	t.Parallel()
	w := setUp(t)
	manifest := func(region string) string {
		return `apiVersion: v1
kind: Namespace
metadata: {name: lost}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: lost}
data: {a: "1"}
---
apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: lost}
spec:
  locationSelectors: [{matchLabels: {region: ` + region + `}}]
  downsync: [{namespaces: [lost]}]
`
	}
	start := time.Now()
	w.Apply(t, w.WMW, manifest("nowhere"))
	msg := w.condition(t, "lost", edgev1alpha1.PlacementScheduled, metav1.ConditionFalse,
		`"region=nowhere"`, "kubectl get locations --show-labels")
	if r := w.reason(t, "lost", edgev1alpha1.PlacementScheduled); r != edgev1alpha1.ReasonNoLocationMatches {
		t.Errorf("Scheduled reason is %s, want %s", r, edgev1alpha1.ReasonNoLocationMatches)
	}
	t.Logf("Scheduled False %.1fs after apply: %s", time.Since(start).Seconds(), msg)
	w.statusShows(t, "lost", true, "NoDestinations", "Problems of lost", `"region=nowhere"`)

	w.goodKeepsConverging(t)
	for _, edge := range w.edgeNames {
		w.neverAt(t, edge, namespaces, "", "lost")
		w.neverAt(t, edge, configMaps, "lost", "settings")
	}

	start = time.Now()
	w.Apply(t, w.WMW, manifest("east"))
	w.condition(t, "lost", edgev1alpha1.PlacementScheduled, metav1.ConditionTrue, "1 SyncTarget")
	w.at(t, "edge1", "the fixed placement's ConfigMap", configMaps, "lost", "settings", framework.Present)
	t.Logf("after the fix: Scheduled True and the workload at edge1 %.1fs after apply", time.Since(start).Seconds())
	w.condition(t, "lost", edgev1alpha1.PlacementProjected, metav1.ConditionTrue)
	w.statusShows(t, "lost", false, "Problems of lost", "NoDestinations")
	w.neverAt(t, "edge2", configMaps, "lost", "settings")
	w.goodKeepsConverging(t)
}

// TestDownsyncUnknownResource applies an EdgePlacement whose downsync names a resource that the
// workspace does not have (the singular "deployment" in apps): Projected False names the
// placement's field, the name, and how to find the right one; the rest of the placement (its
// ConfigMaps) still reaches both edges, the good placement keeps converging, and once the name
// is fixed the condition clears and the Deployment arrives.
func TestDownsyncUnknownResource(t *testing.T) {
	t.Parallel()
	w := setUp(t)
	manifest := func(deployments string) string {
		return `apiVersion: v1
kind: Namespace
metadata: {name: typo}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: typo}
data: {a: "1"}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: typo}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
---
apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: typo}
spec:
  locationSelectors: [{matchExpressions: [{key: region, operator: In, values: [east, west]}]}]
  downsync:
  - {resources: [configmaps], namespaces: [typo]}
  - {apiGroup: apps, resources: [` + deployments + `], namespaces: [typo]}
`
	}
	start := time.Now()
	w.Apply(t, w.WMW, manifest("deployment"))
	msg := w.condition(t, "typo", edgev1alpha1.PlacementProjected, metav1.ConditionFalse,
		"UnknownResource", `spec.downsync[1].resources names "deployment"`, `in API group "apps"`, "kubectl api-resources")
	t.Logf("Projected False %.1fs after apply: %s", time.Since(start).Seconds(), msg)
	w.statusShows(t, "typo", true, "Problems of typo", `names "deployment"`)
	for _, edge := range w.edgeNames {
		w.at(t, edge, "the rest of the placement", configMaps, "typo", "settings", framework.Present)
	}
	w.goodKeepsConverging(t)
	for _, edge := range w.edgeNames {
		w.neverAt(t, edge, deployments, "typo", "web")
	}

	start = time.Now()
	w.Apply(t, w.WMW, manifest("deployments"))
	w.condition(t, "typo", edgev1alpha1.PlacementProjected, metav1.ConditionTrue)
	for _, edge := range w.edgeNames {
		w.at(t, edge, "the Deployment of the fixed placement", deployments, "typo", "web", framework.Present)
	}
	t.Logf("after the fix: Projected True and the Deployment at both edges %.1fs after apply", time.Since(start).Seconds())
	w.statusShows(t, "typo", false, "Problems of typo")
	w.goodKeepsConverging(t)
}

// TestCustomizerCannotApply gives a Deployment's Customizer first a replacement path that
// admission accepts but that points past the end of a list, then a value with an unknown
// %(key): each time Projected False names the object, the Customizer and the fix, the edges keep
// the last good customised Deployment while the placement's other objects still change there,
// and the good placement keeps converging; the fixed Customizer clears the condition and its
// new value reaches both edges.
func TestCustomizerCannotApply(t *testing.T) {
	t.Parallel()
	w := setUp(t)
	customizer := func(path, value string) string {
		return `apiVersion: edge.kcp.io/v1alpha1
kind: Customizer
metadata: {name: web, namespace: cust}
replacements:
- path: "` + path + `"
  value: "` + value + `"
`
	}
	other := func(version string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other, namespace: cust}\ndata: {version: \"" + version + "\"}\n"
	}
	w.Apply(t, w.WMW, `apiVersion: v1
kind: Namespace
metadata: {name: cust}
---
`+customizer("$.spec.template.spec.containers[0].image", "nginx:%(region)")+`---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: cust
  annotations: {edge.kcp.io/customizer: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
---
`+other("1")+`---
apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: cust}
spec:
  locationSelectors: [{matchExpressions: [{key: region, operator: In, values: [east, west]}]}]
  downsync: [{namespaces: [cust]}]
`)
	region := map[string]string{"edge1": "east", "edge2": "west"}
	image := []string{"spec", "template", "spec", "containers"}
	imageIs := func(want string) func(u *unstructured.Unstructured) string { return containerImageIs(want, image...) }
	for _, edge := range w.edgeNames {
		w.at(t, edge, "the customised Deployment", deployments, "cust", "web", imageIs("nginx:"+region[edge]))
	}

	steps := []struct {
		name, path, value string
		fragments         []string
	}{
		{"a path past the end of a list", "$.spec.template.spec.containers[1].image", "nginx:v2",
			[]string{"CustomizationError", "deployments.apps/cust/web", "Customizer cust/web", "index 1 is out of range", "fix that replacement"}},
		{"an unknown %(key)", "$.spec.template.spec.containers[0].image", "nginx:%(zone)",
			[]string{"CustomizationError", "deployments.apps/cust/web", "Customizer cust/web", `unknown parameter "zone"`, `label or annotate the destination's SyncTarget or Location with "zone"`}},
	}
	for i, step := range steps {
		start := time.Now()
		w.Apply(t, w.WMW, customizer(step.path, step.value))
		msg := w.condition(t, "cust", edgev1alpha1.PlacementProjected, metav1.ConditionFalse, step.fragments...)
		t.Logf("%s: Projected False %.1fs after apply: %s", step.name, time.Since(start).Seconds(), msg)
		w.statusShows(t, "cust", true, "Problems of cust", "Customizer cust/web")
		// The placement's other objects still change at the edges; the Deployment stays as
		// last customised.
		version := string(rune('2' + i))
		w.Apply(t, w.WMW, other(version))
		for _, edge := range w.edgeNames {
			w.at(t, edge, "the placement's other ConfigMap", configMaps, "cust", "other", framework.FieldIs(version, "data", "version"))
			w.at(t, edge, "the last good Deployment", deployments, "cust", "web", imageIs("nginx:"+region[edge]))
		}
		w.goodKeepsConverging(t)
	}

	start := time.Now()
	w.Apply(t, w.WMW, customizer("$.spec.template.spec.containers[0].image", "nginx:%(region)-v2"))
	w.condition(t, "cust", edgev1alpha1.PlacementProjected, metav1.ConditionTrue)
	for _, edge := range w.edgeNames {
		w.at(t, edge, "the Deployment customised by the fixed Customizer", deployments, "cust", "web", imageIs("nginx:"+region[edge]+"-v2"))
	}
	t.Logf("after the fix: Projected True and the new image at both edges %.1fs after apply", time.Since(start).Seconds())
	w.statusShows(t, "cust", false, "Problems of cust")
	w.goodKeepsConverging(t)
}

// TestObjectTooLarge places a ConfigMap too large to travel even alone beside a small one: a
// megabyte of binaryData and a 250,000-character annotation, about 1.58 MB as JSON, past the
// 1.5 MiB that an edge cluster's etcd takes (kcp holds it, in protobuf, in about 1.25 MB).
// Projected False names the object, its size and the fix, with reason ObjectTooLarge among its
// problems; the small ConfigMap reaches both edges and the good placement keeps converging; made
// smaller (the annotation dropped: 1.33 MB as JSON), it travels, in parts, and arrives whole.
func TestObjectTooLarge(t *testing.T) {
	t.Parallel()
	w := setUp(t)
	blob := make([]byte, 1_000_000)
	if _, err := rand.Read(blob); err != nil { // incompressible: the assemblage is cut into parts
		t.Fatal(err)
	}
	encoded := base64.StdEncoding.EncodeToString(blob)
	manifest := func(annotation string) string {
		return `apiVersion: v1
kind: Namespace
metadata: {name: big}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: small, namespace: big}
data: {a: "1"}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: blob
  namespace: big
  annotations: {padding: "` + annotation + `"}
binaryData: {blob: "` + encoded + `"}
---
apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: big}
spec:
  locationSelectors: [{matchExpressions: [{key: region, operator: In, values: [east, west]}]}]
  downsync: [{namespaces: [big]}]
`
	}
	start := time.Now()
	w.Apply(t, w.WMW, manifest(strings.Repeat("x", 250_000)))
	msg := w.condition(t, "big", edgev1alpha1.PlacementProjected, metav1.ConditionFalse,
		edgev1alpha1.PlacementTooLarge, "configmaps/big/blob is ", "bytes as JSON", "make it smaller or split it")
	t.Logf("Projected False %.1fs after apply: %s", time.Since(start).Seconds(), msg)
	w.statusShows(t, "big", true, "Problems of big", "configmaps/big/blob")
	for _, edge := range w.edgeNames {
		w.at(t, edge, "the placement's small ConfigMap", configMaps, "big", "small", framework.Present)
	}
	w.goodKeepsConverging(t)
	for _, edge := range w.edgeNames {
		w.neverAt(t, edge, configMaps, "big", "blob")
	}

	start = time.Now()
	w.Apply(t, w.WMW, manifest(""))
	w.condition(t, "big", edgev1alpha1.PlacementProjected, metav1.ConditionTrue)
	for _, edge := range w.edgeNames {
		w.at(t, edge, "the ConfigMap made smaller", configMaps, "big", "blob", func(u *unstructured.Unstructured) string {
			if u == nil {
				return "absent"
			}
			got, _, _ := unstructured.NestedString(u.Object, "binaryData", "blob")
			if got != encoded {
				return fmt.Sprintf("binaryData.blob has %d base64 characters, not the %d placed", len(got), len(encoded))
			}
			return ""
		})
	}
	t.Logf("after the fix: Projected True and the 1 MB ConfigMap whole at both edges %.1fs after apply", time.Since(start).Seconds())
	w.statusShows(t, "big", false, "Problems of big")
	w.goodKeepsConverging(t)
}
