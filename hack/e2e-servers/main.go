// Command e2e-servers starts the center kcp and the edge kcp that a run of e2e test packages
// shares, runs a command with EDGE_E2E_SHARED_KCP naming the file that describes them, and stops
// them when the command ends, with the command's exit code. `make test-e2e` runs go test under it:
//
//	go run ./hack/e2e-servers -- go test ./test/...
//
// A package whose TestMain asks for a kcp of its own (framework.OwnKCP, WithUsers...) starts one
// as before; see framework.SharedServersEnv. With EDGE_E2E_KEEP set the servers' directories and
// logs stay.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/kcp-dev/edge-mc/test/framework"
)

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: e2e-servers -- COMMAND [ARG...]")
		return 2
	}
	dir, err := os.MkdirTemp("", "edge-mc-e2e-servers-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e-servers: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)

	start := time.Now()
	servers, err := framework.StartSharedServers(dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e-servers: %v\n", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "e2e-servers: the shared center and edge kcp are ready in %s (logs %s, %s)\n",
		time.Since(start).Round(100*time.Millisecond), servers.Center.LogPath(), servers.Edge.LogPath())
	defer servers.Stop()

	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), framework.SharedServersEnv+"="+servers.File)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e-servers: %v\n", err)
		return 1
	}
	// An interrupt reaches the command (it is in the same process group); the servers stop once
	// it has ended.
	signal.Ignore(os.Interrupt, syscall.SIGTERM)
	err = cmd.Wait()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		if exit.ExitCode() < 0 {
			return 1
		}
		return exit.ExitCode()
	default:
		fmt.Fprintf(os.Stderr, "e2e-servers: %v\n", err)
		return 1
	}
}
