package dashboard

import (
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// PageSize is how many destinations a placement's page lists at once.
const PageSize = 50

// destinationQuery is the filter, order and page of a placement's destinations table, from the
// page's query parameters: state (one state, "" for all), q (a substring of the SyncTarget's,
// Location's or inventory's name, or of the reason), sort (name, state, location), page (from 1).
type destinationQuery struct {
	State string
	Text  string
	Sort  string
	Page  int
}

// sortKeys are the orders the table offers, in the order its control lists them.
var sortKeys = []string{"state", "name", "location"}

// stateOrder puts the destinations that need someone first.
var stateOrder = map[string]int{"Failed": 0, "Stale": 1, "Unknown": 2, "Pending": 3, "Applied": 4, "Ready": 5}

func parseDestinationQuery(v url.Values) destinationQuery {
	q := destinationQuery{State: v.Get("state"), Text: strings.TrimSpace(v.Get("q")), Sort: v.Get("sort"), Page: 1}
	if _, ok := stateOrder[q.State]; !ok {
		q.State = ""
	}
	valid := false
	for _, k := range sortKeys {
		valid = valid || q.Sort == k
	}
	if !valid {
		q.Sort = "state"
	}
	if p, err := strconv.Atoi(v.Get("page")); err == nil && p > 1 {
		q.Page = p
	}
	return q
}

// values are the query's parameters, page aside.
func (q destinationQuery) values() url.Values {
	v := url.Values{}
	if q.State != "" {
		v.Set("state", q.State)
	}
	if q.Text != "" {
		v.Set("q", q.Text)
	}
	if q.Sort != "state" {
		v.Set("sort", q.Sort)
	}
	return v
}

// PageURL is the query string of another page of the same table.
func (q destinationQuery) pageURL(page int) string {
	v := q.values()
	if page > 1 {
		v.Set("page", strconv.Itoa(page))
	}
	if len(v) == 0 {
		return "?"
	}
	return "?" + v.Encode()
}

// destinationPage is one page of a filtered, sorted destinations table.
type destinationPage struct {
	Query destinationQuery
	Rows  []destination
	// Total is the number of destinations, Matching the number that pass the filter.
	Total, Matching int
	// ByState counts all the destinations by state, for the filter's choices.
	ByState       map[string]int
	Page, Pages   int
	First, Last   int
	PrevURL       string
	NextURL       string
	States, Sorts []string
}

func (q destinationQuery) apply(all []destination) destinationPage {
	out := destinationPage{Query: q, Total: len(all), ByState: map[string]int{}, Sorts: sortKeys}
	for s := range stateOrder {
		out.States = append(out.States, s)
	}
	sort.Slice(out.States, func(i, j int) bool { return stateOrder[out.States[i]] < stateOrder[out.States[j]] })
	text := strings.ToLower(q.Text)
	var rows []destination
	for _, d := range all {
		out.ByState[d.State]++
		if q.State != "" && d.State != q.State {
			continue
		}
		if text != "" && !strings.Contains(strings.ToLower(d.SyncTarget+" "+d.Location+" "+d.Inventory+" "+d.Reason), text) {
			continue
		}
		rows = append(rows, d)
	}
	name := func(d destination) string { return d.SyncTarget + "\x00" + d.Inventory }
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		switch q.Sort {
		case "location":
			if a.Location != b.Location {
				return a.Location < b.Location
			}
		case "state":
			if stateOrder[a.State] != stateOrder[b.State] {
				return stateOrder[a.State] < stateOrder[b.State]
			}
		}
		return name(a) < name(b)
	})
	out.Matching = len(rows)
	out.Pages = max(1, (len(rows)+PageSize-1)/PageSize)
	out.Page = min(q.Page, out.Pages)
	start := (out.Page - 1) * PageSize
	end := min(start+PageSize, len(rows))
	out.Rows = rows[start:end]
	out.First, out.Last = start+1, end
	if out.Page > 1 {
		out.PrevURL = q.pageURL(out.Page - 1)
	}
	if out.Page < out.Pages {
		out.NextURL = q.pageURL(out.Page + 1)
	}
	return out
}
