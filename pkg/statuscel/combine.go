package statuscel

import (
	"encoding/json"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

// DestinationReport is one destination's report of a collector.
type DestinationReport struct {
	// Destination is <inventory cluster>:<SyncTarget name>.
	Destination string
	Report      *edgev1alpha1.CollectorReport
}

// Columns are the columns of a collector's results: with combine, groupBy's names then
// combine's; without, destination, object and select's names.
func Columns(spec *edgev1alpha1.StatusCollectorSpec) []string {
	var out []string
	if len(spec.Combine) > 0 {
		for _, g := range spec.GroupBy {
			out = append(out, g.Name)
		}
		for _, c := range spec.Combine {
			out = append(out, c.Name)
		}
		return out
	}
	out = append(out, "destination", "object")
	for _, s := range spec.Select {
		out = append(out, s.Name)
	}
	return out
}

// Combine combines the destinations' reports of one collector into the placement's status, as
// the status summarizer does: groups of the same key merged (counts and sums added, the least
// and greatest of min and max, avg weighted by how many numbers each destination averaged),
// sorted by key; or rows, sorted by destination and object. The first Limit are kept. Each
// destination kept its first Limit in the same order, so the first Limit here are exact; groups
// and rows that destinations left out are counted in omitted. Reports of values that are not
// numbers (a syncer that is not this version's) are left out of their combination.
func Combine(name string, spec *edgev1alpha1.StatusCollectorSpec, reports []DestinationReport) edgev1alpha1.CollectedStatus {
	out := edgev1alpha1.CollectedStatus{Name: name, Columns: Columns(spec)}
	limit := Limit(spec)
	combining := len(spec.Combine) > 0
	groups := map[string]*group{}
	var rows [][]string
	for _, d := range reports {
		r := d.Report
		if r == nil {
			continue
		}
		out.Destinations++
		out.Matched += int64(r.Matched)
		out.Omitted += r.Omitted
		out.Errors += int64(r.Errors)
		if r.ErrorExample != nil && out.ErrorExample == nil {
			ex := *r.ErrorExample
			ex.Destination = d.Destination
			out.ErrorExample = &ex
		}
		if !combining {
			for _, row := range r.Rows {
				values := make([]string, 0, 2+len(spec.Select))
				values = append(values, quote(d.Destination), quote(row.Object))
				for i := range spec.Select {
					v := ""
					if i < len(row.Values) {
						v = row.Values[i]
					}
					values = append(values, v)
				}
				rows = append(rows, values)
			}
			continue
		}
		for _, rg := range r.Groups {
			if len(rg.Key) != len(spec.GroupBy) {
				continue // a report of another version of the collector
			}
			id := strings.Join(rg.Key, "\x00")
			g := groups[id]
			if g == nil {
				g = &group{key: rg.Key}
				for _, cb := range spec.Combine {
					g.accs = append(g.accs, &accumulator{typ: cb.Type})
				}
				groups[id] = g
			}
			g.count += rg.Count
			byName := map[string]edgev1alpha1.CombinedValue{}
			for _, v := range rg.Values {
				byName[v.Name] = v
			}
			for i, cb := range spec.Combine {
				v, ok := byName[cb.Name]
				if cb.Type == edgev1alpha1.CombineCount || !ok || v.Value == "" || v.Count <= 0 {
					continue
				}
				n, ok := ParseNumber(v.Value)
				if !ok {
					continue
				}
				g.accs[i].add(n, v.Count)
			}
		}
	}
	if !combining {
		sort.SliceStable(rows, func(i, j int) bool {
			a, b := rows[i], rows[j]
			if a[0] != b[0] {
				return a[0] < b[0]
			}
			return a[1] < b[1]
		})
		out.RowCount = int32(len(rows))
		if len(rows) > limit {
			rows = rows[:limit]
		}
		for _, r := range rows {
			out.Rows = append(out.Rows, rowOf(r))
		}
		return out
	}
	ids := make([]string, 0, len(groups))
	for id := range groups {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	out.RowCount = int32(len(ids))
	if len(ids) > limit {
		ids = ids[:limit]
	}
	for _, id := range ids {
		g := groups[id]
		values := append([]string{}, g.key...)
		for i, cb := range spec.Combine {
			if cb.Type == edgev1alpha1.CombineCount {
				values = append(values, number{i: g.count}.String())
				continue
			}
			values = append(values, g.accs[i].result().Value)
		}
		out.Rows = append(out.Rows, rowOf(values))
	}
	return out
}

// rowOf makes a row of JSON texts; "" (no value) and null are a JSON without Raw, null, as the
// server's copy of it reads back (so that the summarizer sees no change where there is none).
func rowOf(values []string) edgev1alpha1.CollectedRow {
	out := edgev1alpha1.CollectedRow{Values: make([]apiextensionsv1.JSON, len(values))}
	for i, v := range values {
		if v != "" && v != "null" {
			out.Values[i] = apiextensionsv1.JSON{Raw: []byte(v)}
		}
	}
	return out
}

func quote(s string) string {
	data, _ := json.Marshal(s)
	return string(data)
}
