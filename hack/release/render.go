package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// deployImage is the image that config/deploy names, whose repository and tag the release sets.
const deployImage = "ghcr.io/kcp-dev/edge-mc/edge-controller-manager"

// renderDeploy renders the kustomize base in deployDir with the image <imageRepo>/
// edge-controller-manager:<version>, as an overlay of it would, with kustomize's library.
func renderDeploy(deployDir, imageRepo, version string) ([]byte, error) {
	// The base and an overlay in a file system in memory: kustomize takes no absolute path of a
	// base, and nothing need be written next to the base.
	fSys := filesys.MakeFsInMemory()
	err := filepath.WalkDir(deployDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(deployDir, path)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return fSys.WriteFile(filepath.Join("/base", rel), data)
	})
	if err != nil {
		return nil, fmt.Errorf("reading the kustomize base %s: %w", deployDir, err)
	}
	// Quoted: a version that is all digits (a commit hash such as 6556114) is a number to YAML,
	// which kustomize refuses as a tag.
	kustomization := fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- ../base
images:
- name: %q
  newName: %q
  newTag: %q
`, deployImage, imageRepo+"/edge-controller-manager", version)
	if err := fSys.WriteFile("/overlay/kustomization.yaml", []byte(kustomization)); err != nil {
		return nil, err
	}
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fSys, "/overlay")
	if err != nil {
		return nil, fmt.Errorf("rendering %s: %w", deployDir, err)
	}
	yaml, err := resources.AsYaml()
	if err != nil {
		return nil, fmt.Errorf("rendering %s: %w", deployDir, err)
	}
	header := fmt.Sprintf(`# edge-controller-manager %s as a Deployment in a Kubernetes cluster next to kcp: %s
# rendered. It needs the Secret edge-controller-manager-kcp in namespace edge-mc, with a kcp
# kubeconfig under the key "kubeconfig" (docs/install.md):
#   kubectl apply -f edge-controller-manager.yaml
#   kubectl -n edge-mc create secret generic edge-controller-manager-kcp --from-file=kubeconfig=<kcp kubeconfig>
`, version, "config/deploy")
	return append([]byte(header), yaml...), nil
}
