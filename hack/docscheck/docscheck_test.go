package docscheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const root = "../.."

// TestRepositoryLinks checks every relative link of README.md and of every page under docs/.
func TestRepositoryLinks(t *testing.T) {
	pages := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, _ := filepath.Rel(root, path)
			pages = append(pages, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		problems, err := Links(root, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, pr := range problems {
			t.Error(pr)
		}
	}
}

// TestRepositoryFigures checks the performance figures of the user docs against the records.
func TestRepositoryFigures(t *testing.T) {
	record, err := os.ReadFile(filepath.Join(root, "docs", "dev", "performance.md"))
	if err != nil {
		t.Fatal(err)
	}
	runs, err := Runs(string(record))
	if err != nil {
		t.Fatal(err)
	}
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, filepath.Join(root, "README.md"))
	checked := 0
	for _, p := range pages {
		if filepath.Base(p) == "development.md" {
			continue // a development record, like docs/dev/
		}
		md, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, p)
		for _, pr := range Figures(rel, string(md), runs, string(record)) {
			t.Error(pr)
		}
		checked++
	}
	if checked < 10 {
		t.Fatalf("checked %d user pages; the docs are not where this test looks", checked)
	}
}

const record = `# Performance

## Runs

| run | benchmark | date | commit | section |
|---|---|---|---|---|
| L | ` + "`make bench`" + ` | 2026-11-27 | 36bb9e5 | x |
| G | ` + "`make bench`" + ` | 2026-11-27 | ca920d6 | x |
| E | ` + "`make bench`" + ` | 2026-11-25 | c2eb5c9 | x |
| R2 | ` + "`make bench-rollout`" + ` | 2026-11-25 | 0fcdf21 | x |
| S1 | ` + "`make bench-scheduler`" + ` | 2026-11-21 | not recorded | x |

## Run L

| status, isolated changes: p50 / p99 | 0.11 / **0.82 s** |
| center kcp memory per destination | **12.5 MB** |
| one label change to updated slices, p50 / p90 | 215 / 463 ms |
`

func TestFigures(t *testing.T) {
	runs, err := Runs(record)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, page string
		want       []string // a part of each problem, in order; none for a page that passes
	}{
		{name: "quoted from the latest run, with its commit", page: "Status p99 0.82 s (run L, commit 36bb9e5).\n"},
		{name: "a figure across lines, in bold", page: "Memory per destination\n**12.5 MB** (run L, 36bb9e5).\n"},
		{name: "a run whose commit is not recorded", page: "A change p90 463 ms (run S1).\n"},
		{name: "no performance context: a default", page: "The heartbeat comes every 30 s.\n"},
		{name: "figures in code are not quoted", page: "```\np99 9.99 s\n```\n"},
		{name: "an older run", page: "Status at p99 in 0.2 s (runs G and H).\n",
			want: []string{"run G is not the latest run of make bench: quote run L", "run H is not in the table", `"0.2 s" is not in docs/dev/performance.md`}},
		{name: "no run", page: "Memory per mailbox: 13.5 MB.\n", want: []string{`"13.5 MB" is a performance figure that names no run`}},
		{name: "the run without its commit", page: "Status p99 0.82 s (run L).\n", want: []string{"names run L but not its commit, 36bb9e5"}},
		{name: "a figure the records do not have", page: "| status p99 | 0.8 s | run L, 36bb9e5 |\n", want: []string{`"0.8 s" is not in docs/dev/performance.md as quoted`}},
		{name: "each table row on its own", page: "| status p99 | 0.82 s | run L, 36bb9e5 |\n| memory per destination | 12.5 MB | |\n",
			want: []string{"page.md:2: \"12.5 MB\" is a performance figure that names no run"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Figures("page.md", c.page, runs, record)
			if len(got) != len(c.want) {
				t.Fatalf("got %d problems, want %d: %q", len(got), len(c.want), got)
			}
			for i := range got {
				if !strings.Contains(got[i], c.want[i]) {
					t.Errorf("problem %d: got %q, want it to say %q", i, got[i], c.want[i])
				}
			}
		})
	}
}

func TestRunsOrder(t *testing.T) {
	appended := strings.Replace(record, "| R2 |", "| M |  `make bench` | 2026-11-28 | abcdef0 | x |\n| R2 |", 1)
	if _, err := Runs(appended); err == nil || !strings.Contains(err.Error(), "run M (2026-11-28) is newer than run L") {
		t.Errorf("a run appended below older ones: got %v", err)
	}
	if _, err := Runs("# nothing\n"); err == nil {
		t.Error("a record without a table of runs: no error")
	}
	twice := strings.Replace(record, "| G |", "| L |", 1)
	if _, err := Runs(twice); err == nil || !strings.Contains(err.Error(), "listed twice") {
		t.Errorf("a label twice: got %v", err)
	}
}

func TestLinks(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("docs/dev/performance.md", "# Performance\n\n## Runs\n\n### The whole fleet (`make bench`)\n\n## Notes\n\n## Notes\n")
	write("docs/a.md", "# A\n\n## kcp v0.28.1's crash\n\n"+
		"[ok](dev/performance.md#the-whole-fleet-make-bench) [ok](dev/performance.md#notes-1) [ok](#kcp-v0281s-crash)\n"+
		"[web](https://example.com/x.md) `[code](nowhere.md)`\n\n```\n[code](nowhere.md)\n```\n\n"+
		"[gone](performance.md) [no heading](dev/performance.md#runs-table) [no heading here](#crash)\n")
	got, err := Links(dir, "docs/a.md")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"docs/a.md:12: links performance.md, which does not exist",
		"docs/a.md:12: links dev/performance.md#runs-table, but docs/dev/performance.md has no heading whose anchor is #runs-table",
		"docs/a.md:12: links #crash, but docs/a.md has no heading whose anchor is #crash",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
