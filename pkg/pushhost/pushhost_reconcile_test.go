package pushhost

import (
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/syncer"
)

func kubeconfig(cluster, user string) []byte {
	return []byte(`apiVersion: v1
kind: Config
current-context: edge
contexts: [{name: edge, context: {cluster: edge, user: admin}}]
clusters: [{name: edge, cluster: {` + cluster + `}}]
users: [{name: admin, user: {` + user + `}}]
`)
}

// TestEdgeConfig: a self-contained kubeconfig is used; one that names files on the center's
// machine or runs a plugin there is refused, saying what to change.
func TestEdgeConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
		want string // a fragment of the error, "" for none
	}{
		{"token", kubeconfig(`server: "https://10.0.0.1:6443", insecure-skip-tls-verify: true`, `token: abc`), ""},
		{"empty", nil, `no key "kubeconfig"`},
		{"not yaml", []byte("{"), "not a kubeconfig"},
		{"no context", []byte("apiVersion: v1\nkind: Config\n"), "no current context"},
		{"ca file", kubeconfig(`server: "https://10.0.0.1:6443", certificate-authority: /etc/ca.crt`, `token: abc`), "certificate-authority"},
		{"cert files", kubeconfig(`server: "https://10.0.0.1:6443"`, `client-certificate: /a.crt, client-key: /a.key`), "client-certificate, client-key"},
		{"exec", kubeconfig(`server: "https://10.0.0.1:6443"`, `exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh}`), "credential plugin"},
		{"no server", kubeconfig(`insecure-skip-tls-verify: true`, `token: abc`), "has no server"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := EdgeConfig(tc.data)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want == "" && (cfg.Host != "https://10.0.0.1:6443" || cfg.BearerToken != "abc"):
				t.Errorf("host %q, token %q", cfg.Host, cfg.BearerToken)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one with %q", err, tc.want)
			}
		})
	}
}

// TestEdgeCondition: the probe's outcome becomes EdgeReachable, with the server's answer and
// never the credential; the same failure again changes nothing, so costs no write.
func TestEdgeCondition(t *testing.T) {
	status := &edgev1alpha1.SyncTargetStatus{}
	edgeCondition(status, "https://edge:6443", nil)
	if c := meta.FindStatusCondition(status.Conditions, edgev1alpha1.SyncTargetEdgeReachable); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("reachable: %+v", c)
	}
	unauthorized := &syncer.EdgeUnreachableError{Err: apierrors.NewUnauthorized("Unauthorized")}
	edgeCondition(status, "https://edge:6443", unauthorized)
	c := meta.FindStatusCondition(status.Conditions, edgev1alpha1.SyncTargetEdgeReachable)
	if c.Status != metav1.ConditionFalse || c.Reason != edgev1alpha1.ReasonEdgeUnauthorized || !strings.Contains(c.Message, "401 Unauthorized") {
		t.Errorf("unauthorized: %+v", c)
	}
	forbidden := apierrors.NewForbidden(schema.GroupResource{}, "", errors.New("no"))
	if reasonOf(forbidden) != edgev1alpha1.ReasonEdgeUnauthorized {
		t.Errorf("403 is %s", reasonOf(forbidden))
	}
	before := c.Message
	edgeCondition(status, "https://edge:6443", &syncer.EdgeUnreachableError{Err: apierrors.NewUnauthorized("Unauthorized again")})
	if c := meta.FindStatusCondition(status.Conditions, edgev1alpha1.SyncTargetEdgeReachable); c.Message != before {
		t.Errorf("the same failure rewrote the message: %q", c.Message)
	}
	edgeCondition(status, "https://edge:6443", &syncer.EdgeUnreachableError{Err: errors.New("dial tcp 10.0.0.1:6443: connect: connection refused")})
	if c := meta.FindStatusCondition(status.Conditions, edgev1alpha1.SyncTargetEdgeReachable); c.Reason != edgev1alpha1.ReasonEdgeUnreachable || !strings.Contains(c.Message, "connection refused") {
		t.Errorf("unreachable: %+v", c)
	}
}
