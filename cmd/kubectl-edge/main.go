// Command kubectl-edge is the kubectl plugin of edge-mc: installed on the PATH, it runs as
// `kubectl edge ...`. See `kubectl edge --help`.
package main

import (
	"fmt"
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kcp-dev/edge-mc/pkg/cli"
)

func main() {
	cmd := cli.NewCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	if err := cmd.Execute(); err != nil {
		if msg := err.Error(); msg != "" {
			fmt.Fprintf(os.Stderr, "error: %s\n", msg)
		}
		os.Exit(cli.ExitCode(err))
	}
}
