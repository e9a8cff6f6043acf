package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// TestDocsNameRealVerbsAndFlags reads every `kubectl edge ...` command line of the docs (fenced
// code and inline code) and checks that its verbs, and the flags given after them, exist in the
// command tree: a renamed flag or verb fails here before a reader finds it.
func TestDocsNameRealVerbsAndFlags(t *testing.T) {
	root := NewCommand(genericiooptions.NewTestIOStreamsDiscard())
	pages, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob(filepath.Join("..", "..", "docs", "*", "*.md"))
	pages = append(append(pages, more...), filepath.Join("..", "..", "README.md"))
	inline := regexp.MustCompile("`([^`]*kubectl edge[^`]*)`")
	checked := 0
	for _, page := range pages {
		raw, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		fenced := false
		for n, line := range strings.Split(string(raw), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				fenced = !fenced
				continue
			}
			var snippets []string
			if fenced {
				snippets = []string{line}
			} else {
				for _, m := range inline.FindAllStringSubmatch(line, -1) {
					snippets = append(snippets, m[1])
				}
			}
			for _, snippet := range snippets {
				for _, problem := range checkCommandLine(root, snippet) {
					t.Errorf("%s:%d: %s\n\t%s", filepath.Base(page), n+1, problem, strings.TrimSpace(line))
				}
				checked++
			}
		}
	}
	if checked < 50 {
		t.Errorf("only %d command lines found in the docs: is the pattern still right?", checked)
	}
}

// checkCommandLine finds each `kubectl edge` invocation in a line of shell and returns what it
// names that the command tree lacks.
func checkCommandLine(root *cobra.Command, line string) []string {
	var problems []string
	// A pipeline, a list or a substitution holds several commands; # starts a comment.
	if i := strings.Index(line, " #"); i >= 0 {
		line = line[:i]
	}
	for _, part := range regexp.MustCompile(`\||;|&&|\$\(|\)`).Split(line, -1) {
		i := strings.Index(part, "kubectl edge ")
		if i < 0 {
			continue
		}
		words := strings.Fields(part[i+len("kubectl edge "):])
		for j, w := range words {
			words[j] = strings.TrimRight(w, "\"'.,:")
		}
		cmd := root
		for len(words) > 0 && !strings.HasPrefix(words[0], "-") {
			next := findSub(cmd, words[0])
			if next == nil {
				break
			}
			cmd, words = next, words[1:]
		}
		if cmd == root {
			if len(words) > 0 && !strings.HasPrefix(words[0], "-") && !strings.HasPrefix(words[0], "<") && words[0] != "" {
				problems = append(problems, "kubectl edge has no verb "+words[0])
			}
		}
		for _, w := range words {
			name, ok := flagName(w)
			if !ok {
				continue
			}
			if lookupFlag(cmd, name) == nil {
				problems = append(problems, cmd.CommandPath()+" has no flag "+w)
			}
		}
	}
	return problems
}

func findSub(cmd *cobra.Command, name string) *cobra.Command {
	for _, c := range cmd.Commands() {
		if c.Name() == name || c.HasAlias(name) {
			return c
		}
	}
	return nil
}

// flagName is the name of a flag word (--imw, --imw=root:imw, -o), without dashes or value.
func flagName(w string) (string, bool) {
	if !strings.HasPrefix(w, "-") || w == "-" || w == "--" || strings.HasPrefix(w, "-<") {
		return "", false
	}
	name := strings.TrimLeft(w, "-")
	if i := strings.IndexAny(name, "=\"'`,.)"); i >= 0 {
		name = name[:i]
	}
	return name, regexp.MustCompile(`^[a-z][a-z0-9-]*$`).MatchString(name)
}

func lookupFlag(cmd *cobra.Command, name string) *pflag.Flag {
	if f := cmd.Flags().Lookup(name); f != nil {
		return f
	}
	if len(name) == 1 {
		if f := cmd.Flags().ShorthandLookup(name); f != nil {
			return f
		}
		if f := cmd.InheritedFlags().ShorthandLookup(name); f != nil {
			return f
		}
	}
	return cmd.InheritedFlags().Lookup(name)
}
