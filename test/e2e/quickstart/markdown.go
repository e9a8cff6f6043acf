// Package quickstart tests docs/quickstart.md by doing what it says: its test runs the page's
// `sh` blocks in order, in one bash per phase, from the repository's root as a reader would, and
// checks what a reader would check: the workload at the two selected edge clusters, customised
// for each, and nothing at the third; then that stopping everything leaves no process.
//
// The page's first `sh` block sets its variables (its directory, ports and PATH); the test runs
// the page with its own values for exactly those variables, so that it meets neither other tests
// nor a kcp of the machine's user. Everything else runs as written.
package quickstart

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// Block is a fenced code block of a Markdown document.
type Block struct {
	// Lang is the first word of the fence's info string ("sh", "console", "yaml", ...).
	Lang string
	// Heading is the text of the last heading before the block.
	Heading string
	// Line is the line number of the opening fence, counting from 1.
	Line int
	// Text is the block's content, each line ending with a newline.
	Text string
}

// Blocks returns the fenced code blocks (``` fences) of a Markdown document, in order.
func Blocks(r io.Reader) ([]Block, error) {
	var blocks []Block
	var cur *Block
	var text strings.Builder
	heading := ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1024*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			info := strings.Fields(strings.TrimPrefix(line, "```"))
			cur = &Block{Heading: heading, Line: n}
			if len(info) > 0 {
				cur.Lang = info[0]
			}
			text.Reset()
		case cur != nil && strings.TrimSpace(line) == "```":
			cur.Text = text.String()
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			text.WriteString(line)
			text.WriteByte('\n')
		case strings.HasPrefix(line, "#"):
			heading = strings.TrimSpace(strings.TrimLeft(line, "#"))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cur != nil {
		return nil, fmt.Errorf("the code block opened on line %d is not closed", cur.Line)
	}
	return blocks, nil
}

// ExportedNames returns the names of the variables that a block of `export NAME=value ...` lines
// sets, in order. Every line must be such a line, a comment or blank: the block is then a
// settings block that a test can run with values of its own.
func ExportedNames(b Block) ([]string, error) {
	var names []string
	for i, line := range strings.Split(strings.TrimRight(b.Text, "\n"), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if c := strings.Index(line, " #"); c >= 0 {
			line = strings.TrimSpace(line[:c])
		}
		rest, ok := strings.CutPrefix(line, "export ")
		if !ok {
			return nil, fmt.Errorf("line %d of the block on line %d is not an export: %q", i+1, b.Line, line)
		}
		for _, assignment := range strings.Fields(rest) {
			name, _, ok := strings.Cut(assignment, "=")
			if !ok || name == "" {
				return nil, fmt.Errorf("line %d of the block on line %d: %q is not NAME=value", i+1, b.Line, assignment)
			}
			names = append(names, name)
		}
	}
	return names, nil
}
