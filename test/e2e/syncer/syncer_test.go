package syncer

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kcp-dev/edge-mc/config/monitoring"
	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/test/framework"
)

const widgetCRD = `apiVersion: apiextensions.k8s.io/v1
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
metadata:
  name: settings
  namespace: app
  annotations: {edge.kcp.io/expand-parameters: "true"}
data: {region: "%(region)"}
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
`

const placement = `apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: app}
spec:
  locationSelectors: [{matchLabels: {region: east}}]
  downsync:
  - namespaces: [app]
  - apiGroup: rbac.authorization.k8s.io
    resources: [clusterroles]
    labelSelectors: [{matchLabels: {app: demo}}]
  upsync:
  - resources: [configmaps]
    namespaces: [app]
    names: [report]
`

// objectID names an object of the workload.
type objectID struct {
	gvr             schema.GroupVersionResource
	namespace, name string
}

var downsynced = []objectID{
	{namespaces, "", "app"}, {deployments, "app", "web"}, {configMaps, "app", "settings"}, {secrets, "app", "creds"},
	{services, "app", "web"}, {crds, "", "widgets.example.com"}, {widgets, "app", "w1"}, {clusterRoles, "", "app-reader"},
	{configMaps, "app", "local-tuning"},
}

// TestFullCycle runs a workload through a logical-cluster edge cluster: down-sync (customised),
// status back to the mailbox, up-sync, drift repair, create-only, and deletion.
func TestFullCycle(t *testing.T) {
	t.Parallel()
	pending := framework.StartLogicalPClusters(t, "edge1")
	f := setUp(t, map[string]string{"edge1": "east"})
	edge := pending()["edge1"]
	syncer := framework.StartSyncer(t, f.ESPW, f.IMW, "edge1", edge)
	mb := f.Mailbox(t, "edge1")
	mailbox := framework.KCP(t).DynamicClient(t, mb)
	ec := edge.DynamicClient(t)

	f.Apply(t, f.WMW, widgetCRD)
	framework.EventuallyCRDEstablished(t, f.WMW, "widgets.example.com")
	f.Apply(t, f.WMW, workload)
	f.Apply(t, f.WMW, placement)

	// Down-sync: every selected object, customised, marked as created by this syncer.
	owner := syncer.UID + ".syncer.edge.kcp.io/owner"
	uids := map[objectID]string{}
	for _, o := range downsynced {
		u := eventually(t, "down-sync", ec, o.gvr, o.namespace, o.name, func(u *unstructured.Unstructured) string {
			if u == nil {
				return "absent"
			}
			if u.GetLabels()[owner] != "created" {
				return "not marked as created by the syncer: labels " + strings.Join(keys(u.GetLabels()), ",")
			}
			return ""
		})
		uids[o] = string(u.GetUID())
	}
	eventually(t, "customised", ec, configMaps, "app", "settings", fieldIs("east", "data", "region"))
	// The heartbeat shows on the SyncTarget.
	eventually(t, "heartbeat", framework.KCP(t).DynamicClient(t, f.IMW), syncTargets, "", "edge1", func(u *unstructured.Unstructured) string {
		if s, reason, msg := framework.ConditionStatus(u, "SyncerReady"); s != metav1.ConditionTrue {
			return fmt.Sprintf("SyncerReady is %s (%s: %s)", s, reason, msg)
		}
		return ""
	})
	if u := framework.GetObject(t, ec, secrets, "app", "creds"); u == nil || fieldOf(u, "data", "password") != "czNjcmV0" {
		t.Errorf("the Secret's data did not arrive as written: %v", u)
	}

	t.Run("kubectl edge version names the leader's and the syncer's versions", func(t *testing.T) {
		// One build made kubectl-edge, edge-controller-manager and edge-syncer: the fleet runs the
		// client's version.
		var client struct{ Client struct{ Version string } }
		js := framework.KubectlEdge(t, "version", "--client", "-o", "json").MustSucceed(t).Stdout
		if err := json.Unmarshal([]byte(js), &client); err != nil || client.Client.Version == "" {
			t.Fatalf("kubectl edge version --client -o json: %v\n%s", err, js)
		}
		want := client.Client.Version
		framework.Eventually(t, framework.Converge, func() (bool, string) {
			var view struct {
				Controllers []struct{ Version, Holder string }
				Syncers     struct {
					Versions []struct {
						Version     string
						SyncTargets []string
					}
				}
			}
			js := framework.KubectlEdge(t, "version", "--imw", f.IMW.String(), "--espw", f.ESPW.String(), "-o", "json").MustSucceed(t).Stdout
			if err := json.Unmarshal([]byte(js), &view); err != nil {
				return false, fmt.Sprintf("kubectl edge version -o json: %v: %s", err, js)
			}
			ok := len(view.Controllers) == 1 && view.Controllers[0].Version == want && view.Controllers[0].Holder != "" &&
				len(view.Syncers.Versions) == 1 && view.Syncers.Versions[0].Version == want && slices.Equal(view.Syncers.Versions[0].SyncTargets, []string{"edge1"})
			return ok, fmt.Sprintf("kubectl edge version: want the leader and edge1's syncer at %s, got %s", want, js)
		})
		text := framework.KubectlEdge(t, "version", "--imw", f.IMW.String(), "--espw", f.ESPW.String()).MustSucceed(t).Stdout
		if !strings.Contains(text, "edge-controller-manager: "+want) || !strings.Contains(text, "  "+want+": 1") {
			t.Errorf("kubectl edge version:\n%s", text)
		}
	})

	t.Run("status goes back to the assemblage's status", func(t *testing.T) {
		dep := framework.GetObject(t, ec, deployments, "app", "web")
		unstructured.SetNestedField(dep.Object, int64(2), "status", "readyReplicas")
		unstructured.SetNestedField(dep.Object, int64(2), "status", "replicas")
		if _, err := ec.Resource(deployments).Namespace("app").UpdateStatus(framework.Context(t, 10*time.Second), dep, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		objectReported(t, mailbox, placementAssemblage(t, f, "app"), "deployments.apps/app/web", func(o *edgev1alpha1.ObjectState) string {
			if o.Status == nil || !strings.Contains(string(o.Status.Raw), `"readyReplicas":2`) {
				return fmt.Sprintf("state %s, status %v", o.State, o.Status)
			}
			return ""
		})
	})

	t.Run("up-sync: created, updated and deleted with the original", func(t *testing.T) {
		report := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "report", "namespace": "app"},
			"data":     map[string]any{"result": "ok"},
		}}
		if _, err := ec.Resource(configMaps).Namespace("app").Create(framework.Context(t, 10*time.Second), report, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "up-synced", mailbox, configMaps, "app", "report", func(u *unstructured.Unstructured) string {
			if why := fieldIs("ok", "data", "result")(u); why != "" {
				return why
			}
			if u.GetLabels()["edge.kcp.io/upsynced"] != "true" || u.GetAnnotations()["edge.kcp.io/upsynced-from"] != "edge1" {
				return "not marked as up-synced from edge1"
			}
			return ""
		})
		framework.Kubectl(t, "--kubeconfig", edge.KubeconfigPath, "patch", "configmap", "report", "-n", "app", "--type=merge", "-p", `{"data":{"result":"better"}}`).MustSucceed(t)
		eventually(t, "up-synced update", mailbox, configMaps, "app", "report", fieldIs("better", "data", "result"))
		// An edge object that no rule covers stays at the edge.
		framework.Kubectl(t, "--kubeconfig", edge.KubeconfigPath, "create", "configmap", "scratch", "-n", "app", "--from-literal=a=b").MustSucceed(t)
		framework.Kubectl(t, "--kubeconfig", edge.KubeconfigPath, "delete", "configmap", "report", "-n", "app").MustSucceed(t)
		eventually(t, "up-synced delete", mailbox, configMaps, "app", "report", absent)
		if framework.GetObject(t, mailbox, configMaps, "app", "scratch") != nil {
			t.Errorf("configmap scratch, which no upsync rule covers, reached the mailbox")
		}
	})

	t.Run("drift is repaired, create-only objects are left alone", func(t *testing.T) {
		framework.Kubectl(t, "--kubeconfig", edge.KubeconfigPath, "patch", "configmap", "settings", "-n", "app", "--type=merge", "-p", `{"data":{"region":"hacked"}}`).MustSucceed(t)
		framework.Kubectl(t, "--kubeconfig", edge.KubeconfigPath, "delete", "secret", "creds", "-n", "app").MustSucceed(t)
		framework.Kubectl(t, "--kubeconfig", edge.KubeconfigPath, "patch", "configmap", "local-tuning", "-n", "app", "--type=merge", "-p", `{"data":{"threads":"16"}}`).MustSucceed(t)
		eventually(t, "edit repaired", ec, configMaps, "app", "settings", fieldIs("east", "data", "region"))
		eventually(t, "delete repaired", ec, secrets, "app", "creds", present)
		// The repair is reported as an Event on the object.
		framework.Eventually(t, converge, func() (bool, string) {
			out := framework.Kubectl(t, "--kubeconfig", edge.KubeconfigPath, "get", "events", "-n", "app", "--field-selector", "reason=DriftRepaired", "-o", "name")
			return strings.Count(out.Stdout, "\n") >= 2, "DriftRepaired events: " + out.Stdout
		})
		time.Sleep(3 * time.Second) // give the syncer time to (wrongly) act on the create-only object
		if got := fieldOf(framework.GetObject(t, ec, configMaps, "app", "local-tuning"), "data", "threads"); got != "16" {
			t.Errorf("the create-only ConfigMap was changed back at the edge: threads = %s", got)
		}
		// Unchanged objects were not recreated.
		for _, o := range []objectID{{deployments, "app", "web"}, {services, "app", "web"}, {widgets, "app", "w1"}} {
			if u := framework.GetObject(t, ec, o.gvr, o.namespace, o.name); u == nil || string(u.GetUID()) != uids[o] {
				t.Errorf("%v was recreated or deleted", o)
			}
		}
	})

	t.Run("an update in the workload workspace arrives", func(t *testing.T) {
		f.Kubectl(t, f.WMW, "patch", "deployment", "web", "-n", "app", "--type=merge", "-p", `{"spec":{"replicas":3}}`)
		eventually(t, "update", ec, deployments, "app", "web", fieldIs("3", "spec", "replicas"))
	})

	t.Run("every metric the shipped dashboard and alerts read is exported", func(t *testing.T) {
		// While the placement is there, so that its conditions are counted.
		exported := monitoring.Exported(framework.ScrapeMetrics(t, f.ECM.HTTPAddress) + framework.ScrapeMetrics(t, syncer.HTTPAddress))
		exprs, err := monitoring.Expressions()
		if err != nil {
			t.Fatal(err)
		}
		for where, list := range exprs {
			for _, expr := range list {
				for _, name := range monitoring.MetricNames(expr) {
					if name != "up" && !exported[name] { // Prometheus makes up itself
						t.Errorf("%s reads %s, which neither edge-controller-manager nor edge-syncer exports: %s", where, name, expr)
					}
				}
			}
		}
	})

	t.Run("what leaves the mailbox leaves the edge", func(t *testing.T) {
		f.Kubectl(t, f.WMW, "delete", "service", "web", "-n", "app")
		eventually(t, "deleted object", ec, services, "app", "web", absent)
		f.Kubectl(t, f.WMW, "delete", "edgeplacement", "app")
		for _, o := range downsynced {
			if o.gvr == services {
				continue
			}
			eventually(t, "placement deleted", ec, o.gvr, o.namespace, o.name, absent)
		}
		// The mailbox's SyncerConfig reports the generation acted on, without errors.
		cfg := eventually(t, "syncer report", mailbox, syncerConfigs, "", "the-one", func(u *unstructured.Unstructured) string {
			if u == nil {
				return "absent"
			}
			if u.GetGeneration() != nestedInt(u, "status", "observedGeneration") {
				return "status.observedGeneration is behind"
			}
			return ""
		})
		if errs, _, _ := unstructured.NestedStringSlice(cfg.Object, "status", "errors"); len(errs) > 0 {
			t.Errorf("SyncerConfig status.errors = %v", errs)
		}
	})
	if syncer.Exited() {
		t.Errorf("edge-syncer exited")
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
