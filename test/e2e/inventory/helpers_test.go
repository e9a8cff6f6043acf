package inventory

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/mailbox"
	"github.com/kcp-dev/edge-mc/test/framework"
)

var syncTargetsGVR = edgev1alpha1.SchemeGroupVersion.WithResource("synctargets")

// setUpESPW makes a fresh ESPW for the test with kubectl edge init and returns its path and the
// test's base workspace.
func setUpESPW(t *testing.T) (base, espw logicalcluster.Path) {
	t.Helper()
	base = framework.NewWorkspace(t)
	espw = base.Join("espw")
	framework.KubectlEdge(t, "init", "--espw", espw.String()).MustSucceed(t)
	return base, espw
}

func ensureIMW(t *testing.T, espw, imw logicalcluster.Path) {
	t.Helper()
	framework.KubectlEdge(t, "ensure", "imw", imw.String(), "--espw", espw.String()).MustSucceed(t)
}

func ensureLocation(t *testing.T, imw logicalcluster.Path, name string, labels ...string) {
	t.Helper()
	framework.KubectlEdge(t, append([]string{"ensure", "location", name, "--imw", imw.String()}, labels...)...).MustSucceed(t)
}

// getSyncTarget returns the SyncTarget, or nil if there is none.
func getSyncTarget(t *testing.T, imw logicalcluster.Path, name string) *edgev1alpha1.SyncTarget {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	u, err := framework.KCP(t).DynamicClient(t, imw).Resource(syncTargetsGVR).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	st := &edgev1alpha1.SyncTarget{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, st); err != nil {
		t.Fatal(err)
	}
	return st
}

// mailboxes returns the names of the mailbox workspaces in the ESPW, sorted.
func mailboxes(t *testing.T, espw logicalcluster.Path) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := framework.KCP(t).KCP.Cluster(espw).TenancyV1alpha1().Workspaces().List(ctx, metav1.ListOptions{LabelSelector: mailbox.LabelMailbox + "=true"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ws := range list.Items {
		if ws.DeletionTimestamp == nil {
			names = append(names, ws.Name)
		}
	}
	sort.Strings(names)
	return names
}

// target names a SyncTarget.
type target struct {
	imw  logicalcluster.Path
	name string
}

// expectMailboxes waits until exactly the given SyncTargets have ready mailboxes, named after
// their inventory workspace's logical cluster and their UID, and no other mailbox exists.
func expectMailboxes(t *testing.T, espw logicalcluster.Path, targets []target, timeout time.Duration) {
	t.Helper()
	framework.Eventually(t, timeout, func() (bool, string) {
		want := map[string]bool{}
		for _, tg := range targets {
			st := getSyncTarget(t, tg.imw, tg.name)
			if st == nil {
				return false, fmt.Sprintf("SyncTarget %s in %s is missing", tg.name, tg.imw)
			}
			c := meta.FindStatusCondition(st.Status.Conditions, edgev1alpha1.SyncTargetMailboxReady)
			if c == nil || c.Status != metav1.ConditionTrue {
				return false, fmt.Sprintf("SyncTarget %s in %s: MailboxReady is %+v", tg.name, tg.imw, c)
			}
			name := mailbox.WorkspaceName(logicalcluster.Name(st.Annotations[logicalcluster.AnnotationKey]), st.UID)
			if st.Status.MailboxWorkspace != espw.Join(name).String() {
				return false, fmt.Sprintf("SyncTarget %s in %s: status.mailboxWorkspace %q, want %q", tg.name, tg.imw, st.Status.MailboxWorkspace, espw.Join(name))
			}
			want[name] = true
		}
		got := mailboxes(t, espw)
		var extra []string
		for _, n := range got {
			if !want[n] {
				extra = append(extra, n)
			}
		}
		if len(got) != len(want) || len(extra) > 0 {
			return false, fmt.Sprintf("mailboxes in %s: %d (%s), want %d; not owned by a listed SyncTarget: %v",
				espw, len(got), strings.Join(got, ", "), len(want), extra)
		}
		return true, ""
	})
}
