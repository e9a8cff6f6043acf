package cli

import (
	"bufio"
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/kcp-dev/logicalcluster/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

func TestChooseServerTrust(t *testing.T) {
	userCA, secretCA := []byte("user CA"), []byte("secret CA")
	accept := func([]byte) error { return nil }
	refuse := func([]byte) error { return errors.New("x509: unknown authority") }
	tests := []struct {
		name         string
		userCA       []byte
		userInsecure bool
		secretCA     []byte
		verify       func([]byte) error
		wantCA       []byte
		wantInsecure bool
		wantNote     string
	}{
		{name: "user CA first", userCA: userCA, secretCA: secretCA, verify: accept, wantCA: userCA},
		{name: "user CA even if insecure", userCA: userCA, userInsecure: true, verify: refuse, wantCA: userCA},
		{name: "secret CA that verifies", secretCA: secretCA, verify: accept, wantCA: secretCA},
		{name: "secret CA that verifies beats insecure", userInsecure: true, secretCA: secretCA, verify: accept, wantCA: secretCA},
		{name: "secret CA that does not verify, insecure user", userInsecure: true, secretCA: secretCA, verify: refuse,
			wantInsecure: true, wantNote: "does not verify the kcp server (x509: unknown authority); the kubeconfig skips TLS verification"},
		{name: "secret CA that does not verify, system roots", secretCA: secretCA, verify: refuse,
			wantNote: "system's certificate authorities"},
		{name: "insecure only as the user", userInsecure: true, verify: refuse, wantInsecure: true, wantNote: "as yours does"},
		{name: "nothing: system roots", verify: refuse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := chooseServerTrust(tt.userCA, tt.userInsecure, tt.secretCA, tt.verify)
			if !bytes.Equal(got.CAData, tt.wantCA) || got.Insecure != tt.wantInsecure {
				t.Errorf("got CA %q insecure %v, want CA %q insecure %v", got.CAData, got.Insecure, tt.wantCA, tt.wantInsecure)
			}
			if (tt.wantNote == "") != (got.Note == "") || !strings.Contains(got.Note, tt.wantNote) {
				t.Errorf("note %q, want one containing %q", got.Note, tt.wantNote)
			}
		})
	}
}

func TestBuildMailboxKubeconfig(t *testing.T) {
	tests := []struct {
		name  string
		trust serverTrust
	}{
		{name: "with CA", trust: serverTrust{CAData: []byte("-----BEGIN CERTIFICATE-----\n")}},
		{name: "insecure", trust: serverTrust{Insecure: true}},
		{name: "system roots", trust: serverTrust{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := mailboxKubeconfig{
				Server:         "https://kcp.example:6443/clusters/root:espw:abc-mb-123",
				TLSServerName:  "kcp.example",
				Trust:          tt.trust,
				Token:          "s3cr3t",
				SyncTargetName: "edge-1",
			}
			data, err := clientcmd.Write(*buildMailboxKubeconfig(in))
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := clientcmd.Load(data)
			if err != nil {
				t.Fatalf("the kubeconfig does not load: %v\n%s", err, data)
			}
			if err := clientcmd.Validate(*cfg); err != nil {
				t.Fatalf("the kubeconfig is not valid: %v\n%s", err, data)
			}
			if len(cfg.Clusters) != 1 || len(cfg.AuthInfos) != 1 || len(cfg.Contexts) != 1 {
				t.Fatalf("want one cluster, user and context, got\n%s", data)
			}
			rest, err := clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig()
			if err != nil {
				t.Fatal(err)
			}
			if rest.Host != in.Server || rest.BearerToken != "s3cr3t" || rest.ServerName != "kcp.example" {
				t.Errorf("current context reaches %s as token %q (server name %q)", rest.Host, rest.BearerToken, rest.ServerName)
			}
			if !bytes.Equal(rest.CAData, tt.trust.CAData) || rest.Insecure != tt.trust.Insecure {
				t.Errorf("CA %q insecure %v, want %q %v", rest.CAData, rest.Insecure, tt.trust.CAData, tt.trust.Insecure)
			}
		})
	}
}

func TestMailboxNotReady(t *testing.T) {
	ready := metav1.Condition{Type: edgev1alpha1.SyncTargetMailboxReady, Status: metav1.ConditionTrue, Reason: edgev1alpha1.ReasonMailboxReady}
	tests := []struct {
		name     string
		status   edgev1alpha1.SyncTargetStatus
		wantPath string
		wantWait string
	}{
		{name: "nothing yet", wantWait: "no MailboxReady condition yet"},
		{name: "creating", status: edgev1alpha1.SyncTargetStatus{Conditions: []metav1.Condition{{
			Type: edgev1alpha1.SyncTargetMailboxReady, Status: metav1.ConditionFalse, Reason: edgev1alpha1.ReasonMailboxCreating, Message: "workspace not ready",
		}}}, wantWait: "MailboxReady=False MailboxCreating: workspace not ready"},
		{name: "ready without path", status: edgev1alpha1.SyncTargetStatus{Conditions: []metav1.Condition{ready}},
			wantWait: "no status.mailboxWorkspace"},
		{name: "bad path", status: edgev1alpha1.SyncTargetStatus{MailboxWorkspace: "root:Bad Path", Conditions: []metav1.Condition{ready}},
			wantWait: "is not a workspace path"},
		{name: "ready", status: edgev1alpha1.SyncTargetStatus{MailboxWorkspace: "root:espw:abc-mb-123", Conditions: []metav1.Condition{ready}},
			wantPath: "root:espw:abc-mb-123"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, wait := mailboxNotReady(&edgev1alpha1.SyncTarget{Status: tt.status})
			if path.String() != tt.wantPath || !strings.Contains(wait, tt.wantWait) || (tt.wantWait == "") != (wait == "") {
				t.Errorf("got %q, %q; want %q, %q", path, wait, tt.wantPath, tt.wantWait)
			}
		})
	}
}

func TestTokenNotReady(t *testing.T) {
	path := logicalcluster.NewPath("root:espw:mb")
	notFound := apierrors.NewNotFound(corev1.Resource("secrets"), "edge-syncer-token")
	for _, tt := range []struct {
		name   string
		secret *corev1.Secret
		err    error
		want   string
	}{
		{name: "missing", err: notFound, want: "no Secret default/edge-syncer-token in mailbox root:espw:mb yet"},
		{name: "forbidden", err: apierrors.NewForbidden(corev1.Resource("secrets"), "x", errors.New("no")), want: "reading Secret"},
		{name: "no token", secret: &corev1.Secret{Data: map[string][]byte{"ca.crt": []byte("x")}}, want: "has no token yet"},
		{name: "token", secret: &corev1.Secret{Data: map[string][]byte{"token": []byte("x")}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := tokenNotReady(path, tt.secret, tt.err)
			if !strings.Contains(got, tt.want) || (tt.want == "") != (got == "") {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRenderSyncerManifests(t *testing.T) {
	kubeconfig, err := clientcmd.Write(*buildMailboxKubeconfig(mailboxKubeconfig{
		Server:         "https://kcp.example:6443/clusters/root:espw:abc-mb-123",
		Trust:          serverTrust{Insecure: true},
		Token:          "s3cr3t",
		SyncTargetName: "edge-1",
	}))
	if err != nil {
		t.Fatal(err)
	}
	params := syncerManifestParams{
		SyncTargetName: "edge-1",
		SyncTargetUID:  "0c6e-uid",
		Inventory:      logicalcluster.NewPath("root:imw"),
		Mailbox:        logicalcluster.NewPath("root:espw:abc-mb-123"),
		Namespace:      "edge-syncers",
		Image:          "registry.example/edge-syncer:v1",
		Kubeconfig:     kubeconfig,
	}
	out, err := renderSyncerManifests(params)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := renderSyncerManifests(params)
	if !bytes.Equal(out, again) {
		t.Errorf("the output is not deterministic")
	}
	if bytes.Contains(out, []byte("creationTimestamp")) || bytes.Contains(out, []byte("status:")) || bytes.Contains(out, []byte("spec: {}")) {
		t.Errorf("the output has empty fields a manifest leaves out:\n%s", out)
	}

	// Parse the documents back, as kubectl apply would.
	var kinds []string
	docs := map[string][]byte{}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(out)))
	for {
		doc, err := reader.Read()
		if err != nil {
			break
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			t.Fatal(err)
		}
		if tm.Kind == "" {
			continue // the leading comment
		}
		kinds = append(kinds, tm.Kind)
		docs[tm.Kind] = doc
	}
	if want := []string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Secret", "Deployment"}; strings.Join(kinds, ",") != strings.Join(want, ",") {
		t.Fatalf("kinds %v, want %v", kinds, want)
	}
	const name = "edge-syncer-edge-1"

	var ns corev1.Namespace
	mustUnmarshal(t, docs["Namespace"], &ns)
	if ns.Name != "edge-syncers" {
		t.Errorf("namespace %q", ns.Name)
	}
	var sa corev1.ServiceAccount
	mustUnmarshal(t, docs["ServiceAccount"], &sa)
	if sa.Name != name || sa.Namespace != "edge-syncers" {
		t.Errorf("ServiceAccount %s/%s", sa.Namespace, sa.Name)
	}
	var role rbacv1.ClusterRole
	mustUnmarshal(t, docs["ClusterRole"], &role)
	if role.Name != name || len(role.Rules) != 1 || role.Rules[0].Verbs[0] != "*" || role.Rules[0].Resources[0] != "*" || role.Rules[0].APIGroups[0] != "*" {
		t.Errorf("ClusterRole %s: %+v", role.Name, role.Rules)
	}
	var binding rbacv1.ClusterRoleBinding
	mustUnmarshal(t, docs["ClusterRoleBinding"], &binding)
	if binding.Name != name || binding.RoleRef.Name != name || binding.RoleRef.Kind != "ClusterRole" ||
		len(binding.Subjects) != 1 || binding.Subjects[0].Name != name || binding.Subjects[0].Namespace != "edge-syncers" {
		t.Errorf("ClusterRoleBinding %s: %+v %+v", binding.Name, binding.RoleRef, binding.Subjects)
	}

	var secret corev1.Secret
	mustUnmarshal(t, docs["Secret"], &secret)
	if secret.Name != name || secret.Namespace != "edge-syncers" {
		t.Errorf("Secret %s/%s", secret.Namespace, secret.Name)
	}
	cfg, err := clientcmd.Load(secret.Data["kubeconfig"])
	if err != nil {
		t.Fatalf("the Secret's kubeconfig does not load: %v", err)
	}
	restCfg, err := clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(restCfg.Host, "/clusters/root:espw:abc-mb-123") || restCfg.BearerToken != "s3cr3t" {
		t.Errorf("the Secret's kubeconfig reaches %s with token %q", restCfg.Host, restCfg.BearerToken)
	}

	var deploy appsv1.Deployment
	mustUnmarshal(t, docs["Deployment"], &deploy)
	if deploy.Name != name || deploy.Namespace != "edge-syncers" {
		t.Errorf("Deployment %s/%s", deploy.Namespace, deploy.Name)
	}
	if *deploy.Spec.Replicas != 1 || deploy.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("replicas %d strategy %s", *deploy.Spec.Replicas, deploy.Spec.Strategy.Type)
	}
	pod := deploy.Spec.Template
	for k, v := range deploy.Spec.Selector.MatchLabels {
		if pod.Labels[k] != v {
			t.Errorf("the selector %v does not select the pod template's labels %v", deploy.Spec.Selector.MatchLabels, pod.Labels)
		}
	}
	if pod.Spec.ServiceAccountName != name || len(pod.Spec.Containers) != 1 {
		t.Fatalf("pod spec %+v", pod.Spec)
	}
	c := pod.Spec.Containers[0]
	wantArgs := []string{"--from-kubeconfig=/etc/edge-syncer/kubeconfig", "--sync-target-name=edge-1", "--sync-target-uid=0c6e-uid"}
	if c.Image != "registry.example/edge-syncer:v1" || strings.Join(c.Args, " ") != strings.Join(wantArgs, " ") {
		t.Errorf("container %s args %q", c.Image, c.Args)
	}
	var mounted bool
	for _, m := range c.VolumeMounts {
		if m.MountPath != "/etc/edge-syncer" {
			continue
		}
		mounted = m.ReadOnly
		for _, v := range pod.Spec.Volumes {
			if v.Name == m.Name && (v.Secret == nil || v.Secret.SecretName != name) {
				t.Errorf("/etc/edge-syncer mounts %+v, not the Secret %s", v.VolumeSource, name)
			}
		}
	}
	if !mounted {
		t.Errorf("the Secret is not mounted read-only at /etc/edge-syncer: %+v", c.VolumeMounts)
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" || c.LivenessProbe.HTTPGet.Port.StrVal != "http" ||
		c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/healthz" ||
		len(c.Ports) != 1 || c.Ports[0].Name != "http" || c.Ports[0].ContainerPort != 8080 {
		t.Errorf("probes or ports: %+v %+v %+v", c.LivenessProbe, c.ReadinessProbe, c.Ports)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
		t.Errorf("no resource requests: %+v", c.Resources)
	}
}

func mustUnmarshal(t *testing.T, doc []byte, into any) {
	t.Helper()
	if err := yaml.UnmarshalStrict(doc, into); err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
}
