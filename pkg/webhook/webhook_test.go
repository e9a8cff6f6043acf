package webhook

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/espw"
)

func request(t *testing.T, kind string, op admissionv1.Operation, obj any) *admissionv1.AdmissionRequest {
	t.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return &admissionv1.AdmissionRequest{
		UID:       types.UID("uid-1"),
		Kind:      metav1.GroupVersionKind{Group: "edge.kcp.io", Version: "v1alpha1", Kind: kind},
		Name:      "x",
		Operation: op,
		Object:    runtime.RawExtension{Raw: raw},
	}
}

func TestValidate(t *testing.T) {
	good := &edgev1alpha1.StatusCollector{Spec: edgev1alpha1.StatusCollectorSpec{
		Select: []edgev1alpha1.NamedExpression{{Name: "ready", Expression: "object.status.readyReplicas"}},
	}}
	bad := &edgev1alpha1.StatusCollector{Spec: edgev1alpha1.StatusCollectorSpec{
		Filter: "object.kind == 'Deployment'",
		Select: []edgev1alpha1.NamedExpression{{Name: "phase", Expression: "object.status.phase +"}},
	}}
	notBool := &edgev1alpha1.StatusCollector{Spec: edgev1alpha1.StatusCollectorSpec{
		Filter: "1 + 1",
		Select: []edgev1alpha1.NamedExpression{{Name: "n", Expression: "1"}},
	}}
	costly := &edgev1alpha1.StatusCollector{Spec: edgev1alpha1.StatusCollectorSpec{
		Filter: "object.spec.items.all(a, object.spec.items.all(b, object.spec.items.all(c, a == b && b == c)))",
		Select: []edgev1alpha1.NamedExpression{{Name: "n", Expression: "1"}},
	}}
	badRule := &edgev1alpha1.HealthRule{Spec: edgev1alpha1.HealthRuleSpec{Kind: "Widget", Ready: "object.status.phase == "}}
	goodRule := &edgev1alpha1.HealthRule{Spec: edgev1alpha1.HealthRuleSpec{Kind: "Widget", Ready: "object.status.phase == 'Running'"}}
	for _, tc := range []struct {
		name    string
		req     *admissionv1.AdmissionRequest
		allowed bool
		says    []string
	}{
		{"a collector that compiles", request(t, "StatusCollector", admissionv1.Create, good), true, nil},
		{"a select that does not compile", request(t, "StatusCollector", admissionv1.Create, bad), false,
			[]string{`StatusCollector "x"`, "spec.select[phase]", `"object.status.phase +"`, "at 1:"}},
		{"an update too", request(t, "StatusCollector", admissionv1.Update, bad), false, []string{"spec.select[phase]"}},
		{"a filter that is not a bool", request(t, "StatusCollector", admissionv1.Create, notBool), false, []string{"spec.filter"}},
		{"an estimated cost over the limit", request(t, "StatusCollector", admissionv1.Create, costly), false, []string{"spec.filter", "cost"}},
		{"a health rule that does not compile", request(t, "HealthRule", admissionv1.Create, badRule), false, []string{`HealthRule "x"`, "spec.ready"}},
		{"a health rule that compiles", request(t, "HealthRule", admissionv1.Create, goodRule), true, nil},
		{"a delete is not checked", request(t, "StatusCollector", admissionv1.Delete, bad), true, nil},
		{"another kind is not checked", request(t, "EdgePlacement", admissionv1.Create, bad), true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := Validate(tc.req)
			if resp.UID != tc.req.UID {
				t.Errorf("UID %q, want %q", resp.UID, tc.req.UID)
			}
			if resp.Allowed != tc.allowed {
				t.Fatalf("allowed = %v, want %v (%+v)", resp.Allowed, tc.allowed, resp.Result)
			}
			if tc.allowed {
				return
			}
			if resp.Result == nil || resp.Result.Code != http.StatusUnprocessableEntity || resp.Result.Reason != metav1.StatusReasonInvalid {
				t.Fatalf("result %+v, want 422 Invalid", resp.Result)
			}
			for _, s := range tc.says {
				if !strings.Contains(resp.Result.Message, s) {
					t.Errorf("message %q lacks %q", resp.Result.Message, s)
				}
			}
		})
	}
	t.Run("an object that is not a collector", func(t *testing.T) {
		req := request(t, "StatusCollector", admissionv1.Create, map[string]any{"spec": "not an object"})
		if resp := Validate(req); resp.Allowed || !strings.Contains(resp.Result.Message, `StatusCollector "x"`) {
			t.Errorf("%+v", resp)
		}
	})
}

// TestServe: the webhook over TLS with a certificate signed by a CA like the one kubectl edge init
// makes, trusted through the caBundle of the webhooks it configures, as kcp does.
func TestServe(t *testing.T) {
	caCert, caKey := newCA(t)
	s, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	url := URL(s.Addr())
	if !strings.HasPrefix(url, "https://127.0.0.1:") || !strings.HasSuffix(url, Path) {
		t.Fatalf("URL %q", url)
	}
	cert, err := ServingCertificate(caCert, caKey, url)
	if err != nil {
		t.Fatal(err)
	}
	hooks := Webhooks(url, caCert)
	if len(hooks) != 1 || *hooks[0].ClientConfig.URL != url || *hooks[0].FailurePolicy != "Ignore" {
		t.Fatalf("webhooks %+v", hooks)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(hooks[0].ClientConfig.CABundle) {
		t.Fatal("the caBundle holds no certificate")
	}
	// No keep-alive: each request makes a TLS handshake with the certificate of the moment.
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}

	post := func() (*http.Response, error) {
		bad := &edgev1alpha1.StatusCollector{Spec: edgev1alpha1.StatusCollectorSpec{
			Select: []edgev1alpha1.NamedExpression{{Name: "phase", Expression: "object.status.phase +"}}}}
		review := admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request: request(t, "StatusCollector", admissionv1.Create, bad)}
		body, _ := json.Marshal(review)
		return client.Post(url, "application/json", bytes.NewReader(body))
	}
	if _, err := post(); err == nil {
		t.Fatal("a handshake succeeded before the server had a certificate")
	}
	s.SetCertificate(cert)
	resp, err := post()
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := admissionv1.AdmissionReview{}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if out.Kind != "AdmissionReview" || out.Response == nil || out.Response.Allowed || out.Response.UID != "uid-1" ||
		!strings.Contains(out.Response.Result.Message, "spec.select[phase]") {
		t.Fatalf("review %+v", out)
	}

	// A certificate for another host is not trusted for this one.
	other, err := ServingCertificate(caCert, caKey, "https://edge-controller-manager.edge-mc.svc:9443"+Path)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(other.Certificate[0])
	if len(leaf.DNSNames) != 1 || leaf.DNSNames[0] != "edge-controller-manager.edge-mc.svc" || len(leaf.IPAddresses) != 0 {
		t.Errorf("names %v %v", leaf.DNSNames, leaf.IPAddresses)
	}
	s.SetCertificate(other)
	if _, err := post(); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a certificate for another host was accepted: %v", err)
	}

	if _, err := ServingCertificate(caCert, caKey, "http://127.0.0.1:1/"); err == nil {
		t.Error("an http:// URL was accepted")
	}
}

func TestHandlerRefusesWhatIsNotAReview(t *testing.T) {
	s, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	caCert, caKey := newCA(t)
	url := URL(s.Addr())
	cert, err := ServingCertificate(caCert, caKey, url)
	if err != nil {
		t.Fatal(err)
	}
	s.SetCertificate(cert)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caCert)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	for body, want := range map[string]int{"{": http.StatusBadRequest, "{}": http.StatusBadRequest, strings.Repeat(" ", maxRequestBytes+1): http.StatusRequestEntityTooLarge} {
		resp, err := client.Post(url, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%.10q: status %d, want %d", body, resp.StatusCode, want)
		}
	}
}

func TestSameWebhooks(t *testing.T) {
	caCert, _ := newCA(t)
	a := Webhooks("https://127.0.0.1:1"+Path, caCert)
	b := Webhooks("https://127.0.0.1:1"+Path, caCert)
	// What the server defaults does not count as a difference.
	b[0].NamespaceSelector = &metav1.LabelSelector{}
	b[0].ObjectSelector = &metav1.LabelSelector{}
	if !sameWebhooks(b, a) {
		t.Error("defaulted selectors count as a change")
	}
	if sameWebhooks(b, Webhooks("https://127.0.0.1:2"+Path, caCert)) {
		t.Error("another URL counts as the same")
	}
	if sameWebhooks(nil, a) || !sameWebhooks(nil, nil) {
		t.Error("none against some")
	}
}

// newCA makes a CA as 'kubectl edge init' does, through espw.EnsureWebhookCA's own code path
// for the key and certificate (the Secret's data).
func newCA(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	data, err := espw.NewWebhookCA()
	if err != nil {
		t.Fatal(err)
	}
	return data["tls.crt"], data["tls.key"]
}
