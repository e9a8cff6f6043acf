package translator

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/transport"
	"github.com/kcp-dev/edge-mc/test/framework"
)

// converge is how long the controllers may take to reflect a change.
const converge = 60 * time.Second

var (
	placementsGVR  = edgev1alpha1.SchemeGroupVersion.WithResource("edgeplacements")
	syncTargetsGVR = edgev1alpha1.SchemeGroupVersion.WithResource("synctargets")
	syncerConfigs  = edgev1alpha1.SchemeGroupVersion.WithResource("syncerconfigs")
	assemblagesGVR = edgev1alpha1.SchemeGroupVersion.WithResource("assemblages")
	partsGVR       = edgev1alpha1.SchemeGroupVersion.WithResource("assemblageparts")
)

// copyKinds are the resources the tests look for in mailboxes, by short name.
var copyKinds = map[string]schema.GroupVersionResource{
	"namespaces":   {Version: "v1", Resource: "namespaces"},
	"configmaps":   {Version: "v1", Resource: "configmaps"},
	"secrets":      {Version: "v1", Resource: "secrets"},
	"services":     {Version: "v1", Resource: "services"},
	"deployments":  {Group: "apps", Version: "v1", Resource: "deployments"},
	"widgets":      {Group: "example.com", Version: "v1", Resource: "widgets"},
	"crds":         {Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"},
	"clusterroles": {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
}

// fleet is one test's workspaces and controller manager.
type fleet struct {
	espw, wmwA, wmwB logicalcluster.Path
	imws             map[string]logicalcluster.Path
	// destinations maps "<imw>/<synctarget>" to its region.
	destinations map[string]string
	ecm          *framework.ControllerManager
}

// setUp makes the ESPW, workload workspaces a and b, inventory workspaces imw1 and imw2 with a
// SyncTarget and Location in regions east and west each, and starts edge-controller-manager.
func setUp(t *testing.T) *fleet {
	t.Helper()
	base := framework.NewWorkspace(t)
	f := &fleet{espw: base.Join("espw"), wmwA: base.Join("wmw-a"), wmwB: base.Join("wmw-b"),
		imws: map[string]logicalcluster.Path{}, destinations: map[string]string{}}
	framework.KubectlEdge(t, "init", "--espw", f.espw.String()).MustSucceed(t)
	for _, wmw := range []logicalcluster.Path{f.wmwA, f.wmwB} {
		framework.KubectlEdge(t, "ensure", "wmw", wmw.String(), "--espw", f.espw.String()).MustSucceed(t)
	}
	for _, imw := range []string{"imw1", "imw2"} {
		f.imws[imw] = base.Join(imw)
		framework.KubectlEdge(t, "ensure", "imw", f.imws[imw].String(), "--espw", f.espw.String()).MustSucceed(t)
		for _, region := range []string{"east", "west"} {
			name := region + "-" + imw
			framework.KubectlEdge(t, "ensure", "location", name, "region="+region, "--imw", f.imws[imw].String(), "--espw", f.espw.String()).MustSucceed(t)
			f.destinations[imw+"/"+name] = region
		}
	}
	f.ecm = framework.StartControllerManager(t, f.espw, "--controllers", "mailbox,scheduler,placement-translator,upsync")
	return f
}

func (f *fleet) apply(t *testing.T, ws logicalcluster.Path, manifest string) {
	t.Helper()
	framework.KubectlApply(t, framework.KCP(t).ServerURL(ws), manifest).MustSucceed(t)
}

func (f *fleet) kubectl(t *testing.T, ws logicalcluster.Path, args ...string) {
	t.Helper()
	framework.Kubectl(t, append([]string{"--server", framework.KCP(t).ServerURL(ws)}, args...)...).MustSucceed(t)
}

// sortedDestinations are the keys of f.destinations, sorted.
func (f *fleet) sortedDestinations() []string {
	var out []string
	for d := range f.destinations {
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}

// mailbox returns the mailbox path of a destination "<imw>/<synctarget>", once it has one.
func (f *fleet) mailbox(t *testing.T, dest string) logicalcluster.Path {
	t.Helper()
	imw, name, _ := strings.Cut(dest, "/")
	var path string
	framework.Eventually(t, converge, func() (bool, string) {
		st, err := framework.KCP(t).DynamicClient(t, f.imws[imw]).Resource(syncTargetsGVR).Get(framework.Context(t, 10*time.Second), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		path, _, _ = unstructured.NestedString(st.Object, "status", "mailboxWorkspace")
		return path != "", "SyncTarget " + dest + " has no mailbox yet"
	})
	return logicalcluster.NewPath(path)
}

// copies lists the objects that the assemblages of a mailbox carry as "<kind>/<namespace>/<name>"
// (or "<kind>/<name>"), sorted, decoding each assemblage with its parts as the syncer does; an
// assemblage that does not decode is listed as "undecodable/<name>".
func copies(t *testing.T, mb logicalcluster.Path) ([]string, map[string]*unstructured.Unstructured) {
	t.Helper()
	var names []string
	objs := map[string]*unstructured.Unstructured{}
	for _, a := range assemblages(t, mb) {
		doc, err := transport.DecodeAssemblage(a.assemblage, a.parts)
		if err != nil {
			// Listed, so that a wait sees it and waits for the translator to put it right.
			names = append(names, "undecodable/"+a.assemblage.Name)
			continue
		}
		for _, e := range doc.Objects {
			kind := e.Resource
			for short, gvr := range copyKinds {
				if gvr.GroupResource() == e.GVR().GroupResource() {
					kind = short
				}
			}
			k := e.Key()
			id := kind + "/" + k.Name
			if k.Namespace != "" {
				id = kind + "/" + k.Namespace + "/" + k.Name
			}
			names = append(names, id)
			objs[id] = &unstructured.Unstructured{Object: e.Object}
			if e.Sealed != nil {
				objs[id].Object[sealedFor] = e.Sealed.KeyID
			}
		}
	}
	sort.Strings(names)
	return names, objs
}

// sealedFor is the field that copies adds to a sealed object's clear part: the id of the key it
// is sealed for.
const sealedFor = "(sealed for)"

// publishKey does what a destination's syncer does when it starts: it publishes a public key in
// its mailbox's SyncerConfig status. It returns the key pair.
func (f *fleet) publishKey(t *testing.T, dest string) *transport.KeyPair {
	t.Helper()
	kp, err := transport.NewKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	mb := f.mailbox(t, dest)
	patch := fmt.Sprintf(`{"status":{"publicKey":%q,"keyID":%q}}`, transport.EncodePublicKey(kp.Public), transport.KeyID(kp.Public))
	framework.Eventually(t, converge, func() (bool, string) {
		_, err := framework.KCP(t).DynamicClient(t, mb).Resource(syncerConfigs).Patch(framework.Context(t, 10*time.Second),
			edgev1alpha1.SyncerConfigName, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
		if err != nil {
			return false, "publishing a key in the SyncerConfig of " + dest + ": " + err.Error()
		}
		return true, ""
	})
	return kp
}

// documentsHold says whether the decoded documents of a mailbox's assemblages hold any of the
// strings.
func documentsHold(t *testing.T, mb logicalcluster.Path, values ...string) bool {
	t.Helper()
	for _, a := range assemblages(t, mb) {
		doc, err := transport.DecodeAssemblage(a.assemblage, a.parts)
		if err != nil {
			continue
		}
		raw, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range values {
			if strings.Contains(string(raw), v) {
				return true
			}
		}
	}
	return false
}

// mailboxAssemblage is an assemblage of a mailbox with its parts.
type mailboxAssemblage struct {
	assemblage *edgev1alpha1.Assemblage
	parts      []*edgev1alpha1.AssemblagePart
}

// assemblages reads the assemblages of a mailbox, with their parts, by name.
func assemblages(t *testing.T, mb logicalcluster.Path) map[string]mailboxAssemblage {
	t.Helper()
	client := framework.KCP(t).DynamicClient(t, mb)
	list, err := client.Resource(assemblagesGVR).List(framework.Context(t, 10*time.Second), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing assemblages in %s: %v", mb, err)
	}
	partList, err := client.Resource(partsGVR).List(framework.Context(t, 10*time.Second), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing assemblage parts in %s: %v", mb, err)
	}
	var parts []*edgev1alpha1.AssemblagePart
	for i := range partList.Items {
		p := &edgev1alpha1.AssemblagePart{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(partList.Items[i].Object, p); err != nil {
			t.Fatal(err)
		}
		parts = append(parts, p)
	}
	out := map[string]mailboxAssemblage{}
	for i := range list.Items {
		a := &edgev1alpha1.Assemblage{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, a); err != nil {
			t.Fatal(err)
		}
		out[a.Name] = mailboxAssemblage{assemblage: a, parts: parts}
	}
	return out
}

// expectEverywhere waits until every destination's mailbox passes check.
func (f *fleet) expectEverywhere(t *testing.T, what string, check func(dest, region string, names []string, objs map[string]*unstructured.Unstructured) string) {
	t.Helper()
	for _, dest := range f.sortedDestinations() {
		mb := f.mailbox(t, dest)
		framework.Eventually(t, converge, func() (bool, string) {
			names, objs := copies(t, mb)
			if why := check(dest, f.destinations[dest], names, objs); why != "" {
				return false, fmt.Sprintf("%s: mailbox of %s: %s (copies: %v)", what, dest, why, names)
			}
			return true, ""
		})
	}
}

// field reads a string field of a copy.
func field(objs map[string]*unstructured.Unstructured, id string, path ...string) string {
	u, ok := objs[id]
	if !ok {
		return "<no " + id + ">"
	}
	v, found, err := unstructured.NestedFieldNoCopy(u.Object, path...)
	if err != nil || !found {
		return "<none>"
	}
	return fmt.Sprint(v)
}

// condition waits until the placement's condition has the given status and its message
// contains every given fragment, and returns the message.
func (f *fleet) condition(t *testing.T, ws logicalcluster.Path, placement, condType string, status metav1.ConditionStatus, fragments ...string) string {
	t.Helper()
	return framework.EventuallyPlacementCondition(t, framework.KCP(t).DynamicClient(t, ws), placement, condType, status, fragments...)
}

// describeAssemblage shows an assemblage as JSON, its data replaced by the data's length and
// digest: what distinguishes one write of it from another.
func describeAssemblage(a *edgev1alpha1.Assemblage) string {
	if a == nil {
		return "absent"
	}
	c := a.DeepCopy()
	c.Spec.Data = []byte(fmt.Sprintf("%d bytes, digest %s", len(a.Spec.Data), transport.Digest(a.Spec.Data)))
	out, err := json.Marshal(c)
	if err != nil {
		return err.Error()
	}
	return string(out)
}
