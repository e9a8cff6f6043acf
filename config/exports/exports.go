// Package exports embeds the generated APIResourceSchemas and APIExports that `kubectl edge init`
// installs into the edge service provider workspace: edge/ holds the edge.kcp.io API (generated
// by kcp's apigen from config/crds), mailbox/ the small export that mailboxes bind (split off
// edge.kcp.io by hack/gen-mailbox-export), workloads/ the common Kubernetes workload kinds (generated
// from Kubernetes' OpenAPI definitions). Regenerate with `make codegen`; never edit by hand.
package exports

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"

	apisv1alpha1 "github.com/kcp-dev/sdk/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/kcp-dev/sdk/apis/apis/v1alpha2"
	"sigs.k8s.io/yaml"
)

//go:embed edge/*.yaml mailbox/*.yaml workloads/*.yaml
var manifests embed.FS

// Load returns the embedded APIResourceSchemas and APIExports, each sorted by name.
func Load() ([]*apisv1alpha1.APIResourceSchema, []*apisv1alpha2.APIExport, error) {
	var schemas []*apisv1alpha1.APIResourceSchema
	var exports []*apisv1alpha2.APIExport
	for _, pattern := range []string{"edge/apiresourceschema-*.yaml", "workloads/apiresourceschema-*.yaml"} {
		files, err := fs.Glob(manifests, pattern)
		if err != nil {
			return nil, nil, err
		}
		for _, f := range files {
			s := &apisv1alpha1.APIResourceSchema{}
			if err := read(f, s); err != nil {
				return nil, nil, err
			}
			schemas = append(schemas, s)
		}
	}
	for _, pattern := range []string{"edge/apiexport-*.yaml", "mailbox/apiexport-*.yaml", "workloads/apiexport-*.yaml"} {
		files, err := fs.Glob(manifests, pattern)
		if err != nil {
			return nil, nil, err
		}
		for _, f := range files {
			e := &apisv1alpha2.APIExport{}
			if err := read(f, e); err != nil {
				return nil, nil, err
			}
			exports = append(exports, e)
		}
	}
	sort.Slice(schemas, func(i, j int) bool { return schemas[i].Name < schemas[j].Name })
	sort.Slice(exports, func(i, j int) bool { return exports[i].Name < exports[j].Name })
	return schemas, exports, nil
}

func read(file string, into any) error {
	raw, err := manifests.ReadFile(file)
	if err != nil {
		return err
	}
	if err := yaml.UnmarshalStrict(raw, into); err != nil {
		return fmt.Errorf("embedded manifest %s: %w", file, err)
	}
	return nil
}
