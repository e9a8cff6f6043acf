// Command e2e-servers starts the edge kcp that a run of e2e test packages shares for their
// logical-cluster edge clusters, runs a command with EDGE_E2E_SHARED_EDGE_KCP naming the file
// that describes it, and stops it when the command ends, with the command's exit code. `make
// test-e2e` runs go test under it:
//
//	go run ./hack/e2e-servers -- go test ./test/...
//
// See framework.SharedEdgeKCPEnv. With EDGE_E2E_KEEP set the server's directory and log stay.
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
	edge, file, err := framework.StartSharedEdgeKCP(dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e-servers: %v\n", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "e2e-servers: the shared edge kcp is ready in %s (log %s)\n", time.Since(start).Round(100*time.Millisecond), edge.LogPath())
	defer edge.Stop()

	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), framework.SharedEdgeKCPEnv+"="+file)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e-servers: %v\n", err)
		return 1
	}
	// An interrupt reaches the command (it is in the same process group); the server stops once
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
