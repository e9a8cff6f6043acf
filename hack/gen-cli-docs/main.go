// Command gen-cli-docs writes the reference of kubectl edge, every verb with its usage, help,
// examples and flags, from the command tree itself, into a Markdown page: `make codegen` runs it
// and `make verify-codegen` fails when the page is out of date.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kcp-dev/edge-mc/pkg/cli"
)

func main() {
	output := flag.String("output", "docs/cli-reference.md", "the page to write")
	flag.Parse()
	root := cli.NewCommand(genericiooptions.NewTestIOStreamsDiscard())
	var b bytes.Buffer
	fmt.Fprint(&b, `# kubectl edge: reference

Generated from the command tree by `+"`make codegen`"+` (hack/gen-cli-docs); do not edit. Every verb
also prints this with `+"`--help`"+`.

`)
	var commands []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c != root && (c.Hidden || c.Name() == "help") {
			return
		}
		commands = append(commands, c)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	for _, c := range commands[1:] {
		fmt.Fprintf(&b, "- [%s](#%s): %s\n", c.CommandPath(), anchor(c.CommandPath()), c.Short)
	}
	for _, c := range commands[1:] {
		fmt.Fprintf(&b, "\n## %s\n\n%s.\n\n", c.CommandPath(), strings.TrimSuffix(c.Short, "."))
		fmt.Fprintf(&b, "```\n%s\n```\n", c.UseLine())
		if c.Long != "" {
			fmt.Fprintf(&b, "\n```text\n%s\n```\n", strings.TrimSpace(c.Long))
		}
		if c.Example != "" {
			fmt.Fprintf(&b, "\nExamples:\n\n```sh\n%s\n```\n", strings.TrimRight(c.Example, "\n"))
		}
		if flags := c.NonInheritedFlags().FlagUsages(); flags != "" {
			fmt.Fprintf(&b, "\nFlags:\n\n```text\n%s```\n", flags)
		}
	}
	fmt.Fprintf(&b, "\n## Flags of every verb\n\n```text\n%s```\n", root.PersistentFlags().FlagUsages())
	if err := os.WriteFile(*output, b.Bytes(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// anchor is the anchor GitHub gives a heading.
func anchor(title string) string {
	return strings.ReplaceAll(strings.ToLower(title), " ", "-")
}
