package framework

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// holdPortsEnv, set to "lo-hi", makes this test binary a process that reserves every port
// FreePorts could give except lo..hi-1, as another test binary run beside this one would, says
// "held" and keeps them until its standard input closes.
const holdPortsEnv = "EDGE_MC_TEST_HOLD_PORTS_EXCEPT"

func TestMain(m *testing.M) {
	if window := os.Getenv(holdPortsEnv); window != "" {
		if err := holdPortsExcept(window); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func holdPortsExcept(window string) error {
	var lo, hi int
	if _, err := fmt.Sscanf(window, "%d-%d", &lo, &hi); err != nil {
		return fmt.Errorf("%s=%q: %w", holdPortsEnv, window, err)
	}
	// Port by port, through FreePorts' own reservation: the ports this test's own process
	// already holds stay its own (reservePort says false for them).
	for port := lowPort; port < ephemeralLow(); port++ {
		if port == lo {
			port = hi
		}
		if _, err := reservePort(port); err != nil {
			return err
		}
	}
	fmt.Println("held")
	_, err := io.Copy(io.Discard, os.Stdin)
	return err
}

func TestFreePortsAreOutsideTheEphemeralRange(t *testing.T) {
	ports, err := FreePorts(20)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p < lowPort || p >= ephemeralLow() {
			t.Errorf("port %d is outside %d-%d", p, lowPort, ephemeralLow()-1)
		}
		if seen[p] {
			t.Errorf("port %d given twice", p)
		}
		seen[p] = true
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Errorf("port %d was given but cannot be listened on: %v", p, err)
			continue
		}
		l.Close()
	}
	more, err := FreePorts(5)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range more {
		if seen[p] {
			t.Errorf("port %d given again by a later call", p)
		}
	}
}

// TestFreePortsSkipsPortsOfOtherProcesses runs a second process that holds every port but a
// window, as another test package that go test runs beside this one would: FreePorts must give
// only ports of the window, and again once that process has ended, any port.
func TestFreePortsSkipsPortsOfOtherProcesses(t *testing.T) {
	const width = 200
	lo := lowPort + rand.IntN(ephemeralLow()-lowPort-width)
	hi := lo + width
	other := exec.Command(os.Args[0], "-test.run=^$")
	other.Env = append(os.Environ(), fmt.Sprintf("%s=%d-%d", holdPortsEnv, lo, hi))
	other.Stderr = os.Stderr
	stdin, err := other.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := other.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "held\n" {
		t.Fatalf("the other process did not hold its ports: %q %v", line, err)
	}
	ports, err := FreePorts(5)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ports {
		if p < lo || p >= hi {
			t.Errorf("port %d given while another process holds it (it leaves only %d-%d)", p, lo, hi-1)
		}
	}
	stdin.Close()
	if err := other.Wait(); err != nil {
		t.Fatalf("the other process: %v", err)
	}
	more, err := FreePorts(5)
	if err != nil {
		t.Fatal(err)
	}
	outside := false
	for _, p := range more {
		outside = outside || p < lo || p >= hi
	}
	if !outside {
		t.Errorf("5 ports given after the other process ended, all in %d-%d: its ports were not released", lo, hi-1)
	}
}
