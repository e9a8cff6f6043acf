package framework

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCommandKillAndRestart runs a real process, kills it with SIGKILL, and starts it again:
// a new process with the same arguments, its output appended to the same log.
func TestCommandKillAndRestart(t *testing.T) {
	log := filepath.Join(t.TempDir(), "sh.log")
	c, err := StartCommand("/bin/sh", log, "-c", "echo started; exec sleep 600")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	first := c.PID()
	started := func(n int) {
		t.Helper()
		Eventually(t, 10*time.Second, func() (bool, string) {
			raw, _ := os.ReadFile(log)
			return strings.Count(string(raw), "started\n") == n, string(raw)
		})
	}
	started(1)
	if c.Exited() {
		t.Fatal("exited at once")
	}
	c.Kill()
	if !c.Exited() {
		t.Fatal("still running after Kill")
	}
	if err := c.Restart(); err != nil {
		t.Fatal(err)
	}
	if c.PID() == first || c.Exited() {
		t.Fatalf("after Restart: pid %d (was %d), exited %v", c.PID(), first, c.Exited())
	}
	started(2)
	c.Stop()
	if !c.Exited() {
		t.Fatal("still running after Stop")
	}
}

func TestRaceReport(t *testing.T) {
	log := "I1123 started\n==================\nWARNING: DATA RACE\nWrite at 0x00c by goroutine 7:\n  main.f()\n==================\nI1123 more\n"
	got := raceReport([]byte(log))
	if !strings.HasPrefix(got, "WARNING: DATA RACE\nWrite at") || strings.Contains(got, "more") {
		t.Errorf("raceReport = %q", got)
	}
	if raceReport([]byte("I1123 nothing to see\n")) != "" {
		t.Error("a report from a log without a race")
	}
}
