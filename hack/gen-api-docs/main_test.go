package main

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
)

func TestTypeOf(t *testing.T) {
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	for _, tc := range []struct {
		name   string
		schema apiextensionsv1.JSONSchemaProps
		want   string
	}{
		{"string", str, "string"},
		{"integer with format", apiextensionsv1.JSONSchemaProps{Type: "integer", Format: "int32"}, "integer (int32)"},
		{"timestamp", apiextensionsv1.JSONSchemaProps{Type: "string", Format: "date-time"}, "timestamp"},
		{"int or string", apiextensionsv1.JSONSchemaProps{XIntOrString: true, AnyOf: []apiextensionsv1.JSONSchemaProps{{Type: "integer"}, str}}, "int or string"},
		{"list of strings", apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &str}}, "[]string"},
		{"map", apiextensionsv1.JSONSchemaProps{Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Schema: &str}}, "map[string]string"},
		{"anything", apiextensionsv1.JSONSchemaProps{XPreserveUnknownFields: ptr.To(true)}, "any"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := TypeOf(&tc.schema); got != tc.want {
				t.Errorf("TypeOf = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestConstraints(t *testing.T) {
	for _, tc := range []struct {
		name     string
		schema   apiextensionsv1.JSONSchemaProps
		required bool
		want     string
	}{
		{"nothing", apiextensionsv1.JSONSchemaProps{Type: "string"}, false, ""},
		{"required, bounded", apiextensionsv1.JSONSchemaProps{Type: "string", MinLength: ptr.To[int64](1), MaxLength: ptr.To[int64](63)}, true,
			"required; not empty; at most 63 characters"},
		{"enum", apiextensionsv1.JSONSchemaProps{Type: "string", Enum: []apiextensionsv1.JSON{{Raw: []byte(`"In"`)}, {Raw: []byte(`"NotIn"`)}}}, false,
			"one of `In`, `NotIn`"},
		{"list map", apiextensionsv1.JSONSchemaProps{Type: "array", XListType: ptr.To("map"), XListMapKeys: []string{"type"}, MaxItems: ptr.To[int64](20)}, false,
			"at most 20 items; one item per `type`"},
		{"set of non-empty strings", apiextensionsv1.JSONSchemaProps{Type: "array", XListType: ptr.To("set"),
			Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string", MinLength: ptr.To[int64](1)}}}, false,
			"no duplicates; each not empty"},
		{"CEL rule with and without a message", apiextensionsv1.JSONSchemaProps{XValidations: apiextensionsv1.ValidationRules{
			{Rule: "self > 0", Message: "must be positive"}, {Rule: "self < 10"}}}, false, "must be positive; `self < 10`"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Constraints(&tc.schema, tc.required); got != tc.want {
				t.Errorf("Constraints = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestFieldsFlattenNestedObjectsListsAndMaps(t *testing.T) {
	str := apiextensionsv1.JSONSchemaProps{Type: "string", Description: "a\n  name"}
	item := apiextensionsv1.JSONSchemaProps{Type: "object", Required: []string{"name"}, Properties: map[string]apiextensionsv1.JSONSchemaProps{"name": str}}
	root := &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"apiVersion": str, "kind": str, "metadata": {Type: "object"},
		"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"items":  {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &item}},
			"byName": {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Schema: &item}},
		}},
	}}
	var got []string
	for _, f := range Fields(root) {
		got = append(got, f.Path+" "+f.Type+" ["+f.Constraints+"] "+f.Description)
	}
	want := []string{
		"spec object [] ",
		"spec.byName map[string]object [] ",
		"spec.byName[*].name string [required] a name",
		"spec.items []object [] ",
		"spec.items[].name string [required] a name",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Fields:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestRenderEscapesTableCells(t *testing.T) {
	crd := &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{
		Group: "example.com", Scope: apiextensionsv1.ClusterScoped,
		Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Widget", Plural: "widgets"},
		Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Schema: &apiextensionsv1.CustomResourceValidation{
			OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"mode": {Type: "string", Description: "a|b"},
			}},
		}}},
	}}
	out := string(Render([]*apiextensionsv1.CustomResourceDefinition{crd}))
	for _, want := range []string{"## Widget", "`example.com/v1`, cluster-scoped; resource `widgets`.", "| `mode` | string |  | a\\|b |"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
