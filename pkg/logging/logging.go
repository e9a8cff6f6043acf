// Package logging holds what edge-mc's long-running commands (edge-controller-manager,
// edge-syncer) share about logging: the highest verbosity they log at.
//
// From -v=8 on, client-go logs the body of every request and response. Those bodies carry
// Secrets (their values in base64, and in clear text in annotations such as kubectl's
// last-applied-configuration) and the mailbox token of a syncer. edge-mc writes none of that
// into a log: its commands lower -v, and any -vmodule level, to MaxVerbosity, and say so. Level 7
// still logs every request's method, URL, status, timing and headers (credentials masked).
package logging

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
)

// MaxVerbosity is the highest klog verbosity at which edge-mc's commands log.
const MaxVerbosity = 7

// CapVerbosity lowers klog's flags -v and -vmodule of fs (where klog.InitFlags put them, already
// parsed) to at most MaxVerbosity. It returns what it lowered, for the command to log ("" if
// nothing), or an error if a flag's value cannot be read or set.
func CapVerbosity(fs *flag.FlagSet) (string, error) {
	var lowered []string
	if v := fs.Lookup("v"); v != nil {
		level, err := strconv.Atoi(v.Value.String())
		if err != nil {
			return "", fmt.Errorf("-v=%s: %w", v.Value.String(), err)
		}
		if level > MaxVerbosity {
			if err := fs.Set("v", strconv.Itoa(MaxVerbosity)); err != nil {
				return "", err
			}
			lowered = append(lowered, fmt.Sprintf("-v=%d", level))
		}
	}
	if m := fs.Lookup("vmodule"); m != nil && m.Value.String() != "" {
		var out []string
		changed := false
		for _, entry := range strings.Split(m.Value.String(), ",") {
			pattern, levelText, ok := strings.Cut(entry, "=")
			level, err := strconv.Atoi(levelText)
			if !ok || err != nil {
				return "", fmt.Errorf("-vmodule entry %q is not pattern=level", entry)
			}
			if level > MaxVerbosity {
				lowered = append(lowered, fmt.Sprintf("-vmodule %s", entry))
				level, changed = MaxVerbosity, true
			}
			out = append(out, pattern+"="+strconv.Itoa(level))
		}
		if changed {
			if err := fs.Set("vmodule", strings.Join(out, ",")); err != nil {
				return "", err
			}
		}
	}
	if len(lowered) == 0 {
		return "", nil
	}
	return fmt.Sprintf("%s lowered to %d: from 8 on, client-go logs request and response bodies, which carry Secrets and credentials",
		strings.Join(lowered, ", "), MaxVerbosity), nil
}
