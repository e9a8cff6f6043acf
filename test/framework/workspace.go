package framework

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kcp-dev/edge-mc/pkg/workspaces"
)

var nonName = regexp.MustCompile(`[^a-z0-9]+`)

// NewWorkspace creates a fresh, ready workspace under root for the test and returns its path.
// Its name says which test made it. Workspaces are not deleted: the package's kcp goes at the end.
func NewWorkspace(t testing.TB) logicalcluster.Path {
	t.Helper()
	s := KCP(t)
	path := logicalcluster.NewPath("root").Join(testWorkspaceName(t))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := (&workspaces.Ensurer{KCP: s.KCP}).Workspace(ctx, path); err != nil {
		t.Fatalf("creating the test's workspace: %v", err)
	}
	t.Logf("workspace %s", path)
	return path
}

// deleteAfter deletes the workspace at path, a child of root, once the test is over, when the
// run's packages share the server (SharedEdgeKCPEnv), so that a run of many tests does not keep
// every test's edge clusters, each a few MB of kcp's memory, until its end. Cleanups run last
// registered, first run: the syncers started after the workspace was made have stopped by then.
// EDGE_E2E_KEEP keeps them.
func (s *Server) deleteAfter(t testing.TB, path logicalcluster.Path) {
	if !s.shared || os.Getenv("EDGE_E2E_KEEP") != "" {
		return
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		parent, name := path.Split()
		if err := s.KCP.Cluster(parent).TenancyV1alpha1().Workspaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Logf("deleting the test's workspace %s of the shared kcp: %v", path, err)
		}
	})
}

// ConfigFor returns an admin rest.Config for the workspace at path.
func (s *Server) ConfigFor(path logicalcluster.Path) *rest.Config {
	return workspaces.ConfigFor(s.Base, path)
}

// KubeClient returns a Kubernetes clientset for the workspace at path.
func (s *Server) KubeClient(t testing.TB, path logicalcluster.Path) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(s.ConfigFor(path))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// DynamicClient returns a dynamic client for the workspace at path.
func (s *Server) DynamicClient(t testing.TB, path logicalcluster.Path) dynamic.Interface {
	t.Helper()
	c, err := dynamic.NewForConfig(s.ConfigFor(path))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// ServerURL returns the URL of the workspace at path, for kubectl --server.
func (s *Server) ServerURL(path logicalcluster.Path) string {
	return s.Base.Host + path.RequestPath()
}

// testWorkspaceName is a fresh workspace name that says which test made it.
func testWorkspaceName(t testing.TB) string {
	name := strings.Trim(nonName.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(name) > 40 {
		name = strings.Trim(name[:40], "-")
	}
	suffix := make([]byte, 3)
	_, _ = rand.Read(suffix)
	return "e2e-" + name + "-" + hex.EncodeToString(suffix)
}
