// Command gen-workload-export turns the CRDs of the Kubernetes workload kinds
// (config/workload-crds, generated from Kubernetes' OpenAPI definitions) into kcp
// APIResourceSchemas and one APIExport, workloads.edge.kcp.io, that serves them all.
//
// Each schema is named v<hash>.<resource>.<group>, the hash taken over the CRD's spec, so a
// schema whose content changes gets a new name (APIResourceSchemas are immutable in kcp) and an
// unchanged one keeps its name. The output is the same byte for byte on every run.
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	apisv1alpha1 "github.com/kcp-dev/sdk/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/kcp-dev/sdk/apis/apis/v1alpha2"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kcp-dev/edge-mc/hack/internal/crds"
	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

const (
	schemaFilePrefix = "apiresourceschema-"
	exportFilePrefix = "apiexport-"
)

func main() {
	inputDir := flag.String("input-dir", "", "directory of CustomResourceDefinition YAML files")
	outputDir := flag.String("output-dir", "", "directory to write the APIResourceSchemas and the APIExport into")
	flag.Parse()
	if *inputDir == "" || *outputDir == "" {
		fmt.Fprintln(os.Stderr, "usage: gen-workload-export --input-dir DIR --output-dir DIR")
		os.Exit(2)
	}
	if err := run(*inputDir, *outputDir); err != nil {
		fmt.Fprintf(os.Stderr, "gen-workload-export: %v\n", err)
		os.Exit(1)
	}
}

func run(inputDir, outputDir string) error {
	defs, err := crds.ReadDir(inputDir)
	if err != nil {
		return err
	}
	if len(defs) == 0 {
		return fmt.Errorf("no CustomResourceDefinitions in %s", inputDir)
	}
	if err := os.MkdirAll(outputDir, 0o755); err != nil {
		return err
	}

	export := &apisv1alpha2.APIExport{
		TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha2.SchemeGroupVersion.String(), Kind: "APIExport"},
		ObjectMeta: metav1.ObjectMeta{Name: edgev1alpha1.WorkloadsAPIExportName},
	}
	written := map[string]bool{}
	for _, crd := range defs {
		prefix, err := contentPrefix(crd)
		if err != nil {
			return err
		}
		schema, err := apisv1alpha1.CRDToAPIResourceSchema(crd, prefix)
		if err != nil {
			return fmt.Errorf("converting CRD %s: %w", crd.Name, err)
		}
		schema.TypeMeta = metav1.TypeMeta{APIVersion: apisv1alpha1.SchemeGroupVersion.String(), Kind: "APIResourceSchema"}
		// kcp, like Kubernetes, admits schemas of protected groups (*.k8s.io) only with the
		// api-approved.kubernetes.io annotation, which the conversion does not carry over.
		if v, ok := crd.Annotations[apiextensionsv1.KubeAPIApprovedAnnotation]; ok {
			schema.Annotations = map[string]string{apiextensionsv1.KubeAPIApprovedAnnotation: v}
		}
		file := schemaFilePrefix + crd.Name + ".yaml"
		if err := writeYAML(filepath.Join(outputDir, file), schema); err != nil {
			return err
		}
		written[file] = true
		export.Spec.Resources = append(export.Spec.Resources, apisv1alpha2.ResourceSchema{
			Group:   crd.Spec.Group,
			Name:    crd.Spec.Names.Plural,
			Schema:  schema.Name,
			Storage: apisv1alpha2.ResourceSchemaStorage{CRD: &apisv1alpha2.ResourceSchemaStorageCRD{}},
		})
	}
	sort.Slice(export.Spec.Resources, func(i, j int) bool {
		a, b := export.Spec.Resources[i], export.Spec.Resources[j]
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		return a.Name < b.Name
	})
	exportFile := exportFilePrefix + export.Name + ".yaml"
	if err := writeYAML(filepath.Join(outputDir, exportFile), export); err != nil {
		return err
	}
	written[exportFile] = true
	return prune(outputDir, written)
}

// contentPrefix is "v" and the first 10 hex digits of the SHA-256 of the CRD's spec.
func contentPrefix(crd *apiextensionsv1.CustomResourceDefinition) (string, error) {
	raw, err := yaml.Marshal(crd.Spec)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(raw)
	return "v" + hex.EncodeToString(sum[:])[:10], nil
}

func writeYAML(path string, obj any) error {
	raw, err := yaml.Marshal(obj)
	if err != nil {
		return err
	}
	// creationTimestamp: null is noise in generated manifests.
	raw = bytes.ReplaceAll(raw, []byte("  creationTimestamp: null\n"), nil)
	return os.WriteFile(path, raw, 0o644)
}

// prune removes generated files of earlier runs that this run did not write.
func prune(dir string, written map[string]bool) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		generated := strings.HasPrefix(name, schemaFilePrefix) || strings.HasPrefix(name, exportFilePrefix)
		if e.IsDir() || !generated || written[name] {
			continue
		}
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			return err
		}
		fmt.Printf("removed stale %s\n", name)
	}
	return nil
}
