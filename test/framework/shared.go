package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SharedEdgeKCPEnv names the environment variable that gives the test packages a file
// describing an edge kcp that a whole run shares (see StartSharedEdgeKCP): `make test-e2e`
// starts it once with hack/e2e-servers, so that the packages with logical-cluster edge clusters
// do not each start, warm up and keep idle an edge kcp of their own (about 20 s of kcp's CPU to
// start one, on two cores). Each test's edge clusters are workspaces of their own either way,
// deleted when the test ends.
//
// The center stays one kcp per package: tests kill and restart it, change root's policy, count
// the requests it serves, and a center shared by a run's tests fell behind in making their
// workspaces (three minutes for one, seen with twelve tests at a time).
const SharedEdgeKCPEnv = "EDGE_E2E_SHARED_EDGE_KCP"

// sharedServer is what a test package needs to reach a server another process started.
type sharedServer struct {
	Kubeconfig string `json:"kubeconfig"`
	Log        string `json:"log"`
	Profiler   string `json:"profiler"`
}

// StartSharedEdgeKCP starts the edge kcp that test packages share, as EdgeKCP would start one,
// and writes the file that describes it, for SharedEdgeKCPEnv, into dir.
func StartSharedEdgeKCP(dir string) (s *Server, file string, err error) {
	s, err = startServer(withTestGC())
	if err != nil {
		if s != nil {
			s.printLogTail(40)
			s.stop()
		}
		return nil, "", fmt.Errorf("starting the shared edge kcp: %w", err)
	}
	raw, err := json.MarshalIndent(sharedServer{Kubeconfig: s.KubeconfigPath, Log: s.logPath, Profiler: s.ProfilerAddress}, "", "  ")
	file = filepath.Join(dir, "shared-edge-kcp.json")
	if err == nil {
		err = os.WriteFile(file, raw, 0o600)
	}
	if err != nil {
		s.stop()
		return nil, "", err
	}
	return s, file, nil
}

// sharedEdgeKCP reaches the run's shared edge kcp, if SharedEdgeKCPEnv names one.
func sharedEdgeKCP() (*Server, error) {
	path := os.Getenv(SharedEdgeKCPEnv)
	if path == "" {
		return nil, nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s=%s: %w", SharedEdgeKCPEnv, path, err)
	}
	var d sharedServer
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("%s=%s: %w", SharedEdgeKCPEnv, path, err)
	}
	s := &Server{KubeconfigPath: d.Kubeconfig, logPath: d.Log, ProfilerAddress: d.Profiler, shared: true}
	if err := s.connect(); err != nil {
		return nil, fmt.Errorf("the run's shared edge kcp (%s): %w", d.Kubeconfig, err)
	}
	return s, nil
}

// DeleteAfter deletes the workspace at path, a child of root, once the test is over, when the
// run's packages share the server (SharedEdgeKCPEnv), so that a run of many tests does not keep
// every test's edge clusters, each a few MB of kcp's memory, until its end. Cleanups run last
// registered, first run: the syncers started after the workspace was made have stopped by then.
// EDGE_E2E_KEEP keeps them.
func (s *Server) DeleteAfter(t testing.TB, path logicalcluster.Path) {
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
