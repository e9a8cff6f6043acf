package framework

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// FreePorts returns n distinct TCP ports that were free on 127.0.0.1 a moment ago and that
// stay reserved to this process until it exits, so that servers started at the same time, in
// this test binary or another one that go test runs beside it, get different ports.
//
// They are taken below the kernel's ephemeral range (ip_local_port_range), from which the
// kernel picks the local port of every outgoing connection and of every listener on port 0.
// A server that a test stops and starts again on the same ports (kcp's restart keeps its
// address and its embedded etcd's) would otherwise find one taken meanwhile: by some client's
// connection, as kcp once did ("bind: address already in use" for its etcd peer port after
// 60 s down); or by a server of another test package that found the port free while kcp was
// down, as TestRootListingClosedByRootRBAC once did in CI (its embedded etcd's client port,
// answered meanwhile by a server without TLS: a process of a package run beside it). The reservation across processes is a POSIX record
// lock on the port's byte of one shared file (portLockPath), which the kernel releases when
// the process ends, however it ends.
func FreePorts(n int) ([]int, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	low, high := lowPort, ephemeralLow()-1
	ports := make([]int, 0, n)
	for tries := 0; len(ports) < n; tries++ {
		if tries > 100*n+1000 {
			return nil, fmt.Errorf("finding %d free ports in %d-%d: only %d found", n, low, high, len(ports))
		}
		port := low + rand.IntN(high-low+1)
		if portsGiven[port] {
			continue
		}
		reserved, err := reservePort(port)
		if err != nil {
			return nil, err
		}
		if !reserved {
			continue // another test process holds it
		}
		portsGiven[port] = true // reserved from here on, whether it is free now or not
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue // taken
		}
		listeners = append(listeners, l)
		ports = append(ports, port)
	}
	return ports, nil
}

// lowPort is the lowest port FreePorts gives: above the well-known and most registered ports.
const lowPort = 20000

// ephemeralLow is the first port of the kernel's ephemeral range, 32768 where it cannot be read.
func ephemeralLow() int {
	raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	fields := strings.Fields(string(raw))
	if len(fields) < 1 {
		return 32768
	}
	v, err := strconv.Atoi(fields[0])
	if err != nil || v <= lowPort+1000 {
		return 32768
	}
	return v
}

// portLockPath is the file whose byte p a test process locks while it holds port p.
func portLockPath() string { return filepath.Join(os.TempDir(), "edge-mc-test-ports.lock") }

// reservePort takes a write lock on byte port of the shared lock file, without waiting: false
// when another process holds it. The file stays open for the life of the process: closing any
// descriptor of it would release all of this process's locks on it. Where the file cannot be
// opened (another user's, say), ports are reserved within this process only, as said once on
// standard error.
func reservePort(port int) (bool, error) {
	if portLock == nil && portLockErr == nil {
		f, err := os.OpenFile(portLockPath(), os.O_RDWR|os.O_CREATE, 0o666)
		if err != nil {
			portLockErr = err
			fmt.Fprintf(os.Stderr, "framework: ports are reserved within this process only: %v\n", err)
		} else {
			_ = f.Chmod(0o666) // other users' test processes share it too
			portLock = f
		}
	}
	if portLock == nil {
		return true, nil
	}
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: int64(port), Len: 1}
	err := syscall.FcntlFlock(portLock.Fd(), syscall.F_SETLK, &lk)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.EACCES):
		return false, nil
	default:
		return false, fmt.Errorf("locking port %d in %s: %w", port, portLockPath(), err)
	}
}

var (
	portsMu     sync.Mutex
	portsGiven  = map[int]bool{}
	portLock    *os.File // guarded by portsMu
	portLockErr error    // why portLock could not be opened; guarded by portsMu
)
