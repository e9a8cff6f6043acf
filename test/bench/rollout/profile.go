package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/kcp-dev/edge-mc/test/framework"
)

// pprofAddressEnv names the environment variable on which edge-controller-manager, built for
// -profile, serves Go's /debug/pprof.
const pprofAddressEnv = "EDGE_BENCH_PPROF_ADDRESS"

// pprofSource is added to edge-controller-manager's main package, for -profile only, with go
// build -overlay: the product's binary has no profiler, and the benchmark's changes nothing else.
const pprofSource = `package main

import (
	"net/http"
	_ "net/http/pprof"
	"os"
)

func init() {
	if address := os.Getenv("` + pprofAddressEnv + `"); address != "" {
		go func() { _ = http.ListenAndServe(address, nil) }()
	}
}
`

// buildManager builds edge-controller-manager of this tree into a new temporary directory, and
// returns it; with profile, with a profiler on the address that pprofAddressEnv names.
func buildManager(profile bool) (string, error) {
	if !profile {
		return framework.BuildPackages("./cmd/edge-controller-manager")
	}
	root, err := framework.RepoFile()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "edge-mc-bin-")
	if err != nil {
		return "", err
	}
	src, overlay := filepath.Join(dir, "pprof.go"), filepath.Join(dir, "overlay.json")
	raw, _ := json.Marshal(map[string]any{"Replace": map[string]string{
		filepath.Join(root, "cmd", "edge-controller-manager", "zz_bench_pprof.go"): src}})
	if err := os.WriteFile(src, []byte(pprofSource), 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(overlay, raw, 0o644); err != nil {
		return "", err
	}
	cmd := exec.Command("go", "build", "-overlay", overlay, "-o", dir+string(os.PathSeparator), "./cmd/edge-controller-manager")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("go build ./cmd/edge-controller-manager with a profiler: %v\n%s", err, out)
	}
	return dir, nil
}

// profile saves a CPU profile of seconds from each process's /debug/pprof at address into dir,
// as <name>.pprof, in the background; the returned wait waits for them.
func profile(ctx context.Context, dir string, seconds int, addresses map[string]string) (wait func()) {
	done := make(chan struct{}, len(addresses))
	for name, address := range addresses {
		go func() {
			defer func() { done <- struct{}{} }()
			path := filepath.Join(dir, name+".pprof")
			if err := saveProfile(ctx, "http://"+address+"/debug/pprof/profile?seconds="+strconv.Itoa(seconds), path, seconds); err != nil {
				say("profile of %s: %v", name, err)
				return
			}
			say("profile of %s: %s (go tool pprof -top %s)", name, path, path)
		}()
	}
	return func() {
		for range addresses {
			<-done
		}
	}
}

func saveProfile(ctx context.Context, url, path string, seconds int) error {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(seconds)*time.Second+time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
