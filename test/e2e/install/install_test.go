// Package install tests docs/install.md by doing what it says, as an operator would, on real
// clusters: the harness's kcp, three Kubernetes clusters of the harness (one next to kcp for
// edge-controller-manager, two edge clusters) and a registry on loopback. It runs the page's `sh`
// blocks in order in one bash, with the test's own values for the settings of the first block.
//
// kwok, the harness's stand-in for the kubelet, runs no container. So when the page has applied
// edge-controller-manager's Deployment, and again when it has applied the syncers', the test
// does the kubelet's part: it pulls the image that each Deployment names from the registry the
// page pushed to, takes the binary out of it, and runs it as a process per replica with the
// Deployment's arguments, the Secret it mounts, and for a syncer, whose pod would reach its
// cluster with its ServiceAccount, a kubeconfig with that ServiceAccount's token. Then the page
// goes on, and waits, as it says, for what those processes do.
package install

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/kcp-dev/edge-mc/test/e2e/quickstart"
	"github.com/kcp-dev/edge-mc/test/framework"
)

func TestMain(m *testing.M) {
	os.Exit(framework.RunWithKCP(m))
}

// settings are the variables of the page's first sh block, which the test sets itself.
var settings = []string{"INSTALL", "KCP_KUBECONFIG", "ECM_TOKEN", "CENTER_KUBECONFIG", "EDGES", "REGISTRY"}

// The headings after whose blocks the test does the kubelet's part.
const (
	controllerManagerHeading = "4. Run edge-controller-manager next to kcp"
	syncersHeading           = "6. Install a syncer in each edge cluster"
)

var edges = []string{"edge-1", "edge-2"}

// TestInstall runs docs/install.md.
func TestInstall(t *testing.T) {
	root, err := framework.RepoFile()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "docs", "install.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := quickstart.Blocks(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("docs/install.md: %v", err)
	}
	var sh []quickstart.Block
	for _, b := range blocks {
		if b.Lang == "sh" {
			sh = append(sh, b)
		}
	}
	if len(sh) < 2 {
		t.Fatalf("docs/install.md has %d sh blocks; want the settings and the steps", len(sh))
	}
	names, err := quickstart.ExportedNames(sh[0])
	if err != nil {
		t.Fatalf("docs/install.md: the first sh block must only export the settings: %v", err)
	}
	if !slices.Equal(names, settings) {
		t.Fatalf("docs/install.md: the first sh block sets %v; this test knows how to set %v: update one or the other", names, settings)
	}
	phases := splitAfter(sh[1:], controllerManagerHeading, syncersHeading)
	if len(phases) != 3 {
		t.Fatalf("docs/install.md: want sh blocks under the headings %q and %q, which this test follows with the kubelet's part", controllerManagerHeading, syncersHeading)
	}

	// The clusters, the registry, and the settings' values.
	dir := t.TempDir()
	center := framework.StartKubeCluster(t, "center")
	edgeClusters := map[string]*framework.KubeCluster{}
	edgesDir := filepath.Join(dir, "edges")
	for _, e := range edges {
		edgeClusters[e] = framework.StartKubeCluster(t, e)
		copyFile(t, edgeClusters[e].KubeconfigPath, filepath.Join(edgesDir, e+".kubeconfig"))
	}
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	kcpKubeconfig := filepath.Join(dir, "kcp-admin.kubeconfig")
	copyFile(t, framework.KCP(t).KubeconfigPath, kcpKubeconfig)
	values := map[string]string{
		"INSTALL":           filepath.Join(dir, "install"),
		"KCP_KUBECONFIG":    kcpKubeconfig,
		"ECM_TOKEN":         framework.ControllerToken(t),
		"CENTER_KUBECONFIG": center.KubeconfigPath,
		"EDGES":             edgesDir,
		"REGISTRY":          strings.TrimPrefix(reg.URL, "http://") + "/edge-mc",
	}

	page := startPage(t, root, dir, values)
	page.run("the build, kcp and edge-controller-manager's Deployment", phases[0], 30*time.Minute)
	runDeployments(t, center, "edge-mc", nil)
	page.run("the inventory and the syncers' Deployments", phases[1], 10*time.Minute)
	for _, e := range edges {
		runDeployments(t, edgeClusters[e], "edge-syncer", edgeClusters[e])
	}
	page.run("the rest", phases[2], 10*time.Minute)
	page.finish()

	// What the page says happened: the workload at each edge cluster, customised for it.
	for e, want := range map[string]string{"edge-1": "Hello from eu!", "edge-2": "Hello from us!"} {
		cm, err := edgeClusters[e].KubeClient(t).CoreV1().ConfigMaps("hello").Get(context.Background(), "hello-config", metav1.GetOptions{})
		if err != nil {
			t.Errorf("%s: %v", e, err)
			continue
		}
		if got := cm.Data["greeting"]; got != want {
			t.Errorf("%s: greeting %q, want %q", e, got, want)
		}
	}
}

// splitAfter splits blocks into phases, each ending after the last block under one of the
// headings, in order; the last phase holds the rest.
func splitAfter(blocks []quickstart.Block, headings ...string) [][]quickstart.Block {
	var phases [][]quickstart.Block
	rest := blocks
	for _, h := range headings {
		last := -1
		for i, b := range rest {
			if b.Heading == h {
				last = i
			}
		}
		if last < 0 {
			return nil
		}
		phases = append(phases, rest[:last+1])
		rest = rest[last+1:]
	}
	return append(phases, rest)
}

// page is the one bash that runs the page's blocks, phase after phase, so that what one block
// sets (variables, PATH, KUBECONFIG) holds for the next, as in a reader's shell. It reads its
// commands from a pipe on fd 3, so that commands that read their input read nothing.
type page struct {
	t       *testing.T
	cmd     *exec.Cmd
	script  *os.File
	out     string
	markers string
	exited  chan error
	phase   int
}

func startPage(t *testing.T, root, dir string, values map[string]string) *page {
	t.Helper()
	// The repository's kubectl-ws (kcp's plugin, from make tools) on the PATH, and nothing else of
	// the repository: the page installs kubectl-edge itself.
	plugins := filepath.Join(dir, "plugins")
	if err := os.MkdirAll(plugins, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "bin", "kubectl-ws"), filepath.Join(plugins, "kubectl-ws")); err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &page{t: t, script: w, out: filepath.Join(dir, "page.out"), markers: filepath.Join(dir, "markers"), exited: make(chan error, 1)}
	if err := os.MkdirAll(p.markers, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(p.out)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command("bash", "/dev/fd/3")
	p.cmd.Dir = root
	p.cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "KUBECONFIG=") || strings.HasPrefix(kv, "VERSION=")
	}), "HOME="+filepath.Join(dir, "home"), "PATH="+plugins+string(os.PathListSeparator)+os.Getenv("PATH"),
		// The page's make release builds for this machine's platform only: what the test runs.
		// The other platform's build, from scratch on a new machine the longest step of make
		// test, is the ship package's to check (TestRelease, TestImages).
		"PLATFORMS=linux/"+runtime.GOARCH)
	// A home of its own (no docker credentials, no kubectl cache of the machine's user), but Go's
	// caches of this machine, so that the build reuses what was built before.
	for _, v := range []string{"GOCACHE", "GOMODCACHE", "GOPATH"} {
		out, err := exec.Command("go", "env", v).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", v, err)
		}
		p.cmd.Env = append(p.cmd.Env, v+"="+strings.TrimSpace(string(out)))
	}
	p.cmd.ExtraFiles = []*os.File{r}
	p.cmd.Stdout, p.cmd.Stderr = out, out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	go func() { p.exited <- p.cmd.Wait(); out.Close() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		w.Close()
	})
	fmt.Fprintln(w, "set -euo pipefail")
	for _, n := range settings {
		fmt.Fprintf(w, "export %s=%s\n", n, shellQuote(values[n]))
	}
	return p
}

// run gives the bash the blocks of a phase and waits until it has run them, failing the test
// with the output if they fail or take longer than timeout.
func (p *page) run(what string, blocks []quickstart.Block, timeout time.Duration) {
	t := p.t
	t.Helper()
	p.phase++
	var script strings.Builder
	for _, b := range blocks {
		fmt.Fprintf(&script, "printf '\\n### docs/install.md line %%s: %%s\\n' %d %s\n", b.Line, shellQuote(b.Heading))
		script.WriteString(b.Text)
	}
	marker := filepath.Join(p.markers, strconv.Itoa(p.phase))
	fmt.Fprintf(&script, "touch %s\n", shellQuote(marker))
	t.Logf("running %s of docs/install.md (%d sh blocks); output in %s", what, len(blocks), p.out)
	start := time.Now()
	if _, err := io.WriteString(p.script, script.String()); err != nil {
		p.fail(what, err)
	}
	deadline := time.After(timeout)
	for {
		if _, err := os.Stat(marker); err == nil {
			t.Logf("%s took %s", what, time.Since(start).Round(time.Second))
			return
		}
		select {
		case err := <-p.exited:
			p.fail(what, fmt.Errorf("bash exited: %v", err))
		case <-deadline:
			p.fail(what, fmt.Errorf("not done within %s", timeout))
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// finish ends the bash's input and waits for it to exit.
func (p *page) finish() {
	p.script.Close()
	select {
	case err := <-p.exited:
		if err != nil {
			p.fail("the end", err)
		}
	case <-time.After(time.Minute):
		p.fail("the end", errors.New("bash did not exit at the end of its input"))
	}
	output, _ := os.ReadFile(p.out)
	p.t.Logf("---- output of docs/install.md ----\n%s---- end ----", output)
}

func (p *page) fail(what string, err error) {
	p.t.Helper()
	output, _ := os.ReadFile(p.out)
	p.t.Fatalf("%s of docs/install.md failed: %v (the last ### line says which block)\n---- output ----\n%s---- end ----", what, err, output)
}

// runDeployments does the kubelet's part for the Deployments in namespace ns of cluster: for
// each replica, the binary of the image the Deployment names, pulled from the registry, run with
// the container's arguments and the Secret it mounts. For a syncer, whose pod would reach the
// cluster with its ServiceAccount's token, edge is its cluster, reached with such a token.
func runDeployments(t *testing.T, cluster *framework.KubeCluster, ns string, edge *framework.KubeCluster) {
	t.Helper()
	ctx := context.Background()
	client := cluster.KubeClient(t)
	list, err := client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) == 0 {
		t.Fatalf("the page made no Deployment in namespace %s of cluster %s", ns, cluster.Name)
	}
	for i := range list.Items {
		d := &list.Items[i]
		spec := d.Spec.Template.Spec
		if len(spec.Containers) != 1 {
			t.Fatalf("Deployment %s/%s has %d containers; the test runs one", ns, d.Name, len(spec.Containers))
		}
		c := spec.Containers[0]
		binary := pullBinary(t, c.Image)
		dir := t.TempDir()
		args := mountSecrets(t, client, ns, d, c.Args, dir)
		if edge != nil {
			args = append(args, "--to-kubeconfig="+serviceAccountKubeconfig(t, edge, ns, spec.ServiceAccountName, dir))
		}
		for r := 0; r < int(ptr.Deref(d.Spec.Replicas, 1)); r++ {
			ports, err := framework.FreePorts(1)
			if err != nil {
				t.Fatal(err)
			}
			replicaArgs := append(slices.Clone(args), "--http-address=127.0.0.1:"+strconv.Itoa(ports[0]), fmt.Sprintf("--identity=%s-%d", d.Name, r))
			logPath := filepath.Join(dir, fmt.Sprintf("%s-%d.log", d.Name, r))
			cmd, err := framework.StartCommand(binary, logPath, replicaArgs...)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("running %s (%s, replica %d of Deployment %s/%s in %s) as a process: %s", filepath.Base(binary), c.Image, r, ns, d.Name, cluster.Name, strings.Join(replicaArgs, " "))
			t.Cleanup(func() {
				cmd.Stop()
				if t.Failed() {
					raw, _ := os.ReadFile(logPath)
					t.Logf("---- end of the log of %s replica %d ----\n%s", d.Name, r, tail(string(raw), 40))
				}
			})
		}
	}
}

// mountSecrets writes the Secrets that the container mounts into dir, as the kubelet would
// mount them, and returns args with each mount path replaced by the directory the Secret was
// written to.
func mountSecrets(t *testing.T, client kubernetes.Interface, ns string, d *appsv1.Deployment, args []string, dir string) []string {
	t.Helper()
	volumes := map[string]corev1.Volume{}
	for _, v := range d.Spec.Template.Spec.Volumes {
		volumes[v.Name] = v
	}
	args = slices.Clone(args)
	for _, m := range d.Spec.Template.Spec.Containers[0].VolumeMounts {
		v, ok := volumes[m.Name]
		if !ok || v.Secret == nil {
			continue
		}
		secret, err := client.CoreV1().Secrets(ns).Get(context.Background(), v.Secret.SecretName, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the Secret %s/%s that Deployment %s mounts: %v", ns, v.Secret.SecretName, d.Name, err)
		}
		files := map[string][]byte{}
		if len(v.Secret.Items) == 0 {
			for k, data := range secret.Data {
				files[k] = data
			}
		}
		for _, item := range v.Secret.Items {
			data, ok := secret.Data[item.Key]
			if !ok {
				t.Fatalf("the Secret %s/%s lacks the key %s that Deployment %s mounts", ns, secret.Name, item.Key, d.Name)
			}
			files[item.Path] = data
		}
		mountDir := filepath.Join(dir, "volumes", m.Name)
		for path, data := range files {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(mountDir, path)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(mountDir, path), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		for i, a := range args {
			args[i] = strings.ReplaceAll(a, "="+m.MountPath+"/", "="+mountDir+"/")
		}
	}
	return args
}

// serviceAccountKubeconfig writes a kubeconfig for cluster with a token of the ServiceAccount
// ns/name into dir, as a pod of that ServiceAccount would reach the cluster, and returns its path.
func serviceAccountKubeconfig(t *testing.T, cluster *framework.KubeCluster, ns, sa, dir string) string {
	t.Helper()
	tr, err := cluster.KubeClient(t).CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), sa,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a token of ServiceAccount %s/%s: %v", ns, sa, err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["cluster"] = &clientcmdapi.Cluster{Server: cluster.Config.Host, CertificateAuthorityData: cluster.Config.CAData}
	cfg.AuthInfos["sa"] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts["sa"] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: "sa"}
	cfg.CurrentContext = "sa"
	path := filepath.Join(dir, "serviceaccount.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// pullBinary pulls the image ref for this machine's platform from the registry and writes its
// entrypoint, taken out of its file system, into a temporary file.
func pullBinary(t *testing.T, ref string) string {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatalf("the Deployment's image %q: %v", ref, err)
	}
	img, err := remote.Image(r, remote.WithPlatform(v1.Platform{OS: runtime.GOOS, Architecture: runtime.GOARCH}))
	if err != nil {
		t.Fatalf("pulling %s: %v", ref, err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Config.Entrypoint) != 1 {
		t.Fatalf("%s has the entrypoint %q; the test runs a single binary", ref, cfg.Config.Entrypoint)
	}
	entrypoint := strings.TrimPrefix(cfg.Config.Entrypoint[0], "/")
	data, err := fileFromImage(img, entrypoint)
	if err != nil {
		t.Fatalf("%s: %v", ref, err)
	}
	path := filepath.Join(t.TempDir(), filepath.Base(entrypoint))
	if err := os.WriteFile(path, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// fileFromImage returns the content of a file of the image's file system.
func fileFromImage(img v1.Image, path string) ([]byte, error) {
	rc := mutate.Extract(img)
	defer rc.Close()
	return readTarFile(rc, path)
}

// readTarFile returns the content of the file named path in a tar.
func readTarFile(r io.Reader, path string) ([]byte, error) {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil, fmt.Errorf("no file %s in the image", path)
		}
		if err != nil {
			return nil, err
		}
		if strings.TrimPrefix(h.Name, "/") == path {
			return io.ReadAll(tr)
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
