package statuscel

import (
	"fmt"
	"reflect"
	"testing"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

// FuzzCombineSplit: collecting objects spread over destinations and combining the reports gives
// what collecting them all at one destination gives (with a limit above the number of groups),
// and Collect never panics whatever the values.
func FuzzCombineSplit(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6}, uint8(2), false)
	f.Add([]byte{0, 255, 7, 7, 7}, uint8(3), true)
	spec := edgev1alpha1.StatusCollectorSpec{
		Filter:  "object.keep",
		Select:  []edgev1alpha1.NamedExpression{{Name: "v", Expression: "object.v"}},
		GroupBy: []edgev1alpha1.NamedExpression{{Name: "g", Expression: "object.g"}},
		Combine: []edgev1alpha1.Combination{{Name: "n", Type: "count"}, {Name: "s", Type: "sum", Select: "v"},
			{Name: "lo", Type: "min", Select: "v"}, {Name: "hi", Type: "max", Select: "v"}},
		Limit: 100,
	}
	c, err := CompileCollector("f", &spec)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte, parts uint8, strings bool) {
		if parts == 0 {
			parts = 1
		}
		var objs []Object
		for i, b := range data {
			content := map[string]any{"keep": b%5 != 0, "g": int64(b % 7)}
			switch {
			case strings && b%3 == 0:
				content["v"] = fmt.Sprint(b) // not a number: an error, counted
			case b%4 != 0:
				content["v"] = int64(b) - 128
			}
			objs = append(objs, Object{Key: fmt.Sprintf("o/%d", i), Content: content})
		}
		whole := c.Collect(objs)
		var reports []DestinationReport
		for p := 0; p < int(parts); p++ {
			var mine []Object
			for i := p; i < len(objs); i += int(parts) {
				mine = append(mine, objs[i])
			}
			r := c.Collect(mine)
			reports = append(reports, DestinationReport{Destination: fmt.Sprint(p), Report: &r})
		}
		got := Combine("f", &spec, reports)
		want := Combine("f", &spec, []DestinationReport{{Destination: "all", Report: &whole}})
		if !reflect.DeepEqual(got.Rows, want.Rows) || got.Matched != want.Matched || got.Errors != want.Errors {
			t.Fatalf("split over %d: %+v, whole: %+v", parts, got, want)
		}
	})
}
