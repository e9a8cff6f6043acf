package framework

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

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
		if edgeKCP, edgeKCPErr = sharedEdgeKCP(); edgeKCP != nil || edgeKCPErr != nil {
			if edgeKCP != nil {
				fmt.Fprintf(os.Stderr, "framework: logical-cluster edge clusters in the run's shared edge kcp (log %s)\n", edgeKCP.logPath)
			}
			return
		}
		fmt.Fprintln(os.Stderr, "framework: starting a second kcp for logical-cluster edge clusters")
		edgeKCP, edgeKCPErr = startServer(withTestGC())
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

// TestPClusterCRDs are the workload CRDs of NewLogicalPCluster's edge clusters: the kinds of
// config/workload-crds that the tests place (the rest of their objects are kinds that kcp
// serves itself, such as ConfigMaps).
var TestPClusterCRDs = []string{"deployments.apps.yaml", "services.core.yaml"}

// NewLogicalPCluster makes a simulated edge cluster for a test: a fresh workspace of the edge kcp
// (see CreateLogicalPCluster) of the lean type PClusterWorkspaceType, with the CRDs
// TestPClusterCRDs. Measured on an idle edge kcp, such an edge cluster costs kcp 1.3 s of CPU
// against 5.4 s for one of the default type with every workload CRD; it takes about 6 s, most of
// it kcp waiting 5 s before it declares a new CRD established. StartLogicalPClusters makes
// several side by side, beside the rest of a test's set-up.
func NewLogicalPCluster(t testing.TB, name string) *PCluster {
	t.Helper()
	return StartLogicalPClusters(t, name)()[name]
}

// NewLogicalPClusters makes the edge clusters named names as NewLogicalPCluster does, side by
// side, and returns them by name.
func NewLogicalPClusters(t testing.TB, names ...string) map[string]*PCluster {
	t.Helper()
	return StartLogicalPClusters(t, names...)()
}

// StartLogicalPClusters begins making the edge clusters named names as NewLogicalPCluster does,
// side by side and while the test goes on with its set-up, and returns the function that waits
// for them and returns them by name (it fails the test if one could not be made). Each is
// deleted when the test ends, as NewLogicalPCluster's are.
func StartLogicalPClusters(t testing.TB, names ...string) func() map[string]*PCluster {
	t.Helper()
	s := EdgeKCP(t)
	lean, err := PClusterWorkspaceType(Context(t, 2*time.Minute), s)
	if err != nil {
		t.Fatal(err)
	}
	type made struct {
		p   *PCluster
		err error
	}
	results := make([]chan made, len(names))
	paths := make([]logicalcluster.Path, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		paths[i] = logicalcluster.NewPath("root").Join("edge-" + name + "-" + randomHex(3))
		s.DeleteAfter(t, paths[i])
		results[i] = make(chan made, 1)
		kubeconfigDir := t.TempDir()
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			p, err := CreateLogicalPCluster(ctx, s, name, paths[i], LogicalPClusterOptions{Type: lean, CRDs: TestPClusterCRDs, KubeconfigDir: kubeconfigDir})
			results[i] <- made{p: p, err: err}
		}()
	}
	// Registered after DeleteAfter, so it runs before: a test that ends before it waits for its
	// edge clusters does not delete them while they are being made.
	t.Cleanup(wg.Wait)
	var out map[string]*PCluster
	return func() map[string]*PCluster {
		t.Helper()
		if out != nil {
			return out
		}
		got := map[string]*PCluster{}
		for i, name := range names {
			m := <-results[i]
			if m.err != nil {
				t.Fatalf("edge cluster %s: %v", name, m.err)
			}
			t.Logf("edge cluster %s: logical cluster %s of the edge kcp", name, paths[i])
			got[name] = m.p
		}
		out = got
		return out
	}
}

// LogicalPClusterOptions shape a logical-cluster edge cluster.
type LogicalPClusterOptions struct {
	// Type is the WorkspaceType of its workspace; nil takes the parent's default type.
	// PClusterWorkspaceType makes a lean one.
	Type *tenancyv1alpha1.WorkspaceTypeReference
	// CRDs are the files of config/workload-crds to install, such as "deployments.apps.yaml"; nil
	// installs them all. Each CRD costs the edge kcp memory in every workspace that has it (about
	// 10 MB for Deployments, whose schema holds the whole pod template).
	CRDs []string
	// KubeconfigDir is the directory its kubeconfig file is written into.
	KubeconfigDir string
	// Context, when set, is the context of kcp's admin kubeconfig whose user the kubeconfig
	// file and Config reach the edge cluster as (ShardAdminContext: a user in system:masters,
	// whose requests kcp's API priority and fairness does not limit); "" is the admin
	// kubeconfig's current context (kcp-admin).
	Context string
}

// CreateLogicalPCluster makes a simulated edge cluster named name: the workspace at path of the
// kcp s, with a default namespace and the CRDs of the Kubernetes workload kinds
// (config/workload-crds), so that it serves Deployments, Services and the rest as a Kubernetes
// cluster does, without controllers: status there is whatever its user writes. It waits until
// the CRDs are established; each wait may last until ctx's deadline, if it has one.
func CreateLogicalPCluster(ctx context.Context, s *Server, name string, path logicalcluster.Path, opts LogicalPClusterOptions) (*PCluster, error) {
	crds, err := workloadCRDs(opts.CRDs)
	if err != nil {
		return nil, err
	}
	timeout := workspaces.DefaultTimeout
	if deadline, ok := ctx.Deadline(); ok {
		timeout = time.Until(deadline)
	}
	if _, err := (&workspaces.Ensurer{KCP: s.KCP, Timeout: timeout}).WorkspaceOfType(ctx, path, opts.Type); err != nil {
		return nil, fmt.Errorf("creating the edge workspace %s: %w", path, err)
	}
	cfg := s.ConfigFor(path)
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	// kcp makes a default namespace only in workspaces of its own types.
	// kcp v0.31 may answer 503 for a moment after a new workspace is Ready, while it starts
	// serving the logical cluster: creates are retried on that until the timeout.
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "default"}}}
	if err := createRetrying(ctx, timeout, client.Resource(namespacesGVR), ns); err != nil {
		return nil, fmt.Errorf("creating the default namespace in %s: %w", path, err)
	}
	for _, crd := range crds {
		if err := createRetrying(ctx, timeout, client.Resource(crdsGVR), crd.DeepCopy()); err != nil {
			return nil, fmt.Errorf("installing the workload CRD %s into %s: %w", crd.GetName(), path, err)
		}
	}
	for _, crd := range crds {
		if err := workspaces.Poll(ctx, timeout, func(ctx context.Context) (bool, error) {
			u, err := client.Resource(crdsGVR).Get(ctx, crd.GetName(), metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			return conditionTrue(u, "Established"), nil
		}, "the CRD %s in %s to be established", crd.GetName(), path); err != nil {
			return nil, err
		}
	}
	raw, err := clientcmd.LoadFromFile(s.KubeconfigPath)
	if err != nil {
		return nil, err
	}
	for _, c := range raw.Clusters {
		c.Server = s.ServerURL(path)
	}
	if opts.Context != "" {
		if _, ok := raw.Contexts[opts.Context]; !ok {
			return nil, fmt.Errorf("%s has no context %q", s.KubeconfigPath, opts.Context)
		}
		raw.CurrentContext = opts.Context
		if cfg, err = clientcmd.NewDefaultClientConfig(*raw, nil).ClientConfig(); err != nil {
			return nil, err
		}
		cfg.QPS, cfg.Burst = s.Base.QPS, s.Base.Burst
	}
	kubeconfig := filepath.Join(opts.KubeconfigDir, "edge-"+name+".kubeconfig")
	if err := clientcmd.WriteToFile(*raw, kubeconfig); err != nil {
		return nil, err
	}
	return &PCluster{Name: name, KubeconfigPath: kubeconfig, Config: cfg}, nil
}

// createRetrying creates obj, which may exist already, retrying while the server answers that it
// is unavailable, for at most timeout.
func createRetrying(ctx context.Context, timeout time.Duration, client dynamic.ResourceInterface, obj *unstructured.Unstructured) error {
	var last error
	err := workspaces.Poll(ctx, timeout, func(ctx context.Context) (bool, error) {
		_, last = client.Create(ctx, obj.DeepCopy(), metav1.CreateOptions{})
		switch {
		case last == nil || apierrors.IsAlreadyExists(last):
			return true, nil
		case busy(last):
			// 503 or 429 while kcp starts serving a new logical cluster; a timeout or an
			// internal error ("resource quota evaluation timed out") from a loaded kcp.
			return false, nil
		}
		return false, last
	}, "creating %s %s", obj.GetKind(), obj.GetName())
	if err != nil && last != nil && !errors.Is(err, last) {
		return fmt.Errorf("%w (last error: %v)", err, last)
	}
	return err
}

// PClusterWorkspaceType makes sure the kcp s has the WorkspaceType pclusterTypeName in root, with
// no default APIBindings, and returns a reference to it. A workspace of that type costs kcp the
// least memory: kcp's own types bind tenancy.kcp.io and topology.kcp.io in every workspace.
func PClusterWorkspaceType(ctx context.Context, s *Server) (*tenancyv1alpha1.WorkspaceTypeReference, error) {
	root := logicalcluster.NewPath("root")
	client := s.KCP.Cluster(root).TenancyV1alpha1().WorkspaceTypes()
	_, err := client.Create(ctx, &tenancyv1alpha1.WorkspaceType{ObjectMeta: metav1.ObjectMeta{Name: pclusterTypeName}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating the WorkspaceType %s in root: %w", pclusterTypeName, err)
	}
	return &tenancyv1alpha1.WorkspaceTypeReference{Name: pclusterTypeName, Path: root.String()}, nil
}

// pclusterTypeName names the lean WorkspaceType of PClusterWorkspaceType.
const pclusterTypeName = "edge-pcluster"

var (
	namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	crdsGVR       = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// allWorkloadCRDs reads config/workload-crds once: file name to CRD.
var allWorkloadCRDs = sync.OnceValues(func() (map[string]*unstructured.Unstructured, error) {
	dir, err := RepoFile("config", "workload-crds")
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	crds := map[string]*unstructured.Unstructured{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(raw, &u.Object); err != nil {
			return nil, fmt.Errorf("reading %s: %w", e.Name(), err)
		}
		crds[e.Name()] = u
	}
	return crds, nil
})

// workloadCRDs returns the CRDs of the given files of config/workload-crds, or all of them for
// nil, sorted by file name.
func workloadCRDs(files []string) ([]*unstructured.Unstructured, error) {
	all, err := allWorkloadCRDs()
	if err != nil {
		return nil, err
	}
	if files == nil {
		for name := range all {
			files = append(files, name)
		}
		sort.Strings(files)
	}
	var crds []*unstructured.Unstructured
	for _, name := range files {
		crd, ok := all[name]
		if !ok {
			return nil, fmt.Errorf("config/workload-crds has no %s", name)
		}
		crds = append(crds, crd)
	}
	return crds, nil
}

// conditionTrue says whether the object's status.conditions has the given type with status True.
func conditionTrue(u *unstructured.Unstructured, condType string) bool {
	status, _, _ := ConditionStatus(u, condType)
	return status == metav1.ConditionTrue
}

// Syncer is an edge-syncer process.
type Syncer struct {
	*Process
	HTTPAddress string
	UID         string
	// KubeconfigPath is its mailbox kubeconfig, from kubectl edge prep-for-syncer.
	KubeconfigPath string
}

// StartSyncer runs edge-syncer for the SyncTarget of the inventory workspace imw into the edge
// cluster p, with the mailbox kubeconfig that `kubectl edge prep-for-syncer --kubeconfig-only`
// prints, as an operator running it as a local process would.
func StartSyncer(t testing.TB, espw, imw logicalcluster.Path, syncTarget string, p *PCluster, extra ...string) *Syncer {
	t.Helper()
	return startSyncer(t, espw, imw, syncTarget, p, nil, extra...)
}

// StartSyncerThroughProxy is StartSyncer with the syncer's connections to kcp going through a
// Proxy of their own (its mailbox kubeconfig names the proxy as the server), so that the test can
// cut them (Proxy.Stop, Proxy.Pause) and restore them (Proxy.Start) while every process runs.
func StartSyncerThroughProxy(t testing.TB, espw, imw logicalcluster.Path, syncTarget string, p *PCluster, extra ...string) (*Syncer, *Proxy) {
	t.Helper()
	var proxy *Proxy
	s := startSyncer(t, espw, imw, syncTarget, p, &proxy, extra...)
	return s, proxy
}

// StartSyncers is StartSyncer for many SyncTargets of imw at once, the syncer of syncTargets[i]
// into the edge cluster pclusters[i]: their mailbox credentials are made parallel at a time
// (each is a `kubectl edge prep-for-syncer`), then the processes are started.
func StartSyncers(t testing.TB, espw, imw logicalcluster.Path, syncTargets []string, pclusters []*PCluster, parallel int, extra ...string) []*Syncer {
	t.Helper()
	if len(syncTargets) != len(pclusters) {
		t.Fatalf("StartSyncers: %d SyncTargets for %d edge clusters", len(syncTargets), len(pclusters))
	}
	dir := t.TempDir()
	kubeconfigs := make([]string, len(syncTargets))
	if err := ForEach(len(syncTargets), parallel, func(i int) error {
		kubeconfigs[i] = filepath.Join(dir, "mailbox-"+syncTargets[i]+".kubeconfig")
		r := KubectlEdge(t, "prep-for-syncer", syncTargets[i], "--imw", imw.String(), "--espw", espw.String(),
			"--kubeconfig-only", "--output-file", kubeconfigs[i])
		if r.Err != nil {
			return fmt.Errorf("kubectl edge prep-for-syncer %s: %v: %s", syncTargets[i], r.Err, r.Stderr)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	list, err := KCP(t).DynamicClient(t, imw).Resource(syncTargetsGVR).List(Context(t, time.Minute), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing the SyncTargets of %s: %v", imw, err)
	}
	uids := map[string]string{}
	for _, st := range list.Items {
		uids[st.GetName()] = string(st.GetUID())
	}
	ports, err := FreePorts(len(syncTargets))
	if err != nil {
		t.Fatal(err)
	}
	syncers := make([]*Syncer, len(syncTargets))
	for i, name := range syncTargets {
		if uids[name] == "" {
			t.Fatalf("no SyncTarget %s in %s", name, imw)
		}
		syncers[i] = runSyncer(t, name, uids[name], kubeconfigs[i], pclusters[i], "127.0.0.1:"+strconv.Itoa(ports[i]), extra...)
	}
	return syncers
}

// startSyncer is StartSyncer; with a non-nil proxy it starts a Proxy to kcp, points the mailbox
// kubeconfig at it and sets *proxy.
func startSyncer(t testing.TB, espw, imw logicalcluster.Path, syncTarget string, p *PCluster, proxy **Proxy, extra ...string) *Syncer {
	t.Helper()
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "mailbox-"+syncTarget+".kubeconfig")
	KubectlEdge(t, "prep-for-syncer", syncTarget, "--imw", imw.String(), "--espw", espw.String(),
		"--kubeconfig-only", "--output-file", kubeconfig).MustSucceed(t)
	if proxy != nil {
		var err error
		if *proxy, err = proxyKubeconfig(kubeconfig); err != nil {
			t.Fatalf("putting a proxy between edge-syncer and kcp: %v", err)
		}
		t.Cleanup((*proxy).Close)
		t.Logf("edge-syncer %s reaches kcp (%s) through a proxy on %s", syncTarget, (*proxy).Target(), (*proxy).Addr())
	}
	uid := strings.TrimSpace(Kubectl(t, "--server", KCP(t).ServerURL(imw), "get", "synctarget", syncTarget,
		"-o", "jsonpath={.metadata.uid}").MustSucceed(t).Stdout)
	ports, err := FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	return runSyncer(t, syncTarget, uid, kubeconfig, p, "127.0.0.1:"+strconv.Itoa(ports[0]), extra...)
}

// runSyncer starts the edge-syncer process of one SyncTarget, serving /readyz on addr.
func runSyncer(t testing.TB, syncTarget, uid, kubeconfig string, p *PCluster, addr string, extra ...string) *Syncer {
	t.Helper()
	args := append([]string{
		"--from-kubeconfig", kubeconfig, "--to-kubeconfig", p.KubeconfigPath,
		"--sync-target-name", syncTarget, "--sync-target-uid", uid,
		"--http-address", addr, "-v=2",
	}, extra...)
	return &Syncer{Process: StartProcess(t, "edge-syncer", args...), HTTPAddress: addr, UID: uid, KubeconfigPath: kubeconfig}
}

// proxyKubeconfig starts a Proxy to the server of the kubeconfig file's clusters (all of them
// must name the same host:port), and rewrites the file so that they name the proxy instead.
func proxyKubeconfig(path string) (*Proxy, error) {
	raw, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return nil, err
	}
	target := ""
	for name, c := range raw.Clusters {
		u, err := url.Parse(c.Server)
		if err != nil {
			return nil, fmt.Errorf("cluster %s: server %q: %w", name, c.Server, err)
		}
		if target != "" && u.Host != target {
			return nil, fmt.Errorf("the kubeconfig names two servers, %s and %s", target, u.Host)
		}
		target = u.Host
	}
	if target == "" {
		return nil, fmt.Errorf("%s names no server", path)
	}
	proxy, err := StartProxy(target)
	if err != nil {
		return nil, err
	}
	for _, c := range raw.Clusters {
		u, _ := url.Parse(c.Server)
		u.Host = proxy.Addr()
		c.Server = u.String()
	}
	if err := clientcmd.WriteToFile(*raw, path); err != nil {
		proxy.Close()
		return nil, err
	}
	return proxy, nil
}

// WaitReady waits until the syncer's /readyz answers 200: it has reached its mailbox and its
// edge cluster and synced its caches.
func (s *Syncer) WaitReady(t testing.TB, timeout time.Duration) {
	t.Helper()
	if err := WaitReadyz(context.Background(), s.HTTPAddress, timeout, s.Exited); err != nil {
		t.Fatalf("edge-syncer: %v", err)
	}
}

// GetObject reads one object, or returns nil if it cannot be read (it does not exist, or the
// identity may not read it). A server too busy to answer in time is asked again for up to a
// minute: on a loaded machine a read that timed out once must not pass for an object that is
// gone (CI's rollout tests read "no EdgePlacement" right after creating it).
func GetObject(t testing.TB, client dynamic.Interface, gvr schema.GroupVersionResource, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		u, err := client.Resource(gvr).Namespace(namespace).Get(Context(t, 10*time.Second), name, metav1.GetOptions{})
		switch {
		case err == nil:
			return u
		case busy(err) && time.Now().Before(deadline):
			time.Sleep(time.Second)
		case busy(err):
			t.Logf("reading %s %s/%s: the server did not answer for a minute: %v", gvr.Resource, namespace, name, err)
			return nil
		default:
			return nil
		}
	}
}

// ObjectUIDs returns the UIDs, by name, of the objects of one resource in the namespace whose
// names start with prefix, or nil if the list cannot be read (the edge does not answer).
func ObjectUIDs(t testing.TB, client dynamic.Interface, gvr schema.GroupVersionResource, namespace, prefix string) map[string]string {
	t.Helper()
	list, err := client.Resource(gvr).Namespace(namespace).List(Context(t, 10*time.Second), metav1.ListOptions{})
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for _, item := range list.Items {
		if strings.HasPrefix(item.GetName(), prefix) {
			out[item.GetName()] = string(item.GetUID())
		}
	}
	return out
}

// busy says whether an error is the server (or the client's deadline) running out of time or
// capacity, not an answer about the object.
func busy(err error) bool {
	return apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err) ||
		errors.Is(err, context.DeadlineExceeded) || apierrors.IsUnexpectedServerError(err)
}

// PCluster returns the cluster as an edge cluster for StartSyncer.
func (k *KubeCluster) PCluster() *PCluster {
	return &PCluster{Name: k.Name, KubeconfigPath: k.KubeconfigPath, Config: k.Config}
}
