// Command gen-mailbox-export splits the APIExport mailbox.edge.kcp.io off the APIExport
// edge.kcp.io that kcp's apigen writes from all of the edge.kcp.io CRDs.
//
// A mailbox workspace needs only the SyncerConfig, Assemblage and AssemblagePart of the
// edge.kcp.io API, and every APIBinding costs kcp memory in proportion to the resources it
// binds, in every workspace that holds it. So these are served by their own small export, which
// the mailbox WorkspaceType binds, and
// which carries the permission claim on the syncer's heartbeat Lease; edge.kcp.io, which
// inventory and workload workspaces bind, serves the rest (its permission claims are added by
// kubectl edge init). Both use the schemas apigen wrote. Running it again on its own output changes nothing.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	apisv1alpha2 "github.com/kcp-dev/sdk/apis/apis/v1alpha2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

// mailboxResources are the edge.kcp.io resources that live in mailboxes.
var mailboxResources = map[string]bool{"syncerconfigs": true, "assemblages": true, "assemblageparts": true}

// The export's permission claims are not generated: kubectl edge init sets them (see
// espw.MailboxClaims), as it does those of edge.kcp.io.

func main() {
	edgeDir := flag.String("edge-dir", "", "directory holding apiexport-edge.kcp.io.yaml, rewritten in place")
	outputDir := flag.String("output-dir", "", "directory to write apiexport-mailbox.edge.kcp.io.yaml into")
	flag.Parse()
	if *edgeDir == "" || *outputDir == "" {
		fmt.Fprintln(os.Stderr, "usage: gen-mailbox-export --edge-dir DIR --output-dir DIR")
		os.Exit(2)
	}
	if err := run(*edgeDir, *outputDir); err != nil {
		fmt.Fprintf(os.Stderr, "gen-mailbox-export: %v\n", err)
		os.Exit(1)
	}
}

func run(edgeDir, outputDir string) error {
	edgeFile := filepath.Join(edgeDir, "apiexport-"+edgev1alpha1.EdgeAPIExportName+".yaml")
	mailboxFile := filepath.Join(outputDir, "apiexport-"+edgev1alpha1.MailboxAPIExportName+".yaml")
	edge := &apisv1alpha2.APIExport{}
	if err := readYAML(edgeFile, edge); err != nil {
		return err
	}
	mailbox := &apisv1alpha2.APIExport{
		TypeMeta:   edge.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Name: edgev1alpha1.MailboxAPIExportName},
	}
	// On a second run the mailbox resources are no longer in edge.kcp.io: take them from the
	// mailbox export written before.
	if previous := (&apisv1alpha2.APIExport{}); readYAML(mailboxFile, previous) == nil {
		mailbox.Spec.Resources = previous.Spec.Resources
	}
	var kept []apisv1alpha2.ResourceSchema
	for _, r := range edge.Spec.Resources {
		if !mailboxResources[r.Name] {
			kept = append(kept, r)
			continue
		}
		replaced := false
		for i := range mailbox.Spec.Resources {
			if mailbox.Spec.Resources[i].Name == r.Name {
				mailbox.Spec.Resources[i], replaced = r, true
			}
		}
		if !replaced {
			mailbox.Spec.Resources = append(mailbox.Spec.Resources, r)
		}
	}
	if len(mailbox.Spec.Resources) != len(mailboxResources) {
		return fmt.Errorf("%s lists %d of the %d mailbox resources; run apigen first", edgeFile, len(mailbox.Spec.Resources), len(mailboxResources))
	}
	edge.Spec.Resources = kept
	edge.Spec.PermissionClaims = nil
	if err := os.MkdirAll(outputDir, 0o755); err != nil {
		return err
	}
	if err := writeYAML(edgeFile, edge); err != nil {
		return err
	}
	return writeYAML(mailboxFile, mailbox)
}

func readYAML(file string, into any) error {
	raw, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	if err := yaml.UnmarshalStrict(raw, into); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	return nil
}

func writeYAML(file string, obj any) error {
	raw, err := yaml.Marshal(obj)
	if err != nil {
		return err
	}
	if old, err := os.ReadFile(file); err == nil && bytes.Equal(old, raw) {
		return nil
	}
	return os.WriteFile(file, raw, 0o644)
}
