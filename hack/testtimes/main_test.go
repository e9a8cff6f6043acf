package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// A stream as go test -json writes it for two packages run side by side: one passing, one with a
// failing parallel subtest whose lines interleave with a passing test's.
const stream = `{"Action":"start","Package":"ex/a"}
{"Action":"run","Package":"ex/a","Test":"TestQuick"}
{"Action":"output","Package":"ex/a","Test":"TestQuick","Output":"=== RUN   TestQuick\n"}
{"Action":"start","Package":"ex/b"}
{"Action":"run","Package":"ex/b","Test":"TestBroken"}
{"Action":"output","Package":"ex/b","Test":"TestBroken","Output":"=== RUN   TestBroken\n"}
{"Action":"output","Package":"ex/b","Test":"TestBroken/sub","Output":"    broken_test.go:9: the mailbox never got its assemblage\n"}
{"Action":"output","Package":"ex/a","Test":"TestQuick","Output":"    quick_test.go:3: chatter of a passing test\n"}
{"Action":"output","Package":"ex/a","Test":"TestQuick","Output":"--- PASS: TestQuick (2.00s)\n"}
{"Action":"pass","Package":"ex/a","Test":"TestQuick","Elapsed":2}
{"Action":"output","Package":"ex/a","Output":"framework: the package's kcp used 12.5 s of CPU (6.0 s of it starting)\n"}
{"Action":"output","Package":"ex/a","Output":"PASS\n"}
{"Action":"output","Package":"ex/a","Output":"ok  \tex/a\t2.5s\n"}
{"Action":"pass","Package":"ex/a","Elapsed":2.5}
{"Action":"fail","Package":"ex/b","Test":"TestBroken/sub","Elapsed":40}
{"Action":"output","Package":"ex/b","Test":"TestBroken","Output":"--- FAIL: TestBroken (41.00s)\n"}
{"Action":"fail","Package":"ex/b","Test":"TestBroken","Elapsed":41}
{"Action":"output","Package":"ex/b","Output":"FAIL\n"}
{"Action":"output","Package":"ex/b","Output":"FAIL\tex/b\t41.2s\n"}
{"Action":"fail","Package":"ex/b","Elapsed":41.2}
`

func TestReportPrintsFailuresAndTimes(t *testing.T) {
	var out bytes.Buffer
	r := newReport(&out)
	if err := r.read(strings.NewReader(stream)); err != nil {
		t.Fatal(err)
	}
	if !r.failed() {
		t.Error("a run with a failed package reads as passed")
	}
	r.summary(&out, 42*time.Second, 10)
	got := out.String()
	for _, want := range []string{
		"ok  \tex/a\t2.5s\n",
		"the mailbox never got its assemblage",
		"--- FAIL: TestBroken (41.00s)",
		"FAIL\tex/b\t41.2s",
		"      41.2s  fail  ex/b\n       2.5s  pass  ex/a  (its kcp: 12.5 s of CPU)\n",
		"43.7s  the packages together; 42.0s from the first line to the last",
		"41.0s  fail  ex/b TestBroken\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the report lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "chatter of a passing test") {
		t.Errorf("a passing test's output was printed:\n%s", got)
	}
	if strings.Contains(got, "ex/b TestBroken/sub") {
		t.Errorf("a subtest is listed among the slowest tests:\n%s", got)
	}
}

func TestReportFailsWithoutAPackageResult(t *testing.T) {
	// go test killed before the package ended: a test started, no result.
	in := `{"Action":"run","Package":"ex/a","Test":"TestHangs"}
{"Action":"output","Package":"ex/a","Test":"TestHangs","Output":"=== RUN   TestHangs\n"}
`
	var out bytes.Buffer
	r := newReport(&out)
	if err := r.read(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	if !r.failed() {
		t.Error("a package that never ended reads as passed")
	}
	r.summary(&out, time.Second, 10)
	if !strings.Contains(out.String(), "no result  ex/a") {
		t.Errorf("the package without a result is not named so:\n%s", out.String())
	}
}

func TestReportPassesBuildFailureText(t *testing.T) {
	in := "# ex/c\nc_test.go:3:1: syntax error\n" + `{"Action":"output","Package":"ex/c","Output":"FAIL\tex/c [build failed]\n"}
{"Action":"fail","Package":"ex/c","Elapsed":0}
`
	var out bytes.Buffer
	r := newReport(&out)
	if err := r.read(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	if !r.failed() {
		t.Error("a build failure reads as passed")
	}
	if !strings.Contains(out.String(), "c_test.go:3:1: syntax error") || !strings.Contains(out.String(), "[build failed]") {
		t.Errorf("the build failure is not shown:\n%s", out.String())
	}
}
