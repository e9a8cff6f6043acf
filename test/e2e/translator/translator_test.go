package translator

import (
	"encoding/base64"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/transport"
	"github.com/kcp-dev/edge-mc/test/framework"
)

const crd = `apiVersion: apiextensions.k8s.io/v1
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

const workload = `apiVersion: v1
kind: Namespace
metadata: {name: app}
---
apiVersion: edge.kcp.io/v1alpha1
kind: Customizer
metadata: {name: web, namespace: app}
replacements:
- path: $.spec.template.spec.containers[0].image
  value: "nginx:%(region)"
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: app
  annotations: {edge.kcp.io/customizer: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: app
  annotations: {edge.kcp.io/expand-parameters: "true"}
data: {region: "%(region)", literal: "100%%"}
---
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: app}
stringData: {password: s3cret}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: app}
spec:
  selector: {app: web}
  ports: [{port: 80}]
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w1, namespace: app}
spec: {size: 3}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: app-reader, labels: {app: demo}}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: not-selected}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get]}]
`

// placement selects namespace app and the ClusterRoles labelled app=demo, for the given regions.
func placement(name, regions string, withClusterRoles bool) string {
	s := `apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: ` + name + `}
spec:
  locationSelectors:
  - matchExpressions: [{key: region, operator: In, values: [` + regions + `]}]
  downsync:
  - namespaces: [app]
`
	if withClusterRoles {
		s += `  - apiGroup: rbac.authorization.k8s.io
    resources: [clusterroles]
    labelSelectors: [{matchLabels: {app: demo}}]
`
	}
	return s
}

var everything = []string{
	"clusterroles/app-reader", "configmaps/app/settings", "crds/widgets.example.com", "deployments/app/web",
	"namespaces/app", "secrets/app/creds", "services/app/web", "widgets/app/w1",
}

func TestProjection(t *testing.T) {
	t.Parallel()
	f := setUp(t)
	f.apply(t, f.wmwA, crd)
	framework.EventuallyCRDEstablished(t, f.wmwA, "widgets.example.com")
	f.apply(t, f.wmwA, workload)
	f.apply(t, f.wmwA, placement("app", "east, west", true))

	// No syncer has published a key yet: the Secret goes nowhere, never in the clear, and the
	// placement says so; everything else goes.
	f.condition(t, f.wmwA, "app", "Projected", metav1.ConditionFalse, edgev1alpha1.PlacementSecretsNotSealed, "secrets/app/creds", "published no key")
	withoutSecret := slices.DeleteFunc(slices.Clone(everything), func(s string) bool { return s == "secrets/app/creds" })
	f.expectEverywhere(t, "no key, no Secret", func(_, _ string, names []string, _ map[string]*unstructured.Unstructured) string {
		if !slices.Equal(names, withoutSecret) {
			return "not exactly the selected objects but the Secret"
		}
		return ""
	})
	keys := map[string]*transport.KeyPair{}
	for _, dest := range f.sortedDestinations() {
		keys[dest] = f.publishKey(t, dest)
	}

	// Every destination gets every selected object, customised for its region, and nothing
	// else: no system object, no unselected ClusterRole. The Secret is sealed for the
	// destination's key: its value is in no mailbox.
	f.expectEverywhere(t, "first projection", func(dest, region string, names []string, objs map[string]*unstructured.Unstructured) string {
		if !slices.Equal(names, everything) {
			return "not exactly the selected objects"
		}
		if got := field(objs, "secrets/app/creds", sealedFor); got != transport.KeyID(keys[dest].Public) {
			return "the Secret is sealed for " + got + ", not for the destination's key"
		}
		if field(objs, "secrets/app/creds", "stringData") != "<none>" || field(objs, "secrets/app/creds", "data") != "<none>" {
			return "the Secret's data travels in the clear"
		}
		if got := field(objs, "configmaps/app/settings", "data", "region"); got != region {
			return "settings region is " + got
		}
		if got := field(objs, "configmaps/app/settings", "data", "literal"); got != "100%" {
			return "settings literal is " + got
		}
		if got := field(objs, "deployments/app/web", "spec", "template", "spec", "containers"); !strings.Contains(got, "nginx:"+region) {
			return "web image is not nginx:" + region + ": " + got
		}
		for id, u := range objs {
			if len(u.GetOwnerReferences()) > 0 || u.GetUID() != "" || u.GetAnnotations()["kcp.io/cluster"] != "" {
				return id + " carries owner references, a UID or kcp's annotations from the center"
			}
			if _, ok := u.Object["status"]; ok && strings.HasPrefix(id, "deployments") {
				if st, _ := u.Object["status"].(map[string]any); len(st) > 0 {
					return id + " carries status from the center"
				}
			}
		}
		return ""
	})
	f.condition(t, f.wmwA, "app", "Projected", metav1.ConditionTrue, "all 4 destinations")
	for _, dest := range f.sortedDestinations() {
		if documentsHold(t, f.mailbox(t, dest), "s3cret", base64.StdEncoding.EncodeToString([]byte("s3cret"))) {
			t.Errorf("an assemblage in the mailbox of %s holds the Secret's value", dest)
		}
	}

	// One assemblage per placement and destination, and a SyncerConfig that tells the syncer the
	// fleet's heartbeat interval and no per-object scope.
	mbEast := f.mailbox(t, "imw1/east-imw1")
	if got := assemblages(t, mbEast); len(got) != 1 {
		t.Errorf("mailbox %s holds %d assemblages, want 1", mbEast, len(got))
	}
	cfg, err := framework.KCP(t).DynamicClient(t, mbEast).Resource(syncerConfigs).Get(framework.Context(t, 10*time.Second), "the-one", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if interval, _, _ := unstructured.NestedInt64(cfg.Object, "spec", "heartbeat", "intervalSeconds"); interval != 30 {
		t.Errorf("SyncerConfig heartbeat interval = %d s, want the default 30", interval)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(cfg.Object, "spec", "namespaceScope"); found {
		t.Errorf("SyncerConfig has a per-object scope: %v", cfg.Object["spec"])
	}
	// Something in a mailbox that the translator did not make is never touched.
	f.kubectl(t, mbEast, "create", "configmap", "by-hand", "-n", "default", "--from-literal=a=b")

	t.Run("an update reaches every mailbox and rewrites only the assemblages it affects", func(t *testing.T) {
		// A second placement, of a ClusterRole only, to every destination.
		f.apply(t, f.wmwA, `apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: roles}
spec:
  locationSelectors: [{matchLabels: {}}]
  downsync: [{apiGroup: rbac.authorization.k8s.io, resources: [clusterroles], objectNames: [not-selected]}]
`)
		f.expectEverywhere(t, "second placement", func(_, _ string, names []string, _ map[string]*unstructured.Unstructured) string {
			if !slices.Contains(names, "clusterroles/not-selected") {
				return "the roles placement is not delivered"
			}
			return ""
		})
		versions := func() map[string]*edgev1alpha1.Assemblage {
			out := map[string]*edgev1alpha1.Assemblage{}
			for _, dest := range f.sortedDestinations() {
				for name, a := range assemblages(t, f.mailbox(t, dest)) {
					out[dest+"/"+name] = a.assemblage
				}
			}
			return out
		}
		before := versions()
		f.kubectl(t, f.wmwA, "patch", "configmap", "settings", "-n", "app", "--type=merge", "-p", `{"data":{"extra":"1"}}`)
		f.expectEverywhere(t, "update", func(_, _ string, _ []string, objs map[string]*unstructured.Unstructured) string {
			if got := field(objs, "configmaps/app/settings", "data", "extra"); got != "1" {
				return "extra is " + got
			}
			return ""
		})
		time.Sleep(2 * time.Second) // anything else the edit would write is written by now
		after := versions()
		rewritten := 0
		for key, a := range after {
			changed := before[key] == nil || before[key].ResourceVersion != a.ResourceVersion
			isApp := strings.HasSuffix(key, ".app")
			if changed {
				rewritten++
			}
			if changed != isApp {
				t.Errorf("assemblage %s: rewritten %v, want %v (the edit touches placement app only)\nbefore: %s\nafter:  %s",
					key, changed, isApp, describeAssemblage(before[key]), describeAssemblage(a))
			}
		}
		if rewritten != len(f.destinations) {
			t.Errorf("%d assemblages rewritten for one edit, want one per destination (%d)", rewritten, len(f.destinations))
		}
		f.kubectl(t, f.wmwA, "delete", "edgeplacement", "roles")
	})

	t.Run("an unknown key is a condition and the last good copy stays, until the Locations get the label", func(t *testing.T) {
		f.kubectl(t, f.wmwA, "patch", "configmap", "settings", "-n", "app", "--type=merge", "-p", `{"data":{"extra":"2","zone":"%(zone)"}}`)
		f.condition(t, f.wmwA, "app", "Projected", metav1.ConditionFalse, `unknown parameter "zone"`, "configmaps/app/settings", "at 4 destinations (", `label or annotate`)
		f.expectEverywhere(t, "last good copy", func(_, _ string, _ []string, objs map[string]*unstructured.Unstructured) string {
			if got := field(objs, "configmaps/app/settings", "data", "extra"); got != "1" {
				return "extra is " + got + ", want the last good 1"
			}
			return ""
		})
		for _, dest := range f.sortedDestinations() {
			imw, name, _ := strings.Cut(dest, "/")
			f.kubectl(t, f.imws[imw], "label", "location", name, "zone=z-"+name)
		}
		f.expectEverywhere(t, "re-projected with the Location label", func(dest, _ string, _ []string, objs map[string]*unstructured.Unstructured) string {
			_, name, _ := strings.Cut(dest, "/")
			if got := field(objs, "configmaps/app/settings", "data", "zone"); got != "z-"+name {
				return "zone is " + got
			}
			return ""
		})
		f.condition(t, f.wmwA, "app", "Projected", metav1.ConditionTrue)
	})

	t.Run("kubectl edge diff shows what a change would do at each destination, and applies nothing", func(t *testing.T) {
		testDiff(t, f)
	})

	t.Run("a Customizer change re-projects", func(t *testing.T) {
		f.kubectl(t, f.wmwA, "patch", "customizer", "web", "-n", "app", "--type=json", "-p", `[{"op":"replace","path":"/replacements/0/value","value":"httpd:%(region)"}]`)
		f.expectEverywhere(t, "customizer change", func(_, region string, _ []string, objs map[string]*unstructured.Unstructured) string {
			if got := field(objs, "deployments/app/web", "spec", "template", "spec", "containers"); !strings.Contains(got, "httpd:"+region) {
				return "web image is not httpd:" + region + ": " + got
			}
			return ""
		})
	})

	t.Run("a deleted object and a deselected object go", func(t *testing.T) {
		f.kubectl(t, f.wmwA, "delete", "secret", "creds", "-n", "app")
		f.apply(t, f.wmwA, placement("app", "east, west", false))
		f.expectEverywhere(t, "deletions", func(_, _ string, names []string, _ map[string]*unstructured.Unstructured) string {
			if slices.Contains(names, "secrets/app/creds") || slices.Contains(names, "clusterroles/app-reader") {
				return "the deleted Secret or the deselected ClusterRole is still there"
			}
			if !slices.Contains(names, "deployments/app/web") {
				return "the Deployment went too"
			}
			return ""
		})
	})

	t.Run("objects from two workload workspaces that collide are a conflict on both placements", func(t *testing.T) {
		f.apply(t, f.wmwB, `apiVersion: v1
kind: Namespace
metadata: {name: app}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: app}
data: {from: b}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: only-b, namespace: app}
data: {from: b}
`)
		f.apply(t, f.wmwB, placement("b", "east", false))
		f.condition(t, f.wmwB, "b", "Conflict", metav1.ConditionTrue, "configmaps/app/settings")
		f.condition(t, f.wmwA, "app", "Conflict", metav1.ConditionTrue, "configmaps/app/settings")
		f.expectEverywhere(t, "conflict", func(_, region string, names []string, objs map[string]*unstructured.Unstructured) string {
			if got := field(objs, "configmaps/app/settings", "data", "region"); got != region {
				return "settings is not workspace a's: region is " + got
			}
			if got := field(objs, "configmaps/app/settings", "data", "from"); got != "<none>" {
				return "settings was overwritten by workspace b"
			}
			if region == "east" != slices.Contains(names, "configmaps/app/only-b") {
				return "only-b is not exactly in the east mailboxes"
			}
			return ""
		})
		f.kubectl(t, f.wmwB, "delete", "edgeplacement", "b")
		f.condition(t, f.wmwA, "app", "Conflict", metav1.ConditionFalse)
		f.expectEverywhere(t, "conflict gone", func(_, _ string, names []string, _ map[string]*unstructured.Unstructured) string {
			if slices.Contains(names, "configmaps/app/only-b") {
				return "only-b is still there"
			}
			return ""
		})
	})

	t.Run("the controller killed and restarted converges without recreating anything", func(t *testing.T) {
		before := assemblages(t, mbEast)
		f.ecm.Kill()
		f.kubectl(t, f.wmwA, "delete", "configmap", "settings", "-n", "app")
		f.kubectl(t, f.wmwA, "create", "configmap", "fresh", "-n", "app", "--from-literal=a=b")
		f.ecm.Restart()
		f.expectEverywhere(t, "after restart", func(_, _ string, names []string, _ map[string]*unstructured.Unstructured) string {
			if slices.Contains(names, "configmaps/app/settings") || !slices.Contains(names, "configmaps/app/fresh") {
				return "settings is still there or fresh is missing"
			}
			return ""
		})
		for name, a := range assemblages(t, mbEast) {
			if b, ok := before[name]; !ok || b.assemblage.UID != a.assemblage.UID {
				t.Errorf("assemblage %s was recreated across the restart", name)
			}
		}
	})

	t.Run("an assemblage edited or deleted by hand is put back", func(t *testing.T) {
		for name := range assemblages(t, mbEast) {
			f.kubectl(t, mbEast, "patch", "assemblage", name, "--type=merge", "-p", `{"spec":{"data":"AAAA"}}`)
		}
		f.expectEverywhere(t, "repaired", func(_, _ string, names []string, _ map[string]*unstructured.Unstructured) string {
			if !slices.Contains(names, "deployments/app/web") {
				return "web is missing"
			}
			return ""
		})
		for name := range assemblages(t, mbEast) {
			f.kubectl(t, mbEast, "delete", "assemblage", name)
		}
		f.expectEverywhere(t, "recreated", func(_, _ string, names []string, _ map[string]*unstructured.Unstructured) string {
			if !slices.Contains(names, "deployments/app/web") {
				return "web is missing"
			}
			return ""
		})
	})

	t.Run("a dropped destination and a deleted placement leave nothing behind", func(t *testing.T) {
		f.apply(t, f.wmwA, placement("app", "east", false))
		f.expectEverywhere(t, "west dropped", func(_, region string, names []string, _ map[string]*unstructured.Unstructured) string {
			if (region == "west") != (len(names) == 0) {
				return "west mailboxes must be empty and east ones not"
			}
			return ""
		})
		f.kubectl(t, f.wmwA, "delete", "edgeplacement", "app")
		f.expectEverywhere(t, "placement deleted", func(_, _ string, names []string, _ map[string]*unstructured.Unstructured) string {
			if len(names) != 0 {
				return "objects remain"
			}
			return ""
		})
		for _, dest := range f.sortedDestinations() {
			if left := assemblages(t, f.mailbox(t, dest)); len(left) != 0 {
				t.Errorf("assemblages remain in the mailbox of %s", dest)
			}
		}
		f.kubectl(t, mbEast, "get", "configmap", "by-hand", "-n", "default")
	})
}
