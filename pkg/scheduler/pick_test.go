package scheduler

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

// cand is a candidate in inventory cluster "imw", named name; value "-" means unlabelled.
func cand(name, value string) Candidate {
	return Candidate{Destination: dest(name), SpreadValue: value, Labelled: value != "-"}
}

func dest(name string) edgev1alpha1.SinglePlacement {
	return edgev1alpha1.SinglePlacement{Cluster: "imw", LocationName: "loc-" + name, SyncTargetName: name, SyncTargetUID: uidOf("imw", name)}
}

func dests(names ...string) []edgev1alpha1.SinglePlacement {
	out := make([]edgev1alpha1.SinglePlacement, 0, len(names))
	for _, n := range names {
		out = append(out, dest(n))
	}
	return out
}

func names(d []edgev1alpha1.SinglePlacement) []string {
	out := make([]string, 0, len(d))
	for _, x := range d {
		out = append(out, x.SyncTargetName)
	}
	return out
}

// fourEdges are two edges in each of two regions.
var fourEdges = []Candidate{cand("e1", "east"), cand("e2", "east"), cand("w1", "west"), cand("w2", "west")}

func TestPick(t *testing.T) {
	for _, tc := range []struct {
		name       string
		n          int
		spreadBy   string
		candidates []Candidate
		current    []edgev1alpha1.SinglePlacement
		// want are the picks; nil means "check only the count and the invariants" (the choice
		// depends on the hash).
		want        []string
		wantCount   int
		wantKept    int
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage string
	}{{
		name: "N of more, no current picks", n: 2, candidates: fourEdges,
		wantCount: 2, wantStatus: metav1.ConditionTrue, wantReason: edgev1alpha1.ReasonPicked,
		wantMessage: "picked 2 of 4 matching SyncTargets",
	}, {
		name: "a spreadBy that no candidate has: picked, not spread, and said", n: 2, spreadBy: "regoin",
		candidates: []Candidate{cand("e1", "-"), cand("e2", "-"), cand("w1", "-")},
		wantCount:  2, wantStatus: metav1.ConditionFalse, wantReason: edgev1alpha1.ReasonSpreadLabelMissing,
		wantMessage: `not spread: no eligible SyncTarget, nor its Location, has the label "regoin"`,
	}, {
		name: "current picks kept", n: 2, candidates: fourEdges, current: dests("e1", "e2"),
		want: []string{"e1", "e2"}, wantKept: 2, wantStatus: metav1.ConditionTrue, wantReason: edgev1alpha1.ReasonPicked,
		wantMessage: "picked 2 of 4 matching SyncTargets; picked: e1, e2",
	}, {
		name: "spread: one per region", n: 2, spreadBy: "region", candidates: fourEdges,
		wantCount: 2, wantStatus: metav1.ConditionTrue, wantReason: edgev1alpha1.ReasonPicked,
		wantMessage: "picked 2 of 4 matching SyncTargets, spread by region: 1 east, 1 west",
	}, {
		name: "spread: a lost pick is replaced from its region, the other stays", n: 2, spreadBy: "region",
		candidates: []Candidate{cand("e2", "east"), cand("w1", "west"), cand("w2", "west")}, current: dests("e1", "w2"),
		want: []string{"e2", "w2"}, wantKept: 1, wantStatus: metav1.ConditionTrue, wantReason: edgev1alpha1.ReasonPicked,
	}, {
		name: "a lost pick is replaced, the other stays", n: 2,
		candidates: []Candidate{cand("a", "-"), cand("c", "-")}, current: dests("a", "b"),
		want: []string{"a", "c"}, wantKept: 1, wantStatus: metav1.ConditionTrue, wantReason: edgev1alpha1.ReasonPicked,
	}, {
		name: "a SyncTarget made again under the same name is not the old pick", n: 1,
		candidates: []Candidate{cand("a", "-"), cand("b", "-")},
		current:    []edgev1alpha1.SinglePlacement{{Cluster: "imw", SyncTargetName: "b", SyncTargetUID: types.UID("old")}},
		wantCount:  1, wantKept: 0, wantStatus: metav1.ConditionTrue, wantReason: edgev1alpha1.ReasonPicked,
	}, {
		name: "spread: current picks that are uneven are evened out", n: 2, spreadBy: "region",
		candidates: fourEdges, current: dests("e1", "e2"),
		wantCount: 2, wantKept: 1, wantStatus: metav1.ConditionTrue, wantReason: edgev1alpha1.ReasonPicked,
		wantMessage: "1 east, 1 west",
	}, {
		name: "spread: a new value while even moves nothing", n: 2, spreadBy: "region",
		candidates: append(slices.Clone(fourEdges), cand("n1", "north")), current: dests("e2", "w1"),
		want: []string{"e2", "w1"}, wantKept: 2, wantStatus: metav1.ConditionTrue, wantReason: edgev1alpha1.ReasonPicked,
	}, {
		name: "spread: a value with too few candidates is filled from the others", n: 4, spreadBy: "region",
		candidates: []Candidate{cand("e1", "east"), cand("w1", "west"), cand("w2", "west"), cand("w3", "west")},
		wantCount:  4, wantStatus: metav1.ConditionTrue, wantReason: edgev1alpha1.ReasonPicked,
		wantMessage: "spread by region: 3 west, 1 east",
	}, {
		name: "spread: unlabelled only when the labelled cannot fill N", n: 3, spreadBy: "region",
		candidates: []Candidate{cand("e1", "east"), cand("x1", "-"), cand("w1", "west"), cand("x2", "-")},
		wantCount:  3, wantStatus: metav1.ConditionTrue, wantReason: edgev1alpha1.ReasonPicked,
		wantMessage: "1 east, 1 west, 1 without the label",
	}, {
		name: "spread: unlabelled not picked while labelled suffice", n: 2, spreadBy: "region",
		candidates: []Candidate{cand("e1", "east"), cand("x1", "-"), cand("w1", "west")}, current: dests("x1"),
		want: []string{"e1", "w1"}, wantStatus: metav1.ConditionTrue, wantReason: edgev1alpha1.ReasonPicked,
	}, {
		name: "N shrinks: the picks are a subset of the current ones", n: 1, candidates: fourEdges, current: dests("e1", "w1"),
		wantCount: 1, wantKept: 1, wantStatus: metav1.ConditionTrue, wantReason: edgev1alpha1.ReasonPicked,
	}, {
		name: "shortfall", n: 2, candidates: []Candidate{cand("e1", "-")},
		want: []string{"e1"}, wantStatus: metav1.ConditionFalse, wantReason: edgev1alpha1.ReasonTooFewSyncTargets,
		wantMessage: "picked 1 of 2: only 1 SyncTarget matches",
	}, {
		name: "shortfall, spread", n: 5, spreadBy: "region", candidates: fourEdges,
		want: []string{"e1", "e2", "w1", "w2"}, wantStatus: metav1.ConditionFalse, wantReason: edgev1alpha1.ReasonTooFewSyncTargets,
		wantMessage: "picked 4 of 5: only 4 SyncTargets match, spread by region: 2 east, 2 west",
	}, {
		name: "nothing matches", n: 2,
		want: []string{}, wantStatus: metav1.ConditionFalse, wantReason: edgev1alpha1.ReasonTooFewSyncTargets,
		wantMessage: "picked 0 of 2: no SyncTarget matches",
	}, {
		name: "the message counts a few values only", n: 8, spreadBy: "zone",
		candidates: func() []Candidate {
			var out []Candidate
			for i := range 8 {
				out = append(out, cand(fmt.Sprintf("z%d", i), fmt.Sprintf("zone-%d", i)))
			}
			return out
		}(),
		wantCount: 8, wantStatus: metav1.ConditionTrue, wantReason: edgev1alpha1.ReasonPicked,
		wantMessage: "and 3 more values",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			req := PickRequest{PlacementUID: "placement-1", N: tc.n, SpreadBy: tc.spreadBy, Candidates: tc.candidates, Current: tc.current}
			got := Pick(req)
			checkPickInvariants(t, req, got)
			if tc.want != nil && !slices.Equal(names(got.Picked), tc.want) {
				t.Errorf("picked %v, want %v", names(got.Picked), tc.want)
			}
			if tc.want == nil && len(got.Picked) != tc.wantCount {
				t.Errorf("picked %v, want %d", names(got.Picked), tc.wantCount)
			}
			if got.Kept != tc.wantKept {
				t.Errorf("kept %d, want %d", got.Kept, tc.wantKept)
			}
			if got.Status != tc.wantStatus || got.Reason != tc.wantReason || !strings.Contains(got.Message, tc.wantMessage) {
				t.Errorf("condition %s/%s %q, want %s/%s containing %q", got.Status, got.Reason, got.Message, tc.wantStatus, tc.wantReason, tc.wantMessage)
			}
		})
	}
}

// The same request gives the same picks, whatever the order of its lists; adding an unrelated
// SyncTarget, or relabelling one that is not picked, moves nothing.
func TestPickIsStable(t *testing.T) {
	for _, spreadBy := range []string{"", "region"} {
		t.Run("spreadBy="+spreadBy, func(t *testing.T) {
			req := PickRequest{PlacementUID: "p", N: 2, SpreadBy: spreadBy, Candidates: slices.Clone(fourEdges)}
			first := Pick(req)
			rng := rand.New(rand.NewSource(1))
			for range 20 {
				rng.Shuffle(len(req.Candidates), func(i, j int) { req.Candidates[i], req.Candidates[j] = req.Candidates[j], req.Candidates[i] })
				if again := Pick(req); !slices.Equal(names(again.Picked), names(first.Picked)) || again.Message != first.Message {
					t.Fatalf("same request, other order: %v, first %v", names(again.Picked), names(first.Picked))
				}
			}

			// From now on the first picks are the current ones.
			req.Current = first.Picked
			if again := Pick(req); !slices.Equal(names(again.Picked), names(first.Picked)) || again.Kept != 2 {
				t.Fatalf("picking again moved %v to %v", names(first.Picked), names(again.Picked))
			}
			added := req
			added.Candidates = append(slices.Clone(req.Candidates), cand("e3", "east"), cand("w3", "west"), cand("s1", "south"))
			if got := Pick(added); !slices.Equal(names(got.Picked), names(first.Picked)) {
				t.Errorf("adding SyncTargets moved %v to %v", names(first.Picked), names(got.Picked))
			}
			relabelled := req
			relabelled.Candidates = slices.Clone(req.Candidates)
			for i, c := range relabelled.Candidates {
				if !slices.Contains(names(first.Picked), c.Destination.SyncTargetName) {
					relabelled.Candidates[i].SpreadValue = "elsewhere"
				}
			}
			if got := Pick(relabelled); !slices.Equal(names(got.Picked), names(first.Picked)) {
				t.Errorf("relabelling unpicked SyncTargets moved %v to %v", names(first.Picked), names(got.Picked))
			}
		})
	}
}

// Placements of the same fleet spread their load: with N=1 of ten, they do not all pick the same.
func TestPickDiffersByPlacement(t *testing.T) {
	var candidates []Candidate
	for i := range 10 {
		candidates = append(candidates, cand(fmt.Sprintf("st-%d", i), "-"))
	}
	seen := map[string]int{}
	for i := range 30 {
		got := Pick(PickRequest{PlacementUID: types.UID(fmt.Sprintf("placement-%d", i)), N: 1, Candidates: candidates})
		seen[got.Picked[0].SyncTargetName]++
	}
	if len(seen) < 4 {
		t.Errorf("30 placements picked only %v", seen)
	}
}

// checkPickInvariants checks what every pick must satisfy: exactly min(N, candidates) picks,
// each a candidate, each once, sorted; the current picks that are candidates kept as far as the
// spread allows; an even spread over the values; the unlabelled only when the labelled run out;
// and picking again from the result changes nothing.
func checkPickInvariants(t *testing.T, req PickRequest, got PickResult) {
	t.Helper()
	candidates := map[destinationID]Candidate{}
	for _, c := range req.Candidates {
		candidates[idOf(c.Destination)] = c
	}
	if want := min(req.N, len(candidates)); len(got.Picked) != want {
		t.Fatalf("picked %d, want min(N=%d, candidates=%d)", len(got.Picked), req.N, len(candidates))
	}
	current := map[destinationID]bool{}
	for _, d := range req.Current {
		current[idOf(d)] = true
	}
	picked := map[destinationID]bool{}
	kept := 0
	for _, d := range got.Picked {
		id := idOf(d)
		if _, ok := candidates[id]; !ok {
			t.Fatalf("picked %v, which is not a candidate", d)
		}
		if picked[id] {
			t.Fatalf("picked %v twice", d)
		}
		picked[id] = true
		if current[id] {
			kept++
		}
	}
	if kept != got.Kept {
		t.Fatalf("Kept is %d, but %d of the picks were current", got.Kept, kept)
	}
	if !slices.IsSortedFunc(got.Picked, compareDestinations) {
		t.Fatalf("picks not sorted: %v", names(got.Picked))
	}

	// Per group (value, or the unlabelled): candidates, current candidates, picks.
	type count struct{ cands, current, picked int }
	groups := map[string]*count{}
	const unlabelled = "\x00unlabelled"
	for id, c := range candidates {
		g := unlabelled
		if req.SpreadBy != "" && c.Labelled {
			g = c.SpreadValue
		}
		if groups[g] == nil {
			groups[g] = &count{}
		}
		groups[g].cands++
		if current[id] {
			groups[g].current++
		}
		if picked[id] {
			groups[g].picked++
		}
	}
	for g, c := range groups {
		if want, kept := min(c.current, c.picked), keptIn(req, got, g, unlabelled); kept != want {
			t.Fatalf("group %q: kept %d current picks, want min(current %d, picked %d)", g, kept, c.current, c.picked)
		}
	}
	labelledFull := true
	for a, ca := range groups {
		if a == unlabelled {
			continue
		}
		if ca.picked < ca.cands {
			labelledFull = false
		}
		for b, cb := range groups {
			if b != unlabelled && ca.picked > cb.picked+1 && cb.picked < cb.cands {
				t.Fatalf("uneven spread: %q has %d picks, %q has %d of %d candidates", a, ca.picked, b, cb.picked, cb.cands)
			}
		}
	}
	if u := groups[unlabelled]; req.SpreadBy != "" && u != nil && u.picked > 0 && !labelledFull {
		t.Fatalf("picked %d unlabelled while labelled candidates were left", u.picked)
	}

	again := req
	again.Current = got.Picked
	if next := Pick(again); !slices.Equal(next.Picked, got.Picked) {
		t.Fatalf("picking again from %v gave %v", names(got.Picked), names(next.Picked))
	}
}

// keptIn counts the picks of group g that were current picks.
func keptIn(req PickRequest, got PickResult, g, unlabelled string) int {
	current := map[destinationID]bool{}
	for _, d := range req.Current {
		current[idOf(d)] = true
	}
	groupOf := map[destinationID]string{}
	for _, c := range req.Candidates {
		groupOf[idOf(c.Destination)] = unlabelled
		if req.SpreadBy != "" && c.Labelled {
			groupOf[idOf(c.Destination)] = c.SpreadValue
		}
	}
	n := 0
	for _, d := range got.Picked {
		if groupOf[idOf(d)] == g && current[idOf(d)] {
			n++
		}
	}
	return n
}

// FuzzPick checks the invariants of Pick on requests made from the fuzzer's bytes: candidates
// with values from a few, current picks among them and among SyncTargets that are gone.
func FuzzPick(f *testing.F) {
	f.Add(uint8(2), true, []byte{0, 0, 1, 1, 2, 0x80, 3, 0x81})
	f.Add(uint8(3), false, []byte{5, 4, 3, 2, 1, 0x85, 0x84})
	f.Add(uint8(1), true, []byte{})
	f.Add(uint8(7), true, []byte{0, 1, 2, 3, 4, 5, 6, 7, 0x80, 0x81, 0x82, 0x83, 0x84, 0xff})
	f.Fuzz(func(t *testing.T, n uint8, spread bool, data []byte) {
		req := PickRequest{PlacementUID: types.UID(fmt.Sprint(len(data))), N: int(n%12) + 1}
		if spread {
			req.SpreadBy = "region"
		}
		// Each byte below 0x80 is a candidate st-<i> whose value is the byte mod 5 (4:
		// unlabelled); each byte from 0x80 makes SyncTarget st-<byte-0x80> (a candidate or a
		// gone one) a current pick.
		seen := map[string]bool{}
		for i, b := range data {
			if b < 0x80 {
				name := fmt.Sprintf("st-%d", i)
				value := []string{"east", "west", "north", "south", "-"}[b%5]
				req.Candidates = append(req.Candidates, cand(name, value))
				continue
			}
			name := fmt.Sprintf("st-%d", int(b-0x80)%max(len(data), 1))
			if !seen[name] {
				seen[name] = true
				req.Current = append(req.Current, dest(name))
			}
		}
		got := Pick(req)
		checkPickInvariants(t, req, got)
		if again := Pick(req); !slices.Equal(again.Picked, got.Picked) || again.Message != got.Message {
			t.Fatalf("not deterministic: %v then %v", names(got.Picked), names(again.Picked))
		}
		// Without a spread, every current pick that is still a candidate is kept, up to N.
		if !spread {
			eligible := 0
			for _, d := range req.Current {
				for _, c := range req.Candidates {
					if idOf(c.Destination) == idOf(d) {
						eligible++
					}
				}
			}
			if got.Kept != min(eligible, req.N) {
				t.Fatalf("kept %d of %d eligible current picks, N=%d", got.Kept, eligible, req.N)
			}
		}
	})
}
