// Package crds reads the CustomResourceDefinition files that the generators under hack/ take as
// input.
package crds

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// ReadDir reads every *.yaml file of dir as one CRD, in file name order. A file that holds
// anything else is an error.
func ReadDir(dir string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	crds := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(files))
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(raw, crd); err != nil {
			return nil, fmt.Errorf("reading %s as a CustomResourceDefinition: %w", f, err)
		}
		if crd.Kind != "CustomResourceDefinition" {
			return nil, fmt.Errorf("%s holds a %q, not a CustomResourceDefinition", f, crd.Kind)
		}
		crds = append(crds, crd)
	}
	return crds, nil
}
