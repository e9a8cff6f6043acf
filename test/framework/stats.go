package framework

import (
	"math"
	"os"
	"strconv"
	"strings"
)

// Percentile is the nearest-rank percentile p (0 < p <= 1) of sorted, which must not be empty.
func Percentile(sorted []float64, p float64) float64 {
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// LoadAverage returns the 1, 5 and 15 minute load averages of the machine (/proc/loadavg), zero
// if they cannot be read.
func LoadAverage() [3]float64 {
	var avg [3]float64
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return avg
	}
	for i, f := range strings.Fields(string(raw)) {
		if i == 3 {
			break
		}
		avg[i], _ = strconv.ParseFloat(f, 64)
	}
	return avg
}

// Memory returns the machine's total and available memory in bytes (/proc/meminfo), zero if
// they cannot be read.
func Memory() (total, available int64) {
	v, _ := procSizes("/proc/meminfo", "MemTotal", "MemAvailable")
	return v["MemTotal"], v["MemAvailable"]
}
