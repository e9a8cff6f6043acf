package scheduler

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

func destinations(n int) []edgev1alpha1.SinglePlacement {
	out := make([]edgev1alpha1.SinglePlacement, n)
	for i := range out {
		out[i] = edgev1alpha1.SinglePlacement{Cluster: "c", LocationName: "l", SyncTargetName: fmt.Sprintf("st%04d", i), SyncTargetUID: types.UID(fmt.Sprint(i))}
	}
	return out
}

func TestSplitDestinations(t *testing.T) {
	tests := []struct {
		n, max    int
		wantSizes []int
	}{
		{n: 0, max: 3, wantSizes: []int{0}},
		{n: 1, max: 3, wantSizes: []int{1}},
		{n: 3, max: 3, wantSizes: []int{3}},
		{n: 4, max: 3, wantSizes: []int{3, 1}},
		{n: 7, max: 3, wantSizes: []int{3, 3, 1}},
		{n: 9, max: 1, wantSizes: []int{1, 1, 1, 1, 1, 1, 1, 1, 1}},
		{n: 2500, max: 0, wantSizes: []int{1000, 1000, 500}},
		{n: 1000, max: -5, wantSizes: []int{1000}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d by %d", tt.n, tt.max), func(t *testing.T) {
			in := destinations(tt.n)
			chunks := SplitDestinations(in, tt.max)
			if len(chunks) != len(tt.wantSizes) {
				t.Fatalf("%d chunks, want %d", len(chunks), len(tt.wantSizes))
			}
			next := 0
			for i, chunk := range chunks {
				if len(chunk) != tt.wantSizes[i] {
					t.Errorf("chunk %d has %d destinations, want %d", i, len(chunk), tt.wantSizes[i])
				}
				for _, d := range chunk {
					if d != in[next] {
						t.Errorf("chunk %d: %v out of order, want %v", i, d, in[next])
					}
					next++
				}
			}
			if next != tt.n {
				t.Errorf("%d destinations in the chunks, want %d", next, tt.n)
			}
			if len(chunks) > 1 {
				_ = append(chunks[0], edgev1alpha1.SinglePlacement{Cluster: "appended"})
				if chunks[1][0].Cluster == "appended" {
					t.Error("appending to a chunk overwrote the next one")
				}
			}
		})
	}
}

func TestDesiredSlices(t *testing.T) {
	slices := DesiredSlices("web", destinations(5), 2)
	want := []struct {
		name string
		n    int
	}{{"web-0", 2}, {"web-1", 2}, {"web-2", 1}}
	if len(slices) != len(want) {
		t.Fatalf("%d slices, want %d", len(slices), len(want))
	}
	for i, w := range want {
		if slices[i].Name != w.name || len(slices[i].Destinations) != w.n {
			t.Errorf("slice %d is %s with %d destinations, want %s with %d", i, slices[i].Name, len(slices[i].Destinations), w.name, w.n)
		}
	}
	if empty := DesiredSlices("web", nil, 2); len(empty) != 1 || empty[0].Name != "web-0" || len(empty[0].Destinations) != 0 {
		t.Errorf("no destinations give %+v, want one empty slice web-0", empty)
	}
}

func TestSliceName(t *testing.T) {
	// name repeats fill up to n characters and ends the name with a letter.
	name := func(n int, fill string) string { return strings.Repeat(fill, n)[:n-1] + "z" }
	tests := []struct {
		placement string
		index     int
		want      string // "" when the name is shortened
	}{
		{"web", 0, "web-0"},
		{"web", 12, "web-12"},
		{"a.b-c", 3, "a.b-c-3"},
		{name(251, "a"), 0, name(251, "a") + "-0"},
		{name(250, "a"), 10, name(250, "a") + "-10"},
		{name(251, "a"), 10, ""},
		{name(253, "a"), 0, ""},
		{name(253, "a"), 999999, ""},
		{name(253, "ab.c-"), 7, ""}, // cuts that fall on '.' and on '-'
		{name(253, "ab-c."), 7, ""},
		{name(253, "a-b-c--d."), 1, ""}, // runs of '-' and '.' before the cut
		{"a" + strings.Repeat("-", 251) + "b", 1, ""},
		{name(253, "x."), 2, ""},
		{name(253, "x-"), 2, ""},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		if errs := validation.IsDNS1123Subdomain(tt.placement); len(errs) > 0 {
			t.Fatalf("test placement %q is invalid: %v", tt.placement, errs)
		}
		got := SliceName(tt.placement, tt.index)
		if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
			t.Errorf("SliceName(%d chars, %d) = %q is invalid: %v", len(tt.placement), tt.index, got, errs)
		}
		if tt.want != "" && got != tt.want {
			t.Errorf("SliceName(%q, %d) = %q, want %q", tt.placement, tt.index, got, tt.want)
		}
		if tt.want == "" && !strings.HasSuffix(got, fmt.Sprintf("-%d", tt.index)) {
			t.Errorf("shortened SliceName(%d chars, %d) = %q does not end with the index", len(tt.placement), tt.index, got)
		}
		if again := SliceName(tt.placement, tt.index); again != got {
			t.Errorf("SliceName is not deterministic: %q then %q", got, again)
		}
		id := fmt.Sprintf("%s/%d", tt.placement, tt.index)
		if other, dup := seen[got]; dup && other != id {
			t.Errorf("%s and %s both give %q", other, id, got)
		}
		seen[got] = id
	}
}

// TestSliceNameLongNamesDoNotCollide checks names that differ only past the cut.
func TestSliceNameLongNamesDoNotCollide(t *testing.T) {
	base := strings.Repeat("p", 250)
	seen := map[string]string{}
	for i := 0; i < 200; i++ {
		placement := fmt.Sprintf("%s%03d", base, i)
		for _, index := range []int{0, 1, 10, 1000} {
			name := SliceName(placement, index)
			if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
				t.Fatalf("SliceName(%q, %d) = %q is invalid: %v", placement, index, name, errs)
			}
			id := fmt.Sprintf("%d/%d", i, index)
			if other, dup := seen[name]; dup {
				t.Fatalf("%s and %s both give %q", other, id, name)
			}
			seen[name] = id
		}
	}
}
