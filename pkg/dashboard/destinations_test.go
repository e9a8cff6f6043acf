package dashboard

import (
	"fmt"
	"net/url"
	"testing"
)

func TestDestinationQuery(t *testing.T) {
	var all []destination
	states := []string{"Ready", "Failed", "Pending", "Stale", "Applied"}
	for i := 0; i < 120; i++ {
		all = append(all, destination{Inventory: "root:imw", SyncTarget: fmt.Sprintf("edge-%03d", i), Location: fmt.Sprintf("loc-%d", i%7), State: states[i%len(states)]})
	}
	all[7].Reason = "deployments.apps/app/web: ImagePullBackOff"

	for _, tc := range []struct {
		query     string
		rows      int
		matching  int
		page      int
		pages     int
		first     string
		prev      string
		next      string
		wantState string
	}{
		{query: "", rows: PageSize, matching: 120, page: 1, pages: 3, first: "edge-001", next: "?page=2", wantState: "Failed"},
		{query: "page=3", rows: 20, matching: 120, page: 3, pages: 3, first: "edge-020", prev: "?page=2"},
		{query: "page=99", rows: 20, matching: 120, page: 3, pages: 3, first: "edge-020", prev: "?page=2"},
		{query: "state=Failed", rows: 24, matching: 24, page: 1, pages: 1, first: "edge-001", wantState: "Failed"},
		{query: "state=Bogus&sort=bogus&page=-1", rows: PageSize, matching: 120, page: 1, pages: 3, first: "edge-001", next: "?page=2"},
		{query: "sort=name", rows: PageSize, matching: 120, page: 1, pages: 3, first: "edge-000", next: "?page=2&sort=name"},
		{query: "sort=location&q=loc-3", rows: 17, matching: 17, page: 1, pages: 1, first: "edge-003"},
		{query: "q=imagepull", rows: 1, matching: 1, page: 1, pages: 1, first: "edge-007"},
		{query: "q=nothing-like-it", rows: 0, matching: 0, page: 1, pages: 1},
	} {
		t.Run(tc.query, func(t *testing.T) {
			v, _ := url.ParseQuery(tc.query)
			got := parseDestinationQuery(v).apply(all)
			if len(got.Rows) != tc.rows || got.Matching != tc.matching || got.Page != tc.page || got.Pages != tc.pages || got.Total != 120 {
				t.Fatalf("rows %d, matching %d, page %d of %d, total %d; want %d, %d, %d of %d, 120", len(got.Rows), got.Matching, got.Page, got.Pages, got.Total, tc.rows, tc.matching, tc.page, tc.pages)
			}
			if tc.rows > 0 && got.Rows[0].SyncTarget != tc.first {
				t.Errorf("first row %s, want %s", got.Rows[0].SyncTarget, tc.first)
			}
			if tc.wantState != "" && got.Rows[0].State != tc.wantState {
				t.Errorf("first row's state %s, want %s (failed first)", got.Rows[0].State, tc.wantState)
			}
			if got.PrevURL != tc.prev || got.NextURL != tc.next {
				t.Errorf("prev %q next %q, want %q %q", got.PrevURL, got.NextURL, tc.prev, tc.next)
			}
			if got.ByState["Failed"] != 24 {
				t.Errorf("ByState[Failed] = %d, want 24 whatever the filter", got.ByState["Failed"])
			}
		})
	}
}
