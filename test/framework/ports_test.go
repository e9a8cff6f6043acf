package framework

import (
	"net"
	"strconv"
	"testing"
)

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
