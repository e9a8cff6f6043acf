package framework

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
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
	logCenterCPU(t)
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
	return "e2e-" + name + "-" + randomHex(3)
}

// randomHex is n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// logCenterCPU logs, when the test ends, the CPU that the package's kcp used while it ran (kcp is
// most of the cost of the e2e tests on two cores: see docs/development.md). Tests of a package
// run one at a time under make test-e2e, so the figure is the test's own; a restart of kcp
// during the test (a new process) leaves it out.
func logCenterCPU(t testing.TB) {
	s := KCP(t)
	pid := s.PID()
	if pid == 0 {
		return
	}
	before := CPUSeconds(pid)
	t.Cleanup(func() {
		if s.PID() == pid {
			t.Logf("the center kcp used %.1f s of CPU during the test", CPUSeconds(pid)-before)
		}
	})
}
