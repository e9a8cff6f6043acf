package transport

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func obj(apiVersion, kind, namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

func secret(name, typ string) *unstructured.Unstructured {
	u := obj("v1", "Secret", "web", name)
	u.Object["type"] = typ
	return u
}

func TestIsSystemObject(t *testing.T) {
	cases := []struct {
		name            string
		group, resource string
		u               *unstructured.Unstructured
		want            bool
	}{
		{"default ServiceAccount", "", "serviceaccounts", obj("v1", "ServiceAccount", "web", "default"), true},
		{"other ServiceAccount", "", "serviceaccounts", obj("v1", "ServiceAccount", "web", "builder"), false},
		{"kube-root-ca.crt", "", "configmaps", obj("v1", "ConfigMap", "web", "kube-root-ca.crt"), true},
		{"other ConfigMap", "", "configmaps", obj("v1", "ConfigMap", "web", "settings"), false},
		{"service account token Secret", "", "secrets", secret("builder-token", "kubernetes.io/service-account-token"), true},
		{"opaque Secret", "", "secrets", secret("builder-token", "Opaque"), false},
		{"TLS Secret", "", "secrets", secret("cert", "kubernetes.io/tls"), false},
		{"Secret without type", "", "secrets", obj("v1", "Secret", "web", "plain"), false},
		{"same name, other group", "example.com", "configmaps", obj("example.com/v1", "ConfigMap", "web", "kube-root-ca.crt"), false},
		{"Deployment named default", "apps", "deployments", obj("apps/v1", "Deployment", "web", "default"), false},
		{"nil object", "", "serviceaccounts", nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := IsSystemObject(c.group, c.resource, c.u); got != c.want {
				t.Errorf("IsSystemObject = %v, want %v", got, c.want)
			}
		})
	}
}

func TestIsActiveInCenter(t *testing.T) {
	cases := []struct {
		group, resource string
		want            bool
	}{
		{"admissionregistration.k8s.io", "mutatingwebhookconfigurations", true},
		{"admissionregistration.k8s.io", "validatingwebhookconfigurations", true},
		{"admissionregistration.k8s.io", "validatingadmissionpolicies", true},
		{"admissionregistration.k8s.io", "validatingadmissionpolicybindings", true},
		{"apiregistration.k8s.io", "apiservices", true},
		{"apiregistration.k8s.io", "mutatingwebhookconfigurations", false},
		{"", "apiservices", false},
		{"apps", "deployments", false},
		{"", "configmaps", false},
	}
	for _, c := range cases {
		if got := IsActiveInCenter(c.group, c.resource); got != c.want {
			t.Errorf("IsActiveInCenter(%q, %q) = %v, want %v", c.group, c.resource, got, c.want)
		}
	}
}

func denatured(data map[string]any) *unstructured.Unstructured {
	cm := obj("v1", "ConfigMap", "web", "hook")
	cm.SetLabels(map[string]string{LabelDenatured: "true"})
	if data != nil {
		cm.Object["data"] = data
	}
	return cm
}

const webhookYAML = `# the webhook
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: check
webhooks:
- name: check.example.com
  timeoutSeconds: 5
`

func TestIsDenatured(t *testing.T) {
	unlabelled := obj("v1", "ConfigMap", "web", "hook")
	falseLabel := denatured(nil)
	falseLabel.SetLabels(map[string]string{LabelDenatured: "false"})
	secretLabelled := obj("v1", "Secret", "web", "hook")
	secretLabelled.SetLabels(map[string]string{LabelDenatured: "true"})
	for name, c := range map[string]struct {
		u    *unstructured.Unstructured
		want bool
	}{
		"labelled ConfigMap": {denatured(nil), true},
		"unlabelled":         {unlabelled, false},
		"label false":        {falseLabel, false},
		"labelled Secret":    {secretLabelled, false},
		"nil":                {nil, false},
	} {
		if got := IsDenatured(c.u); got != c.want {
			t.Errorf("%s: IsDenatured = %v, want %v", name, got, c.want)
		}
	}
}

func TestParseDenatured(t *testing.T) {
	wantWebhook := map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1",
		"kind":       "ValidatingWebhookConfiguration",
		"metadata":   map[string]any{"name": "check"},
		"webhooks":   []any{map[string]any{"name": "check.example.com", "timeoutSeconds": int64(5)}},
	}
	good := []struct {
		name string
		text string
		want map[string]any
	}{
		{"YAML", webhookYAML, wantWebhook},
		{"YAML with document markers", "---\n" + webhookYAML + "---\n# nothing more\n", wantWebhook},
		{"JSON indented with tabs", "{\n\t\"apiVersion\": \"admissionregistration.k8s.io/v1\",\n\t\"kind\": \"ValidatingWebhookConfiguration\",\n" +
			"\t\"metadata\": {\"name\": \"check\"},\n\t\"webhooks\": [{\"name\": \"check.example.com\", \"timeoutSeconds\": 5}]\n}\n", wantWebhook},
		{"APIService", "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {name: v1.example.com}\n",
			map[string]any{"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": map[string]any{"name": "v1.example.com"}}},
	}
	for _, c := range good {
		t.Run(c.name, func(t *testing.T) {
			u, err := ParseDenatured(denatured(map[string]any{DenaturedDataKey: c.text}))
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !reflect.DeepEqual(u.Object, c.want) {
				t.Errorf("got %#v\nwant %#v", u.Object, c.want)
			}
		})
	}

	unlabelled := denatured(map[string]any{DenaturedDataKey: webhookYAML})
	unlabelled.SetLabels(nil)
	bad := []struct {
		name string
		cm   *unstructured.Unstructured
		want []string
	}{
		{"not labelled", unlabelled, []string{"not a denatured object", LabelDenatured}},
		{"no data", denatured(nil), []string{"web/hook", `data has no "object"`, "put the YAML or JSON manifest"}},
		{"missing key", denatured(map[string]any{"other": webhookYAML}), []string{`data has no "object"`}},
		{"blank", denatured(map[string]any{DenaturedDataKey: "  \n"}), []string{`data has no "object"`}},
		{"garbage", denatured(map[string]any{DenaturedDataKey: "this is: [not yaml"}), []string{"data.object is not the YAML or JSON manifest of one object"}},
		{"bad JSON", denatured(map[string]any{DenaturedDataKey: `{"apiVersion": `}), []string{"data.object is not the YAML or JSON manifest"}},
		{"plain string", denatured(map[string]any{DenaturedDataKey: "hello"}), []string{"single value hello, not an object"}},
		{"list", denatured(map[string]any{DenaturedDataKey: "- a\n- b\n"}), []string{"a list, not an object"}},
		{"two objects", denatured(map[string]any{DenaturedDataKey: webhookYAML + "---\n" + webhookYAML}), []string{"holds 2 objects", "one denatured ConfigMap per object"}},
		{"two JSON objects", denatured(map[string]any{DenaturedDataKey: `{"kind": "APIService"} {"kind": "APIService"}`}), []string{"after top-level value"}},
		{"only comments", denatured(map[string]any{DenaturedDataKey: "# nothing\n"}), []string{"holds 0 objects"}},
		{"missing name", denatured(map[string]any{DenaturedDataKey: "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\n"}),
			[]string{"lacks metadata.name"}},
		{"missing apiVersion and kind", denatured(map[string]any{DenaturedDataKey: "metadata: {name: x}\n"}),
			[]string{"lacks apiVersion and kind"}},
		{"bad apiVersion", denatured(map[string]any{DenaturedDataKey: "apiVersion: a/b/c\nkind: APIService\nmetadata: {name: x}\n"}),
			[]string{"a/b/c"}},
		{"Deployment", denatured(map[string]any{DenaturedDataKey: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: web}\n"}),
			[]string{"kind Deployment in apps/v1", "needs no denaturing", "APIService", "write this object as an ordinary object instead"}},
		{"right kind, wrong group", denatured(map[string]any{DenaturedDataKey: "apiVersion: example.com/v1\nkind: APIService\nmetadata: {name: x}\n"}),
			[]string{"kind APIService in example.com/v1", "needs no denaturing"}},
		{"namespaced", denatured(map[string]any{DenaturedDataKey: "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {name: x, namespace: web}\n"}),
			[]string{"cluster-scoped: remove it"}},
		{"nil", nil, []string{"not a denatured object"}},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			u, err := ParseDenatured(c.cm)
			if err == nil {
				t.Fatalf("no error; got %v", u)
			}
			if u != nil {
				t.Errorf("got an object with the error: %v", u)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}
