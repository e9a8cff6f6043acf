// Command testtimes reads `go test -json` on its standard input and writes what `go test` without
// -json would (each package's ok or FAIL line, and the whole output of every test that failed),
// then, once the run has ended, each package's time and the total, longest first, and the slowest
// tests. `make test-e2e` pipes the e2e run through it, so that a package that grew slower shows in
// the CI log:
//
//	go test -json ./test/... | go run ./hack/testtimes [-json-out run.json] [-slowest 15]
//
// It exits 1 when a package or test failed, or when the stream ended without a package's result
// (go test killed, or its build broken), so that the pipe fails as go test would.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

func main() {
	jsonOut := flag.String("json-out", "", "also write the stream, as read, to this file")
	slowest := flag.Int("slowest", 15, "how many of the slowest tests to list at the end")
	flag.Parse()

	in := io.Reader(os.Stdin)
	if *jsonOut != "" {
		f, err := os.Create(*jsonOut)
		if err != nil {
			fmt.Fprintf(os.Stderr, "testtimes: %v\n", err)
			os.Exit(2)
		}
		defer f.Close()
		in = io.TeeReader(os.Stdin, f)
	}
	start := time.Now()
	r := newReport(os.Stdout)
	if err := r.read(in); err != nil {
		fmt.Fprintf(os.Stderr, "testtimes: reading go test's output: %v\n", err)
		os.Exit(2)
	}
	r.summary(os.Stdout, time.Since(start), *slowest)
	if r.failed() {
		os.Exit(1)
	}
}

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Time    time.Time
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

type testKey struct{ pkg, test string }

// cpuMark starts the line in which the e2e framework prints, at a package's end, the CPU that
// its kcp used (framework.CenterCPUMark; not imported, to keep this command free of the
// framework's dependencies).
const cpuMark = "framework: the package's kcp used "

// report follows a run: output held per test until its result, and the results.
type report struct {
	out      io.Writer
	held     map[testKey]*strings.Builder
	packages map[string]*result
	tests    map[testKey]*result
	order    []string // packages in the order first seen
	// kcpCPU is what each package's test framework said of its kcp's CPU (see cpuMark).
	kcpCPU map[string]string
	broken []string // lines that were not JSON (build errors go test printed as text)
}

type result struct {
	action  string // pass, fail or skip; "" while running
	elapsed time.Duration
}

func newReport(out io.Writer) *report {
	return &report{out: out, held: map[testKey]*strings.Builder{}, packages: map[string]*result{}, tests: map[testKey]*result{}, kcpCPU: map[string]string{}}
}

func (r *report) read(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			// go test writes build failures as plain text.
			fmt.Fprintln(r.out, string(line))
			r.broken = append(r.broken, string(line))
			continue
		}
		r.handle(e)
	}
	return sc.Err()
}

func (r *report) handle(e event) {
	if e.Package == "" {
		return
	}
	if _, ok := r.packages[e.Package]; !ok {
		r.packages[e.Package] = &result{}
		r.order = append(r.order, e.Package)
	}
	// Output is held per top-level test, its subtests' with it, in the order printed.
	key := testKey{e.Package, topLevel(e.Test)}
	switch e.Action {
	case "output":
		b := r.held[key]
		if b == nil {
			b = &strings.Builder{}
			r.held[key] = b
		}
		b.WriteString(e.Output)
	case "pass", "fail", "skip":
		d := time.Duration(e.Elapsed * float64(time.Second))
		if e.Test == "" {
			r.packages[e.Package] = &result{action: e.Action, elapsed: d}
			r.finishPackage(e)
			return
		}
		r.tests[testKey{e.Package, e.Test}] = &result{action: e.Action, elapsed: d}
		if e.Test != key.test {
			return // a subtest: its output waits for its top-level test's result
		}
		if e.Action == "fail" {
			r.flush(key)
		}
		delete(r.held, key)
	}
}

// topLevel is the name of the top-level test that test (perhaps a subtest) belongs to.
func topLevel(test string) string {
	name, _, _ := strings.Cut(test, "/")
	return name
}

// finishPackage prints the package's own closing output (ok, FAIL, and anything printed outside
// a test, such as a TestMain's failure or a panic), as go test does.
func (r *report) finishPackage(e event) {
	key := testKey{e.Package, ""}
	b := r.held[key]
	delete(r.held, key)
	text := ""
	if b != nil {
		text = b.String()
	}
	for _, l := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(l, cpuMark); ok {
			r.kcpCPU[e.Package], _, _ = strings.Cut(rest, " of CPU")
		}
	}
	if e.Action == "fail" {
		fmt.Fprint(r.out, text)
	} else {
		// On success only the package's result line, as go test prints it.
		for _, l := range strings.SplitAfter(text, "\n") {
			if strings.HasPrefix(l, "ok ") || strings.HasPrefix(l, "?") {
				fmt.Fprint(r.out, l)
			}
		}
	}
	// Tests still held belonged to a package that ended without their result (a timeout's
	// panic, a crash): print what they said.
	for k := range r.held {
		if k.pkg == e.Package {
			r.flush(k)
		}
	}
}

func (r *report) flush(key testKey) {
	if b := r.held[key]; b != nil {
		fmt.Fprint(r.out, b.String())
		delete(r.held, key)
	}
}

func (r *report) failed() bool {
	if len(r.broken) > 0 && len(r.packages) == 0 {
		return true
	}
	for _, p := range r.packages {
		if p.action == "fail" || p.action == "" {
			return true
		}
	}
	for _, t := range r.tests {
		if t.action == "fail" {
			return true
		}
	}
	return false
}

// summary prints each package's time, longest first, the sum of them, the run's wall time, and
// the slowest top-level tests.
func (r *report) summary(w io.Writer, wall time.Duration, slowest int) {
	type row struct {
		name string
		res  result
	}
	var pkgs []row
	var sum time.Duration
	for _, name := range r.order {
		res := *r.packages[name]
		pkgs = append(pkgs, row{name, res})
		sum += res.elapsed
	}
	sort.SliceStable(pkgs, func(i, j int) bool { return pkgs[i].res.elapsed > pkgs[j].res.elapsed })
	fmt.Fprintf(w, "\n>> time per package, longest first:\n")
	for _, p := range pkgs {
		state := p.res.action
		if state == "" {
			state = "no result"
		}
		cpu := ""
		if c, ok := r.kcpCPU[p.name]; ok {
			cpu = "  (its kcp: " + c + " of CPU)"
		}
		fmt.Fprintf(w, "   %8s  %-4s  %s%s\n", seconds(p.res.elapsed), state, p.name, cpu)
	}
	fmt.Fprintf(w, "   %8s  the packages together; %s from the first line to the last\n", seconds(sum), seconds(wall))

	var tests []row
	for k, res := range r.tests {
		if !strings.Contains(k.test, "/") {
			tests = append(tests, row{k.pkg + " " + k.test, *res})
		}
	}
	sort.Slice(tests, func(i, j int) bool {
		if tests[i].res.elapsed != tests[j].res.elapsed {
			return tests[i].res.elapsed > tests[j].res.elapsed
		}
		return tests[i].name < tests[j].name
	})
	if len(tests) > slowest {
		tests = tests[:slowest]
	}
	if len(tests) > 0 {
		fmt.Fprintf(w, ">> the %d slowest tests:\n", len(tests))
		for _, t := range tests {
			fmt.Fprintf(w, "   %8s  %-4s  %s\n", seconds(t.res.elapsed), t.res.action, t.name)
		}
	}
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }
