package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// TestHelp reads every verb's help as a user would: each runnable verb has examples, and the
// docs it points at are links a browser opens (not paths of the repository) to pages and
// sections that exist.
func TestHelp(t *testing.T) {
	root := NewCommand(genericiooptions.NewTestIOStreamsDiscard())
	repoPath := regexp.MustCompile(`(^|[^/])docs/[a-z-]+\.md`)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if c.Hidden || !c.Runnable() || c.HasSubCommands() || c.Name() == "help" || c.Name() == "completion" {
			return
		}
		if strings.TrimSpace(c.Example) == "" {
			t.Errorf("%s has no examples in its help", c.CommandPath())
		}
		for _, text := range []string{c.Long, c.Example, c.Short} {
			if m := repoPath.FindString(text); m != "" {
				t.Errorf("%s's help points at %q, a path of the repository: link %s... instead", c.CommandPath(), strings.TrimSpace(m), docsURL)
			}
		}
	}
	walk(root)

	// Every page and section linked from the CLI's source (help and error hints) exists.
	link := regexp.MustCompile(`(?:%s)?([a-z][a-z-]*\.md)(#[a-z0-9-]+)?`)
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(src), -1) {
			page, err := os.ReadFile(filepath.Join("..", "..", "docs", m[1]))
			if err != nil {
				t.Errorf("%s links %s, which is not a page of docs/: %v", f, m[0], err)
				continue
			}
			if m[2] != "" && !hasAnchor(string(page), strings.TrimPrefix(m[2], "#")) {
				t.Errorf("%s links %s, but %s has no heading whose anchor is %s", f, m[0], m[1], m[2])
			}
		}
	}
}

// hasAnchor says whether a Markdown page has a heading whose GitHub anchor is anchor: lower case,
// spaces as '-', and every character but letters, digits, '-' and '_' dropped.
func hasAnchor(page, anchor string) bool {
	for _, line := range strings.Split(page, "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		var b strings.Builder
		for _, r := range title {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9'):
				b.WriteRune(r)
			}
		}
		if b.String() == anchor {
			return true
		}
	}
	return false
}
