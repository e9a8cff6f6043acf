package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// positional checks a verb's positional arguments and, given the wrong number, says which are
// missing or which one is too many, with the verb's usage: cobra's own checks say only how many
// it wanted. required names the arguments the verb needs, in order; optional is how many more it
// takes at most (-1: any number).
func positional(required []string, optional int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		usage := "usage: " + strings.TrimSuffix(cmd.UseLine(), " [flags]")
		if cmd.Example != "" {
			usage += "; for example:\n" + cmd.Example
		}
		if len(args) < len(required) {
			return fmt.Errorf("%s: missing %s (%s)", cmd.CommandPath(), strings.Join(required[len(args):], " "), usage)
		}
		if optional >= 0 && len(args) > len(required)+optional {
			takes := "no arguments"
			if n := len(required) + optional; n > 0 {
				takes = fmt.Sprintf("at most %d argument", n)
				if n > 1 {
					takes += "s"
				}
			}
			extra := args[len(required)+optional]
			hint := ""
			if strings.Contains(extra, ":") {
				hint = "; a workspace path goes in a flag such as --imw or --espw"
			}
			return fmt.Errorf("%s: unexpected argument %q: it takes %s%s (%s)", cmd.CommandPath(), extra, takes, hint, usage)
		}
		return nil
	}
}

// refuseUnknownVerbs makes each command under root that only groups others (ensure, remove,
// rollout) fail on a verb it does not have. Left to cobra, it would print its help and exit 0,
// so that a typo such as "kubectl edge ensure locaton ..." would look like success in a script.
// Without arguments it still prints its help.
func refuseUnknownVerbs(root *cobra.Command) {
	for _, c := range root.Commands() {
		if c.HasSubCommands() && c.Run == nil && c.RunE == nil {
			c.SuggestionsMinimumDistance = 2
			c.Args = func(cmd *cobra.Command, args []string) error {
				if len(args) == 0 {
					return nil
				}
				var verbs []string
				for _, sub := range cmd.Commands() {
					if sub.IsAvailableCommand() {
						verbs = append(verbs, sub.Name())
					}
				}
				msg := fmt.Sprintf("%s: unknown command %q; its commands are %s", cmd.CommandPath(), args[0], strings.Join(verbs, ", "))
				if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
					msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(s, " or "))
				}
				return errors.New(msg)
			}
			c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
			// The flags given for the verb intended ("--imw ...") are not this command's: the
			// unknown verb is what to report, not the first of them.
			c.FParseErrWhitelist.UnknownFlags = true
		}
		refuseUnknownVerbs(c)
	}
}
