package framework

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"
)

// ShardedCenter is a sharded kcp started from bin/: a cache server, a root shard, further shards
// and a front-proxy, each a process of its own with its own data directory and log, on free
// loopback ports. Users, tests and syncers reach it only through the front-proxy, as they would
// in production: Front is a Server whose admin kubeconfig points at the front-proxy, and
// framework.KCP(t) returns it in a package started by RunWithShardedKCP, so that every helper of
// the single-server harness (a workspace per test, kubectl, edge-controller-manager) works
// unchanged.
//
// The shards trust one client CA (the admin's and the shards' own certificates), one
// request-header CA (the front-proxy's, which passes on the identity it authenticated) and one
// ServiceAccount signing key, so that a credential is accepted on whichever shard holds its
// workspace. Requests without a client certificate (bearer tokens: ServiceAccounts, WithUsers)
// go through the front-proxy unauthenticated and are authenticated by the shard.
type ShardedCenter struct {
	// Front reaches the center through the front-proxy, with admin rights.
	Front *Server
	// Shards are the kcp shards; Shards[0] is the root shard.
	Shards []*Shard
	// ProxyURL is the front-proxy's base URL.
	ProxyURL string

	dir      string
	cache    *Command
	proxy    *Command
	pki      centerPKI
	clientCA *certAuthority
	keep     bool // leave dir when stopped (InDir)
}

// Shard is one kcp shard of a ShardedCenter.
type Shard struct {
	// Name is the shard's name, as its Shard object in root and the workspaces' shard annotation
	// say it ("root", "shard-1", ...).
	Name string
	// BaseURL is the shard's own address; clients of the center should not need it.
	BaseURL string
	// ProfilerAddress serves Go's /debug/pprof of the shard's process, without authentication,
	// on loopback.
	ProfilerAddress string

	cmd    *Command
	center *ShardedCenter
}

type centerPKI struct {
	servingCA, clientCA, requestHeaderCA string
	servingCert, servingKey              string
	adminCert, adminKey                  string // kcp-admin, system:kcp:admin
	shardCert, shardKey                  string // system:masters, for shard-to-shard and cache
	proxyCert, proxyKey                  string // the front-proxy's request-header identity
	signingKey                           string // ServiceAccount tokens
}

var sharded *ShardedCenter

// ShardNameLabel is the label the harness puts on each Shard object, its value the shard's name.
const ShardNameLabel = "test.edge.kcp.io/shard"

// ShardedKCP returns the package's sharded center. RunWithShardedKCP must have started it.
func ShardedKCP(t testing.TB) *ShardedCenter {
	t.Helper()
	if sharded == nil {
		t.Fatal("no sharded center: the package's TestMain must call framework.RunWithShardedKCP")
	}
	return sharded
}

// RunWithShardedKCP starts a sharded center of shards shards (at least 2), runs the tests with
// framework.KCP returning its front-proxy, stops it and returns the exit code for os.Exit. When
// a test failed, the tail of each process's log is printed. Of the KCPOptions, WithUsers and
// WithArgs (given to every shard) apply.
func RunWithShardedKCP(m *testing.M, shards int, opts ...KCPOption) int {
	var err error
	sharded, err = StartShardedKCP(shards, opts...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "framework: %v\n", err)
		if sharded != nil {
			sharded.printLogTails(60)
			sharded.Stop()
		}
		return 1
	}
	server = sharded.Front
	code := m.Run()
	if code != 0 {
		sharded.printLogTails(60)
	}
	stopEdgeKCP()
	sharded.Stop()
	RemoveCommands()
	return code
}

// StartShardedKCP starts a sharded center with the given number of shards (the root shard and
// shards-1 others), for programs other than tests as well. Stop it with Stop.
func StartShardedKCP(shards int, opts ...KCPOption) (*ShardedCenter, error) {
	var o kcpOptions
	for _, opt := range opts {
		opt(&o)
	}
	if shards < 2 {
		return nil, fmt.Errorf("a sharded center needs at least 2 shards, not %d", shards)
	}
	if os.Getenv("EDGE_E2E_KUBECONFIG") != "" {
		return nil, fmt.Errorf("these tests start a sharded kcp of their own; unset EDGE_E2E_KUBECONFIG")
	}
	o.users = append(o.users, controllerUser)
	bins := map[string]string{}
	for _, name := range []string{"kcp", "kcp-front-proxy", "cache-server"} {
		path, err := RepoFile("bin", name)
		if err != nil {
			return nil, err
		}
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("%s is missing: run 'make tools' first (it builds kcp, kcp-front-proxy and cache-server at the pinned version)", path)
		}
		bins[name] = path
	}
	dir, keep := o.dir, o.dir != ""
	if keep {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
	} else {
		var err error
		if dir, err = os.MkdirTemp("", "edge-mc-sharded-"); err != nil {
			return nil, err
		}
	}
	c := &ShardedCenter{dir: dir, keep: keep}
	if err := c.makePKI(); err != nil {
		return c, err
	}
	// Ports: the cache's secure, etcd client and peer ports; each shard's the same; the proxy's.
	ports, err := FreePorts(3 + 3*shards + 1)
	if err != nil {
		return c, err
	}
	profilerPorts, err := FreePorts(shards)
	if err != nil {
		return c, err
	}
	url := func(port int) string { return "https://127.0.0.1:" + strconv.Itoa(port) }
	c.ProxyURL = url(ports[len(ports)-1])
	start := time.Now()

	// The cache server.
	cacheDir := filepath.Join(dir, "cache")
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return c, err
	}
	cacheKubeconfig := filepath.Join(dir, "cache.kubeconfig")
	if err := c.writeKubeconfig(cacheKubeconfig, "cache", url(ports[0]), c.pki.shardCert, c.pki.shardKey); err != nil {
		return c, err
	}
	fmt.Fprintf(os.Stderr, "framework: starting a sharded kcp in %s: cache server on %s\n", dir, url(ports[0]))
	c.cache, err = StartCommand(bins["cache-server"], filepath.Join(cacheDir, "cache.log"),
		// It reads --root-directory before its other flags, and only in the --flag=value form.
		"--root-directory="+cacheDir,
		"--embedded-etcd-directory="+filepath.Join(cacheDir, "etcd-server"),
		"--bind-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(ports[0]),
		"--embedded-etcd-client-port", strconv.Itoa(ports[1]),
		"--embedded-etcd-peer-port", strconv.Itoa(ports[2]),
		"--client-ca-file", c.pki.clientCA,
		"--tls-cert-file", c.pki.servingCert,
		"--tls-private-key-file", c.pki.servingKey,
	)
	if err != nil {
		return c, err
	}
	if err := c.waitReadyz("the cache server", url(ports[0]), c.cache); err != nil {
		return c, err
	}

	// Kubeconfigs the shards use to reach each other, the root shard and the front-proxy.
	rootURL := url(ports[3])
	logicalClusterAdmin := filepath.Join(dir, "logical-cluster-admin.kubeconfig")
	externalLogicalClusterAdmin := filepath.Join(dir, "external-logical-cluster-admin.kubeconfig")
	rootShardKubeconfig := filepath.Join(dir, "root-shard.kubeconfig")
	pki := filepath.Join(dir, "pki")
	lcaCert, lcaKey, err := c.issueClient(pki, "logical-cluster-admin", "logical-cluster-admin", "system:kcp:logical-cluster-admin")
	if err != nil {
		return c, err
	}
	elcaCert, elcaKey, err := c.issueClient(pki, "external-logical-cluster-admin", "external-logical-cluster-admin", "system:kcp:external-logical-cluster-admin")
	if err != nil {
		return c, err
	}
	if err := c.writeKubeconfig(logicalClusterAdmin, "base", rootURL, lcaCert, lcaKey); err != nil {
		return c, err
	}
	if err := c.writeKubeconfig(externalLogicalClusterAdmin, "base", c.ProxyURL, elcaCert, elcaKey); err != nil {
		return c, err
	}
	// kcp reads the root shard's kubeconfig with the context "shard-base".
	if err := c.writeKubeconfig(rootShardKubeconfig, "shard-base", rootURL, c.pki.shardCert, c.pki.shardKey); err != nil {
		return c, err
	}
	var tokenFile string
	if len(o.users) > 0 {
		file, tokens, err := writeTokenFile(dir, o.users)
		if err != nil {
			return c, err
		}
		tokenFile = file
		defer func() {
			if c.Front != nil {
				c.Front.tokens = tokens
			}
		}()
	}

	for i := 0; i < shards; i++ {
		p := ports[3+3*i : 6+3*i]
		sh := &Shard{Name: "root", BaseURL: url(p[0]), ProfilerAddress: "127.0.0.1:" + strconv.Itoa(profilerPorts[i]), center: c}
		if i > 0 {
			sh.Name = "shard-" + strconv.Itoa(i)
		}
		shardDir := filepath.Join(dir, sh.Name)
		if err := os.MkdirAll(shardDir, 0o755); err != nil {
			return c, err
		}
		args := []string{"start",
			"--root-directory", shardDir,
			"--bind-address", "127.0.0.1",
			"--secure-port", strconv.Itoa(p[0]),
			"--embedded-etcd-client-port", strconv.Itoa(p[1]),
			"--embedded-etcd-peer-port", strconv.Itoa(p[2]),
			"--tls-cert-file", c.pki.servingCert,
			"--tls-private-key-file", c.pki.servingKey,
			"--client-ca-file", c.pki.clientCA,
			"--requestheader-client-ca-file", c.pki.requestHeaderCA,
			"--requestheader-username-headers", "X-Remote-User",
			"--requestheader-group-headers", "X-Remote-Group",
			"--requestheader-extra-headers-prefix", "X-Remote-Extra-",
			"--service-account-key-file", c.pki.signingKey,
			"--service-account-private-key-file", c.pki.signingKey,
			"--service-account-signing-key-file", c.pki.signingKey,
			"--shard-base-url", sh.BaseURL,
			"--shard-external-url", c.ProxyURL,
			"--shard-virtual-workspace-ca-file", c.pki.servingCA,
			"--shard-client-cert-file", c.pki.shardCert,
			"--shard-client-key-file", c.pki.shardKey,
			"--logical-cluster-admin-kubeconfig", logicalClusterAdmin,
			"--external-logical-cluster-admin-kubeconfig", externalLogicalClusterAdmin,
			"--cache-kubeconfig", cacheKubeconfig,
			"--profiler-address", sh.ProfilerAddress,
		}
		if i > 0 {
			args = append(args, "--shard-name", sh.Name, "--root-shard-kubeconfig-file", rootShardKubeconfig)
		}
		if tokenFile != "" {
			args = append(args, "--token-auth-file", tokenFile)
		}
		args = append(args, o.args...)
		fmt.Fprintf(os.Stderr, "framework: starting kcp shard %s on %s\n", sh.Name, sh.BaseURL)
		sh.cmd, err = StartCommand(bins["kcp"], filepath.Join(shardDir, "kcp.log"), args...)
		if err != nil {
			return c, err
		}
		c.Shards = append(c.Shards, sh)
		if err := sh.waitReady(); err != nil {
			return c, err
		}
	}

	// The front-proxy: it finds a workspace's shard from the Shard objects and workspaces it
	// watches on the root shard, and passes on the identity it authenticated by request headers.
	proxyDir := filepath.Join(dir, "front-proxy")
	if err := os.MkdirAll(proxyDir, 0o755); err != nil {
		return c, err
	}
	mapping := []map[string]string{}
	for _, path := range []string{"/services/", "/clusters/"} {
		mapping = append(mapping, map[string]string{
			"path":                path,
			"backend":             rootURL,
			"backend_server_ca":   c.pki.servingCA,
			"proxy_client_cert":   c.pki.proxyCert,
			"proxy_client_key":    c.pki.proxyKey,
			"extra_header_prefix": "X-Remote-Extra-",
		})
	}
	raw, err := yaml.Marshal(mapping)
	if err != nil {
		return c, err
	}
	mappingFile := filepath.Join(proxyDir, "mapping.yaml")
	if err := os.WriteFile(mappingFile, raw, 0o644); err != nil {
		return c, err
	}
	shardsKubeconfig := filepath.Join(proxyDir, "shards.kubeconfig")
	if err := c.writeKubeconfig(shardsKubeconfig, "base", "", c.pki.shardCert, c.pki.shardKey); err != nil {
		return c, err
	}
	fmt.Fprintf(os.Stderr, "framework: starting kcp-front-proxy on %s\n", c.ProxyURL)
	c.proxy, err = StartCommand(bins["kcp-front-proxy"], filepath.Join(proxyDir, "front-proxy.log"),
		"--root-directory", proxyDir,
		"--bind-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(ports[len(ports)-1]),
		"--mapping-file", mappingFile,
		"--root-kubeconfig", rootShardKubeconfig,
		"--shards-kubeconfig", shardsKubeconfig,
		"--client-ca-file", c.pki.clientCA,
		"--tls-cert-file", c.pki.servingCert,
		"--tls-private-key-file", c.pki.servingKey,
	)
	if err != nil {
		return c, err
	}
	if err := c.waitReadyz("kcp-front-proxy", c.ProxyURL, c.proxy); err != nil {
		return c, err
	}

	// The admin kubeconfig users and tests get: the front-proxy, client certificate of kcp-admin.
	front := &Server{KubeconfigPath: filepath.Join(dir, "admin.kubeconfig")}
	if err := c.writeKubeconfig(front.KubeconfigPath, "root", c.ProxyURL+"/clusters/root", c.pki.adminCert, c.pki.adminKey); err != nil {
		return c, err
	}
	if err := front.connect(); err != nil {
		return c, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), kcpStartTimeout)
	defer cancel()
	if err := waitFor(ctx, func() error { return front.probe(ctx) }); err != nil {
		return c, fmt.Errorf("the root workspace did not answer through the front-proxy: %w", err)
	}
	// Every shard but root registers itself; wait until root lists them all.
	if err := waitFor(ctx, func() error {
		list, err := front.KCP.Cluster(logicalcluster.NewPath("root")).CoreV1alpha1().Shards().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(list.Items) != len(c.Shards) {
			return fmt.Errorf("root lists %d Shards, not %d", len(list.Items), len(c.Shards))
		}
		return nil
	}); err != nil {
		return c, err
	}
	// Label each Shard with its name, so that a test can place a workspace on a given shard
	// (Workspace spec.location.selector matches Shard labels; kcp sets none by itself).
	for _, sh := range c.Shards {
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, ShardNameLabel, sh.Name)
		if _, err := front.KCP.Cluster(logicalcluster.NewPath("root")).CoreV1alpha1().Shards().Patch(ctx, sh.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			return c, fmt.Errorf("labelling the Shard %s: %w", sh.Name, err)
		}
	}
	front.StartupTime = time.Since(start)
	c.Front = front
	fmt.Fprintf(os.Stderr, "framework: sharded kcp (%d shards) ready in %s\n", shards, front.StartupTime.Round(100*time.Millisecond))
	return c, nil
}

// Stop ends every process of the center and removes its directory unless EDGE_E2E_KEEP is set.
func (c *ShardedCenter) Stop() {
	if c.proxy != nil {
		c.proxy.Stop()
	}
	for i := len(c.Shards) - 1; i >= 0; i-- {
		c.Shards[i].cmd.Stop()
	}
	if c.cache != nil {
		c.cache.Stop()
	}
	if c.keep || os.Getenv("EDGE_E2E_KEEP") != "" {
		fmt.Fprintf(os.Stderr, "framework: kept the sharded kcp's directory %s\n", c.dir)
		return
	}
	_ = os.RemoveAll(c.dir)
}

// Shard returns the shard called name, or nil.
func (c *ShardedCenter) Shard(name string) *Shard {
	for _, s := range c.Shards {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// Kill ends the shard's process at once, as a crash or power loss would; its data stays.
func (s *Shard) Kill() { s.cmd.Kill() }

// Restart starts the shard again, after Kill, with the same data and ports, and waits until it
// is ready.
func (s *Shard) Restart() error {
	if err := s.cmd.Restart(); err != nil {
		return err
	}
	return s.waitReady()
}

// LogPath is the file the shard's output goes to.
func (s *Shard) LogPath() string { return s.cmd.LogPath() }

// PID is the shard's process ID.
func (s *Shard) PID() int { return s.cmd.PID() }

// metricsTimeout bounds a read of a server's /metrics, megabytes on a busy shard.
const metricsTimeout = 30 * time.Second

// Metrics returns the shard's own Prometheus metrics (GET /metrics on its address, not through
// the front-proxy), read with the shards' client certificate: what this shard served.
func (s *Shard) Metrics(ctx context.Context) (string, error) {
	client, err := s.center.httpClient()
	if err != nil {
		return "", err
	}
	client.Timeout = metricsTimeout
	return getMetrics(ctx, client, s.BaseURL)
}

// FrontProxyPID is the process ID of the center's front-proxy.
func (c *ShardedCenter) FrontProxyPID() int { return c.proxy.PID() }

// CachePID is the process ID of the center's cache server.
func (c *ShardedCenter) CachePID() int { return c.cache.PID() }

func (s *Shard) waitReady() error {
	return s.center.waitReadyz("kcp shard "+s.Name, s.BaseURL, s.cmd)
}

// waitReadyz waits until GET <base>/readyz answers 200 with the shard client certificate.
func (c *ShardedCenter) waitReadyz(what, base string, cmd *Command) error {
	client, err := c.httpClient()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), kcpStartTimeout)
	defer cancel()
	err = waitFor(ctx, func() error {
		if cmd.Exited() {
			tail, _ := lastLines(cmd.LogPath(), 5)
			return stopWaiting{fmt.Errorf("%s exited before it was ready; the end of its log %s:\n%s", what, cmd.LogPath(), strings.Join(tail, "\n"))}
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/readyz", nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s/readyz: %s", base, resp.Status)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// stopWaiting is an error after which waitFor gives up at once.
type stopWaiting struct{ error }

// waitFor calls try every 250 ms until it returns nil, a stopWaiting, or ctx ends.
func waitFor(ctx context.Context, try func() error) error {
	var last error
	for {
		last = try()
		if last == nil {
			return nil
		}
		if stop, ok := last.(stopWaiting); ok {
			return stop.error
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready within %s: %w", kcpStartTimeout, last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (c *ShardedCenter) httpClient() (*http.Client, error) {
	caPEM, err := os.ReadFile(c.pki.servingCA)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	cert, err := tls.LoadX509KeyPair(c.pki.shardCert, c.pki.shardKey)
	if err != nil {
		return nil, err
	}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
	}}, nil
}

func (c *ShardedCenter) makePKI() error {
	dir := filepath.Join(c.dir, "pki")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	serving, err := newCertAuthority(dir, "serving-ca", "edge-mc-test-serving-ca")
	if err != nil {
		return err
	}
	client, err := newCertAuthority(dir, "client-ca", "edge-mc-test-client-ca")
	if err != nil {
		return err
	}
	requestHeader, err := newCertAuthority(dir, "requestheader-ca", "edge-mc-test-requestheader-ca")
	if err != nil {
		return err
	}
	p := &c.pki
	p.servingCA, p.clientCA, p.requestHeaderCA = serving.CertPEM, client.CertPEM, requestHeader.CertPEM
	if p.servingCert, p.servingKey, err = serving.issueServing(dir, "serving"); err != nil {
		return err
	}
	if p.adminCert, p.adminKey, err = client.issueClient(dir, "kcp-admin", "kcp-admin", "system:kcp:admin"); err != nil {
		return err
	}
	if p.shardCert, p.shardKey, err = client.issueClient(dir, "shard", "kcp-shard", "system:masters"); err != nil {
		return err
	}
	if p.proxyCert, p.proxyKey, err = requestHeader.issueClient(dir, "front-proxy", "kcp-front-proxy"); err != nil {
		return err
	}
	p.signingKey = filepath.Join(dir, "service-account.key")
	c.clientCA = client
	return writeSigningKey(p.signingKey)
}

// issueClient issues a further client certificate from the center's client CA.
func (c *ShardedCenter) issueClient(dir, file, cn string, groups ...string) (string, string, error) {
	return c.clientCA.issueClient(dir, file, cn, groups...)
}

// writeKubeconfig writes a kubeconfig with one context, name, for server (none if empty) with
// the serving CA and a client certificate.
func (c *ShardedCenter) writeKubeconfig(path, name, server, cert, key string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthority: c.pki.servingCA}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificate: cert, ClientKey: key}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	cfg.CurrentContext = name
	if err := clientcmdapi.FlattenConfig(cfg); err != nil {
		return err
	}
	return clientcmd.WriteToFile(*cfg, path)
}

func (c *ShardedCenter) printLogTails(n int) {
	var logs []string
	if c.cache != nil {
		logs = append(logs, c.cache.LogPath())
	}
	for _, s := range c.Shards {
		logs = append(logs, s.LogPath())
	}
	if c.proxy != nil {
		logs = append(logs, c.proxy.LogPath())
	}
	for _, path := range logs {
		tail, _ := lastLines(path, n)
		fmt.Fprintf(os.Stderr, "---- last %d lines of %s ----\n%s\n---- end of %s ----\n", len(tail), path, strings.Join(tail, "\n"), path)
	}
}

// ShardOf returns the name of the shard that holds the workspace at path. It asks the workspace's
// parent, through the front-proxy, for the workspace's logical cluster, then each shard directly
// whether it serves that logical cluster: what kcp stores, not an annotation's promise.
func (c *ShardedCenter) ShardOf(ctx context.Context, path logicalcluster.Path) (string, error) {
	parent, name := path.Split()
	ws, err := c.Front.KCP.Cluster(parent).TenancyV1alpha1().Workspaces().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("reading the workspace %s: %w", path, err)
	}
	if ws.Spec.Cluster == "" {
		return "", fmt.Errorf("the workspace %s has no logical cluster yet (phase %s)", path, ws.Status.Phase)
	}
	client, err := c.httpClient()
	if err != nil {
		return "", err
	}
	var holders []string
	for _, s := range c.Shards {
		url := s.BaseURL + "/clusters/" + ws.Spec.Cluster + "/apis/core.kcp.io/v1alpha1/logicalclusters/cluster"
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return "", err
		}
		resp, err := client.Do(req)
		if err != nil {
			return "", fmt.Errorf("asking shard %s for the logical cluster %s of %s: %w", s.Name, ws.Spec.Cluster, path, err)
		}
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			holders = append(holders, s.Name)
		case http.StatusNotFound, http.StatusForbidden:
		default:
			return "", fmt.Errorf("asking shard %s for the logical cluster %s of %s: %s", s.Name, ws.Spec.Cluster, path, resp.Status)
		}
	}
	if len(holders) != 1 {
		return "", fmt.Errorf("the logical cluster %s of %s is served by %d shards (%v), not one", ws.Spec.Cluster, path, len(holders), holders)
	}
	return holders[0], nil
}

// EventuallyShardOf is ShardOf retried until the workspace at path has a logical cluster on some
// shard (a new workspace is scheduled to a shard within seconds), failing the test after Converge.
func (c *ShardedCenter) EventuallyShardOf(t testing.TB, path logicalcluster.Path) string {
	t.Helper()
	var shard string
	Eventually(t, Converge, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var err error
		shard, err = c.ShardOf(ctx, path)
		if err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	return shard
}

// NewWorkspaceOn creates a fresh workspace under root on the named shard and returns its path.
func (c *ShardedCenter) NewWorkspaceOn(t testing.TB, shard string) logicalcluster.Path {
	t.Helper()
	path := logicalcluster.NewPath("root").Join(testWorkspaceName(t) + "-on-" + shard)
	c.CreateWorkspaceOn(t, path, shard)
	return path
}

// CreateWorkspaceOn creates the workspace at path (its parent must exist) on the named shard, by
// the Workspace's spec.location.selector, and waits until it is Ready there.
func (c *ShardedCenter) CreateWorkspaceOn(t testing.TB, path logicalcluster.Path, shard string) {
	t.Helper()
	parent, name := path.Split()
	ws := &tenancyv1alpha1.Workspace{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: tenancyv1alpha1.WorkspaceSpec{Location: &tenancyv1alpha1.WorkspaceLocation{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{ShardNameLabel: shard}},
		}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := c.Front.KCP.Cluster(parent).TenancyV1alpha1().Workspaces().Create(ctx, ws, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the workspace %s on shard %s: %v", path, shard, err)
	}
	Eventually(t, Converge, func() (bool, string) {
		got, err := c.Front.KCP.Cluster(parent).TenancyV1alpha1().Workspaces().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return got.Status.Phase == "Ready", fmt.Sprintf("workspace %s is %s", path, got.Status.Phase)
	})
	if got := c.EventuallyShardOf(t, path); got != shard {
		t.Fatalf("the workspace %s, placed on shard %s, is on shard %s", path, shard, got)
	}
	t.Logf("workspace %s on shard %s", path, shard)
}
