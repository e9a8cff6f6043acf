package cli

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

func TestCompareCopies(t *testing.T) {
	before := map[string]string{
		"configmaps/app/same":    "data:\n  a: \"1\"\n",
		"configmaps/app/edited":  "data:\n  a: \"1\"\n  b: \"2\"\n",
		"configmaps/app/dropped": "data: {}\n",
	}
	after := map[string]string{
		"configmaps/app/same":   "data:\n  a: \"1\"\n",
		"configmaps/app/edited": "data:\n  a: \"1\"\n  b: \"3\"\n",
		"configmaps/app/new":    "data: {}\n",
	}
	got := compareCopies(before, after)
	want := []struct{ object, op string }{
		{"configmaps/app/dropped", "removed"},
		{"configmaps/app/edited", "changed"},
		{"configmaps/app/new", "added"},
	}
	if len(got) != len(want) {
		t.Fatalf("compareCopies() = %+v, want %v", got, want)
	}
	for i, w := range want {
		if got[i].Object != w.object || got[i].Op != w.op {
			t.Errorf("change %d = %s %s, want %s %s", i, got[i].Op, got[i].Object, w.op, w.object)
		}
	}
	edited := got[1].Diff
	for _, line := range []string{"--- configmaps/app/edited (now)", "+++ configmaps/app/edited (after)", "-  b: \"2\"", "+  b: \"3\""} {
		if !strings.Contains(edited, line) {
			t.Errorf("the diff of the edited object lacks %q:\n%s", line, edited)
		}
	}
	if compareCopies(before, before) != nil {
		t.Error("a projection compared with itself has changes")
	}
}

func TestCompareCopiesMasksSecrets(t *testing.T) {
	before := map[string]string{"secrets/app/s": "apiVersion: v1\ndata:\n  kept: a2VwdA==\n  old: b2xk\nkind: Secret\n"}
	after := map[string]string{"secrets/app/s": "apiVersion: v1\ndata:\n  kept: a2VwdA==\n  old: bmV3\nkind: Secret\n"}
	got := compareCopies(before, after)
	if len(got) != 1 || got[0].Op != "changed" {
		t.Fatalf("compareCopies() = %+v, want the Secret changed", got)
	}
	for _, value := range []string{"a2VwdA==", "b2xk", "bmV3"} {
		if strings.Contains(got[0].Diff, value) {
			t.Errorf("the diff shows the Secret's value %q:\n%s", value, got[0].Diff)
		}
	}
	for _, want := range []string{"-  old: '*** (before)'", "+  old: '*** (after)'"} {
		if !strings.Contains(got[0].Diff, want) {
			t.Errorf("the diff lacks %q:\n%s", want, got[0].Diff)
		}
	}
	if strings.Contains(got[0].Diff, "-  kept") {
		t.Errorf("an unchanged value shows as changed:\n%s", got[0].Diff)
	}
}

func TestGroupChanges(t *testing.T) {
	edit := []objectChange{{Object: "configmaps/app/c", Op: "changed", Diff: "--- c (now)\n+++ c (after)\n zone: z1\n-a\n+b\n"}}
	// The same change beside another destination's parameter: the same group.
	sameEdit := []objectChange{{Object: "configmaps/app/c", Op: "changed", Diff: "--- c (now)\n+++ c (after)\n zone: z3\n-a\n+b\n"}}
	other := []objectChange{{Object: "configmaps/app/c", Op: "changed", Diff: "--- c (now)\n+++ c (after)\n zone: z1\n-a\n+c\n"}}
	order := []string{"imw:e1", "imw:e2", "imw:e3", "imw:e4"}
	changes := map[string][]objectChange{"imw:e1": edit, "imw:e2": nil, "imw:e3": sameEdit, "imw:e4": other}
	groups := groupChanges(order, changes)
	if len(groups) != 3 {
		t.Fatalf("groups = %+v, want 3: e1+e3, e2 unchanged, e4", groups)
	}
	if got := strings.Join(groups[0].Destinations, ","); got != "imw:e1,imw:e3" {
		t.Errorf("first group %s, want imw:e1,imw:e3", got)
	}
	var out bytes.Buffer
	printPlacementDiff(&out, "web", len(order), groups)
	text := out.String()
	for _, want := range []string{"EdgePlacement web: 3 of 4 destinations change", "== 2 destination(s): imw:e1, imw:e3", "== 1 destination(s): imw:e4", "== 1 destination(s) unchanged"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
}

func TestGroupChangesNamesAFewOfMany(t *testing.T) {
	edit := []objectChange{{Object: "configmaps/app/c", Op: "changed", Diff: "-a\n+b\n"}}
	var order []string
	changes := map[string][]objectChange{}
	for i := 0; i < 1000; i++ {
		d := fmt.Sprintf("imw:edge-%04d", i)
		order = append(order, d)
		changes[d] = edit
	}
	var out bytes.Buffer
	printPlacementDiff(&out, "web", len(order), groupChanges(order, changes))
	text := out.String()
	if !strings.Contains(text, "== 1000 destination(s): imw:edge-0000, imw:edge-0001, imw:edge-0002, imw:edge-0003, imw:edge-0004 and 995 more") {
		t.Errorf("1,000 identical changes are not shown once with their count:\n%s", text)
	}
	if n := strings.Count(text, "+b"); n != 1 {
		t.Errorf("the diff is printed %d times, want once", n)
	}
}

// FuzzGroupChanges checks that every destination lands in exactly one group, that a group's
// destinations all have the group's changes, and that two groups never have the same changes.
func FuzzGroupChanges(f *testing.F) {
	f.Add([]byte{0, 1, 0, 2, 1})
	f.Add([]byte{})
	f.Add([]byte{3, 3, 3})
	f.Fuzz(func(t *testing.T, picks []byte) {
		variants := [][]objectChange{
			nil,
			{{Object: "a", Op: "changed", Diff: " ctx1\n-x\n+y\n"}},
			{{Object: "a", Op: "changed", Diff: " ctx2\n-x\n+y\n"}},
			{{Object: "a", Op: "changed", Diff: " ctx1\n-x\n+z\n"}},
			{{Object: "a", Op: "added", Diff: "+x\n"}, {Object: "b", Op: "removed", Diff: "-y\n"}},
			{{Object: "a\" \"changed", Op: "x", Diff: ""}},
		}
		var order []string
		changes := map[string][]objectChange{}
		for i, p := range picks {
			d := fmt.Sprintf("d%d", i)
			order = append(order, d)
			changes[d] = variants[int(p)%len(variants)]
		}
		groups := groupChanges(order, changes)
		if len(picks) > 0 && changeSignature(variants[1]) != changeSignature(variants[2]) {
			t.Fatal("two changes that differ only in context have different signatures")
		}
		seen := map[string]bool{}
		sigs := map[string]bool{}
		for _, g := range groups {
			sig := changeSignature(g.Changes)
			if sigs[sig] {
				t.Fatalf("two groups have the same changes %s", sig)
			}
			sigs[sig] = true
			for _, d := range g.Destinations {
				if seen[d] {
					t.Fatalf("destination %s is in two groups", d)
				}
				seen[d] = true
				if changeSignature(changes[d]) != sig {
					t.Fatalf("destination %s has changes %q, its group %s", d, changes[d], sig)
				}
			}
		}
		if len(seen) != len(order) {
			t.Fatalf("%d destinations grouped, want %d", len(seen), len(order))
		}
	})
}
