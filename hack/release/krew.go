package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"golang.org/x/mod/semver"
	"sigs.k8s.io/yaml"
)

// The krew plugin manifest, as krew's index.krew.googlecontainertools.github.com v1alpha2 API
// defines it (only what this manifest uses).
type krewPlugin struct {
	APIVersion string       `json:"apiVersion"`
	Kind       string       `json:"kind"`
	Metadata   krewMetadata `json:"metadata"`
	Spec       krewSpec     `json:"spec"`
}

type krewMetadata struct {
	Name string `json:"name"`
}

type krewSpec struct {
	Version          string         `json:"version"`
	Homepage         string         `json:"homepage"`
	ShortDescription string         `json:"shortDescription"`
	Description      string         `json:"description"`
	Platforms        []krewPlatform `json:"platforms"`
}

type krewPlatform struct {
	Selector krewSelector `json:"selector"`
	URI      string       `json:"uri"`
	Sha256   string       `json:"sha256"`
	Bin      string       `json:"bin"`
	Files    []krewFile   `json:"files"`
}

type krewSelector struct {
	MatchLabels map[string]string `json:"matchLabels"`
}

type krewFile struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// krewPluginName is the plugin's name in krew: `kubectl krew install edge` installs
// kubectl-edge, run as `kubectl edge`.
const krewPluginName = "edge"

// krewManifest returns the krew plugin manifest of kubectl-edge: one platform per archive
// (named by archives, found in dir), downloadable under url.
func krewManifest(version, url, dir string, archives map[Platform]string) ([]byte, error) {
	var platforms []Platform
	for p := range archives {
		platforms = append(platforms, p)
	}
	sort.Slice(platforms, func(i, j int) bool { return platforms[i].String() < platforms[j].String() })
	plugin := krewPlugin{
		APIVersion: "krew.googlecontainertools.github.com/v1alpha2",
		Kind:       "Plugin",
		Metadata:   krewMetadata{Name: krewPluginName},
		Spec: krewSpec{
			Version:          krewVersion(version),
			Homepage:         sourceURL,
			ShortDescription: "Place workloads on fleets of edge clusters from kcp",
			Description: `kubectl edge manages edge-mc, which places Kubernetes workloads on fleets of edge
clusters from one kcp control plane: it installs edge-mc's APIs into kcp (init), makes
inventory and workload workspaces and edge cluster descriptions (ensure), prints what installs
the syncer in an edge cluster (prep-for-syncer) and shows the fleet's status (status).
`,
		},
	}
	for _, p := range platforms {
		sum, err := fileSHA256(filepath.Join(dir, archives[p]))
		if err != nil {
			return nil, err
		}
		plugin.Spec.Platforms = append(plugin.Spec.Platforms, krewPlatform{
			Selector: krewSelector{MatchLabels: map[string]string{"os": p.OS, "arch": p.Arch}},
			URI:      url + "/" + archives[p],
			Sha256:   sum,
			Bin:      "kubectl-edge",
			Files:    []krewFile{{From: "kubectl-edge", To: "."}},
		})
	}
	data, err := yaml.Marshal(plugin)
	if err != nil {
		return nil, err
	}
	header := fmt.Sprintf("# The krew plugin manifest of kubectl edge %s. Without a krew index:\n"+
		"#   kubectl krew install --manifest=kubectl-edge.krew.yaml --archive=%s\n", version, archiveName("kubectl-edge", version, Platform{"linux", "amd64"}))
	return append([]byte(header), data...), nil
}

// sourceURL is edge-mc's home page.
const sourceURL = "https://github.com/kcp-dev/edge-mc"

var notSemverChar = regexp.MustCompile(`[^0-9A-Za-z-]+`)

// krewVersion is version as krew wants it, a semantic version with a leading v: itself if it is
// one (a release tag, or git describe's v0.1.0-3-gabc1234), else a pre-release of v0.0.0 named
// after it (v0.0.0-dev, v0.0.0-f236d28-dirty).
func krewVersion(version string) string {
	if semver.IsValid(version) && strings.Count(strings.SplitN(version, "-", 2)[0], ".") == 2 {
		return version
	}
	pre := strings.Trim(notSemverChar.ReplaceAllString(version, "-"), "-")
	if pre == "" {
		pre = "dev"
	}
	v := "v0.0.0-" + pre
	if !semver.IsValid(v) { // a numeric identifier with a leading zero, such as a hash 0123abc... of digits only
		v = "v0.0.0-g" + pre
	}
	return v
}
