package framework

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// RSS returns a process's resident set size and its peak (VmRSS and VmHWM), in bytes, from
// /proc/<pid>/status.
func RSS(pid int) (current, peak int64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(fields[1], 10, 64)
		switch fields[0] {
		case "VmRSS:":
			current = kb * 1024
		case "VmHWM:":
			peak = kb * 1024
		}
	}
	return current, peak, sc.Err()
}
