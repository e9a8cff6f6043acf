package syncer

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
	"github.com/kcp-dev/edge-mc/pkg/transport"
)

// driftPaths returns, sorted, the paths of the fields of want that have, the object at the edge,
// does not hold as want has them: another value, another type, or missing. It agrees with
// containsAll (no paths exactly when containsAll is true): fields only have holds (defaults, other
// managers' fields) are not drift, a missing empty map or list is not either, and a list of
// another length is one path, the list's. Only paths are returned, never values.
func driftPaths(have, want any) []string {
	var out []string
	collectDrift(have, want, "", &out)
	sort.Strings(out)
	return out
}

func collectDrift(have, want any, path string, out *[]string) {
	report := func() {
		if path == "" {
			*out = append(*out, ".")
			return
		}
		*out = append(*out, path)
	}
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			if !(len(w) == 0 && have == nil) {
				report()
			}
			return
		}
		for k, wv := range w {
			hv, found := h[k]
			switch {
			case !found && isEmpty(wv):
			case !found:
				*out = append(*out, joinPath(path, k))
			default:
				collectDrift(hv, wv, joinPath(path, k), out)
			}
		}
		return
	case []any:
		h, ok := have.([]any)
		if !ok {
			if !(len(w) == 0 && have == nil) {
				report()
			}
			return
		}
		if len(h) != len(w) {
			report()
			return
		}
		for i := range w {
			collectDrift(h[i], w[i], path+"["+strconv.Itoa(i)+"]", out)
		}
		return
	}
	if !containsAll(have, want) {
		report()
	}
}

// plainKey is a map key written after a dot in a path; any other is written as ["key"].
var plainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

func joinPath(path, key string) string {
	if !plainKey.MatchString(key) {
		return path + "[" + strconv.Quote(key) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// boundPaths keeps at most MaxDriftPaths of paths, and says how many there were.
func boundPaths(paths []string) ([]string, int32) {
	n := int32(len(paths))
	if len(paths) > edgev1alpha1.MaxDriftPaths {
		paths = paths[:edgev1alpha1.MaxDriftPaths]
	}
	if len(paths) == 0 {
		paths = nil
	}
	return paths, n
}

// recordDrift adds one drift to a report (nil: a new one) and returns it: the counts rise, and
// the entry goes first among the recent ones, merged with an earlier entry of the same object,
// change, version and paths (its count raised, its time renewed), the oldest dropped past
// MaxDriftEntries.
func recordDrift(r *edgev1alpha1.DriftReport, e edgev1alpha1.DriftEntry) *edgev1alpha1.DriftReport {
	if r == nil {
		r = &edgev1alpha1.DriftReport{}
	}
	r.Count++
	if e.Repaired {
		r.Repairs++
	}
	e.Count = 1
	recent := make([]edgev1alpha1.DriftEntry, 0, len(r.Recent)+1)
	recent = append(recent, e)
	for _, old := range r.Recent {
		if sameDrift(old, e) {
			recent[0].Count = old.Count + 1
			continue
		}
		recent = append(recent, old)
	}
	if len(recent) > edgev1alpha1.MaxDriftEntries {
		recent = recent[:edgev1alpha1.MaxDriftEntries]
	}
	r.Recent = recent
	return r
}

func sameDrift(a, b edgev1alpha1.DriftEntry) bool {
	return a.Object == b.Object && a.Change == b.Change && a.Repaired == b.Repaired && a.Version == b.Version &&
		a.PathCount == b.PathCount && slicesEqual(a.Paths, b.Paths)
}

func slicesEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// driftEntry makes the entry of one drift of the object d found now.
func driftEntry(d *desired, version, change string, repaired bool, paths []string, now time.Time) edgev1alpha1.DriftEntry {
	e := edgev1alpha1.DriftEntry{
		Object: d.key.String(), Change: change, Repaired: repaired, Version: version,
		Time: metav1.NewTime(now.UTC().Truncate(time.Second)),
	}
	e.Paths, e.PathCount = boundPaths(paths)
	return e
}

// driftChange is the API's word for decideApply's drift.
func driftChange(drift string) string {
	if drift == "deleted" {
		return edgev1alpha1.DriftDeleted
	}
	return edgev1alpha1.DriftEdited
}

// driftFingerprint identifies the state of the fields of want at the edge (have; nil: deleted)
// so that drift the syncer leaves (create-only objects) is reported once per change, not on
// every pass. It is a hash, kept in memory only, never reported.
func driftFingerprint(have, want map[string]any) string {
	if have == nil {
		return "deleted"
	}
	raw, err := json.Marshal(project(have, want))
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

// project returns of have what lies under the fields of want.
func project(have, want any) any {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return have
		}
		out := make(map[string]any, len(w))
		for k, wv := range w {
			if hv, found := h[k]; found {
				out[k] = project(hv, wv)
			}
		}
		return out
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return have
		}
		out := make([]any, len(w))
		for i := range w {
			out[i] = project(h[i], w[i])
		}
		return out
	}
	return have
}

// restoredDriftMark stands, after a restart, for left drift that the status found at start
// reports already: the first sighting of the same drift is not reported again.
func restoredDriftMark(change string, paths []string) string {
	return "restored:" + change + ":" + strings.Join(paths, "\x00")
}

// noteLeftDrift records drift of a create-only object, which the syncer leaves as the edge has
// it: once per distinct state of its fields (fingerprint), a restored report counting as one.
// It says whether the drift is new; s.mu is held.
func (st *assemblageState) noteLeftDriftLocked(d *desired, change string, paths []string, fingerprint string, now time.Time) (edgev1alpha1.DriftEntry, bool) {
	prev := st.leftDrift[d.key]
	if prev == fingerprint {
		return edgev1alpha1.DriftEntry{}, false
	}
	st.leftDrift[d.key] = fingerprint
	e := driftEntry(d, st.planVersion(), change, false, paths, now)
	if prev == restoredDriftMark(change, e.Paths) {
		return edgev1alpha1.DriftEntry{}, false
	}
	st.drift = recordDrift(st.drift, e)
	return e, true
}

// clearLeftDriftLocked forgets left drift of the object with key: it is as created again, and
// a later change is new drift; s.mu is held.
func (st *assemblageState) clearLeftDriftLocked(key transport.Key) {
	delete(st.leftDrift, key)
}
