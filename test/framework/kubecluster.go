package framework

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	edgepki "github.com/kcp-dev/edge-mc/pkg/pki"
)

// kubeClusterStartTimeout bounds how long a KubeCluster may take to become usable.
const kubeClusterStartTimeout = 3 * time.Minute

// KwokNodeAnnotation is the annotation, with the value "fake", that marks the Node that kwok
// manages in a KubeCluster; kwok ignores Nodes without it.
const KwokNodeAnnotation = "kwok.x-k8s.io/node"

// kubeServiceCIDR is the Service IP range of a KubeCluster; pods get addresses from kubePodCIDR,
// handed out by kwok.
const (
	kubeServiceCIDR = "10.96.0.0/16"
	kubePodCIDR     = "10.244.0.1/16"
)

// KubeCluster is a real Kubernetes control plane on loopback ports: etcd (Debian's, from the PATH),
// kube-apiserver, kube-controller-manager and kube-scheduler (bin/, built by `make tools`), and kwok
// simulating one Node. Workloads behave as on a real cluster up to the kubelet: a Deployment gets a
// ReplicaSet, its pods are scheduled to the Node, and kwok reports them Running and Ready without
// running any container. A KubeCluster uses about half a gigabyte of memory.
type KubeCluster struct {
	// Name names the cluster in its kubeconfig and in log lines.
	Name string
	// KubeconfigPath is a kubeconfig file with admin (system:masters) credentials, usable by
	// kubectl and by edge-syncer --to-kubeconfig.
	KubeconfigPath string
	// Config holds the same admin credentials as KubeconfigPath.
	Config *rest.Config
	// NodeName is the name of the cluster's one Node, which kwok simulates.
	NodeName string
	// StartupTime is how long the cluster took to become usable.
	StartupTime time.Duration

	dir string
	// keepDir: the directory was given by the caller, and Stop leaves it.
	keepDir  bool
	procs    []*kubeProcess
	stopOnce sync.Once
}

// kubeProcess is one program of a KubeCluster, run in its own process group with its output in a
// log file.
type kubeProcess struct {
	name    string
	logPath string
	path    string
	args    []string
	cmd     *exec.Cmd
	exited  chan struct{}
}

// StartKubeCluster starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok
// with one fake Node, waits until the Node is Ready and the ServiceAccount "default" exists in the
// namespace "default", and registers a cleanup that stops them all. When the test fails, the
// tails of the programs' logs are logged.
func StartKubeCluster(t testing.TB, name string) *KubeCluster {
	t.Helper()
	return StartKubeClusterInBackground(t, name)()
}

// StartKubeClusterInBackground starts the cluster as StartKubeCluster does, while the test goes
// on with its set-up (a cluster takes about 10 s to start, most of it waiting), and returns the
// function that waits until it is ready and returns it, failing the test if it could not start.
// The cluster is stopped when the test ends, whether or not the test waited for it.
func StartKubeClusterInBackground(t testing.TB, name string) func() *KubeCluster {
	t.Helper()
	type started struct {
		k   *KubeCluster
		err error
	}
	ch := make(chan started, 1)
	go func() {
		k, err := StartKubeClusterForMain(name)
		ch <- started{k, err}
	}()
	var got *started
	wait := func() started {
		if got == nil {
			r := <-ch
			got = &r
		}
		return *got
	}
	t.Cleanup(func() {
		if r := wait(); r.k != nil {
			if t.Failed() {
				t.Log(r.k.LogTails(60))
			}
			r.k.Stop()
		}
	})
	return func() *KubeCluster {
		t.Helper()
		r := wait()
		if r.err != nil {
			t.Fatalf("starting Kubernetes cluster %q: %v", name, r.err)
		}
		t.Logf("Kubernetes cluster %q ready in %s (kubeconfig %s)", name, r.k.StartupTime.Round(100*time.Millisecond), r.k.KubeconfigPath)
		return r.k
	}
}

// StartKubeClusterForMain is StartKubeCluster for callers without a testing.TB, such as a TestMain
// that shares one cluster among a package's tests:
//
//	k, err := framework.StartKubeClusterForMain("edge1")
//	...
//	code := m.Run()
//	if code != 0 {
//		fmt.Fprint(os.Stderr, k.LogTails(80))
//	}
//	k.Stop()
//
// The caller must call Stop. On error nothing is left running, and the error holds the tails of
// the logs.
func StartKubeClusterForMain(name string) (*KubeCluster, error) {
	return startKubeCluster(name, "")
}

// StartKubeClusterInDir is StartKubeClusterForMain with the cluster's data, credentials and logs
// (<dir>/<program>.log) in dir, which is created if missing and which Stop leaves in place; the
// admin kubeconfig is <dir>/admin.kubeconfig. It serves programs that keep a cluster running for
// people, such as `make demo`.
func StartKubeClusterInDir(name, dir string) (*KubeCluster, error) {
	if dir == "" {
		return nil, errors.New("StartKubeClusterInDir needs a directory")
	}
	return startKubeCluster(name, dir)
}

// startKubeCluster starts a cluster in dir, or in a new temporary directory if dir is "".
func startKubeCluster(name, dir string) (*KubeCluster, error) {
	start := time.Now()
	k, err := newKubeCluster(name, dir)
	if err != nil {
		return nil, err
	}
	if err := k.start(); err != nil {
		tails := k.LogTails(40)
		if os.Getenv("EDGE_E2E_KEEP") == "" && !k.keepDir {
			tails += "(the cluster's directory is removed; set EDGE_E2E_KEEP=1 to keep it)\n"
		}
		k.Stop()
		return nil, fmt.Errorf("%w\n%s", err, tails)
	}
	k.StartupTime = time.Since(start)
	return k, nil
}

// KubeClient returns a Kubernetes clientset with the cluster's admin credentials.
func (k *KubeCluster) KubeClient(t testing.TB) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(k.Config)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// DynamicClient returns a dynamic client with the cluster's admin credentials.
func (k *KubeCluster) DynamicClient(t testing.TB) dynamic.Interface {
	t.Helper()
	c, err := dynamic.NewForConfig(k.Config)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// PIDs returns the process ID of each running program of the cluster, by program name (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler, kwok).
func (k *KubeCluster) PIDs() map[string]int {
	pids := map[string]int{}
	for _, p := range k.procs {
		if !p.hasExited() {
			pids[p.name] = p.cmd.Process.Pid
		}
	}
	return pids
}

// Stop kills all programs of the cluster, waits until they are gone, and removes the cluster's
// directory unless EDGE_E2E_KEEP is set or the directory was given to StartKubeClusterInDir. It
// may be called more than once.
func (k *KubeCluster) Stop() {
	k.stopOnce.Do(func() {
		// The data is thrown away, so there is nothing to shut down gracefully.
		for _, p := range k.procs {
			p.kill()
		}
		for _, p := range k.procs {
			<-p.exited
		}
		if k.dir == "" || k.keepDir {
			return
		}
		if os.Getenv("EDGE_E2E_KEEP") != "" {
			fmt.Fprintf(os.Stderr, "framework: kept the directory of Kubernetes cluster %q: %s\n", k.Name, k.dir)
			return
		}
		_ = os.RemoveAll(k.dir)
	})
}

// LogTails returns the last lines of each program's log, for printing when something failed.
func (k *KubeCluster) LogTails(lines int) string {
	var b strings.Builder
	for _, p := range k.procs {
		tail, err := lastLines(p.logPath, lines)
		if err != nil {
			fmt.Fprintf(&b, "---- log of %s of cluster %q: %v ----\n", p.name, k.Name, err)
			continue
		}
		fmt.Fprintf(&b, "---- last %d lines of the log of %s of cluster %q (%s) ----\n%s\n",
			len(tail), p.name, k.Name, p.logPath, strings.Join(tail, "\n"))
	}
	if b.Len() > 0 {
		fmt.Fprintf(&b, "---- end of the logs of cluster %q ----\n", k.Name)
	}
	return b.String()
}

// kubeBinaries are the programs of a KubeCluster that `make tools` builds into bin/.
var kubeBinaries = []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"}

// newKubeCluster checks that the programs exist and creates the cluster's directory: dir, or a
// new temporary directory if dir is "".
func newKubeCluster(name, dir string) (*KubeCluster, error) {
	if _, err := exec.LookPath("etcd"); err != nil {
		return nil, fmt.Errorf("etcd is not on the PATH: install Debian's etcd-server (apt-get update && apt-get install -y etcd-server): %w", err)
	}
	for _, b := range kubeBinaries {
		path, err := RepoFile("bin", b)
		if err != nil {
			return nil, err
		}
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("%s is missing: run 'make tools' first (it builds the pinned Kubernetes and kwok)", path)
		}
	}
	slug := strings.Trim(nonName.ReplaceAllString(strings.ToLower(name), "-"), "-")
	if slug == "" {
		slug = "cluster"
	}
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		return &KubeCluster{Name: name, NodeName: slug + "-node", dir: dir, keepDir: true}, nil
	}
	dir, err := os.MkdirTemp("", "edge-mc-kube-"+slug+"-")
	if err != nil {
		return nil, err
	}
	return &KubeCluster{Name: name, NodeName: slug + "-node", dir: dir}, nil
}

// start writes the credentials, runs the programs and waits until the cluster is usable.
func (k *KubeCluster) start() error {
	ports, err := FreePorts(3)
	if err != nil {
		return err
	}
	etcdClient := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	etcdPeer := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	apiserverPort := ports[2]
	server := "https://127.0.0.1:" + strconv.Itoa(apiserverPort)

	pki, err := writeKubePKI(k.dir, k.Name, server)
	if err != nil {
		return fmt.Errorf("writing certificates: %w", err)
	}
	k.KubeconfigPath = pki.adminKubeconfig
	k.Config, err = clientcmd.BuildConfigFromFlags("", k.KubeconfigPath)
	if err != nil {
		return err
	}
	k.Config.QPS, k.Config.Burst = 100, 200

	ctx, cancel := context.WithTimeout(context.Background(), kubeClusterStartTimeout)
	defer cancel()

	etcd, _ := exec.LookPath("etcd")
	if err := k.run("etcd", etcd,
		"--name", "default",
		"--data-dir", filepath.Join(k.dir, "etcd"),
		"--listen-client-urls", etcdClient,
		"--advertise-client-urls", etcdClient,
		"--listen-peer-urls", etcdPeer,
		"--initial-advertise-peer-urls", etcdPeer,
		"--initial-cluster", "default="+etcdPeer,
		// Fewer raft entries kept in memory than the default 100000.
		"--snapshot-count", "10000",
		"--logger", "zap",
		"--log-outputs", "stderr",
	); err != nil {
		return err
	}
	if err := k.runBin("kube-apiserver",
		"--etcd-servers", etcdClient,
		"--bind-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(apiserverPort),
		"--cert-dir", filepath.Join(k.dir, "apiserver"),
		"--tls-cert-file", pki.servingCert,
		"--tls-private-key-file", pki.servingKey,
		"--client-ca-file", pki.caCert,
		"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file", pki.saKey,
		"--service-account-signing-key-file", pki.saKey,
		"--service-cluster-ip-range", kubeServiceCIDR,
		"--authorization-mode", "Node,RBAC",
		"--allow-privileged=true",
		// The endpoints of the Service "kubernetes" may not be loopback addresses.
		"--endpoint-reconciler-type", "none",
		"--profiling=false",
	); err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(k.Config)
	if err != nil {
		return err
	}
	if err := k.waitFor(ctx, "kube-apiserver to be ready", func() (bool, string) {
		body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			return false, fmt.Sprintf("/readyz: %v %s", err, body)
		}
		return true, ""
	}); err != nil {
		return err
	}

	if err := k.runBin("kube-controller-manager",
		"--kubeconfig", pki.controllerManagerKubeconfig,
		"--leader-elect=false",
		"--bind-address", "127.0.0.1",
		"--secure-port", "0",
		"--controllers", "*",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file", pki.saKey,
		"--root-ca-file", pki.caCert,
		"--cluster-signing-cert-file", pki.caCert,
		"--cluster-signing-key-file", pki.caKey,
		"--service-cluster-ip-range", kubeServiceCIDR,
		// etcd 3.4 cannot report watch progress, so kube-apiserver refuses watch-list requests;
		// without this each informer would try one first and fall back to list and watch.
		"--feature-gates", "WatchListClient=false",
		"--profiling=false",
	); err != nil {
		return err
	}
	if err := k.runBin("kube-scheduler",
		"--kubeconfig", pki.schedulerKubeconfig,
		"--leader-elect=false",
		"--bind-address", "127.0.0.1",
		"--secure-port", "0",
		"--profiling=false",
	); err != nil {
		return err
	}
	if err := k.runBin("kwok",
		"--kubeconfig", k.KubeconfigPath,
		// Only the Node created below, not any Node a test may add.
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector", KwokNodeAnnotation+"=fake",
		// With a lease duration kwok renews the Node's Lease and refreshes its status every
		// 20-45 s; without one it would do neither in time and kube-controller-manager would
		// mark the Node NotReady after 40 s.
		"--node-lease-duration-seconds", "40",
		"--node-ip", "127.0.0.1",
		"--cidr", kubePodCIDR,
	); err != nil {
		return err
	}

	if err := k.createNode(ctx, client); err != nil {
		return err
	}
	if err := k.waitFor(ctx, "node "+k.NodeName+" to be Ready and schedulable", func() (bool, string) {
		node, err := client.CoreV1().Nodes().Get(ctx, k.NodeName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		ready := false
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				ready = true
			}
		}
		if !ready {
			return false, "the node is not Ready"
		}
		for _, taint := range node.Spec.Taints {
			if taint.Effect == corev1.TaintEffectNoSchedule || taint.Effect == corev1.TaintEffectNoExecute {
				return false, "the node has taint " + taint.ToString()
			}
		}
		return true, ""
	}); err != nil {
		return err
	}
	return k.waitFor(ctx, "the ServiceAccount default/default", func() (bool, string) {
		_, err := client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}

// createNode creates the Node that kwok simulates, with room for many pods.
func (k *KubeCluster) createNode(ctx context.Context, client kubernetes.Interface) error {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("64"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("10000"),
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        k.NodeName,
			Annotations: map[string]string{KwokNodeAnnotation: "fake"},
			Labels: map[string]string{
				"kubernetes.io/hostname": k.NodeName,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
				"type":                   "kwok",
			},
		},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
	_, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating node %s: %w", k.NodeName, err)
	}
	return nil
}

// waitFor polls check until it returns true, a program exits, or ctx ends.
func (k *KubeCluster) waitFor(ctx context.Context, what string, check func() (bool, string)) error {
	why := ""
	for {
		for _, p := range k.procs {
			if p.hasExited() {
				return fmt.Errorf("waiting for %s: %s exited (%v)", what, p.name, p.cmd.ProcessState)
			}
		}
		var done bool
		if done, why = check(); done {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: not so within %s: %s", what, kubeClusterStartTimeout, why)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// runBin runs bin/<name> args....
func (k *KubeCluster) runBin(name string, args ...string) error {
	path, err := RepoFile("bin", name)
	if err != nil {
		return err
	}
	return k.run(name, path, args...)
}

// run starts a program in its own process group, with its output appended to <dir>/<name>.log.
func (k *KubeCluster) run(name, path string, args ...string) error {
	p := &kubeProcess{name: name, logPath: filepath.Join(k.dir, name+".log"), path: path, args: args, exited: make(chan struct{})}
	f, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(f, "==== %s: %s %s\n", time.Now().Format(time.RFC3339Nano), path, strings.Join(args, " "))
	p.cmd = exec.Command(path, args...)
	p.cmd.Dir = k.dir
	p.cmd.Stdout, p.cmd.Stderr = f, f
	// kwok reads ~/.kwok/kwok.yaml unless its work directory is elsewhere.
	p.cmd.Env = append(os.Environ(), "KWOK_WORKDIR="+filepath.Join(k.dir, "kwok"))
	// Its own process group, so that killing it kills everything it started; and killed with the
	// test binary, so that nothing is left running if the binary dies without cleaning up.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("starting %s: %w", name, err)
	}
	go func() {
		_ = p.cmd.Wait()
		f.Close()
		close(p.exited)
	}()
	k.procs = append(k.procs, p)
	return nil
}

// RestartAPIServer kills kube-apiserver (SIGKILL, as in a crash), leaves it down for the
// given time, starts it again with the same arguments and waits until it is ready. etcd and the
// other programs keep running, as when an API server is restarted on its own.
func (k *KubeCluster) RestartAPIServer(down time.Duration) error {
	var old *kubeProcess
	for i, p := range k.procs {
		if p.name == "kube-apiserver" {
			old = p
			k.procs = append(k.procs[:i:i], k.procs[i+1:]...)
			break
		}
	}
	if old == nil {
		return errors.New("this cluster has no kube-apiserver")
	}
	old.kill()
	<-old.exited
	time.Sleep(down)
	if err := k.run(old.name, old.path, old.args...); err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(k.Config)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), kubeClusterStartTimeout)
	defer cancel()
	return k.waitFor(ctx, "kube-apiserver to be ready again", func() (bool, string) {
		body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			return false, fmt.Sprintf("/readyz: %v %s", err, body)
		}
		return true, ""
	})
}

func (p *kubeProcess) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// kill sends SIGKILL to the process's group.
func (p *kubeProcess) kill() {
	if !p.hasExited() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
}

// lastLines returns up to n last lines of a file.
func lastLines(path string, n int) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1024*1024), 1024*1024)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return lines, sc.Err()
}

// tenYears is the validity of a test cluster's certificates: longer than any test.
const tenYears = 10 * 365 * 24 * time.Hour

// kubePKI holds the paths of a KubeCluster's credentials.
type kubePKI struct {
	caCert, caKey               string
	servingCert, servingKey     string
	saKey                       string
	adminKubeconfig             string
	controllerManagerKubeconfig string
	schedulerKubeconfig         string
}

// writeKubePKI generates a CA, the apiserver's serving certificate, the service-account signing
// key, and client certificates for the admin (group system:masters), kube-controller-manager and
// kube-scheduler, and writes them and kubeconfigs for server into dir/pki.
func writeKubePKI(dir, name, server string) (*kubePKI, error) {
	pkiDir := filepath.Join(dir, "pki")
	if err := os.MkdirAll(pkiDir, 0o700); err != nil {
		return nil, err
	}
	file := func(n string) string { return filepath.Join(pkiDir, n) }
	pki := &kubePKI{
		caCert: file("ca.crt"), caKey: file("ca.key"),
		servingCert: file("apiserver.crt"), servingKey: file("apiserver.key"),
		saKey:                       file("sa.key"),
		adminKubeconfig:             filepath.Join(dir, "admin.kubeconfig"),
		controllerManagerKubeconfig: file("kube-controller-manager.kubeconfig"),
		schedulerKubeconfig:         file("kube-scheduler.kubeconfig"),
	}

	ca, err := edgepki.New(&x509.Certificate{
		Subject:               pkix.Name{CommonName: "edge-mc test cluster CA " + name},
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}, nil, tenYears)
	if err != nil {
		return nil, err
	}
	serving, err := edgepki.New(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.96.0.1")},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, ca, tenYears)
	if err != nil {
		return nil, err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	for path, data := range map[string][]byte{
		pki.caCert:      ca.CertPEM,
		pki.caKey:       ca.KeyPEM,
		pki.servingCert: serving.CertPEM,
		pki.servingKey:  serving.KeyPEM,
		pki.saKey:       edgepki.KeyPEM(saKey),
	} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, err
		}
	}

	for _, c := range []struct {
		path        string
		user, group string
	}{
		{pki.adminKubeconfig, "kubernetes-admin", "system:masters"},
		{pki.controllerManagerKubeconfig, "system:kube-controller-manager", ""},
		{pki.schedulerKubeconfig, "system:kube-scheduler", ""},
	} {
		subject := pkix.Name{CommonName: c.user}
		if c.group != "" {
			subject.Organization = []string{c.group}
		}
		client, err := edgepki.New(&x509.Certificate{
			Subject:     subject,
			KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}, ca, tenYears)
		if err != nil {
			return nil, err
		}
		cfg := clientcmdapi.NewConfig()
		cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca.CertPEM}
		cfg.AuthInfos[c.user] = &clientcmdapi.AuthInfo{ClientCertificateData: client.CertPEM, ClientKeyData: client.KeyPEM}
		cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: c.user}
		cfg.CurrentContext = name
		if err := clientcmd.WriteToFile(*cfg, c.path); err != nil {
			return nil, err
		}
	}
	return pki, nil
}
