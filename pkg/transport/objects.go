package transport

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

const (
	// LabelDenatured "true" on a ConfigMap marks it as holding, under DenaturedDataKey, the
	// manifest of an object that IsActiveInCenter, to be written in natural form only at the edge.
	LabelDenatured = "edge.kcp.io/denatured"
	// DenaturedDataKey is the data key of a denatured ConfigMap that holds the manifest.
	DenaturedDataKey = "object"
)

// activeKinds are the kinds that IsActiveInCenter, with their resources.
var activeKinds = map[schema.GroupKind]string{
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}:     "mutatingwebhookconfigurations",
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}:   "validatingwebhookconfigurations",
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"}:        "validatingadmissionpolicies",
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicyBinding"}: "validatingadmissionpolicybindings",
	{Group: "apiregistration.k8s.io", Kind: "APIService"}:                             "apiservices",
}

const activeKindsText = "MutatingWebhookConfiguration, ValidatingWebhookConfiguration, " +
	"ValidatingAdmissionPolicy or ValidatingAdmissionPolicyBinding (admissionregistration.k8s.io), " +
	"or APIService (apiregistration.k8s.io)"

// IsSystemObject reports whether u is an object that every namespace gets from its own server and
// that therefore never travels: the ServiceAccount named "default", the ConfigMap named
// "kube-root-ca.crt", and Secrets of type kubernetes.io/service-account-token.
func IsSystemObject(group, resource string, u *unstructured.Unstructured) bool {
	if group != "" || u == nil {
		return false
	}
	switch resource {
	case "serviceaccounts":
		return u.GetName() == "default"
	case "configmaps":
		return u.GetName() == "kube-root-ca.crt"
	case "secrets":
		t, _, _ := unstructured.NestedString(u.Object, "type")
		return t == "kubernetes.io/service-account-token"
	}
	return false
}

// IsActiveInCenter reports whether objects of the resource would act on the server holding them
// (admission webhooks and policies, APIServices). Such objects are refused in natural form; they
// travel in denatured form (see ParseDenatured).
func IsActiveInCenter(group, resource string) bool {
	for gk, r := range activeKinds {
		if gk.Group == group && r == resource {
			return true
		}
	}
	return false
}

// IsDenatured reports whether u is a ConfigMap labelled LabelDenatured "true".
func IsDenatured(u *unstructured.Unstructured) bool {
	return u != nil && u.GetAPIVersion() == "v1" && u.GetKind() == "ConfigMap" &&
		u.GetLabels()[LabelDenatured] == "true"
}

// ParseDenatured returns the object that the denatured ConfigMap cm holds, in natural form. Its
// data key DenaturedDataKey must hold the YAML or JSON manifest of exactly one cluster-scoped
// object, with apiVersion, kind and metadata.name, of a kind that IsActiveInCenter. The errors
// say what is wrong and how to fix it.
func ParseDenatured(cm *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if !IsDenatured(cm) {
		return nil, fmt.Errorf("not a denatured object: a denatured object is a v1 ConfigMap labelled %s: \"true\"", LabelDenatured)
	}
	where := fmt.Sprintf("denatured ConfigMap %s/%s", cm.GetNamespace(), cm.GetName())
	text, _, _ := unstructured.NestedString(cm.Object, "data", DenaturedDataKey)
	if strings.TrimSpace(text) == "" {
		return nil, fmt.Errorf("%s: data has no %q: put the YAML or JSON manifest of one object there", where, DenaturedDataKey)
	}
	content, err := decodeOne(text)
	if err != nil {
		return nil, fmt.Errorf("%s: data.%s is not the YAML or JSON manifest of one object: %w", where, DenaturedDataKey, err)
	}
	u := &unstructured.Unstructured{Object: content}
	var missing []string
	for _, f := range []struct{ name, value string }{
		{"apiVersion", u.GetAPIVersion()}, {"kind", u.GetKind()}, {"metadata.name", u.GetName()},
	} {
		if f.value == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s: the manifest in data.%s lacks %s; every manifest needs apiVersion, kind and metadata.name",
			where, DenaturedDataKey, strings.Join(missing, " and "))
	}
	gv, err := schema.ParseGroupVersion(u.GetAPIVersion())
	if err != nil {
		return nil, fmt.Errorf("%s: the manifest in data.%s: %w", where, DenaturedDataKey, err)
	}
	if _, ok := activeKinds[gv.WithKind(u.GetKind()).GroupKind()]; !ok {
		return nil, fmt.Errorf("%s: the manifest in data.%s is of kind %s in %s, which needs no denaturing: only a %s is written in denatured form; write this object as an ordinary object instead",
			where, DenaturedDataKey, u.GetKind(), u.GetAPIVersion(), activeKindsText)
	}
	if u.GetNamespace() != "" {
		return nil, fmt.Errorf("%s: the manifest in data.%s gives metadata.namespace, but a %s is cluster-scoped: remove it",
			where, DenaturedDataKey, u.GetKind())
	}
	return u, nil
}

// decodeOne decodes text, JSON or YAML, which must hold exactly one object. Numbers become int64
// or float64, as in objects read from a server.
func decodeOne(text string) (map[string]any, error) {
	if trimmed := strings.TrimSpace(text); strings.HasPrefix(trimmed, "{") {
		// JSON: decoded as such, for JSON error messages and so that trailing content, such as
		// a second object, is refused rather than ignored as the YAML decoder would.
		var obj map[string]any
		if err := utiljson.Unmarshal([]byte(trimmed), &obj); err != nil {
			return nil, err
		}
		return obj, nil
	}
	var objects []map[string]any
	reader := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(text)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
		var v any
		if err := utilyaml.Unmarshal(doc, &v); err != nil {
			return nil, err
		}
		switch v := v.(type) {
		case nil: // an empty document, e.g. only comments
		case map[string]any:
			objects = append(objects, v)
		case []any:
			return nil, errors.New("it is a list, not an object")
		default:
			return nil, fmt.Errorf("it is the single value %v, not an object", v)
		}
	}
	if len(objects) != 1 {
		return nil, fmt.Errorf("it holds %d objects; use one denatured ConfigMap per object", len(objects))
	}
	return objects[0], nil
}

// ActiveResource returns the resource of a kind that IsActiveInCenter, e.g.
// "validatingwebhookconfigurations" for admissionregistration.k8s.io ValidatingWebhookConfiguration;
// ok is false for every other kind.
func ActiveResource(gk schema.GroupKind) (resource string, ok bool) {
	resource, ok = activeKinds[gk]
	return resource, ok
}
