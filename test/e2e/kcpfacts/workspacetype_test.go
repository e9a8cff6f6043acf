package kcpfacts

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	apisv1alpha2 "github.com/kcp-dev/sdk/apis/apis/v1alpha2"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/espw"
	"github.com/kcp-dev/edge-mc/pkg/workspaces"
	"github.com/kcp-dev/edge-mc/test/framework"
)

// TestMailboxTypeBindsItsExportByItself: the mailbox controller makes each mailbox as a
// workspace of the WorkspaceType mailbox that `kubectl edge init` puts in the ESPW, and creates
// no APIBinding there: kcp makes the type's one default binding, to mailbox.edge.kcp.io, accepts
// the export's permission claims in it, and binds it. The mailbox then serves edge-mc's mailbox
// kinds and nothing else of any export, and the virtual workspace of mailbox.edge.kcp.io shows
// its claimed Leases (the syncer's heartbeat) to the controllers, for reading only, as the claims'
// verbs say.
func TestMailboxTypeBindsItsExportByItself(t *testing.T) {
	t.Parallel()
	s := framework.KCP(t)
	_, espwPath := initESPW(t)
	ctx := framework.Context(t, 5*time.Minute)

	// As the mailbox controller makes a mailbox.
	mailbox := espwPath.Join("mb-kcpfacts")
	start := time.Now()
	_, err := s.KCP.Cluster(espwPath).TenancyV1alpha1().Workspaces().Create(ctx, &tenancyv1alpha1.Workspace{
		ObjectMeta: metav1.ObjectMeta{Name: mailbox.Base()},
		Spec:       tenancyv1alpha1.WorkspaceSpec{Type: &tenancyv1alpha1.WorkspaceTypeReference{Name: edgev1alpha1.MailboxWorkspaceType, Path: espwPath.String()}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a workspace of the WorkspaceType %s in the ESPW %s: %v", edgev1alpha1.MailboxWorkspaceType, espwPath, err)
	}
	framework.Eventually(t, time.Minute, func() (bool, string) {
		ws, err := s.KCP.Cluster(espwPath).TenancyV1alpha1().Workspaces().Get(ctx, mailbox.Base(), metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		var conds []string
		for _, c := range ws.Status.Conditions {
			conds = append(conds, fmt.Sprintf("%s=%s (%s: %s)", c.Type, c.Status, c.Reason, c.Message))
		}
		return ws.Status.Phase == corev1alpha1.LogicalClusterPhaseReady, fmt.Sprintf("the workspace %s is %q, not Ready; its conditions: %v", mailbox, ws.Status.Phase, conds)
	})
	ready := time.Since(start)

	var binding apisv1alpha2.APIBinding
	framework.Eventually(t, time.Minute, func() (bool, string) {
		list, err := s.KCP.Cluster(mailbox).ApisV1alpha2().APIBindings().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		if len(list.Items) != 1 {
			var names []string
			for _, b := range list.Items {
				names = append(names, b.Name)
			}
			return false, fmt.Sprintf("the mailbox %s has %d APIBindings %v, want the one default binding of its type", mailbox, len(list.Items), names)
		}
		binding = list.Items[0]
		return binding.Status.Phase == apisv1alpha2.APIBindingPhaseBound, fmt.Sprintf("the APIBinding %s in %s is %q, not Bound", binding.Name, mailbox, binding.Status.Phase)
	})
	t.Logf("a workspace of type %s: Ready %s and its default APIBinding %s Bound %s after it was created",
		edgev1alpha1.MailboxWorkspaceType, ready.Round(100*time.Millisecond), binding.Name, time.Since(start).Round(100*time.Millisecond))
	if ref := binding.Spec.Reference.Export; ref == nil || ref.Name != edgev1alpha1.MailboxAPIExportName || ref.Path != espwPath.String() {
		t.Errorf("the mailbox's APIBinding %s binds %+v, want the APIExport %s in %s", binding.Name, binding.Spec.Reference, edgev1alpha1.MailboxAPIExportName, espwPath)
	}
	if got, want := len(binding.Status.ExportPermissionClaims), len(espw.MailboxClaims()); got != want {
		t.Errorf("the mailbox's APIBinding %s lists %d permission claims of %s, edge-mc declares %d", binding.Name, got, edgev1alpha1.MailboxAPIExportName, want)
	}
	for _, claim := range binding.Status.ExportPermissionClaims {
		if !accepted(binding.Spec.PermissionClaims, claim) {
			t.Errorf("kcp did not accept the claim on %s (verbs %v) in the mailbox's default APIBinding %s", claim.GroupResource, claim.Verbs, binding.Name)
		}
	}

	// The mailbox serves the mailbox kinds. Bound is not quite served: for a moment after, kcp
	// answers 429 "storage is (re)initializing", which clients retry (the controllers do).
	bound := time.Now()
	for _, path := range []string{"/apis/edge.kcp.io/v1alpha1/syncerconfigs", "/apis/edge.kcp.io/v1alpha1/assemblages", "/apis/edge.kcp.io/v1alpha1/assemblageparts"} {
		framework.Eventually(t, framework.Converge, func() (bool, string) {
			code, body := framework.Send(t, s.Base, framework.Get("list "+path+" in the mailbox", mailbox, path))
			return code == http.StatusOK, fmt.Sprintf("list %s in the mailbox %s: %d %s", path, mailbox, code, body)
		})
	}
	t.Logf("the mailbox kinds are served %s after the binding was seen Bound", time.Since(bound).Round(100*time.Millisecond))
	framework.ExpectStatus(t, "admin", s.Base, http.StatusNotFound,
		framework.Get("list SyncTargets in the mailbox (edge.kcp.io is not bound there)", mailbox, "/apis/edge.kcp.io/v1alpha1/synctargets"))

	// Through the export's virtual workspace the controllers see the mailbox's Leases, and only
	// mailboxes' (the ESPW, of another type, binds nothing of it).
	// A mailbox has no namespace until the mailbox controller makes the syncer's.
	apply(t, mailbox, "apiVersion: v1\nkind: Namespace\nmetadata: {name: default}\n---\napiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {name: kcpfacts, namespace: default}\nspec: {holderIdentity: kcpfacts}\n")
	url := endpointURL(t, espwPath, edgev1alpha1.MailboxAPIExportName)
	vw, vwConfig := virtualWorkspace(t, url)
	mbC := clusterOf(t, mailbox)
	names := map[logicalcluster.Name]string{mbC: mailbox.String()}
	framework.Eventually(t, time.Minute, func() (bool, string) {
		got := seen(t, vw, leasesGVR)
		return contains(got[mbC], "default/kcpfacts"), "the mailbox's Lease default/kcpfacts is not listed through the virtual workspace of " +
			edgev1alpha1.MailboxAPIExportName + "; listed: " + describe(got, names)
	})
	for cluster := range seen(t, vw, leasesGVR) {
		if cluster != mbC {
			t.Errorf("the virtual workspace of %s lists Leases of %s, which is not a mailbox of this ESPW", edgev1alpha1.MailboxAPIExportName, cluster)
		}
	}
	// The claims are for get, list and watch: writing a claimed kind is refused.
	framework.ExpectRefused(t, "admin through the virtual workspace of "+edgev1alpha1.MailboxAPIExportName, vwConfig, framework.Request{
		What: "create a ConfigMap in the mailbox (claimed for get, list and watch only)", Verb: http.MethodPost, Server: url,
		Path: mbC.Path().RequestPath() + "/api/v1/namespaces/default/configmaps",
		Body: `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "intruder"}}`,
	})
}

// accepted says whether claim is among the accepted claims with all its verbs, as the mailbox
// controller checks it.
func accepted(answers []apisv1alpha2.AcceptablePermissionClaim, claim apisv1alpha2.PermissionClaim) bool {
	for _, a := range answers {
		if a.State == apisv1alpha2.ClaimAccepted && a.EqualGRI(claim) && !slices.ContainsFunc(claim.Verbs, func(v string) bool { return !slices.Contains(a.Verbs, v) }) {
			return true
		}
	}
	return false
}

// TestDryRunWorkspaceCheckedForItsType: kcp's admission checks a workspace's type on a dry-run
// create too, which is how `kubectl edge init` waits until kcp admits mailboxes of the type it
// has just made (workspaces.WaitUntilTypeAdmitted): a type kcp knows passes at once, and one it
// does not know is refused, with kcp's answer in the error, until the wait ends.
func TestDryRunWorkspaceCheckedForItsType(t *testing.T) {
	t.Parallel()
	s := framework.KCP(t)
	_, espwPath := initESPW(t)
	ctx := framework.Context(t, 2*time.Minute)

	known := tenancyv1alpha1.WorkspaceTypeReference{Name: edgev1alpha1.MailboxWorkspaceType, Path: espwPath.String()}
	start := time.Now()
	if err := workspaces.WaitUntilTypeAdmitted(ctx, s.KCP, espwPath, known); err != nil {
		t.Fatalf("after kubectl edge init, kcp does not admit a workspace of the type %s in the ESPW %s: %v", known.Name, espwPath, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the ESPW %s's mailbox type was admitted %s after kubectl edge init returned; init should have waited for it", espwPath, d.Round(100*time.Millisecond))
	}
	list, err := s.KCP.Cluster(espwPath).TenancyV1alpha1().Workspaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ws := range list.Items {
		t.Errorf("the dry-run probe left the workspace %s in %s", ws.Name, espwPath)
	}

	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	unknown := tenancyv1alpha1.WorkspaceTypeReference{Name: "no-such-type", Path: espwPath.String()}
	err = workspaces.WaitUntilTypeAdmitted(short, s.KCP, espwPath, unknown)
	if err == nil {
		t.Fatalf("kcp admitted a dry-run workspace of the type %s, which does not exist", unknown.Name)
	}
	if !strings.Contains(err.Error(), "no-such-type") || !strings.Contains(err.Error(), "not found") {
		t.Errorf("waiting for the unknown type %s ended with %q, want kcp's answer that it was not found", unknown.Name, err)
	}
}
