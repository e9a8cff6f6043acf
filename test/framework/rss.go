package framework

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// RSS returns a process's resident set size and its peak (VmRSS and VmHWM), in bytes, from
// /proc/<pid>/status.
func RSS(pid int) (current, peak int64, err error) {
	v, err := procSizes(fmt.Sprintf("/proc/%d/status", pid), "VmRSS", "VmHWM")
	return v["VmRSS"], v["VmHWM"], err
}

// procSizes reads the "<key>: <n> kB" lines of the given keys from a /proc file, in bytes.
func procSizes(path string, keys ...string) (map[string]int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sizes := map[string]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		key := strings.TrimSuffix(fields[0], ":")
		if slices.Contains(keys, key) {
			kb, _ := strconv.ParseInt(fields[1], 10, 64)
			sizes[key] = kb * 1024
		}
	}
	return sizes, sc.Err()
}

// CPUSeconds is the user+system CPU time the process has used, from /proc/<pid>/stat (0 if it
// cannot be read).
func CPUSeconds(pid int) float64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command name, which is in parentheses and may hold spaces.
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	fields := strings.Fields(s[i+1:])
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return (utime + stime) / 100 // USER_HZ
}
