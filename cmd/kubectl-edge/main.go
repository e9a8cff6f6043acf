// Command kubectl-edge is the kubectl plugin of edge-mc: installed on the PATH, it runs as
// `kubectl edge ...`. See `kubectl edge --help`.
package main

import (
	"fmt"
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kcp-dev/edge-mc/pkg/cli"
	"github.com/kcp-dev/edge-mc/pkg/version"
)

func main() {
	cmd := cli.NewCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	// cobra prints the template for --version. The flag is declared here so that cobra does not
	// add -v for it: in kubectl, -v is the log verbosity.
	cmd.Version = version.Version
	cmd.SetVersionTemplate(version.String("kubectl-edge") + "\n")
	cmd.Flags().Bool("version", false, "print the version and exit")
	if err := cmd.Execute(); err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(1)
	}
}
