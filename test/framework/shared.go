package framework

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// SharedServersEnv names the environment variable that gives the test packages a file
// describing a center kcp and an edge kcp that a whole run shares (see StartSharedServers):
// `make test-e2e` starts them once with hack/e2e-servers, so that the packages that may share
// them do not each start, warm up and keep idle kcp servers of their own (about 20 s of kcp's
// CPU to start one, on two cores). Each test works in workspaces of its own either way.
//
// A package shares the center unless its TestMain asks for a kcp of its own: OwnKCP (tests
// that kill or restart kcp, or count every request it serves), WithUsers, WithArgs or
// WithBinary. Every package shares the edge kcp.
const SharedServersEnv = "EDGE_E2E_SHARED_KCP"

// sharedServer is what a test package needs to reach a server another process started.
type sharedServer struct {
	Kubeconfig string            `json:"kubeconfig"`
	Log        string            `json:"log"`
	Profiler   string            `json:"profiler"`
	Tokens     map[string]string `json:"tokens"`
}

// sharedServers is the file that SharedServersEnv names.
type sharedServers struct {
	Center sharedServer `json:"center"`
	Edge   sharedServer `json:"edge"`
}

// OwnKCP makes RunWithKCP start a kcp for the package even where the run shares one (see
// SharedServersEnv): for tests that kill or restart kcp, change what root allows, or count the
// requests kcp serves.
func OwnKCP() KCPOption {
	return func(o *kcpOptions) { o.own = true }
}

// SharedServers are a center kcp and an edge kcp started for a whole run of test packages.
type SharedServers struct {
	Center, Edge *Server
	// File is the file to give the packages in SharedServersEnv.
	File string
}

// StartSharedServers starts the center kcp and the edge kcp that test packages share, as
// RunWithKCP and EdgeKCP would start them, and writes the file that describes them into dir.
func StartSharedServers(dir string) (*SharedServers, error) {
	center, err := startServer(withTestGC())
	if err != nil {
		if center != nil {
			center.printLogTail(40)
			center.stop()
		}
		return nil, fmt.Errorf("the shared center kcp: %w", err)
	}
	edge, err := startServer(withTestGC())
	if err != nil {
		if edge != nil {
			edge.printLogTail(40)
			edge.stop()
		}
		center.stop()
		return nil, fmt.Errorf("the shared edge kcp: %w", err)
	}
	describe := func(s *Server) sharedServer {
		return sharedServer{Kubeconfig: s.KubeconfigPath, Log: s.logPath, Profiler: s.ProfilerAddress, Tokens: s.tokens}
	}
	raw, err := json.MarshalIndent(sharedServers{Center: describe(center), Edge: describe(edge)}, "", "  ")
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "shared-kcp.json"), raw, 0o600)
	}
	if err != nil {
		center.stop()
		edge.stop()
		return nil, err
	}
	return &SharedServers{Center: center, Edge: edge, File: filepath.Join(dir, "shared-kcp.json")}, nil
}

// Stop stops both servers.
func (s *SharedServers) Stop() {
	s.Center.stop()
	s.Edge.stop()
}

// readSharedServers reads the file that SharedServersEnv names; nil if it is unset.
func readSharedServers() (*sharedServers, error) {
	path := os.Getenv(SharedServersEnv)
	if path == "" {
		return nil, nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s=%s: %w", SharedServersEnv, path, err)
	}
	var s sharedServers
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("%s=%s: %w", SharedServersEnv, path, err)
	}
	return &s, nil
}

// attachShared reaches a server that another process started and shares with this one.
func attachShared(d sharedServer) (*Server, error) {
	s := &Server{KubeconfigPath: d.Kubeconfig, logPath: d.Log, ProfilerAddress: d.Profiler, tokens: d.Tokens, shared: true}
	if err := s.connect(); err != nil {
		return nil, err
	}
	return s, nil
}

// mayShare says whether a package started with these options may use the shared center.
func (o kcpOptions) mayShare() bool {
	return !o.own && len(o.users) == 0 && len(o.args) == 0 && o.binary == "" && o.dir == ""
}
