package main

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

var (
	generateOnce sync.Once
	generated    map[string]generatedCRD // by kind
	generateErr  error
)

// crds generates (once) the CRDs of all workload kinds; generate also validates each of them.
func crds(t *testing.T) map[string]generatedCRD {
	t.Helper()
	generateOnce.Do(func() {
		var list []generatedCRD
		list, generateErr = generate(loadDefinitions())
		generated = map[string]generatedCRD{}
		for _, g := range list {
			generated[g.kind.kind] = g
		}
	})
	if generateErr != nil {
		t.Fatalf("generate: %v", generateErr)
	}
	return generated
}

func schemaOf(t *testing.T, kind string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	g, ok := crds(t)[kind]
	if !ok {
		t.Fatalf("no CRD for %s", kind)
	}
	return g.crd.Spec.Versions[0].Schema.OpenAPIV3Schema
}

// at walks a path of property names; "[]" steps into array items and "*" into map values.
func at(t *testing.T, s *apiextensionsv1.JSONSchemaProps, path ...string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	for i, p := range path {
		var next *apiextensionsv1.JSONSchemaProps
		switch p {
		case "[]":
			if s.Type == "array" && s.Items != nil {
				next = s.Items.Schema
			}
		case "*":
			if s.AdditionalProperties != nil {
				next = s.AdditionalProperties.Schema
			}
		default:
			if prop, ok := s.Properties[p]; ok {
				next = &prop
			}
		}
		if next == nil {
			t.Fatalf("no schema at %s", strings.Join(path[:i+1], "."))
		}
		s = next
	}
	return s
}

func isIntOrString(s *apiextensionsv1.JSONSchemaProps) bool {
	return s.XIntOrString && s.Type == ""
}

func TestAllKindsGeneratedAndValid(t *testing.T) {
	got := crds(t)
	want := map[string]string{
		"Deployment": "deployments.apps.yaml", "StatefulSet": "statefulsets.apps.yaml",
		"DaemonSet": "daemonsets.apps.yaml", "ReplicaSet": "replicasets.apps.yaml",
		"Job": "jobs.batch.yaml", "CronJob": "cronjobs.batch.yaml",
		"Service": "services.core.yaml", "PersistentVolumeClaim": "persistentvolumeclaims.core.yaml",
		"Ingress": "ingresses.networking.k8s.io.yaml", "NetworkPolicy": "networkpolicies.networking.k8s.io.yaml",
		"HorizontalPodAutoscaler": "horizontalpodautoscalers.autoscaling.yaml",
		"PodDisruptionBudget":     "poddisruptionbudgets.policy.yaml",
	}
	if len(got) != len(want) {
		t.Errorf("got %d CRDs, want %d", len(got), len(want))
	}
	for kind, file := range want {
		g, ok := got[kind]
		if !ok {
			t.Errorf("no CRD for %s", kind)
			continue
		}
		if g.kind.fileName() != file {
			t.Errorf("%s: file %s, want %s", kind, g.kind.fileName(), file)
		}
		// generate validated it already; validate again explicitly so that this test says so.
		if err := validateCRD(g.crd); err != nil {
			t.Errorf("%s: %v", kind, err)
		}
		crd := g.crd
		if crd.Spec.Scope != apiextensionsv1.NamespaceScoped || len(crd.Spec.Versions) != 1 ||
			!crd.Spec.Versions[0].Served || !crd.Spec.Versions[0].Storage {
			t.Errorf("%s: want one served storage version, namespaced", kind)
		}
		if crd.Spec.Names.ListKind != kind+"List" || crd.Spec.Names.Singular != strings.ToLower(kind) {
			t.Errorf("%s: names %+v", kind, crd.Spec.Names)
		}
		root := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
		if root.Description == "" {
			t.Errorf("%s: no top-level description", kind)
		}
		if md := root.Properties["metadata"]; md.Type != "object" || len(md.Properties) != 0 || md.XPreserveUnknownFields != nil {
			t.Errorf("%s: root metadata is %+v, want just {type: object}", kind, md)
		}
		for _, p := range []string{"apiVersion", "kind"} {
			if root.Properties[p].Type != "string" {
				t.Errorf("%s: %s is not a string", kind, p)
			}
		}
		_, hasStatus := root.Properties["status"]
		if hasStatus != (crd.Spec.Versions[0].Subresources != nil && crd.Spec.Versions[0].Subresources.Status != nil) {
			t.Errorf("%s: status subresource does not match the presence of .status", kind)
		}
		walk(root, "", func(path string, s *apiextensionsv1.JSONSchemaProps) {
			if path != "" && s.Description != "" {
				t.Errorf("%s: description at %s", kind, path)
			}
			if s.Default != nil || len(s.Enum) > 0 || s.XListType != nil || len(s.XListMapKeys) > 0 || s.XMapType != nil {
				t.Errorf("%s: default, enum or list/map extension at %s", kind, path)
			}
			if s.Format != "" && !keptFormats[s.Format] {
				t.Errorf("%s: format %q at %s", kind, s.Format, path)
			}
		})
	}
	for kind, g := range got {
		approval, ok := g.crd.Annotations[apiextensionsv1.KubeAPIApprovedAnnotation]
		if ok != (g.crd.Spec.Group == "networking.k8s.io") {
			t.Errorf("%s: api-approved annotation %q, want one exactly for the protected group", kind, approval)
		}
	}
	if got["NetworkPolicy"].crd.Spec.Versions[0].Subresources != nil {
		t.Errorf("NetworkPolicy has no status in v1.32 and so should have no status subresource")
	}
}

func walk(s *apiextensionsv1.JSONSchemaProps, path string, f func(string, *apiextensionsv1.JSONSchemaProps)) {
	f(path, s)
	for name, p := range s.Properties {
		walk(&p, path+"."+name, f)
	}
	if s.Items != nil && s.Items.Schema != nil {
		walk(s.Items.Schema, path+"[]", f)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		walk(s.AdditionalProperties.Schema, path+".*", f)
	}
}

func TestDeploymentSchema(t *testing.T) {
	d := schemaOf(t, "Deployment")
	containers := at(t, d, "spec", "template", "spec", "containers")
	if containers.Type != "array" || containers.Items.Schema.Type != "object" {
		t.Fatalf("containers: want array of objects, got %+v", containers)
	}
	if req := containers.Items.Schema.Required; len(req) != 1 || req[0] != "name" {
		t.Errorf("containers[]: required %v, want [name]", req)
	}
	if s := at(t, d, "spec", "template", "spec", "containers", "[]", "resources", "limits", "*"); !isIntOrString(s) {
		t.Errorf("resources.limits values: %+v, want int-or-string", s)
	}
	if s := at(t, d, "spec", "strategy", "rollingUpdate", "maxSurge"); !isIntOrString(s) {
		t.Errorf("maxSurge: %+v, want int-or-string", s)
	}
	if s := at(t, d, "spec", "replicas"); s.Type != "integer" || s.Format != "int32" {
		t.Errorf("replicas: %+v", s)
	}
	if s := at(t, d, "status", "conditions", "[]", "lastUpdateTime"); s.Type != "string" || s.Format != "date-time" {
		t.Errorf("conditions[].lastUpdateTime: %+v, want date-time string", s)
	}
	// Nested ObjectMeta keeps its schema, so that template labels are not pruned.
	if s := at(t, d, "spec", "template", "metadata", "labels", "*"); s.Type != "string" {
		t.Errorf("template labels: %+v", s)
	}
	// FieldsV1 is free-form.
	if s := at(t, d, "spec", "template", "metadata", "managedFields", "[]", "fieldsV1"); s.XPreserveUnknownFields == nil || !*s.XPreserveUnknownFields {
		t.Errorf("fieldsV1: %+v, want preserve-unknown-fields", s)
	}
	if req := at(t, d, "spec").Required; strings.Join(req, ",") != "selector,template" {
		t.Errorf("spec.required: %v", req)
	}
	v := crds(t)["Deployment"].crd.Spec.Versions[0]
	if v.Subresources == nil || v.Subresources.Scale == nil || v.Subresources.Scale.SpecReplicasPath != ".spec.replicas" ||
		v.Subresources.Scale.StatusReplicasPath != ".status.replicas" {
		t.Errorf("scale subresource: %+v", v.Subresources)
	}
	if n := crds(t)["Deployment"].crd.Spec.Names; strings.Join(n.ShortNames, ",") != "deploy" || strings.Join(n.Categories, ",") != "all" {
		t.Errorf("names: %+v", n)
	}
}

func TestServiceSchema(t *testing.T) {
	g := crds(t)["Service"]
	if g.crd.Spec.Group != "" || g.crd.Name != "services.core" {
		t.Errorf("Service CRD: group %q name %q, want \"\" and services.core", g.crd.Spec.Group, g.crd.Name)
	}
	svc := schemaOf(t, "Service")
	if s := at(t, svc, "spec", "ports", "[]", "targetPort"); !isIntOrString(s) {
		t.Errorf("targetPort: %+v, want int-or-string", s)
	}
	if req := at(t, svc, "spec", "ports", "[]").Required; strings.Join(req, ",") != "port" {
		t.Errorf("ports[].required: %v", req)
	}
	if s := at(t, svc, "spec", "selector", "*"); s.Type != "string" {
		t.Errorf("selector values: %+v", s)
	}
}

func TestOtherSchemas(t *testing.T) {
	if s := at(t, schemaOf(t, "PodDisruptionBudget"), "spec", "minAvailable"); !isIntOrString(s) {
		t.Errorf("pdb minAvailable: %+v", s)
	}
	if s := at(t, schemaOf(t, "HorizontalPodAutoscaler"), "spec", "metrics", "[]", "resource", "target", "averageValue"); !isIntOrString(s) {
		t.Errorf("hpa averageValue: %+v", s)
	}
	if s := at(t, schemaOf(t, "PersistentVolumeClaim"), "spec", "resources", "requests", "*"); !isIntOrString(s) {
		t.Errorf("pvc requests: %+v", s)
	}
	if s := at(t, schemaOf(t, "CronJob"), "spec", "jobTemplate", "spec", "template", "spec", "containers", "[]", "name"); s.Type != "string" {
		t.Errorf("cronjob container name: %+v", s)
	}
	if s := at(t, schemaOf(t, "Ingress"), "spec", "rules", "[]", "http", "paths", "[]", "backend", "service", "port", "number"); s.Type != "integer" {
		t.Errorf("ingress backend port number: %+v", s)
	}
}

func TestConversionRules(t *testing.T) {
	obj := spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"object"}, Properties: map[string]spec.Schema{
		"a":   {SchemaProps: spec.SchemaProps{Ref: refCallback("test.A")}},
		"ios": {SchemaProps: spec.SchemaProps{Ref: refCallback(defIntOrString)}},
		"q":   {SchemaProps: spec.SchemaProps{Ref: refCallback(defQuantity)}},
		"t":   {SchemaProps: spec.SchemaProps{Ref: refCallback(defMicroTime)}},
		"raw": {SchemaProps: spec.SchemaProps{Ref: refCallback(defRawExtension)}},
		"any": {SchemaProps: spec.SchemaProps{Description: "untyped"}},
		"b":   {SchemaProps: spec.SchemaProps{Type: []string{"string"}, Format: "byte", Enum: []interface{}{"x"}, Default: "x"}},
	}, Required: []string{"q", "a"}}}
	defs := map[string]common.OpenAPIDefinition{
		"test.A": {Schema: spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"array"},
			Items: &spec.SchemaOrArray{Schema: &spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"integer"}, Format: "int64"}}}},
			VendorExtensible: spec.VendorExtensible{Extensions: spec.Extensions{"x-kubernetes-list-type": "set"}}}},
	}
	c := &converter{defs: defs}
	got, err := c.convert(&obj, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if a := got.Properties["a"]; a.Type != "array" || a.XListType != nil || a.Items.Schema.Format != "int64" {
		t.Errorf("a: %+v", a)
	}
	for _, p := range []string{"ios", "q"} {
		if s := got.Properties[p]; !isIntOrString(&s) {
			t.Errorf("%s: %+v", p, s)
		}
	}
	if s := got.Properties["t"]; s.Type != "string" || s.Format != "date-time" {
		t.Errorf("t: %+v", s)
	}
	if s := got.Properties["raw"]; s.Type != "object" || s.XPreserveUnknownFields == nil || !*s.XPreserveUnknownFields {
		t.Errorf("raw: %+v", s)
	}
	if s := got.Properties["any"]; s.Type != "" || s.XPreserveUnknownFields == nil || !*s.XPreserveUnknownFields || s.Description != "" {
		t.Errorf("any: %+v", s)
	}
	if s := got.Properties["b"]; s.Type != "string" || s.Format != "" || s.Enum != nil || s.Default != nil {
		t.Errorf("b: %+v", s)
	}
	if strings.Join(got.Required, ",") != "a,q" {
		t.Errorf("required: %v", got.Required)
	}
}

func TestReferenceCycle(t *testing.T) {
	defs := map[string]common.OpenAPIDefinition{
		"test.A": {Schema: spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"object"},
			Properties: map[string]spec.Schema{"b": {SchemaProps: spec.SchemaProps{Ref: refCallback("test.B")}}}}}},
		"test.B": {Schema: spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"array"},
			Items: &spec.SchemaOrArray{Schema: &spec.Schema{SchemaProps: spec.SchemaProps{Ref: refCallback("test.A")}}}}}},
	}
	c := &converter{defs: defs}
	_, err := c.convertDefinition("test.A", ".spec", nil)
	if err == nil || !strings.Contains(err.Error(), "reference cycle: test.A -> test.B -> test.A") || !strings.Contains(err.Error(), ".spec.b[]") {
		t.Fatalf("want a reference cycle error with its path, got %v", err)
	}
	// A definition used twice side by side is no cycle.
	defs["test.C"] = common.OpenAPIDefinition{Schema: spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"object"},
		Properties: map[string]spec.Schema{
			"x": {SchemaProps: spec.SchemaProps{Ref: refCallback("test.D")}},
			"y": {SchemaProps: spec.SchemaProps{Ref: refCallback("test.D")}},
		}}}}
	defs["test.D"] = common.OpenAPIDefinition{Schema: spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"string"}}}}
	if _, err := c.convertDefinition("test.C", "", nil); err != nil {
		t.Fatal(err)
	}
}

// TestRealObjectsSurvive runs objects of the real Kubernetes types through what a CRD-serving API
// server does on create (drop non-nullable nulls, prune, validate against the schema) and checks
// that nothing is pruned and nothing is invalid.
func TestRealObjectsSurvive(t *testing.T) {
	q := resource.MustParse
	meta := metav1.ObjectMeta{Name: "x", Namespace: "ns", Labels: map[string]string{"app": "x"}, Annotations: map[string]string{"a": "b"}}
	now := metav1.Now()
	podTemplate := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}, Annotations: map[string]string{"k": "v"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "c", Image: "nginx", Args: []string{"a"},
				Ports: []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP, Name: "http"}},
				Env: []corev1.EnvVar{{Name: "E", Value: "v"}, {Name: "F", ValueFrom: &corev1.EnvVarSource{
					ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu", Divisor: q("1m")}}}},
				Resources: corev1.ResourceRequirements{
					Limits:   corev1.ResourceList{corev1.ResourceCPU: q("500m"), corev1.ResourceMemory: q("128Mi")},
					Requests: corev1.ResourceList{corev1.ResourceCPU: q("1")},
				},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("http")}}, PeriodSeconds: 5},
				LivenessProbe:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}}},
				VolumeMounts:   []corev1.VolumeMount{{Name: "v", MountPath: "/v"}},
				SecurityContext: &corev1.SecurityContext{
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}, RunAsNonRoot: ptrTo(true)},
			}},
			Volumes: []corev1.Volume{
				{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptrTo(q("1Gi"))}}},
				{Name: "e", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
					VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
						ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"t": "u"}},
						Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
							Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: q("1Gi")}}}}}}},
			},
			NodeSelector: map[string]string{"n": "m"},
			Tolerations:  []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
				Weight: 1, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "zone", LabelSelector: &metav1.LabelSelector{
					MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"x"}}}}}}}}},
		},
	}
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}
	maxSurge := intstr.FromString("25%")
	objects := map[string]runtime.Object{
		"Deployment": &appsv1.Deployment{ObjectMeta: meta,
			Spec: appsv1.DeploymentSpec{Replicas: ptrTo(int32(2)), Selector: selector, Template: podTemplate,
				Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &maxSurge}}},
			Status: appsv1.DeploymentStatus{Replicas: 2, ReadyReplicas: 2, Conditions: []appsv1.DeploymentCondition{{
				Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, LastUpdateTime: now, LastTransitionTime: now, Reason: "r"}}}},
		"StatefulSet": &appsv1.StatefulSet{ObjectMeta: meta,
			Spec: appsv1.StatefulSetSpec{Selector: selector, Template: podTemplate, ServiceName: "s",
				VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"},
					Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: q("1Gi")}}}}}},
			Status: appsv1.StatefulSetStatus{Replicas: 1}},
		"DaemonSet": &appsv1.DaemonSet{ObjectMeta: meta, Spec: appsv1.DaemonSetSpec{Selector: selector, Template: podTemplate,
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptrTo(intstr.FromInt32(1))}}}},
		"ReplicaSet": &appsv1.ReplicaSet{ObjectMeta: meta, Spec: appsv1.ReplicaSetSpec{Selector: selector, Template: podTemplate}},
		"Job": &batchv1.Job{ObjectMeta: meta, Spec: batchv1.JobSpec{Template: podTemplate, BackoffLimit: ptrTo(int32(3))},
			Status: batchv1.JobStatus{StartTime: &now, Succeeded: 1}},
		"CronJob": &batchv1.CronJob{ObjectMeta: meta, Spec: batchv1.CronJobSpec{Schedule: "* * * * *",
			JobTemplate: batchv1.JobTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"j": "k"}}, Spec: batchv1.JobSpec{Template: podTemplate}}},
			Status: batchv1.CronJobStatus{LastScheduleTime: &now, Active: []corev1.ObjectReference{{Kind: "Job", Name: "j", APIVersion: "batch/v1"}}}},
		"Service": &corev1.Service{ObjectMeta: meta, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: map[string]string{"app": "x"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}, {Name: "b", Port: 81, TargetPort: intstr.FromInt32(8081)}}},
			Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "1.2.3.4"}}}}},
		"PersistentVolumeClaim": &corev1.PersistentVolumeClaim{ObjectMeta: meta, Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: ptrTo("standard"),
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: q("10Gi")}}},
			Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: corev1.ResourceList{corev1.ResourceStorage: q("10Gi")}}},
		"Ingress": &networkingv1.Ingress{ObjectMeta: meta, Spec: networkingv1.IngressSpec{IngressClassName: ptrTo("nginx"),
			Rules: []networkingv1.IngressRule{{Host: "a.example", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: ptrTo(networkingv1.PathTypePrefix),
					Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "s", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}}}}}},
		"NetworkPolicy": &networkingv1.NetworkPolicy{ObjectMeta: meta, Spec: networkingv1.NetworkPolicySpec{PodSelector: *selector,
			Ingress: []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{{Port: ptrTo(intstr.FromString("http"))}},
				From: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8"}}}}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}}},
		"HorizontalPodAutoscaler": &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: meta, Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "x", APIVersion: "apps/v1"}, MinReplicas: ptrTo(int32(1)), MaxReplicas: 5,
			Metrics: []autoscalingv2.MetricSpec{
				{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU,
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptrTo(int32(80))}}},
				{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceMemory,
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptrTo(q("100Mi"))}}}}},
			Status: autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 1, DesiredReplicas: 2, LastScaleTime: &now}},
		"PodDisruptionBudget": &policyv1.PodDisruptionBudget{ObjectMeta: meta, Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptrTo(intstr.FromString("50%")), Selector: selector},
			Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 1, CurrentHealthy: 2, DesiredHealthy: 1, ExpectedPods: 2}},
	}
	all := crds(t)
	if len(objects) != len(all) {
		t.Errorf("%d sample objects for %d kinds", len(objects), len(all))
	}
	for kind, obj := range objects {
		g, ok := all[kind]
		if !ok {
			t.Errorf("no CRD for %s", kind)
			continue
		}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			t.Fatal(err)
		}
		u["apiVersion"] = g.crd.Spec.Versions[0].Name
		if g.crd.Spec.Group != "" {
			u["apiVersion"] = g.crd.Spec.Group + "/" + g.crd.Spec.Versions[0].Name
		}
		u["kind"] = kind

		internal := &apiextensions.JSONSchemaProps{}
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(g.crd.Spec.Versions[0].Schema.OpenAPIV3Schema, internal, nil); err != nil {
			t.Fatal(err)
		}
		ss, err := structuralschema.NewStructural(internal)
		if err != nil {
			t.Fatal(err)
		}
		structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u, ss)
		pruned := structuralpruning.PruneWithOptions(u, ss, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
		if len(pruned) > 0 {
			t.Errorf("%s: pruned fields: %v", kind, pruned)
		}
		validator, _, err := apiservervalidation.NewSchemaValidator(internal)
		if err != nil {
			t.Fatal(err)
		}
		if errs := apiservervalidation.ValidateCustomResource(nil, u, validator); len(errs) > 0 {
			t.Errorf("%s: invalid: %v", kind, errs.ToAggregate())
		}
	}
	// And the same for an object missing a required field, to show that validation bites.
	bad, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(&appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{Selector: selector, Template: podTemplate}})
	containers := bad["spec"].(map[string]interface{})["template"].(map[string]interface{})["spec"].(map[string]interface{})["containers"].([]interface{})
	delete(containers[0].(map[string]interface{}), "name")
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(all["Deployment"].crd.Spec.Versions[0].Schema.OpenAPIV3Schema, internal, nil); err != nil {
		t.Fatal(err)
	}
	validator, _, _ := apiservervalidation.NewSchemaValidator(internal)
	if errs := apiservervalidation.ValidateCustomResource(nil, bad, validator); len(errs) == 0 {
		t.Errorf("a container without a name was accepted")
	}
}

func TestRenderDeterministic(t *testing.T) {
	all := crds(t)
	kinds := make([]string, 0, len(all))
	for k := range all {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	// A second, independent generation must render byte-identically.
	again, err := generate(loadDefinitions())
	if err != nil {
		t.Fatal(err)
	}
	byKind := map[string]generatedCRD{}
	for _, g := range again {
		byKind[g.kind.kind] = g
	}
	for _, k := range kinds {
		a, err := render(all[k])
		if err != nil {
			t.Fatal(err)
		}
		b, err := render(byKind[k])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s: rendering differs between runs", k)
		}
		s := string(a)
		if strings.Contains(s, "creationTimestamp") && !strings.Contains(s, "jsonPath: .metadata.creationTimestamp") {
			t.Errorf("%s: creationTimestamp in output", k)
		}
		if strings.Contains(s, "\nstatus:") {
			t.Errorf("%s: top-level status in output", k)
		}
		if strings.Count(s, "description:") != 1 {
			t.Errorf("%s: %d descriptions, want 1", k, strings.Count(s, "description:"))
		}
	}
}

func TestRunWritesAndRemovesStale(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, "old.yaml")
	other := filepath.Join(dir, "README.md")
	for _, p := range []string{stale, other} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := run(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale file not removed")
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("non-yaml file removed")
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if len(files) != len(workloadKinds) {
		t.Errorf("%d files, want %d", len(files), len(workloadKinds))
	}
	for _, f := range files {
		data, _ := os.ReadFile(f)
		if len(data) > 500*1024 {
			t.Errorf("%s: %d bytes", filepath.Base(f), len(data))
		}
	}
}

// TestValidationCatchesErrors shows that validateCRD rejects non-structural schemas and names the
// kind and the path.
func TestValidationCatchesErrors(t *testing.T) {
	base := crds(t)["Deployment"].crd
	for name, tc := range map[string]struct {
		mutate func(root *apiextensionsv1.JSONSchemaProps)
		want   string
	}{
		"untyped nested field": {func(root *apiextensionsv1.JSONSchemaProps) {
			spec := root.Properties["spec"]
			spec.Properties["paused"] = apiextensionsv1.JSONSchemaProps{}
			root.Properties["spec"] = spec
		}, "properties[spec].properties[paused].type"},
		"root metadata with properties": {func(root *apiextensionsv1.JSONSchemaProps) {
			root.Properties["metadata"] = apiextensionsv1.JSONSchemaProps{Type: "object",
				Properties: map[string]apiextensionsv1.JSONSchemaProps{"labels": {Type: "object"}}}
		}, "properties[metadata]"},
		"int-or-string preserving unknown fields": {func(root *apiextensionsv1.JSONSchemaProps) {
			spec := root.Properties["spec"]
			spec.Properties["paused"] = apiextensionsv1.JSONSchemaProps{XIntOrString: true, XPreserveUnknownFields: ptrTo(true)}
			root.Properties["spec"] = spec
		}, "properties[spec].properties[paused]"},
	} {
		crd := base.DeepCopy()
		tc.mutate(crd.Spec.Versions[0].Schema.OpenAPIV3Schema)
		err := validateCRD(crd)
		if err == nil || !strings.Contains(err.Error(), "Deployment") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: want an error naming Deployment and %s, got %v", name, tc.want, err)
		}
	}
	// The core group validates under a placeholder group, but is emitted as "".
	if err := validateCRD(crds(t)["Service"].crd); err != nil {
		t.Errorf("Service: %v", err)
	}
}
