package framework

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kcp-dev/edge-mc/pkg/workspaces"
)

// PCluster is an edge cluster as the tests see it: a kubeconfig for edge-syncer
// --to-kubeconfig and admin clients.
type PCluster struct {
	Name           string
	KubeconfigPath string
	Config         *rest.Config
}

// DynamicClient returns a dynamic client of the edge cluster.
func (p *PCluster) DynamicClient(t testing.TB) dynamic.Interface {
	t.Helper()
	c, err := dynamic.NewForConfig(p.Config)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var (
	edgeKCPOnce sync.Once
	edgeKCP     *Server
	edgeKCPErr  error
)

// EdgeKCP returns the package's second kcp server, whose logical clusters simulate edge clusters,
// starting it on first use; RunWithKCP stops it at the end.
func EdgeKCP(t testing.TB) *Server {
	t.Helper()
	edgeKCPOnce.Do(func() {
		fmt.Fprintln(os.Stderr, "framework: starting a second kcp for logical-cluster edge clusters")
		edgeKCP, edgeKCPErr = startServer()
	})
	if edgeKCPErr != nil {
		t.Fatalf("starting the edge kcp: %v", edgeKCPErr)
	}
	return edgeKCP
}

// stopEdgeKCP stops the second kcp if it was started.
func stopEdgeKCP() {
	if edgeKCP != nil {
		edgeKCP.stop()
	}
}

// NewLogicalPCluster makes a simulated edge cluster: a fresh workspace of the edge kcp with the
// CRDs of the Kubernetes workload kinds (config/workload-crds), so that it serves Deployments,
// Services and the rest as a Kubernetes cluster does, without controllers: status there is
// whatever the test writes.
func NewLogicalPCluster(t testing.TB, name string) *PCluster {
	t.Helper()
	s := EdgeKCP(t)
	suffix := make([]byte, 3)
	_, _ = rand.Read(suffix)
	path := logicalcluster.NewPath("root").Join("edge-" + name + "-" + hex.EncodeToString(suffix))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := (&workspaces.Ensurer{KCP: s.KCP}).Workspace(ctx, path); err != nil {
		t.Fatalf("creating the edge workspace %s: %v", path, err)
	}
	dir, err := RepoFile("config", "workload-crds")
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "edge-"+name+".kubeconfig")
	raw, err := clientcmd.LoadFromFile(s.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range raw.Clusters {
		c.Server = s.ServerURL(path)
	}
	if err := clientcmd.WriteToFile(*raw, kubeconfig); err != nil {
		t.Fatal(err)
	}
	out, err := runKubectl(ctx, kubeconfig, "", "apply", "-f", dir)
	if err != nil {
		t.Fatalf("installing the workload CRDs into %s: %v\n%s", path, err, out)
	}
	if out, err := runKubectl(ctx, kubeconfig, "", "wait", "--for=condition=Established", "crd", "--all", "--timeout=60s"); err != nil {
		t.Fatalf("waiting for the workload CRDs in %s: %v\n%s", path, err, out)
	}
	t.Logf("edge cluster %s: logical cluster %s of the edge kcp", name, path)
	return &PCluster{Name: name, KubeconfigPath: kubeconfig, Config: s.ConfigFor(path)}
}

// Syncer is an edge-syncer process.
type Syncer struct {
	*Process
	HTTPAddress string
	UID         string
}

// StartSyncer runs edge-syncer for the SyncTarget of the inventory workspace imw into the edge
// cluster p, with the mailbox kubeconfig that `kubectl edge prep-for-syncer --kubeconfig-only`
// prints, as an operator running it as a local process would.
func StartSyncer(t testing.TB, espw, imw logicalcluster.Path, syncTarget string, p *PCluster, extra ...string) *Syncer {
	t.Helper()
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "mailbox-"+syncTarget+".kubeconfig")
	KubectlEdge(t, "prep-for-syncer", syncTarget, "--imw", imw.String(), "--espw", espw.String(),
		"--kubeconfig-only", "-o", kubeconfig).MustSucceed(t)
	uid := strings.TrimSpace(Kubectl(t, "--server", KCP(t).ServerURL(imw), "get", "synctarget", syncTarget,
		"-o", "jsonpath={.metadata.uid}").MustSucceed(t).Stdout)
	ports, err := FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	args := append([]string{
		"--from-kubeconfig", kubeconfig, "--to-kubeconfig", p.KubeconfigPath,
		"--sync-target-name", syncTarget, "--sync-target-uid", uid,
		"--http-address", addr, "-v=2",
	}, extra...)
	return &Syncer{Process: StartProcess(t, "edge-syncer", args...), HTTPAddress: addr, UID: uid}
}

// runKubectl runs kubectl with the given kubeconfig.
func runKubectl(ctx context.Context, kubeconfig, stdin string, args ...string) (string, error) {
	r := runCommand(ctx, stdin, []string{"KUBECONFIG=" + kubeconfig}, "kubectl", args...)
	return r.Stdout + r.Stderr, r.Err
}

// GetObject reads one object, or returns nil if it does not exist.
func GetObject(t testing.TB, client dynamic.Interface, gvr schema.GroupVersionResource, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	u, err := client.Resource(gvr).Namespace(namespace).Get(Context(t, 10*time.Second), name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return u
}

// PCluster returns the cluster as an edge cluster for StartSyncer.
func (k *KubeCluster) PCluster() *PCluster {
	return &PCluster{Name: k.Name, KubeconfigPath: k.KubeconfigPath, Config: k.Config}
}
