// Package docscheck keeps the Markdown docs true to themselves and to the benchmark records:
//
//   - every relative link of README.md and docs/ leads to a file that exists, and to a heading of
//     it when the link names one (Links);
//   - every performance figure quoted in the user docs (README.md and docs/*.md but
//     development.md) names its run and that run's commit, the run is the latest of its
//     benchmark in the records' table of runs (docs/dev/performance.md), and the figure appears
//     in the records as quoted (Figures).
//
// Its test runs both on this repository; `make test-unit` runs it.
package docscheck

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// Run is one row of the records' table of runs.
type Run struct {
	Label     string // L, R2, ...
	Benchmark string // the command that ran it, e.g. `make bench`
	Date      string // YYYY-MM-DD
	Commit    string // a short hash, or "not recorded"
}

// Runs reads the table under the heading "## Runs" of the benchmark records. Rows are newest
// first within each benchmark: a row dated after an earlier row of its benchmark is an error, so
// that a new run appended at the end is not taken for an old one.
func Runs(record string) ([]Run, error) {
	var runs []Run
	in := false
	seen := map[string]bool{}
	for _, line := range strings.Split(record, "\n") {
		if strings.HasPrefix(line, "## ") {
			in = strings.TrimSpace(line[3:]) == "Runs"
			continue
		}
		if !in || !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		if len(cells) < 4 {
			return nil, fmt.Errorf("runs table: row %q has %d cells, want run | benchmark | date | commit | ...", line, len(cells))
		}
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if cells[0] == "run" || strings.HasPrefix(cells[0], "---") {
			continue
		}
		r := Run{Label: cells[0], Benchmark: strings.Trim(cells[1], "`"), Date: cells[2], Commit: cells[3]}
		if !runLabel.MatchString(r.Label) {
			return nil, fmt.Errorf("runs table: %q is not a run label (a capital letter, then at most three capitals or digits)", r.Label)
		}
		if seen[r.Label] {
			return nil, fmt.Errorf("runs table: run %s is listed twice", r.Label)
		}
		seen[r.Label] = true
		if !date.MatchString(r.Date) {
			return nil, fmt.Errorf("runs table: run %s: date %q is not YYYY-MM-DD", r.Label, r.Date)
		}
		for _, prev := range runs {
			if prev.Benchmark == r.Benchmark && r.Date > prev.Date {
				return nil, fmt.Errorf("runs table: run %s (%s) is newer than run %s (%s) above it: rows are newest first within %s", r.Label, r.Date, prev.Label, prev.Date, r.Benchmark)
			}
		}
		runs = append(runs, r)
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("no table of runs under a heading '## Runs'")
	}
	return runs, nil
}

var (
	runLabel = regexp.MustCompile(`^[A-Z][A-Z0-9]{0,3}$`)
	date     = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

	// figure is a measured quantity: a number with a unit of time, memory, CPU or a ratio.
	figure = regexp.MustCompile(`\d[\d,]*(?:\.\d+)?(?: ?(?:ms|s|MB|GB|KB)\b|%(?: of a core)?|x\b)`)
	// perfContext marks a block that speaks of performance: a latency percentile, CPU, memory, or a
	// link to the records. (A default such as "every 30 s" is not a figure without it.)
	perfContext = regexp.MustCompile(`(?i)\bp(?:50|90|99)\b|of a core|per mailbox|\bRSS\b|memory per|dev/performance\.md`)
	// citation is "run L", "runs F1 and F2", "Runs L, I and K".
	citation = regexp.MustCompile(`\b[Rr]uns? ([A-Z][A-Z0-9]{0,3}(?:(?:, | and | or )[A-Z][A-Z0-9]{0,3})*)\b`)
	citeSep  = regexp.MustCompile(`, | and | or `)
)

// Block is a paragraph, a list item, a table row or a heading of a Markdown page, outside code.
type Block struct {
	Line int // where it starts, from 1
	Text string
}

// Blocks splits a Markdown page into blocks, leaving out fenced code.
func Blocks(md string) []Block {
	var out []Block
	var cur []string
	start := 0
	flush := func() {
		if len(cur) > 0 {
			out = append(out, Block{Line: start, Text: strings.Join(cur, "\n")})
			cur = nil
		}
	}
	fence := ""
	for i, line := range strings.Split(md, "\n") {
		t := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(t, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			flush()
			fence = t[:3]
			continue
		}
		newBlock := t == "" || strings.HasPrefix(t, "#") || strings.HasPrefix(t, "|") ||
			strings.HasPrefix(t, "- ") || strings.HasPrefix(t, "* ") || orderedItem.MatchString(t)
		if newBlock {
			flush()
		}
		if t == "" {
			continue
		}
		if len(cur) == 0 {
			start = i + 1
		}
		cur = append(cur, line)
		if strings.HasPrefix(t, "#") || strings.HasPrefix(t, "|") {
			flush()
		}
	}
	flush()
	return out
}

var orderedItem = regexp.MustCompile(`^\d+\. `)

// Figures returns what is wrong with the performance figures of one user page: each block that
// quotes a figure and speaks of performance must cite a run of the table and its commit, the
// run must be the first (the latest) of its benchmark, and each figure must appear in the
// records as written.
func Figures(page, md string, runs []Run, record string) []string {
	byLabel := map[string]Run{}
	latest := map[string]string{}
	for _, r := range runs {
		byLabel[r.Label] = r
		if _, ok := latest[r.Benchmark]; !ok {
			latest[r.Benchmark] = r.Label
		}
	}
	plainRecord := plain(record)
	var problems []string
	for _, b := range Blocks(md) {
		text := plain(b.Text)
		figs := figure.FindAllString(text, -1)
		if len(figs) == 0 || !perfContext.MatchString(text) {
			continue
		}
		where := fmt.Sprintf("%s:%d", page, b.Line)
		var cited []string
		for _, m := range citation.FindAllStringSubmatch(text, -1) {
			cited = append(cited, citeSep.Split(m[1], -1)...)
		}
		if len(cited) == 0 {
			problems = append(problems, fmt.Sprintf("%s: %q is a performance figure that names no run (write \"run <label>, commit <hash>\", from the table of runs in docs/dev/performance.md)", where, figs[0]))
			continue
		}
		for _, label := range cited {
			r, ok := byLabel[label]
			switch {
			case !ok:
				problems = append(problems, fmt.Sprintf("%s: run %s is not in the table of runs of docs/dev/performance.md", where, label))
			case latest[r.Benchmark] != label:
				problems = append(problems, fmt.Sprintf("%s: run %s is not the latest run of %s: quote run %s", where, label, r.Benchmark, latest[r.Benchmark]))
			case r.Commit != "not recorded" && !strings.Contains(text, r.Commit):
				problems = append(problems, fmt.Sprintf("%s: names run %s but not its commit, %s", where, label, r.Commit))
			}
		}
		for _, f := range figs {
			if !quoted(plainRecord, f) {
				problems = append(problems, fmt.Sprintf("%s: %q is not in docs/dev/performance.md as quoted", where, f))
			}
		}
	}
	return problems
}

// quoted says whether text has the figure f, not as part of a longer number.
func quoted(text, f string) bool {
	return regexp.MustCompile(`(^|[^\d.,])` + regexp.QuoteMeta(f) + `($|[^\w])`).MatchString(text)
}

// plain drops Markdown's emphasis and code marks and joins lines, so that a figure reads the
// same in a page and in the records.
func plain(s string) string {
	s = strings.NewReplacer("**", "", "`", "", "\n", " ").Replace(s)
	return strings.Join(strings.Fields(s), " ")
}

// Links returns the relative links of a Markdown page (path relative to root) that lead nowhere:
// to no file, or to a heading that the linked page (or this one, for "#anchor") does not have.
// Links in code are not links.
func Links(root, page string) ([]string, error) {
	md, err := os.ReadFile(filepath.Join(root, page))
	if err != nil {
		return nil, err
	}
	var problems []string
	for _, b := range Blocks(string(md)) {
		text := inlineCode.ReplaceAllString(b.Text, "")
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			file := page
			if path != "" {
				file = filepath.Join(filepath.Dir(page), path)
			}
			where := fmt.Sprintf("%s:%d", page, b.Line)
			if _, err := os.Stat(filepath.Join(root, file)); err != nil {
				problems = append(problems, fmt.Sprintf("%s: links %s, which does not exist", where, target))
				continue
			}
			if anchor == "" || !strings.HasSuffix(file, ".md") {
				continue
			}
			linked, err := os.ReadFile(filepath.Join(root, file))
			if err != nil {
				return nil, err
			}
			if !Anchors(string(linked))[anchor] {
				problems = append(problems, fmt.Sprintf("%s: links %s, but %s has no heading whose anchor is #%s", where, target, file, anchor))
			}
		}
	}
	return problems, nil
}

var (
	link       = regexp.MustCompile(`\]\(([^()\s]+)\)`)
	inlineCode = regexp.MustCompile("`[^`]*`")
)

// Anchors returns the anchors GitHub gives a page's headings: the heading's text in lower case,
// spaces as '-', every character but letters, digits, '-' and '_' dropped, and "-1", "-2", ...
// after a repeated one.
func Anchors(md string) map[string]bool {
	anchors := map[string]bool{}
	count := map[string]int{}
	for _, b := range Blocks(md) {
		if !strings.HasPrefix(b.Text, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(b.Text, "#"))
		title = linkText.ReplaceAllString(title, "$1")
		var s strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case r == ' ':
				s.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				s.WriteRune(r)
			}
		}
		a := s.String()
		if n := count[a]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			anchors[a] = true
		}
		count[a]++
	}
	return anchors
}

var linkText = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
