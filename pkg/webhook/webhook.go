// Package webhook is edge-controller-manager's admission webhook: kcp calls it for every create
// and update of a StatusCollector or a HealthRule, in every workspace that binds edge.kcp.io,
// and it refuses CEL that does not compile, has the wrong type or is over the estimated cost,
// with the field, the expression and the position, before the object is stored. The placement
// translator checks the same (condition Accepted) for what got in without it: written while no
// webhook answered (its failure policy is Ignore, so that edge-mc's APIs stay writable while
// edge-controller-manager is away), or before this release.
//
// How kcp reaches it: kcp applies a ValidatingWebhookConfiguration of an APIExport's workspace
// (the ESPW) to the objects of that export in every workspace that binds it, on every shard (the
// configuration is replicated through kcp's cache server). 'kubectl edge init' makes the
// configuration, empty, and a CA in a Secret of the ESPW; every replica serves the webhook with
// a certificate it signs with that CA for the host of its --webhook-url, and the leader writes
// its URL and the CA into the configuration (Configure). A replica started without a webhook
// empties it (Disable), so that kcp calls no address that nobody serves.
//
// The webhook answers what anyone sends it, without authenticating the caller: it reads
// nothing, writes nothing and says only whether the expressions in the request compile, within
// CEL's cost limit and a request size limit.
package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"sync/atomic"
	"time"

	kcpkubernetesclientset "github.com/kcp-dev/client-go/kubernetes"
	"github.com/kcp-dev/logicalcluster/v3"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/espw"
	"github.com/kcp-dev/edge-mc/pkg/pki"
	"github.com/kcp-dev/edge-mc/pkg/statuscel"
)

// Path is where the webhook answers.
const Path = "/validate-cel"

// maxRequestBytes bounds an AdmissionReview: kcp's own limit on an object is 3 MiB.
const maxRequestBytes = 4 << 20

// Validate decides an AdmissionRequest: allowed, unless it creates or updates a StatusCollector or
// HealthRule of edge.kcp.io whose expressions do not compile.
func Validate(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	if req.Kind.Group != edgev1alpha1.SchemeGroupVersion.Group || (req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) {
		return resp
	}
	var err error
	switch req.Kind.Kind {
	case "StatusCollector":
		sc := &edgev1alpha1.StatusCollector{}
		if err = json.Unmarshal(req.Object.Raw, sc); err == nil {
			_, err = statuscel.CompileCollector(sc.Name, &sc.Spec)
		}
	case "HealthRule":
		hr := &edgev1alpha1.HealthRule{}
		if err = json.Unmarshal(req.Object.Raw, hr); err == nil {
			_, err = statuscel.CompileHealthRule(hr.Name, &hr.Spec)
		}
	default:
		return resp
	}
	if err == nil {
		return resp
	}
	resp.Allowed = false
	resp.Result = &metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusUnprocessableEntity,
		Reason:  metav1.StatusReasonInvalid,
		Message: fmt.Sprintf("%s %q: %v", req.Kind.Kind, req.Name, err),
	}
	return resp
}

// Handler serves Path: an AdmissionReview of admission.k8s.io/v1 in, the same with the response
// out.
func Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(Path, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST an AdmissionReview", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBytes+1))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if len(body) > maxRequestBytes {
			http.Error(w, "request too large", http.StatusRequestEntityTooLarge)
			return
		}
		review := &admissionv1.AdmissionReview{}
		if err := json.Unmarshal(body, review); err != nil || review.Request == nil {
			http.Error(w, fmt.Sprintf("not an AdmissionReview: %v", err), http.StatusBadRequest)
			return
		}
		resp := validateSafely(review.Request)
		out, err := json.Marshal(&admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: resp})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
	})
	return mux
}

// validateSafely is Validate, with a panic in the CEL compiler turned into a refusal that says
// so, so that one object cannot take the webhook down.
func validateSafely(req *admissionv1.AdmissionRequest) (resp *admissionv1.AdmissionResponse) {
	defer func() {
		if p := recover(); p != nil {
			resp = &admissionv1.AdmissionResponse{UID: req.UID, Result: &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusUnprocessableEntity,
				Reason: metav1.StatusReasonInvalid, Message: fmt.Sprintf("%s %q: checking its expressions failed: %v", req.Kind.Kind, req.Name, p)}}
		}
	}()
	return Validate(req)
}

// Server serves the webhook over TLS with a certificate that can be replaced while it runs (a
// new round of the manager reads the CA again).
type Server struct {
	listener net.Listener
	cert     atomic.Pointer[tls.Certificate]
	srv      *http.Server
}

// Listen listens on address (host:port; port 0 picks one) and serves the webhook there; until
// SetCertificate, TLS handshakes fail.
func Listen(address string) (*Server, error) {
	l, err := net.Listen("tcp", address)
	if err != nil {
		return nil, fmt.Errorf("--webhook-address %s: %w", address, err)
	}
	s := &Server{listener: l}
	s.srv = &http.Server{
		Handler:           Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		// Handshakes that fail (a kcp that does not trust the CA) are logged, as klog's errors.
		ErrorLog: klog.NewStandardLogger("ERROR"),
		TLSConfig: &tls.Config{
			MinVersion: tls.VersionTLS12,
			GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
				if c := s.cert.Load(); c != nil {
					return c, nil
				}
				return nil, errors.New("no serving certificate yet")
			},
		},
	}
	go func() { _ = s.srv.ServeTLS(l, "", "") }()
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.listener.Addr() }

// SetCertificate makes the server present c.
func (s *Server) SetCertificate(c *tls.Certificate) { s.cert.Store(c) }

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }

// URL is the URL kcp calls for a server listening on addr, when --webhook-url is not given: its
// host (127.0.0.1 for an unspecified one: kcp runs beside edge-controller-manager) and port.
func URL(addr net.Addr) string {
	host, port, _ := net.SplitHostPort(addr.String())
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "https://" + net.JoinHostPort(host, port) + Path
}

// ServingCertificate signs, with the CA given in PEM, a certificate for the host of webhookURL (an
// IP address or a DNS name), valid for a year.
func ServingCertificate(caCertPEM, caKeyPEM []byte, webhookURL string) (*tls.Certificate, error) {
	u, err := url.Parse(webhookURL)
	if err != nil || u.Scheme != "https" || u.Hostname() == "" {
		return nil, fmt.Errorf("--webhook-url %q: an https:// URL with a host is needed (%v)", webhookURL, err)
	}
	ca, err := pki.Parse(caCertPEM, caKeyPEM)
	if err != nil {
		return nil, fmt.Errorf("the webhook CA: %w", err)
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: u.Hostname()},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip := net.ParseIP(u.Hostname()); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{u.Hostname()}
	}
	c, err := pki.New(tmpl, ca, 365*24*time.Hour)
	if err != nil {
		return nil, fmt.Errorf("signing the webhook's certificate: %w", err)
	}
	return c.TLS()
}

// Webhooks are the webhooks of the ESPW's configuration for a webhook at webhookURL whose
// certificate caCertPEM signs.
func Webhooks(webhookURL string, caCertPEM []byte) []admissionregistrationv1.ValidatingWebhook {
	ignore := admissionregistrationv1.Ignore
	none := admissionregistrationv1.SideEffectClassNone
	// Exact: the rules name the group, every version and the two resources; with Equivalent,
	// kcp would look up the equivalent resources of every other write of edge-mc's exports.
	exact := admissionregistrationv1.Exact
	clusterScope := admissionregistrationv1.ClusterScope
	// Two seconds: a write of a collector waits at most that long for a webhook that does not
	// answer, then passes (the translator's condition checks it anyway).
	timeout := int32(2)
	u := webhookURL
	return []admissionregistrationv1.ValidatingWebhook{{
		Name:                    "cel.edge.kcp.io",
		ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &u, CABundle: caCertPEM},
		AdmissionReviewVersions: []string{"v1"},
		SideEffects:             &none,
		FailurePolicy:           &ignore,
		MatchPolicy:             &exact,
		TimeoutSeconds:          &timeout,
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule: admissionregistrationv1.Rule{
				APIGroups:   []string{edgev1alpha1.SchemeGroupVersion.Group},
				APIVersions: []string{"*"},
				Resources:   []string{"statuscollectors", "healthrules"},
				Scope:       &clusterScope,
			},
		}},
	}}
}

// Configure writes webhooks (nil: none) into the ESPW's ValidatingWebhookConfiguration, if they
// differ from what it holds. It reports false, with the reason, when the configuration is missing
// (an ESPW of an older 'kubectl edge init').
func Configure(ctx context.Context, kube kcpkubernetesclientset.ClusterInterface, path logicalcluster.Path, webhooks []admissionregistrationv1.ValidatingWebhook) (bool, string, error) {
	configs := kube.Cluster(path).AdmissionregistrationV1().ValidatingWebhookConfigurations()
	current, err := configs.Get(ctx, espw.WebhookConfigurationName, metav1.GetOptions{})
	if err != nil {
		if apiNotThere(err) {
			return false, fmt.Sprintf("the ESPW %s has no ValidatingWebhookConfiguration %s this identity may update (%v): run this release's kubectl edge init", path, espw.WebhookConfigurationName, err), nil
		}
		return false, "", fmt.Errorf("reading ValidatingWebhookConfiguration %s of %s: %w", espw.WebhookConfigurationName, path, err)
	}
	if sameWebhooks(current.Webhooks, webhooks) {
		return true, "", nil
	}
	current.Webhooks = webhooks
	if _, err := configs.Update(ctx, current, metav1.UpdateOptions{}); err != nil {
		return false, "", fmt.Errorf("updating ValidatingWebhookConfiguration %s of %s: %w", espw.WebhookConfigurationName, path, err)
	}
	klog.FromContext(ctx).Info("admission webhook configured", "webhooks", len(webhooks))
	return true, "", nil
}

// sameWebhooks compares what Configure writes with what the server holds, ignoring what the
// server defaults (namespace and object selectors) on fields Webhooks leaves empty.
func sameWebhooks(have, want []admissionregistrationv1.ValidatingWebhook) bool {
	if len(have) != len(want) {
		return false
	}
	for i := range have {
		h := have[i].DeepCopy()
		h.NamespaceSelector, h.ObjectSelector = want[i].NamespaceSelector, want[i].ObjectSelector
		if !reflect.DeepEqual(*h, want[i]) {
			return false
		}
	}
	return true
}

func apiNotThere(err error) bool {
	return apierrors.IsNotFound(err) || apierrors.IsForbidden(err)
}
