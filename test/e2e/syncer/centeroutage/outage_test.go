package centeroutage

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/test/framework"
)

var (
	configMaps  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	namespaces  = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)

const workload = `apiVersion: v1
kind: Namespace
metadata: {name: app}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: app}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: stable, namespace: app}
data: {a: "1"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: deleted-meanwhile, namespace: app}
data: {a: "1"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: changing, namespace: app}
data: {version: "1"}
`

type objectID struct {
	gvr             schema.GroupVersionResource
	namespace, name string
}

// snapshot is each object's UID and resourceVersion at the edge.
func snapshot(t *testing.T, ec dynamic.Interface, ids []objectID) map[objectID][2]string {
	t.Helper()
	out := map[objectID][2]string{}
	for _, o := range ids {
		if u := framework.GetObject(t, ec, o.gvr, o.namespace, o.name); u != nil {
			out[o] = [2]string{string(u.GetUID()), u.GetResourceVersion()}
		} else {
			out[o] = [2]string{"absent", ""}
		}
	}
	return out
}

func applied(version string) func(a *edgev1alpha1.Assemblage) string {
	return func(a *edgev1alpha1.Assemblage) string {
		if a == nil || a.Status.AppliedVersion != version {
			return fmt.Sprintf("version %s is not applied yet", version)
		}
		return ""
	}
}

// TestCenterOutageWithAssemblages kills kcp for 45 s while a workload delivered by assemblages
// runs at the edge: nothing at the edge is deleted or written, except an object deleted there
// meanwhile, which is put back from what the syncer last read; /readyz says the center is away.
// After kcp is back, a new version is applied and nothing else is recreated.
func TestCenterOutageWithAssemblages(t *testing.T) {
	pending := framework.StartLogicalPClusters(t, "edge1")
	f := framework.NewMailboxFleet(t, map[string]string{"edge1": "east"})
	edge := pending()["edge1"]
	mbPath := f.Mailbox(t, "edge1")
	mailbox := framework.KCP(t).DynamicClient(t, mbPath)
	syncer := framework.StartSyncer(t, f.ESPW, f.IMW, "edge1", edge, "--heartbeat-interval", "5s")
	ec := edge.DynamicClient(t)

	a, parts := framework.EncodeAssemblage(t, "2outage", "app", framework.Entries(t, workload))
	a = framework.WriteAssemblage(t, mailbox, a, parts)
	b, parts := framework.EncodeAssemblage(t, "2outage", "other", framework.Entries(t,
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other, namespace: app}\ndata: {x: \"y\"}\n"))
	b = framework.WriteAssemblage(t, mailbox, b, parts)
	framework.EventuallyAssemblage(t, mailbox, a.Name, applied(a.Spec.Version))
	framework.EventuallyAssemblage(t, mailbox, b.Name, applied(b.Spec.Version))
	time.Sleep(5 * time.Second) // let the status writes settle
	ids := []objectID{{namespaces, "", "app"}, {deployments, "app", "web"}, {configMaps, "app", "stable"},
		{configMaps, "app", "changing"}, {configMaps, "app", "other"}}
	before := snapshot(t, ec, ids)

	kcp := framework.KCP(t)
	t.Log("killing kcp")
	kcp.Kill()
	down := time.Now()
	framework.Kubectl(t, "--kubeconfig", edge.KubeconfigPath, "delete", "configmap", "deleted-meanwhile", "-n", "app").MustSucceed(t)
	framework.EventuallyObject(t, "put back during the outage", ec, configMaps, "app", "deleted-meanwhile", framework.Present)
	framework.Eventually(t, 30*time.Second, func() (bool, string) {
		code, body, err := framework.Readyz(syncer.HTTPAddress)
		return err == nil && code == 503 && strings.Contains(body, "heartbeat"), fmt.Sprintf("/readyz: %d %s %v", code, body, err)
	})
	for time.Since(down) < 45*time.Second {
		time.Sleep(5 * time.Second)
		if now := snapshot(t, ec, ids); fmt.Sprint(now) != fmt.Sprint(before) {
			t.Fatalf("the edge changed while the center was down:\nbefore %v\nnow    %v", before, now)
		}
		if syncer.Exited() {
			t.Fatal("edge-syncer exited while the center was down")
		}
	}
	t.Log("restarting kcp")
	if err := kcp.Restart(); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	mailbox = kcp.DynamicClient(t, mbPath) // kcp made new admin credentials
	framework.Eventually(t, framework.Converge, func() (bool, string) {
		code, body, err := framework.Readyz(syncer.HTTPAddress)
		return err == nil && code == 200, fmt.Sprintf("/readyz: %d %s %v", code, body, err)
	})
	t.Logf("the syncer was ready again %s after kcp", time.Since(back).Round(100*time.Millisecond))

	v2, parts := framework.EncodeAssemblage(t, "2outage", "app", framework.Entries(t,
		strings.Replace(workload, `data: {version: "1"}`, `data: {version: "2"}`, 1)))
	framework.WriteAssemblage(t, mailbox, v2, parts)
	written := time.Now()
	framework.EventuallyObject(t, "the change after the outage", ec, configMaps, "app", "changing", framework.FieldIs("2", "data", "version"))
	t.Logf("the change written after the outage was at the edge %s later (%s after kcp was back)",
		time.Since(written).Round(100*time.Millisecond), time.Since(back).Round(100*time.Millisecond))
	framework.EventuallyAssemblage(t, mailbox, a.Name, applied(v2.Spec.Version))

	after := snapshot(t, ec, ids)
	for id, was := range before {
		now := after[id]
		if now[0] != was[0] {
			t.Errorf("%v was deleted or recreated: uid %s, now %s", id, was[0], now[0])
		}
		if id.name != "changing" && now[1] != was[1] {
			t.Errorf("%v, which did not change, was written: resourceVersion %s, now %s", id, was[1], now[1])
		}
	}
	if syncer.Exited() {
		t.Error("edge-syncer exited")
	}
}
