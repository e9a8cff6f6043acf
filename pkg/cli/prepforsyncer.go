package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/transport"
	"github.com/kcp-dev/edge-mc/pkg/version"
	"github.com/kcp-dev/edge-mc/pkg/workspaces"
)

const (
	// DefaultSyncerNamespace is the pcluster namespace that the syncer runs in.
	DefaultSyncerNamespace = transport.DefaultEdgeSyncerNamespace

	// syncerKubeconfigDir is where the Deployment mounts the Secret holding the mailbox
	// kubeconfig, under the key syncerKubeconfigKey.
	syncerKubeconfigDir = "/etc/edge-syncer"
	syncerKubeconfigKey = "kubeconfig"
	// syncerHealthPort serves the syncer's /healthz.
	syncerHealthPort = 8080
	// annotationKubeconfigHash on the syncer's pod template changes when the kubeconfig does,
	// so that a new credential rolls the syncer.
	annotationKubeconfigHash = "edge.kcp.io/kubeconfig-sha256"

	// mailboxPollInterval is how often prep-for-syncer looks at the SyncTarget while it waits,
	// and mailboxReportInterval how often it says that it is still waiting.
	mailboxPollInterval   = time.Second
	mailboxReportInterval = 10 * time.Second
	// mailboxLookTimeout bounds each look at the SyncTarget and its mailbox.
	mailboxLookTimeout = 10 * time.Second
)

type prepForSyncerOptions struct {
	imw             string
	output          string // --output-file
	format          string // -o, kubectl's output format: yaml, the only one
	syncerImage     string
	syncerNamespace string
	kubeconfigOnly  bool
}

func newPrepForSyncerCommand(o *Options) *cobra.Command {
	p := &prepForSyncerOptions{}
	cmd := &cobra.Command{
		Use:   "prep-for-syncer <synctarget> [--imw <workspace path>]",
		Short: "Print the YAML that installs the syncer of a SyncTarget in its edge cluster",
		Long: `prep-for-syncer waits until the mailbox of the given SyncTarget is ready (at most --timeout,
saying on stderr what it waits for), then prints the YAML that installs the edge-mc syncer into
the edge cluster that the SyncTarget describes: "kubectl apply" it there (for a SyncTarget in push
mode, see ensure location --push, it says that the center runs the syncer and prints nothing).
The YAML holds:

  - the Namespace --syncer-namespace (shared by the syncers of several SyncTargets, if any);
  - a ServiceAccount, a ClusterRole and a ClusterRoleBinding, named edge-syncer-<synctarget>.
    The ClusterRole allows every verb on every resource of the edge cluster, because the syncer
    creates, updates and deletes whatever kinds the workloads placed on it contain (CRDs,
    ClusterRoles, webhooks, ...), and the objects' status it reports back: restrict it only if
    you restrict what may be placed there;
  - a Secret edge-syncer-<synctarget> with the kubeconfig of the mailbox (a credential that
    reaches that mailbox workspace and nothing else: keep the YAML secret);
  - a Deployment edge-syncer-<synctarget> of one replica (strategy Recreate: two syncers of one
    mailbox never run at once).

--imw, the SyncTarget's inventory workspace, is by default the kubeconfig's current workspace.
The kubeconfig points at the kcp server of your own kubeconfig (or --server), at
/clusters/<mailbox workspace>, and trusts the certificate authority of your kubeconfig. With
--kubeconfig-only, only that kubeconfig is printed, for running edge-syncer as a local process.
With --output-file the output goes to a file of mode 0600. Run again, it prints the same.`,
		Example: `  # The syncer's YAML, into a file, then applied in the edge cluster
  kubectl edge prep-for-syncer edge-1 --imw root:imw --output-file edge-1-syncer.yaml
  kubectl --kubeconfig edge-1.kubeconfig apply -f edge-1-syncer.yaml

  # Only the mailbox's kubeconfig, for edge-syncer run as a local process
  kubectl edge prep-for-syncer edge-1 --imw root:imw --kubeconfig-only --output-file edge-1-mailbox.kubeconfig`,
		Args:              positional([]string{"<synctarget>"}, 0),
		ValidArgsFunction: o.syncTargetArg(&p.imw),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := o.context(cmd)
			defer cancel()
			return p.run(ctx, o, args[0])
		},
	}
	o.addIMWFlag(cmd, &p.imw)
	cmd.Flags().StringVar(&p.output, "output-file", "", "write to this file (mode 0600) instead of stdout")
	cmd.Flags().StringVarP(&p.format, "output", "o", "yaml", "output format: yaml, the only one (to write a file, use --output-file)")
	cmd.Flags().StringVar(&p.syncerImage, "syncer-image", "", "edge-syncer container image (default: the image of this kubectl-edge's release, "+version.ImageRepo+"/edge-syncer:<version>; required for a development build)")
	cmd.Flags().StringVar(&p.syncerNamespace, "syncer-namespace", DefaultSyncerNamespace, "namespace of the edge cluster that the syncer runs in")
	cmd.Flags().BoolVar(&p.kubeconfigOnly, "kubeconfig-only", false, "print only the kubeconfig of the mailbox")
	return cmd
}

func (p *prepForSyncerOptions) run(ctx context.Context, o *Options, name string) error {
	if err := p.checkFormat(); err != nil {
		return err
	}
	if err := validateLocationName(name); err != nil {
		return err
	}
	if msgs := validation.IsDNS1123Label(p.syncerNamespace); len(msgs) > 0 {
		return fmt.Errorf("--syncer-namespace %q is not a namespace name: %s", p.syncerNamespace, strings.Join(msgs, "; "))
	}
	if err := p.chooseImage(version.Version); err != nil {
		return err
	}
	inv, err := o.inventory(ctx, p.imw)
	if err != nil {
		return err
	}
	// A SyncTarget that is not there will not come by waiting for it.
	if st, err := getSyncTarget(ctx, inv, name); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("no SyncTarget %s in %s; create it with \"kubectl edge ensure location %s --imw %s\"", name, inv.path, name, inv.path)
		}
		return fmt.Errorf("reading SyncTarget %s in %s: %w", name, inv.path, err)
	} else if syncModeOf(st) == edgev1alpha1.SyncModePush {
		// Nothing to install: a second syncer in the edge cluster would fight the center's.
		fmt.Fprintf(o.ErrOut, "SyncTarget %s is in push mode: edge-controller-manager runs its syncer at the center with the stored edge kubeconfig, so there is nothing to install in the edge cluster, and nothing was written (to run the syncer in the edge cluster instead: kubectl edge ensure location %s --pull --imw %s)\n", name, name, inv.path)
		return nil
	}
	st, mailboxPath, secret, err := o.waitForMailbox(ctx, inv, name)
	if err != nil {
		return err
	}

	user, err := o.Config.ToRESTConfig()
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	userCA, err := caOf(user)
	if err != nil {
		return err
	}
	trust := chooseServerTrust(userCA, user.Insecure, secret.Data[corev1.ServiceAccountRootCAKey], func(ca []byte) error {
		return verifyServerCA(ctx, inv.base.Host, user.ServerName, ca)
	})
	if trust.Note != "" {
		fmt.Fprintf(o.ErrOut, "note: %s\n", trust.Note)
	}
	kubeconfig, err := clientcmd.Write(*buildMailboxKubeconfig(mailboxKubeconfig{
		Server:         strings.TrimRight(inv.base.Host, "/") + mailboxPath.RequestPath(),
		TLSServerName:  user.ServerName,
		Trust:          trust,
		Token:          string(secret.Data[corev1.ServiceAccountTokenKey]),
		SyncTargetName: name,
	}))
	if err != nil {
		return fmt.Errorf("writing the kubeconfig of mailbox %s: %w", mailboxPath, err)
	}

	if p.kubeconfigOnly {
		if err := writeOutput(o, p.output, kubeconfig); err != nil {
			return err
		}
		where := p.output
		if where == "" {
			where = "<kubeconfig file>"
		}
		fmt.Fprintf(o.ErrOut, "run the syncer with: edge-syncer %s\n", strings.Join(syncerArgs(where, st.Name, st.UID), " "))
		return nil
	}
	manifests, err := renderSyncerManifests(syncerManifestParams{
		SyncTargetName: st.Name,
		SyncTargetUID:  st.UID,
		Inventory:      inv.path,
		Mailbox:        mailboxPath,
		Namespace:      p.syncerNamespace,
		Image:          p.syncerImage,
		Kubeconfig:     kubeconfig,
	})
	if err != nil {
		return err
	}
	return writeOutput(o, p.output, manifests)
}

// chooseImage settles the syncer's image: --syncer-image, or the image of this kubectl-edge's
// release. A development build has no published image, and guessing one (a "latest" tag) would
// install a syncer of another version, or one that cannot be pulled: then --syncer-image is
// required, unless only the kubeconfig is asked for.
func (p *prepForSyncerOptions) chooseImage(v string) error {
	if p.syncerImage != "" {
		if strings.TrimSpace(p.syncerImage) != p.syncerImage || strings.ContainsAny(p.syncerImage, " \t\n") {
			return fmt.Errorf("--syncer-image %q is not an image reference", p.syncerImage)
		}
		return nil
	}
	if p.kubeconfigOnly {
		return nil
	}
	image, published := version.Image("edge-syncer", v)
	if !published {
		return fmt.Errorf("give --syncer-image: this kubectl-edge, %s, is not a release, so no published edge-syncer image matches it (make images PUSH=<registry> pushes one: <registry>/edge-syncer:%s; %sinstall.md)", v, v, docsURL)
	}
	p.syncerImage = image
	return nil
}

// checkFormat refuses an output format other than yaml. Until 2026-11, -o named the file to write
// (now --output-file), so a value that is not a format is most likely such a file: the error
// says which flag writes it.
func (p *prepForSyncerOptions) checkFormat() error {
	if p.format == "yaml" {
		return nil
	}
	if p.format == "json" || p.format == "wide" || p.format == "name" || strings.HasPrefix(p.format, "jsonpath") {
		return fmt.Errorf("-o %s: prep-for-syncer prints YAML only (-o yaml)", p.format)
	}
	return fmt.Errorf("-o %q: -o is the output format, as in kubectl, and prep-for-syncer prints YAML only; to write the output to a file, use --output-file %s (-o named the file before 2026-11)", p.format, p.format)
}

func getSyncTarget(ctx context.Context, inv *inventoryClients, name string) (*edgev1alpha1.SyncTarget, error) {
	u, err := inv.syncTargets.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	st := &edgev1alpha1.SyncTarget{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, st); err != nil {
		return nil, fmt.Errorf("reading SyncTarget %s in %s: %w", name, inv.path, err)
	}
	return st, nil
}

// waitForMailbox waits, at most --timeout, until the SyncTarget reports a ready mailbox and the
// syncer's token Secret in it holds a token. It says on ErrOut that it waits, once, and then
// every mailboxReportInterval.
func (o *Options) waitForMailbox(ctx context.Context, inv *inventoryClients, name string) (*edgev1alpha1.SyncTarget, logicalcluster.Path, *corev1.Secret, error) {
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = workspaces.DefaultTimeout
	}
	// The deadline bounds the wait, not each look, which a look near it would fail with an
	// error that hides the state it was waiting for.
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	start := time.Now()
	var nextReport time.Time
	var waitingFor string
	ticker := time.NewTicker(mailboxPollInterval)
	defer ticker.Stop()
	for {
		lookCtx, cancel := context.WithTimeout(ctx, mailboxLookTimeout)
		st, path, secret, state, err := mailboxState(lookCtx, inv, name)
		cancel()
		if err != nil {
			return nil, logicalcluster.Path{}, nil, err
		}
		if state == "" {
			if !nextReport.IsZero() {
				fmt.Fprintf(o.ErrOut, "the mailbox %s of synctarget %s is ready\n", path, name)
			}
			return st, path, secret, nil
		}
		waitingFor = state
		switch now := time.Now(); {
		case nextReport.IsZero():
			fmt.Fprintf(o.ErrOut, "waiting for the mailbox of synctarget %s (%s)\n", name, waitingFor)
			nextReport = start.Add(mailboxReportInterval)
		case !now.Before(nextReport):
			fmt.Fprintf(o.ErrOut, "still waiting for the mailbox of synctarget %s after %s (%s)\n", name, now.Sub(start).Round(time.Second), waitingFor)
			nextReport = nextReport.Add(mailboxReportInterval)
		}
		select {
		case <-deadline.C:
			return nil, logicalcluster.Path{}, nil, fmt.Errorf("timed out after %s waiting for the mailbox of synctarget %s in %s (%s); is the edge-controller-manager running? Use --timeout to wait longer", timeout, name, inv.path, waitingFor)
		case <-ctx.Done():
			return nil, logicalcluster.Path{}, nil, ctx.Err()
		case <-ticker.C:
		}
	}
}

// mailboxState looks once at the SyncTarget and its mailbox. waitingFor says what is not ready
// yet, or is empty when all is; err is for what waiting cannot mend.
func mailboxState(ctx context.Context, inv *inventoryClients, name string) (st *edgev1alpha1.SyncTarget, path logicalcluster.Path, secret *corev1.Secret, waitingFor string, err error) {
	st, err = getSyncTarget(ctx, inv, name)
	switch {
	case apierrors.IsNotFound(err):
		return nil, path, nil, "", fmt.Errorf("SyncTarget %s in %s was deleted while waiting for its mailbox", name, inv.path)
	case err != nil:
		return nil, path, nil, fmt.Sprintf("reading SyncTarget %s: %v", name, err), nil
	}
	path, waitingFor = mailboxNotReady(st)
	if waitingFor != "" {
		return st, path, nil, waitingFor, nil
	}
	client, err := kubernetes.NewForConfig(workspaces.ConfigFor(inv.base, path))
	if err != nil {
		return nil, path, nil, "", err
	}
	secret, err = client.CoreV1().Secrets(transport.SyncerNamespace).Get(ctx, transport.SyncerTokenSecret, metav1.GetOptions{})
	return st, path, secret, tokenNotReady(path, secret, err), nil
}

// mailboxNotReady returns the mailbox path that the SyncTarget reports, and what is missing
// before the mailbox can be used ("" when nothing is).
func mailboxNotReady(st *edgev1alpha1.SyncTarget) (logicalcluster.Path, string) {
	cond := meta.FindStatusCondition(st.Status.Conditions, edgev1alpha1.SyncTargetMailboxReady)
	if cond == nil {
		return logicalcluster.Path{}, "no " + edgev1alpha1.SyncTargetMailboxReady + " condition yet"
	}
	if cond.Status != metav1.ConditionTrue {
		s := fmt.Sprintf("%s=%s", cond.Type, cond.Status)
		if cond.Reason != "" {
			s += " " + cond.Reason
		}
		if cond.Message != "" {
			s += ": " + cond.Message
		}
		return logicalcluster.Path{}, s
	}
	if st.Status.MailboxWorkspace == "" {
		return logicalcluster.Path{}, edgev1alpha1.SyncTargetMailboxReady + "=True but no status.mailboxWorkspace yet"
	}
	path := logicalcluster.NewPath(st.Status.MailboxWorkspace)
	if !path.IsValid() {
		return logicalcluster.Path{}, fmt.Sprintf("status.mailboxWorkspace %q is not a workspace path", st.Status.MailboxWorkspace)
	}
	return path, ""
}

// tokenNotReady says what is missing from the syncer's token Secret in the mailbox, given the
// outcome of reading it ("" when nothing is).
func tokenNotReady(path logicalcluster.Path, secret *corev1.Secret, err error) string {
	what := fmt.Sprintf("Secret %s/%s in mailbox %s", transport.SyncerNamespace, transport.SyncerTokenSecret, path)
	switch {
	case apierrors.IsNotFound(err):
		return "no " + what + " yet"
	case err != nil:
		return fmt.Sprintf("reading %s: %v", what, err)
	case len(secret.Data[corev1.ServiceAccountTokenKey]) == 0:
		return what + " has no token yet"
	}
	return ""
}

// serverTrust is how the syncer's kubeconfig verifies the kcp server.
type serverTrust struct {
	// CAData, when set, is the only certificate authority trusted; with neither it nor
	// Insecure, the system's trusted authorities are.
	CAData   []byte
	Insecure bool
	// Note tells the user about a choice they may not expect.
	Note string
}

// chooseServerTrust prefers the certificate authority of the user's kubeconfig, which verified
// the server just now; then the mailbox's ca.crt if verify accepts it (kcp v0.28.1 puts its
// loopback client CA there, which does not verify its serving certificate); then skipping
// verification, only when the user's kubeconfig does too; else the system's authorities.
func chooseServerTrust(userCA []byte, userInsecure bool, secretCA []byte, verify func(ca []byte) error) serverTrust {
	if len(userCA) > 0 {
		return serverTrust{CAData: userCA}
	}
	var note string
	if len(secretCA) > 0 {
		err := verify(secretCA)
		if err == nil {
			return serverTrust{CAData: secretCA}
		}
		note = fmt.Sprintf("the mailbox's ca.crt does not verify the kcp server (%v); ", err)
	}
	if userInsecure {
		return serverTrust{Insecure: true, Note: note + "the kubeconfig skips TLS verification of the kcp server, as yours does"}
	}
	if note != "" {
		note += "the kubeconfig trusts the system's certificate authorities, as yours does"
	}
	return serverTrust{Note: note}
}

// caOf returns the certificate authority data of a rest.Config, reading its file if need be.
func caOf(cfg *rest.Config) ([]byte, error) {
	if len(cfg.CAData) > 0 {
		return cfg.CAData, nil
	}
	if cfg.CAFile == "" {
		return nil, nil
	}
	data, err := os.ReadFile(cfg.CAFile)
	if err != nil {
		return nil, fmt.Errorf("reading the certificate authority of your kubeconfig: %w", err)
	}
	return data, nil
}

// verifyServerCA tells whether the server at host presents a certificate that ca verifies.
func verifyServerCA(ctx context.Context, host, serverName string, ca []byte) error {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return errors.New("no PEM certificate in it")
	}
	u, err := url.Parse(host)
	if err != nil {
		return err
	}
	if u.Scheme != "https" {
		return fmt.Errorf("%s is not https", host)
	}
	if serverName == "" {
		serverName = u.Hostname()
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "443")
	}
	dialer := &tls.Dialer{
		NetDialer: &net.Dialer{Timeout: 10 * time.Second},
		Config:    &tls.Config{RootCAs: pool, ServerName: serverName, MinVersion: tls.VersionTLS12},
	}
	conn, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return conn.Close()
}

// mailboxKubeconfig describes the kubeconfig of a syncer for its mailbox.
type mailboxKubeconfig struct {
	// Server is the kcp base URL followed by /clusters/<mailbox workspace path>.
	Server         string
	TLSServerName  string
	Trust          serverTrust
	Token          string
	SyncTargetName string
}

// buildMailboxKubeconfig returns a kubeconfig with one cluster, user and context, current.
func buildMailboxKubeconfig(k mailboxKubeconfig) *clientcmdapi.Config {
	name := syncerResourceName(k.SyncTargetName)
	cfg := clientcmdapi.NewConfig()
	cluster := clientcmdapi.NewCluster()
	cluster.Server = k.Server
	cluster.TLSServerName = k.TLSServerName
	cluster.CertificateAuthorityData = k.Trust.CAData
	cluster.InsecureSkipTLSVerify = k.Trust.Insecure
	cfg.Clusters["mailbox-"+k.SyncTargetName] = cluster
	user := clientcmdapi.NewAuthInfo()
	user.Token = k.Token
	cfg.AuthInfos[name] = user
	kctx := clientcmdapi.NewContext()
	kctx.Cluster = "mailbox-" + k.SyncTargetName
	kctx.AuthInfo = name
	cfg.Contexts[name] = kctx
	cfg.CurrentContext = name
	return cfg
}

// syncerResourceName names the pcluster objects of the syncer of one SyncTarget, so that the
// syncers of several SyncTargets can share a pcluster and a namespace.
func syncerResourceName(syncTarget string) string {
	return "edge-syncer-" + syncTarget
}

// syncerArgs are the edge-syncer command-line arguments.
func syncerArgs(kubeconfigPath, syncTarget string, uid types.UID) []string {
	return []string{
		"--from-kubeconfig=" + kubeconfigPath,
		"--sync-target-name=" + syncTarget,
		"--sync-target-uid=" + string(uid),
	}
}

// syncerManifestParams is what the syncer's installation YAML depends on.
type syncerManifestParams struct {
	SyncTargetName string
	SyncTargetUID  types.UID
	Inventory      logicalcluster.Path
	Mailbox        logicalcluster.Path
	Namespace      string
	Image          string
	Kubeconfig     []byte
}

// syncerObjects returns the pcluster objects that run the syncer, in the order to apply them.
func syncerObjects(p syncerManifestParams) []runtime.Object {
	name := syncerResourceName(p.SyncTargetName)
	selector := map[string]string{
		"app.kubernetes.io/name":     "edge-syncer",
		"app.kubernetes.io/instance": p.SyncTargetName,
	}
	labels := map[string]string{"app.kubernetes.io/part-of": "edge-mc"}
	for k, v := range selector {
		labels[k] = v
	}
	objectMeta := func(namespace, name string, labels map[string]string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels}
	}
	hash := sha256.Sum256(p.Kubeconfig)
	return []runtime.Object{
		&corev1.Namespace{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: objectMeta("", p.Namespace, map[string]string{"app.kubernetes.io/part-of": "edge-mc"}),
		},
		&corev1.ServiceAccount{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: objectMeta(p.Namespace, name, labels),
		},
		// The syncer applies whatever the workloads placed on this pcluster contain, of any
		// kind, cluster-scoped ones included, and writes their status back: everything.
		&rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
			ObjectMeta: objectMeta("", name, labels),
			Rules: []rbacv1.PolicyRule{{
				APIGroups: []string{rbacv1.APIGroupAll},
				Resources: []string{rbacv1.ResourceAll},
				Verbs:     []string{rbacv1.VerbAll},
			}},
		},
		&rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
			ObjectMeta: objectMeta("", name, labels),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: p.Namespace, Name: name}},
		},
		&corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: objectMeta(p.Namespace, name, labels),
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{syncerKubeconfigKey: p.Kubeconfig},
		},
		&appsv1.Deployment{
			TypeMeta:   metav1.TypeMeta{APIVersion: appsv1.SchemeGroupVersion.String(), Kind: "Deployment"},
			ObjectMeta: objectMeta(p.Namespace, name, labels),
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](1),
				// Never two syncers of one mailbox at once, not even during an update.
				Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
				Selector: &metav1.LabelSelector{MatchLabels: selector},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{
						Labels:      labels,
						Annotations: map[string]string{annotationKubeconfigHash: hex.EncodeToString(hash[:])},
					},
					Spec: syncerPodSpec(p, name),
				},
			},
		},
	}
}

func syncerPodSpec(p syncerManifestParams, name string) corev1.PodSpec {
	probe := func() *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}},
			PeriodSeconds: 10,
		}
	}
	return corev1.PodSpec{
		ServiceAccountName: name,
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot:   ptr.To(true),
			RunAsUser:      ptr.To[int64](65532),
			RunAsGroup:     ptr.To[int64](65532),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Containers: []corev1.Container{{
			Name:  "edge-syncer",
			Image: p.Image,
			Args:  syncerArgs(syncerKubeconfigDir+"/"+syncerKubeconfigKey, p.SyncTargetName, p.SyncTargetUID),
			// The syncer keeps its key pair for sealed objects in its own namespace.
			Env: []corev1.EnvVar{{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}},
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: syncerHealthPort, Protocol: corev1.ProtocolTCP}},
			LivenessProbe: func() *corev1.Probe {
				pr := probe()
				pr.FailureThreshold = 6 // a minute: the syncer may be slow to reach a distant center
				return pr
			}(),
			ReadinessProbe: probe(),
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("50m"),
				corev1.ResourceMemory: resource.MustParse("64Mi"),
			}},
			VolumeMounts: []corev1.VolumeMount{
				{Name: "kubeconfig", MountPath: syncerKubeconfigDir, ReadOnly: true},
				{Name: "tmp", MountPath: "/tmp"},
			},
			SecurityContext: &corev1.SecurityContext{
				AllowPrivilegeEscalation: ptr.To(false),
				ReadOnlyRootFilesystem:   ptr.To(true),
				Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			},
		}},
		Volumes: []corev1.Volume{
			{Name: "kubeconfig", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: name}}},
			{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		},
	}
}

// renderSyncerManifests returns syncerObjects as multi-document YAML, with a comment on top.
// The output depends only on p.
func renderSyncerManifests(p syncerManifestParams) ([]byte, error) {
	var out bytes.Buffer
	fmt.Fprintf(&out, `# The edge-mc syncer of SyncTarget %s (uid %s) of inventory workspace %s.
# Apply it to the edge cluster: kubectl apply -f <this file>.
# It holds a credential for the mailbox workspace %s: keep it secret.
`, p.SyncTargetName, p.SyncTargetUID, p.Inventory, p.Mailbox)
	for _, obj := range syncerObjects(p) {
		doc, err := objectYAML(obj)
		if err != nil {
			return nil, err
		}
		out.WriteString("---\n")
		out.Write(doc)
	}
	return out.Bytes(), nil
}

// objectYAML renders a typed object as YAML without the fields a manifest leaves out: nulls
// (creationTimestamp), status and an empty spec.
func objectYAML(obj runtime.Object) ([]byte, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	delete(m, "status")
	if spec, ok := m["spec"].(map[string]any); ok && len(spec) == 0 {
		delete(m, "spec") // a Namespace's
	}
	return yaml.Marshal(dropNulls(m))
}

func dropNulls(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if e == nil {
				delete(v, k)
				continue
			}
			v[k] = dropNulls(e)
		}
	case []any:
		for i, e := range v {
			v[i] = dropNulls(e)
		}
	}
	return v
}

// writeOutput writes data to stdout, or to the file named by -o with mode 0600: it holds a
// credential.
func writeOutput(o *Options, path string, data []byte) error {
	if path == "" || path == "-" {
		_, err := o.Out.Write(data)
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(o.ErrOut, "wrote %s\n", path)
	return nil
}
