package api

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/test/framework"
)

// setUp runs init and the two ensure verbs, as a user would, in a fresh workspace of the test.
func setUp(t *testing.T) (espw, imw, wmw logicalcluster.Path) {
	t.Helper()
	base := framework.NewWorkspace(t)
	espw, imw, wmw = base.Join("espw"), base.Join("imw"), base.Join("wmw")
	framework.KubectlEdge(t, "init", "--espw", espw.String()).MustSucceed(t)
	framework.KubectlEdge(t, "ensure", "imw", imw.String(), "--espw", espw.String()).MustSucceed(t)
	framework.KubectlEdge(t, "ensure", "wmw", wmw.String(), "--espw", espw.String()).MustSucceed(t)
	return espw, imw, wmw
}

func TestInitEnsureAndEveryKind(t *testing.T) {
	t.Parallel()
	s := framework.KCP(t)
	espw, imw, wmw := setUp(t)

	framework.Kubectl(t, append([]string{"--server", s.ServerURL(imw)}, framework.ApplyArgs("-f", "testdata/inventory.yaml")...)...).MustSucceed(t)
	framework.Kubectl(t, append([]string{"--server", s.ServerURL(wmw)}, framework.ApplyArgs("-f", "testdata/workload.yaml")...)...).MustSucceed(t)
	// A workspace of the lean mailbox type, as the mailbox controller makes them, serves the
	// SyncerConfig by its one default binding.
	mailbox := espw.Join("test-mailbox")
	framework.KubectlApply(t, s.ServerURL(espw), fmt.Sprintf(`apiVersion: tenancy.kcp.io/v1alpha1
kind: Workspace
metadata: {name: test-mailbox}
spec: {type: {name: %s, path: "%s"}}
`, edgev1alpha1.MailboxWorkspaceType, espw)).MustSucceed(t)
	framework.Kubectl(t, "--server", s.ServerURL(espw), "wait", "--for=jsonpath={.status.phase}=Ready", "workspace/test-mailbox", "--timeout=60s").MustSucceed(t)
	framework.Kubectl(t, append([]string{"--server", s.ServerURL(mailbox)}, framework.ApplyArgs("-f", "testdata/mailbox.yaml")...)...).MustSucceed(t)

	ctx := framework.Context(t, time.Minute)
	type want struct {
		ws        logicalcluster.Path
		gvr       schema.GroupVersionResource
		namespace string
		name      string
	}
	edge := edgev1alpha1.SchemeGroupVersion
	for _, w := range []want{
		{imw, edge.WithResource("synctargets"), "", "edge-1"},
		{imw, edge.WithResource("locations"), "", "edge-1"},
		{wmw, edge.WithResource("edgeplacements"), "", "web"},
		{wmw, edge.WithResource("singleplacementslices"), "", "web-0"},
		{wmw, edge.WithResource("customizers"), "demo", "web"},
		{mailbox, edge.WithResource("syncerconfigs"), "", "the-one"},
		{wmw, schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "demo", "web"},
		{wmw, schema.GroupVersionResource{Version: "v1", Resource: "services"}, "demo", "web"},
	} {
		obj, err := s.DynamicClient(t, w.ws).Resource(w.gvr).Namespace(w.namespace).Get(ctx, w.name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("%s %s/%s in %s: %v", w.gvr.Resource, w.namespace, w.name, w.ws, err)
			continue
		}
		t.Logf("%s %s/%s is in %s", obj.GetKind(), w.namespace, w.name, w.ws)
	}

	// What was written is what is read back: fields of nested types survive the schemas.
	dep, err := s.KubeClient(t, wmw).AppsV1().Deployments("demo").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := dep.Spec.Template.Spec.Containers
	if *dep.Spec.Replicas != 2 || len(c) != 1 || c[0].Image != "nginx:1.27" || c[0].Resources.Limits.Cpu().String() != "100m" ||
		dep.Spec.Template.Labels["app"] != "web" {
		t.Errorf("Deployment read back differs from what was applied: replicas %d, containers %+v, template labels %v",
			*dep.Spec.Replicas, c, dep.Spec.Template.Labels)
	}
	loc, err := s.DynamicClient(t, imw).Resource(edge.WithResource("locations")).Get(ctx, "edge-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	exprs, _, _ := unstructured.NestedSlice(loc.Object, "spec", "instanceSelector", "matchExpressions")
	if len(exprs) != 2 {
		t.Errorf("Location's instanceSelector.matchExpressions: got %d, want 2", len(exprs))
	}

	// The printer columns a user sees.
	out := framework.Kubectl(t, "--server", s.ServerURL(wmw), "get", "epl").MustSucceed(t).Stdout
	for _, col := range []string{"LOCATIONS", "DESTINATIONS", "SCHEDULED", "READY", "AGE", "web"} {
		if !strings.Contains(out, col) {
			t.Errorf("kubectl get epl lacks %q:\n%s", col, out)
		}
	}
	out = framework.Kubectl(t, "--server", s.ServerURL(imw), "get", "synctargets").MustSucceed(t).Stdout
	for _, col := range []string{"MAILBOXREADY", "SYNCERREADY", "AGE", "edge-1"} {
		if !strings.Contains(out, col) {
			t.Errorf("kubectl get synctargets lacks %q:\n%s", col, out)
		}
	}
	out = framework.Kubectl(t, "--server", s.ServerURL(imw), "get", "synctargets", "-o", "wide").MustSucceed(t).Stdout
	for _, col := range []string{"MAILBOX", "SYNCERCOMPATIBLE"} {
		if !strings.Contains(out, col) {
			t.Errorf("kubectl get synctargets -o wide lacks %q:\n%s", col, out)
		}
	}
}

func TestInitAndEnsureAreIdempotent(t *testing.T) {
	t.Parallel()
	espw, imw, wmw := setUp(t)
	ctx := framework.Context(t, time.Minute)

	before := resourceVersions(ctx, t, espw, imw, wmw)
	if len(before) < 20 {
		t.Fatalf("expected at least 20 objects from init and ensure, found %d: %v", len(before), before)
	}
	out := framework.KubectlEdge(t, "init", "--espw", espw.String()).MustSucceed(t).Stdout
	if !strings.Contains(out, "0 created, 0 updated") {
		t.Errorf("second init should create and update nothing, said:\n%s", out)
	}
	framework.KubectlEdge(t, "ensure", "imw", imw.String(), "--espw", espw.String()).MustSucceed(t)
	framework.KubectlEdge(t, "ensure", "wmw", wmw.String(), "--espw", espw.String()).MustSucceed(t)
	after := resourceVersions(ctx, t, espw, imw, wmw)
	for key, rv := range before {
		if after[key] != rv {
			t.Errorf("%s changed: %s before, %q after", key, rv, after[key])
		}
	}
	if len(after) != len(before) {
		t.Errorf("second run changed the set of objects: %d before, %d after", len(before), len(after))
	}
}

// resourceVersions records the version of everything init and ensure write: the
// resourceVersion of the immutable APIResourceSchemas, and the generation (which only a change of
// spec moves) of the objects that kcp's own controllers also write, such as APIBindings, whose
// labels kcp's permission-claim controller updates at its own pace.
func resourceVersions(ctx context.Context, t *testing.T, espw, imw, wmw logicalcluster.Path) map[string]string {
	t.Helper()
	kcp := framework.KCP(t).KCP
	rvs := map[string]string{}
	schemas, err := kcp.Cluster(espw).ApisV1alpha1().APIResourceSchemas().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range schemas.Items {
		rvs["APIResourceSchema "+o.Name] = o.ResourceVersion
	}
	exports, err := kcp.Cluster(espw).ApisV1alpha2().APIExports().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range exports.Items {
		rvs["APIExport "+o.Name] = generation(o.Generation)
	}
	for _, ws := range []logicalcluster.Path{espw, imw, wmw} {
		parent, _ := ws.Parent()
		w, err := kcp.Cluster(parent).TenancyV1alpha1().Workspaces().Get(ctx, ws.Base(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rvs["Workspace "+ws.String()] = generation(w.Generation)
	}
	for _, ws := range []logicalcluster.Path{imw, wmw} {
		bindings, err := kcp.Cluster(ws).ApisV1alpha2().APIBindings().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range bindings.Items {
			rvs[fmt.Sprintf("APIBinding %s in %s", o.Name, ws)] = generation(o.Generation)
		}
	}
	return rvs
}

func TestMalformedObjectsAreRefusedAtAdmission(t *testing.T) {
	t.Parallel()
	s := framework.KCP(t)
	_, imw, wmw := setUp(t)

	for _, tc := range []struct {
		name     string
		ws       logicalcluster.Path
		manifest string
		// wantInError are the parts of the message that tell the user what to fix.
		wantInError []string
	}{{
		name: "unknown selector operator",
		ws:   wmw,
		manifest: `apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: bad-operator}
spec:
  locationSelectors:
  - matchExpressions: [{key: env, operator: Equals, values: [prod]}]`,
		wantInError: []string{`spec.locationSelectors[0].matchExpressions[0].operator`, `Unsupported value: "Equals"`, `"In", "NotIn", "Exists", "DoesNotExist"`},
	}, {
		name: "upsync of RBAC",
		ws:   wmw,
		manifest: `apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: upsync-rbac}
spec:
  upsync:
  - {apiGroup: rbac.authorization.k8s.io, resources: [clusterrolebindings]}`,
		wantInError: []string{`spec.upsync`, "objects of this API group cannot be up-synced", "who may do what there (RBAC)"},
	}, {
		name: "In without values",
		ws:   wmw,
		manifest: `apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: in-without-values}
spec:
  downsync:
  - labelSelectors:
    - matchExpressions: [{key: app, operator: In}]`,
		wantInError: []string{`spec.downsync[0].labelSelectors[0].matchExpressions[0]`, "operator In and NotIn need at least one value"},
	}, {
		name: "label key with a space",
		ws:   wmw,
		manifest: `apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: bad-key}
spec:
  locationSelectors:
  - matchExpressions: [{key: "my env", operator: Exists}]`,
		wantInError: []string{`spec.locationSelectors[0].matchExpressions[0].key`, `"my env"`},
	}, {
		name: "rollout percentage over 100",
		ws:   wmw,
		manifest: `apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: bad-rollout}
spec:
  rollout: {maxInFlight: 150%}`,
		wantInError: []string{"spec.rollout.maxInFlight", "maxInFlight must be a positive number or a percentage from 1% to 100%"},
	}, {
		name: "Customizer with an empty path",
		ws:   wmw,
		manifest: `apiVersion: v1
kind: Namespace
metadata: {name: demo}
---
apiVersion: edge.kcp.io/v1alpha1
kind: Customizer
metadata: {name: empty-path, namespace: demo}
replacements:
- path: ""
  value: 3`,
		wantInError: []string{"replacements[0].path", "at least 1 chars long"},
	}, {
		name: "Customizer path that is not a JSONPath",
		ws:   wmw,
		manifest: `apiVersion: edge.kcp.io/v1alpha1
kind: Customizer
metadata: {name: not-jsonpath, namespace: default}
replacements:
- path: spec.replicas
  value: 3`,
		wantInError: []string{"replacements[0].path", "path must be a JSONPath such as $.spec.replicas"},
	}, {
		name: "Location selector with a bad operator",
		ws:   imw,
		manifest: `apiVersion: edge.kcp.io/v1alpha1
kind: Location
metadata: {name: bad}
spec:
  instanceSelector:
    matchExpressions: [{key: region, operator: Exists, values: [x]}]`,
		wantInError: []string{"spec.instanceSelector.matchExpressions[0]", "Exists and DoesNotExist take no values"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			res := framework.KubectlApply(t, s.ServerURL(tc.ws), tc.manifest).MustFail(t)
			for _, want := range tc.wantInError {
				if !strings.Contains(res.Stderr, want) {
					t.Errorf("the error should contain %q; it was:\n%s", want, res.Stderr)
				}
			}
		})
	}

	// The same kinds, well formed, are accepted: the refusals above are about the input.
	framework.KubectlApply(t, s.ServerURL(wmw), `apiVersion: edge.kcp.io/v1alpha1
kind: EdgePlacement
metadata: {name: good}
spec:
  locationSelectors:
  - matchExpressions: [{key: env, operator: In, values: [prod]}, {key: example.com/tier, operator: Exists}]
  rollout: {maxInFlight: 100%}
---
apiVersion: edge.kcp.io/v1alpha1
kind: Customizer
metadata: {name: good, namespace: default}
replacements:
- path: $.spec.replicas
  value: 3`).MustSucceed(t)
}

func generation(g int64) string { return fmt.Sprintf("generation %d", g) }
