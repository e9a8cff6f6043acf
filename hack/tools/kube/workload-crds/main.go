// Command workload-crds generates CustomResourceDefinitions (apiextensions.k8s.io/v1) for the common
// built-in Kubernetes workload kinds, so that a kcp workspace, which serves none of them, can export
// them as APIResourceSchemas (converted later with kcp's apisv1alpha1.CRDToAPIResourceSchema).
//
// Kinds: apps/v1 deployments, statefulsets, daemonsets, replicasets; batch/v1 jobs, cronjobs; core v1
// services, persistentvolumeclaims; networking.k8s.io/v1 ingresses, networkpolicies; autoscaling/v2
// horizontalpodautoscalers; policy/v1 poddisruptionbudgets.
//
// Source: the OpenAPI definitions compiled into Kubernetes itself
// (k8s.io/kubernetes/pkg/generated/openapi.GetOpenAPIDefinitions, the version this module pins,
// v1.35.1). The generator is offline and deterministic: it writes one file per kind named
// <plural>.<group, or "core" for the core group>.yaml into --output-dir, removes the other *.yaml
// files there, and prints one line per file. Run it from hack/tools/kube:
//
//	go run ./workload-crds --output-dir ../../../config/workload-crds
//
// Schema conversion rules (the result must be a structural schema):
//   - $refs are resolved recursively; a reference cycle is an error.
//   - The root has apiVersion and kind (strings), metadata as just {type: object}, spec and status,
//     and the kind's description (its first paragraph). No descriptions below the root.
//   - intstr.IntOrString and resource.Quantity become x-kubernetes-int-or-string: true (no type);
//     metav1.Time and metav1.MicroTime become {type: string, format: date-time};
//     runtime.RawExtension becomes {type: object, x-kubernetes-preserve-unknown-fields: true}.
//   - An untyped schema, and an object schema with neither properties nor additionalProperties
//     (such as metav1.FieldsV1, or an empty struct), preserve unknown fields, so that pruning never
//     drops data that Kubernetes itself would keep.
//   - Maps (additionalProperties) and arrays are kept; list-type, map-keys and all other x-kubernetes
//     extensions are dropped (lists are atomic), as are defaults and enums; required is kept; format
//     is kept only for int32, int64 and date-time.
//   - Nested ObjectMeta (pod templates, volume claim templates) keeps its full schema, so that e.g.
//     spec.template.metadata.labels survive pruning.
//
// Each CRD is namespaced with a single served and storage version, the status subresource when the
// kind has a status, the scale subresource for deployments, statefulsets and replicasets, kubectl's
// short names and "all" category, and a few printer columns. CRDs in a protected group
// (networking.k8s.io) carry the api-approved.kubernetes.io annotation, which kcp's APIResourceSchema
// admission also demands (CRDToAPIResourceSchema does not copy annotations: copy it yourself).
// Every CRD is checked with the apiextensions-apiserver CRD validation (the one a kube-apiserver
// runs on create, structural schema rules included) before anything is written; since that
// validation wants a group with a dot, groups without one (apps, batch, core, ...) are validated
// under a placeholder group. The core group is emitted as spec.group "" with metadata.name
// <plural>.core: not acceptable to a kube-apiserver, but accepted by kcp's APIResourceSchema
// conversion and admission, which is what these files are for.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsinstall "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/kubernetes/pkg/generated/openapi"
	"sigs.k8s.io/yaml"
)

// kubeVersion is the k8s.io/kubernetes version the definitions come from (checked against the build).
const kubeVersion = "v1.35.1"

// workloadKind describes one kind to export.
type workloadKind struct {
	group, version, kind, plural string
	// definition is the OpenAPI definition name, as the type itself gives it (Kubernetes 1.35 names
	// definitions io.k8s.api.<group>.<version>.<Kind>; earlier releases used Go package paths).
	definition string
	shortNames []string
	categories []string
	scale      bool
	columns    []apiextensionsv1.CustomResourceColumnDefinition
}

func col(name, typ, jsonPath string) apiextensionsv1.CustomResourceColumnDefinition {
	return apiextensionsv1.CustomResourceColumnDefinition{Name: name, Type: typ, JSONPath: jsonPath}
}

var ageColumn = col("Age", "date", ".metadata.creationTimestamp")

var all = []string{"all"}

// workloadKinds is the list of kinds to generate, in output order.
var workloadKinds = []workloadKind{
	{group: "apps", version: "v1", kind: "Deployment", plural: "deployments", definition: appsv1.Deployment{}.OpenAPIModelName(),
		shortNames: []string{"deploy"}, categories: all, scale: true,
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			col("Desired", "integer", ".spec.replicas"), col("Ready", "integer", ".status.readyReplicas"),
			col("Up-to-date", "integer", ".status.updatedReplicas"), col("Available", "integer", ".status.availableReplicas")}},
	{group: "apps", version: "v1", kind: "StatefulSet", plural: "statefulsets", definition: appsv1.StatefulSet{}.OpenAPIModelName(),
		shortNames: []string{"sts"}, categories: all, scale: true,
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			col("Desired", "integer", ".spec.replicas"), col("Ready", "integer", ".status.readyReplicas")}},
	{group: "apps", version: "v1", kind: "DaemonSet", plural: "daemonsets", definition: appsv1.DaemonSet{}.OpenAPIModelName(),
		shortNames: []string{"ds"}, categories: all,
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			col("Desired", "integer", ".status.desiredNumberScheduled"), col("Current", "integer", ".status.currentNumberScheduled"),
			col("Ready", "integer", ".status.numberReady"), col("Up-to-date", "integer", ".status.updatedNumberScheduled"),
			col("Available", "integer", ".status.numberAvailable")}},
	{group: "apps", version: "v1", kind: "ReplicaSet", plural: "replicasets", definition: appsv1.ReplicaSet{}.OpenAPIModelName(),
		shortNames: []string{"rs"}, categories: all, scale: true,
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			col("Desired", "integer", ".spec.replicas"), col("Current", "integer", ".status.replicas"),
			col("Ready", "integer", ".status.readyReplicas")}},
	{group: "batch", version: "v1", kind: "Job", plural: "jobs", definition: batchv1.Job{}.OpenAPIModelName(),
		categories: all,
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			col("Completions", "integer", ".spec.completions"), col("Succeeded", "integer", ".status.succeeded")}},
	{group: "batch", version: "v1", kind: "CronJob", plural: "cronjobs", definition: batchv1.CronJob{}.OpenAPIModelName(),
		shortNames: []string{"cj"}, categories: all,
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			col("Schedule", "string", ".spec.schedule"), col("Suspend", "boolean", ".spec.suspend"),
			col("Last Schedule", "date", ".status.lastScheduleTime")}},
	{group: "", version: "v1", kind: "Service", plural: "services", definition: corev1.Service{}.OpenAPIModelName(),
		shortNames: []string{"svc"}, categories: all,
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			col("Type", "string", ".spec.type"), col("Cluster-IP", "string", ".spec.clusterIP")}},
	{group: "", version: "v1", kind: "PersistentVolumeClaim", plural: "persistentvolumeclaims", definition: corev1.PersistentVolumeClaim{}.OpenAPIModelName(),
		shortNames: []string{"pvc"},
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			col("Status", "string", ".status.phase"), col("Volume", "string", ".spec.volumeName"),
			col("Capacity", "string", ".status.capacity.storage"), col("StorageClass", "string", ".spec.storageClassName")}},
	{group: "networking.k8s.io", version: "v1", kind: "Ingress", plural: "ingresses", definition: networkingv1.Ingress{}.OpenAPIModelName(),
		shortNames: []string{"ing"},
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			col("Class", "string", ".spec.ingressClassName")}},
	{group: "networking.k8s.io", version: "v1", kind: "NetworkPolicy", plural: "networkpolicies", definition: networkingv1.NetworkPolicy{}.OpenAPIModelName(),
		shortNames: []string{"netpol"}},
	{group: "autoscaling", version: "v2", kind: "HorizontalPodAutoscaler", plural: "horizontalpodautoscalers", definition: autoscalingv2.HorizontalPodAutoscaler{}.OpenAPIModelName(),
		shortNames: []string{"hpa"}, categories: all,
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			col("Reference", "string", ".spec.scaleTargetRef.name"), col("MinPods", "integer", ".spec.minReplicas"),
			col("MaxPods", "integer", ".spec.maxReplicas"), col("Replicas", "integer", ".status.currentReplicas")}},
	{group: "policy", version: "v1", kind: "PodDisruptionBudget", plural: "poddisruptionbudgets", definition: policyv1.PodDisruptionBudget{}.OpenAPIModelName(),
		shortNames: []string{"pdb"},
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			col("Min Available", "string", ".spec.minAvailable"), col("Max Unavailable", "string", ".spec.maxUnavailable"),
			col("Allowed Disruptions", "integer", ".status.disruptionsAllowed")}},
}

// groupOrCore is the group as used in names: "core" for the core group.
func (k workloadKind) groupOrCore() string {
	if k.group == "" {
		return "core"
	}
	return k.group
}

// crdName is the CRD's metadata.name, <plural>.<group or "core">.
func (k workloadKind) crdName() string { return k.plural + "." + k.groupOrCore() }

// fileName is the output file name of the kind's CRD.
func (k workloadKind) fileName() string { return k.crdName() + ".yaml" }

// Definition names that get a fixed schema instead of their OpenAPI definition.
var (
	defIntOrString  = intstr.IntOrString{}.OpenAPIModelName()
	defQuantity     = resource.Quantity{}.OpenAPIModelName()
	defTime         = metav1.Time{}.OpenAPIModelName()
	defMicroTime    = metav1.MicroTime{}.OpenAPIModelName()
	defRawExtension = runtime.RawExtension{}.OpenAPIModelName()
)

// refPrefix is what our reference callback puts before a definition name.
const refPrefix = "#/definitions/"

func refCallback(name string) spec.Ref { return spec.MustCreateRef(refPrefix + name) }

// loadDefinitions returns Kubernetes' OpenAPI definitions, keyed by definition name.
func loadDefinitions() map[string]common.OpenAPIDefinition {
	return openapi.GetOpenAPIDefinitions(refCallback)
}

// converter turns OpenAPI v2 definitions into structural CRD schemas.
type converter struct {
	defs map[string]common.OpenAPIDefinition
}

func intOrString() apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{XIntOrString: true}
}

func preserveUnknown() apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{XPreserveUnknownFields: ptrTo(true)}
}

func ptrTo[T any](v T) *T { return &v }

// keptFormats are the OpenAPI formats that survive the conversion.
var keptFormats = map[string]bool{"int32": true, "int64": true, "date-time": true}

// convertDefinition converts the named definition. stack holds the definitions being converted
// (outermost first), to detect reference cycles.
func (c *converter) convertDefinition(name, path string, stack []string) (apiextensionsv1.JSONSchemaProps, error) {
	switch name {
	case defIntOrString, defQuantity:
		return intOrString(), nil
	case defTime, defMicroTime:
		return apiextensionsv1.JSONSchemaProps{Type: "string", Format: "date-time"}, nil
	case defRawExtension:
		return apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptrTo(true)}, nil
	}
	for _, s := range stack {
		if s == name {
			return apiextensionsv1.JSONSchemaProps{}, fmt.Errorf("%s: reference cycle: %s -> %s", path, strings.Join(stack, " -> "), name)
		}
	}
	def, ok := c.defs[name]
	if !ok {
		return apiextensionsv1.JSONSchemaProps{}, fmt.Errorf("%s: reference to unknown definition %q", path, name)
	}
	inner := make([]string, len(stack), len(stack)+1)
	copy(inner, stack)
	return c.convert(&def.Schema, path, append(inner, name))
}

// convert converts one schema; path is the JSON path of the field, for error messages.
func (c *converter) convert(s *spec.Schema, path string, stack []string) (apiextensionsv1.JSONSchemaProps, error) {
	none := apiextensionsv1.JSONSchemaProps{}
	if ref := s.Ref.String(); ref != "" {
		// Description, default and the like next to a $ref are dropped with the reference.
		name, ok := strings.CutPrefix(ref, refPrefix)
		if !ok {
			return none, fmt.Errorf("%s: unexpected $ref %q", path, ref)
		}
		return c.convertDefinition(name, path, stack)
	}
	if len(s.AllOf) > 0 || len(s.AnyOf) > 0 || len(s.OneOf) > 0 || s.Not != nil {
		return none, fmt.Errorf("%s: allOf/anyOf/oneOf/not are not supported", path)
	}
	if s.Format == "int-or-string" || extensionIsTrue(s, "x-kubernetes-int-or-string") {
		return intOrString(), nil
	}
	preserve := extensionIsTrue(s, "x-kubernetes-preserve-unknown-fields")
	if len(s.Type) == 0 {
		if len(s.Properties) > 0 || s.Items != nil || s.AdditionalProperties != nil {
			return none, fmt.Errorf("%s: schema without a type has properties, items or additionalProperties", path)
		}
		return preserveUnknown(), nil
	}
	if len(s.Type) > 1 {
		return none, fmt.Errorf("%s: multiple types %v are not supported", path, s.Type)
	}
	out := apiextensionsv1.JSONSchemaProps{Type: s.Type[0]}
	if preserve {
		out.XPreserveUnknownFields = ptrTo(true)
	}
	switch out.Type {
	case "string", "integer", "number", "boolean":
		if keptFormats[s.Format] {
			out.Format = s.Format
		}
		if len(s.Properties) > 0 || s.Items != nil || s.AdditionalProperties != nil {
			return none, fmt.Errorf("%s: type %s with properties, items or additionalProperties", path, out.Type)
		}
	case "array":
		if s.Items == nil || s.Items.Schema == nil || len(s.Items.Schemas) > 0 {
			return none, fmt.Errorf("%s: array without a single items schema", path)
		}
		items, err := c.convert(s.Items.Schema, path+"[]", stack)
		if err != nil {
			return none, err
		}
		out.Items = &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &items}
	case "object":
		if len(s.Properties) > 0 && s.AdditionalProperties != nil {
			return none, fmt.Errorf("%s: both properties and additionalProperties", path)
		}
		if len(s.Properties) > 0 {
			out.Properties = make(map[string]apiextensionsv1.JSONSchemaProps, len(s.Properties))
			for name, prop := range s.Properties {
				converted, err := c.convert(&prop, path+"."+name, stack)
				if err != nil {
					return none, err
				}
				out.Properties[name] = converted
			}
			for _, r := range s.Required {
				if _, ok := s.Properties[r]; !ok {
					return none, fmt.Errorf("%s: required property %q is not defined", path, r)
				}
			}
			out.Required = sortedCopy(s.Required)
		} else if ap := s.AdditionalProperties; ap != nil {
			if ap.Schema != nil {
				values, err := c.convert(ap.Schema, path+".*", stack)
				if err != nil {
					return none, err
				}
				out.AdditionalProperties = &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &values}
			} else if ap.Allows {
				out.XPreserveUnknownFields = ptrTo(true)
			} else {
				return none, fmt.Errorf("%s: additionalProperties: false is not supported", path)
			}
		} else {
			// A free-form object (e.g. metav1.FieldsV1) or an empty struct: keep what it holds.
			out.XPreserveUnknownFields = ptrTo(true)
		}
	default:
		return none, fmt.Errorf("%s: unsupported type %q", path, out.Type)
	}
	return out, nil
}

func extensionIsTrue(s *spec.Schema, name string) bool {
	v, ok := s.Extensions[name]
	if !ok {
		return false
	}
	b, ok := v.(bool)
	return ok && b
}

func sortedCopy(in []string) []string {
	if len(in) == 0 {
		return nil
	}
	out := append([]string(nil), in...)
	sort.Strings(out)
	return out
}

// firstParagraph returns the first paragraph of an OpenAPI description.
func firstParagraph(s string) string {
	s, _, _ = strings.Cut(s, "\n\n")
	return strings.TrimSpace(s)
}

// rootSchema converts the kind's definition into the CRD's root schema.
func (c *converter) rootSchema(k workloadKind) (*apiextensionsv1.JSONSchemaProps, error) {
	def, ok := c.defs[k.definition]
	if !ok {
		return nil, fmt.Errorf("no OpenAPI definition %q", k.definition)
	}
	s := def.Schema
	if len(s.Type) != 1 || s.Type[0] != "object" {
		return nil, fmt.Errorf("definition %q is not an object", k.definition)
	}
	root := &apiextensionsv1.JSONSchemaProps{
		Type:        "object",
		Description: firstParagraph(s.Description),
		Properties:  map[string]apiextensionsv1.JSONSchemaProps{},
	}
	for _, name := range []string{"apiVersion", "kind", "metadata", "spec"} {
		if _, ok := s.Properties[name]; !ok {
			return nil, fmt.Errorf("definition %q has no %s", k.definition, name)
		}
	}
	for name, prop := range s.Properties {
		switch name {
		case "apiVersion", "kind":
			root.Properties[name] = apiextensionsv1.JSONSchemaProps{Type: "string"}
		case "metadata":
			root.Properties[name] = apiextensionsv1.JSONSchemaProps{Type: "object"}
		case "spec", "status":
			converted, err := c.convert(&prop, "."+name, []string{k.definition})
			if err != nil {
				return nil, err
			}
			root.Properties[name] = converted
		default:
			return nil, fmt.Errorf("definition %q has an unexpected top-level property %q", k.definition, name)
		}
	}
	root.Required = sortedCopy(s.Required)
	return root, nil
}

// buildCRD builds the CRD of one kind (not yet validated).
func (c *converter) buildCRD(k workloadKind) (*apiextensionsv1.CustomResourceDefinition, error) {
	root, err := c.rootSchema(k)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", k.kind, err)
	}
	version := apiextensionsv1.CustomResourceDefinitionVersion{
		Name:    k.version,
		Served:  true,
		Storage: true,
		Schema:  &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: root},
	}
	if _, hasStatus := root.Properties["status"]; hasStatus {
		version.Subresources = &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}}
	}
	if k.scale {
		if version.Subresources == nil {
			return nil, fmt.Errorf("%s: scale subresource without status", k.kind)
		}
		scale := &apiextensionsv1.CustomResourceSubresourceScale{
			SpecReplicasPath:   ".spec.replicas",
			StatusReplicasPath: ".status.replicas",
		}
		for _, p := range []string{scale.SpecReplicasPath, scale.StatusReplicasPath} {
			if s := lookup(root, p); s == nil || s.Type != "integer" {
				return nil, fmt.Errorf("%s: scale path %s is not an integer field", k.kind, p)
			}
		}
		if s := lookup(root, ".status.selector"); s != nil && s.Type == "string" {
			scale.LabelSelectorPath = ptrTo(".status.selector")
		}
		version.Subresources.Scale = scale
	}
	if len(k.columns) > 0 {
		for _, c := range k.columns {
			if lookup(root, c.JSONPath) == nil {
				return nil, fmt.Errorf("%s: printer column %q: no field %s", k.kind, c.Name, c.JSONPath)
			}
		}
		version.AdditionalPrinterColumns = append(append([]apiextensionsv1.CustomResourceColumnDefinition(nil), k.columns...), ageColumn)
	}
	objectMeta := metav1.ObjectMeta{Name: k.crdName()}
	if apihelpers.IsProtectedCommunityGroup(k.group) {
		objectMeta.Annotations = map[string]string{apiextensionsv1.KubeAPIApprovedAnnotation: apiApproval(k)}
	}
	return &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: apiextensionsv1.SchemeGroupVersion.String(), Kind: "CustomResourceDefinition"},
		ObjectMeta: objectMeta,
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: k.group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural:     k.plural,
				Singular:   strings.ToLower(k.kind),
				Kind:       k.kind,
				ListKind:   k.kind + "List",
				ShortNames: k.shortNames,
				Categories: k.categories,
			},
			Scope:    apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{version},
		},
	}, nil
}

// lookup returns the schema of the field at a simple JSON path (".a.b"), or nil. The metadata
// fields are known to exist although the root schema of metadata is just {type: object}.
func lookup(root *apiextensionsv1.JSONSchemaProps, path string) *apiextensionsv1.JSONSchemaProps {
	if strings.HasPrefix(path, ".metadata.") {
		return &apiextensionsv1.JSONSchemaProps{}
	}
	s := root
	for _, name := range strings.Split(strings.TrimPrefix(path, "."), ".") {
		p, ok := s.Properties[name]
		if !ok {
			if s.AdditionalProperties == nil || s.AdditionalProperties.Schema == nil {
				return nil
			}
			p = *s.AdditionalProperties.Schema
		}
		s = &p
	}
	return s
}

// validationGroup is a group under which the CRD validation accepts a CRD of the given group: it
// wants a dot in the group, which does not concern the schema.
func validationGroup(group string) string {
	if strings.Contains(group, ".") {
		return group
	}
	if group == "" {
		group = "core"
	}
	return group + ".workload-crds.edge.kcp.io"
}

// apiApproval is the value of the api-approved.kubernetes.io annotation that a CRD (and a kcp
// APIResourceSchema) in a protected group (*.k8s.io, *.kubernetes.io) must carry: these are the
// upstream, approved Kubernetes APIs.
func apiApproval(k workloadKind) string {
	dir, _, _ := strings.Cut(k.groupOrCore(), ".") // networking.k8s.io -> k8s.io/api/networking/v1
	return "https://github.com/kubernetes/kubernetes/tree/" + kubeVersion + "/staging/src/k8s.io/api/" + dir + "/" + k.version
}

var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	apiextensionsinstall.Install(s)
	return s
}()

// validateCRD runs the apiextensions-apiserver validation of a CRD create (including the structural
// schema checks) on a copy of crd, under a placeholder group.
func validateCRD(crd *apiextensionsv1.CustomResourceDefinition) error {
	v1 := crd.DeepCopy()
	v1.Spec.Group = validationGroup(crd.Spec.Group)
	v1.Name = v1.Spec.Names.Plural + "." + v1.Spec.Group
	scheme.Default(v1)
	internal := &apiextensions.CustomResourceDefinition{}
	if err := scheme.Convert(v1, internal, nil); err != nil {
		return fmt.Errorf("%s: converting to the internal type: %w", crd.Spec.Names.Kind, err)
	}
	// As the API server's create strategy does.
	for _, v := range internal.Spec.Versions {
		if v.Storage {
			internal.Status.StoredVersions = []string{v.Name}
		}
	}
	errs := apiextensionsvalidation.ValidateCustomResourceDefinition(context.Background(), internal)
	// Belt and braces: the structural schema checks by themselves, with their own error paths.
	// (The internal type holds a schema common to all versions in spec.validation.)
	for _, v := range internal.Spec.Versions {
		validation := v.Schema
		if validation == nil {
			validation = internal.Spec.Validation
		}
		if validation == nil || validation.OpenAPIV3Schema == nil {
			errs = append(errs, field.Required(field.NewPath("spec", "versions").Key(v.Name), "no schema"))
			continue
		}
		ss, err := structuralschema.NewStructural(validation.OpenAPIV3Schema)
		if err != nil {
			errs = append(errs, field.Invalid(field.NewPath("spec", "versions").Key(v.Name), "", err.Error()))
			continue
		}
		errs = append(errs, structuralschema.ValidateStructural(field.NewPath("spec", "versions").Key(v.Name).Child("schema", "openAPIV3Schema"), ss)...)
	}
	if len(errs) > 0 {
		msgs := make([]string, 0, len(errs))
		for _, e := range errs {
			msgs = append(msgs, "  "+e.Error())
		}
		return fmt.Errorf("%s (%s): invalid CRD:\n%s", crd.Spec.Names.Kind, crd.Name, strings.Join(msgs, "\n"))
	}
	return nil
}

// generatedCRD is one generated, validated CRD.
type generatedCRD struct {
	kind workloadKind
	crd  *apiextensionsv1.CustomResourceDefinition
}

// generate builds and validates the CRDs of all workload kinds.
func generate(defs map[string]common.OpenAPIDefinition) ([]generatedCRD, error) {
	c := &converter{defs: defs}
	var out []generatedCRD
	for _, k := range workloadKinds {
		crd, err := c.buildCRD(k)
		if err != nil {
			return nil, err
		}
		if err := validateCRD(crd); err != nil {
			return nil, err
		}
		out = append(out, generatedCRD{kind: k, crd: crd})
	}
	return out, nil
}

// render serialises a CRD as YAML without the empty status and creationTimestamp.
func render(g generatedCRD) ([]byte, error) {
	j, err := json.Marshal(g.crd)
	if err != nil {
		return nil, err
	}
	var obj map[string]interface{}
	if err := json.Unmarshal(j, &obj); err != nil {
		return nil, err
	}
	delete(obj, "status")
	if md, ok := obj["metadata"].(map[string]interface{}); ok {
		delete(md, "creationTimestamp")
	}
	y, err := yaml.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "# Code generated by hack/tools/kube/workload-crds from the OpenAPI definitions of Kubernetes %s\n", kubeVersion)
	fmt.Fprintf(&buf, "# (%s). DO NOT EDIT.\n", g.kind.definition)
	buf.Write(y)
	return buf.Bytes(), nil
}

// checkKubeVersion fails if the binary was built against another k8s.io/kubernetes than kubeVersion.
func checkKubeVersion() error {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	for _, m := range bi.Deps {
		if m.Path == "k8s.io/kubernetes" {
			v := m.Version
			if m.Replace != nil {
				v = m.Replace.Version
			}
			if v != kubeVersion {
				return fmt.Errorf("built against k8s.io/kubernetes %s, but kubeVersion is %s: update the constant", v, kubeVersion)
			}
		}
	}
	return nil
}

func run(outputDir string) error {
	if err := checkKubeVersion(); err != nil {
		return err
	}
	crds, err := generate(loadDefinitions())
	if err != nil {
		return err
	}
	if err := os.MkdirAll(outputDir, 0o755); err != nil {
		return err
	}
	written := map[string]bool{}
	for _, g := range crds {
		data, err := render(g)
		if err != nil {
			return fmt.Errorf("%s: %w", g.kind.kind, err)
		}
		name := g.kind.fileName()
		if written[name] {
			return fmt.Errorf("duplicate output file %s", name)
		}
		written[name] = true
		path := filepath.Join(outputDir, name)
		status := "wrote"
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
			status = "unchanged"
		} else if err := os.WriteFile(path, data, 0o644); err != nil {
			return err
		}
		fmt.Printf("%s %s (%d bytes)\n", status, path, len(data))
	}
	stale, err := filepath.Glob(filepath.Join(outputDir, "*.yaml"))
	if err != nil {
		return err
	}
	sort.Strings(stale)
	for _, path := range stale {
		if written[filepath.Base(path)] {
			continue
		}
		if err := os.Remove(path); err != nil {
			return err
		}
		fmt.Printf("removed %s\n", path)
	}
	return nil
}

func main() {
	outputDir := flag.String("output-dir", "", "directory to write the CRD YAML files to (required)")
	flag.Parse()
	if *outputDir == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: workload-crds --output-dir <dir>")
		os.Exit(2)
	}
	if err := run(*outputDir); err != nil {
		fmt.Fprintln(os.Stderr, "workload-crds:", err)
		os.Exit(1)
	}
}
