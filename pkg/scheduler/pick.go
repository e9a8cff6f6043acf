// Picking N of a placement's eligible destinations (spec.numberOfDestinations), spread over the
// values of a label (spec.spreadBy), sticky while the picks stay eligible. Pick is a pure
// function of its request; the controller feeds it the engine's destinations and the picks
// that the placement's SinglePlacementSlices hold.

package scheduler

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

// maxReportedSpreadValues bounds how many values of spreadBy the DestinationsPicked message
// counts, so that the status stays small however many values there are.
const maxReportedSpreadValues = 5

// Candidate is an eligible destination and its value of the spreadBy label.
type Candidate struct {
	Destination edgev1alpha1.SinglePlacement
	// SpreadValue is the value of the spreadBy label; Labelled is false when neither the
	// Location nor the SyncTarget has it (and always without spreadBy).
	SpreadValue string
	Labelled    bool
}

// PickRequest is what Pick needs.
type PickRequest struct {
	// PlacementUID seeds the order in which candidates are preferred, so that placements of
	// the same fleet spread their load differently.
	PlacementUID types.UID
	// N is spec.numberOfDestinations (at least 1).
	N int
	// SpreadBy is spec.spreadBy; "" spreads over nothing.
	SpreadBy string
	// Candidates are the eligible destinations, each once.
	Candidates []Candidate
	// Current are the destinations picked before (those the placement's slices hold). Those
	// that are still candidates (same cluster, SyncTarget name and UID) are kept first.
	Current []edgev1alpha1.SinglePlacement
}

// PickResult is what Pick decided.
type PickResult struct {
	// Picked are the destinations, sorted by cluster then SyncTarget name, as the engine sorts
	// destinations.
	Picked []edgev1alpha1.SinglePlacement
	// Kept is how many of Picked were picked before.
	Kept int
	// Status, Reason and Message are those of the DestinationsPicked condition.
	Status  metav1.ConditionStatus
	Reason  string
	Message string
}

// spreadGroup is the candidates of one value of the spreadBy label.
type spreadGroup struct {
	value string
	rank  uint64      // prefers one value over another on a tie
	cands []Candidate // by preference: current picks first, then by rank
	kept  int         // how many of cands are current picks
	quota int         // how many to pick
}

// Pick picks min(N, len(Candidates)) of the candidates. It is deterministic: the same request
// gives the same result, whatever the order of Candidates and Current.
//
// Without SpreadBy, the current picks that are still candidates are kept (the best ranked of
// them if there are more than N), and the rest are filled by rank: a hash of the placement's
// UID and the SyncTarget's UID. With SpreadBy, the labelled candidates are grouped by value and
// the picks are dealt out one at a time to the value with the fewest so far that has
// candidates left (water-filling), so that the counts of two values differ by at most one
// unless the smaller has no candidate left; a tie goes to a value that holds a current pick not
// yet counted, then by a hash of the placement's UID and the value. Within a value the current
// picks come first. Unlabelled candidates are picked only when the labelled ones cannot fill N.
// So a pick moves only when it stops being a candidate, when N shrinks, or when the spread can
// be made even (a value gained candidates while another has two picks more).
func Pick(req PickRequest) PickResult {
	current := make(map[destinationID]bool, len(req.Current))
	for _, d := range req.Current {
		current[idOf(d)] = true
	}
	rankOf := func(c Candidate) uint64 {
		return hashOf(string(req.PlacementUID), string(c.Destination.SyncTargetUID), c.Destination.Cluster, c.Destination.SyncTargetName)
	}
	prefer := func(a, b Candidate) int {
		ac, bc := current[idOf(a.Destination)], current[idOf(b.Destination)]
		if ac != bc {
			if ac {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(rankOf(a), rankOf(b)), compareDestinations(a.Destination, b.Destination))
	}

	byValue := map[string]*spreadGroup{}
	unlabelled := &spreadGroup{}
	for _, c := range req.Candidates {
		g := unlabelled
		if req.SpreadBy != "" && c.Labelled {
			if g = byValue[c.SpreadValue]; g == nil {
				g = &spreadGroup{value: c.SpreadValue, rank: hashOf(string(req.PlacementUID), "value", c.SpreadValue)}
				byValue[c.SpreadValue] = g
			}
		}
		g.cands = append(g.cands, c)
		if current[idOf(c.Destination)] {
			g.kept++
		}
	}
	groups := make([]*spreadGroup, 0, len(byValue))
	for _, g := range byValue {
		groups = append(groups, g)
	}
	slices.SortFunc(groups, func(a, b *spreadGroup) int { return strings.Compare(a.value, b.value) })

	// Deal the picks out to the values, then what is left to the unlabelled.
	left := req.N
	for left > 0 {
		var best *spreadGroup
		for _, g := range groups {
			if g.quota < len(g.cands) && (best == nil || dealBefore(g, best)) {
				best = g
			}
		}
		if best == nil {
			break
		}
		best.quota++
		left--
	}
	unlabelled.quota = min(left, len(unlabelled.cands))

	res := PickResult{}
	for _, g := range append(groups, unlabelled) {
		slices.SortFunc(g.cands, prefer)
		for _, c := range g.cands[:g.quota] {
			res.Picked = append(res.Picked, c.Destination)
			if current[idOf(c.Destination)] {
				res.Kept++
			}
		}
	}
	slices.SortFunc(res.Picked, compareDestinations)
	res.Status, res.Reason, res.Message = pickCondition(req, groups, unlabelled, len(res.Picked))
	res.Message += pickedNames(res.Picked)
	return res
}

// dealBefore tells whether the next pick goes to a rather than b: the value with fewer picks so
// far, then one that holds a current pick not yet counted, then by rank.
func dealBefore(a, b *spreadGroup) bool {
	if a.quota != b.quota {
		return a.quota < b.quota
	}
	if ak, bk := a.quota < a.kept, b.quota < b.kept; ak != bk {
		return ak
	}
	if a.rank != b.rank {
		return a.rank < b.rank
	}
	return a.value < b.value
}

// pickCondition says how the pick went: the counts, per value when spreading, or why fewer
// than N.
func pickCondition(req PickRequest, groups []*spreadGroup, unlabelled *spreadGroup, picked int) (metav1.ConditionStatus, string, string) {
	var spread string
	if req.SpreadBy != "" && picked > 0 {
		shown := slices.Clone(groups)
		// The values with the most picks first, so that a cut list shows the larger ones.
		slices.SortStableFunc(shown, func(a, b *spreadGroup) int { return cmp.Compare(b.quota, a.quota) })
		var parts []string
		for i, g := range shown {
			if g.quota == 0 {
				break
			}
			if i == maxReportedSpreadValues {
				if more := countPicked(shown[i:]); more == 1 {
					parts = append(parts, "and 1 more value")
				} else {
					parts = append(parts, fmt.Sprintf("and %d more values", more))
				}
				break
			}
			parts = append(parts, fmt.Sprintf("%d %s", g.quota, g.value))
		}
		if unlabelled.quota > 0 {
			parts = append(parts, fmt.Sprintf("%d without the label", unlabelled.quota))
		}
		spread = fmt.Sprintf(", spread by %s: %s", req.SpreadBy, strings.Join(parts, ", "))
	}
	if req.SpreadBy != "" && picked > 0 && len(groups) == 0 {
		// A spreadBy that no candidate has is most likely a typo: say so rather than report
		// a spread that did not happen as fine.
		return metav1.ConditionFalse, edgev1alpha1.ReasonSpreadLabelMissing,
			fmt.Sprintf("picked %d of %d, not spread: no eligible SyncTarget, nor its Location, has the label %q that spec.spreadBy names; check the key",
				picked, req.N, req.SpreadBy)
	}
	if picked < req.N {
		why := "no SyncTarget matches"
		switch {
		case picked == 1:
			why = "only 1 SyncTarget matches"
		case picked > 1:
			why = fmt.Sprintf("only %d SyncTargets match", picked)
		}
		return metav1.ConditionFalse, edgev1alpha1.ReasonTooFewSyncTargets,
			fmt.Sprintf("picked %d of %d: %s%s", picked, req.N, why, spread)
	}
	return metav1.ConditionTrue, edgev1alpha1.ReasonPicked,
		fmt.Sprintf("picked %d of %d matching SyncTargets%s", picked, len(req.Candidates), spread)
}

// pickedNames names the picked SyncTargets, the first maxReportedSpreadValues of them, for the
// condition's message: which N were picked (the slices hold them all).
func pickedNames(picked []edgev1alpha1.SinglePlacement) string {
	if len(picked) == 0 {
		return ""
	}
	var names []string
	for i, p := range picked {
		if i == maxReportedSpreadValues {
			names = append(names, fmt.Sprintf("and %d more", len(picked)-i))
			break
		}
		names = append(names, p.SyncTargetName)
	}
	return "; picked: " + strings.Join(names, ", ")
}

// countPicked counts the groups that got a pick.
func countPicked(groups []*spreadGroup) int {
	n := 0
	for _, g := range groups {
		if g.quota > 0 {
			n++
		}
	}
	return n
}

// destinationID identifies a SyncTarget: a SyncTarget deleted and made again under the same
// name is another one.
type destinationID struct {
	cluster, name string
	uid           types.UID
}

func idOf(d edgev1alpha1.SinglePlacement) destinationID {
	return destinationID{d.Cluster, d.SyncTargetName, d.SyncTargetUID}
}

// compareDestinations orders destinations by cluster, then SyncTarget name.
func compareDestinations(a, b edgev1alpha1.SinglePlacement) int {
	return cmp.Or(strings.Compare(a.Cluster, b.Cluster), strings.Compare(a.SyncTargetName, b.SyncTargetName))
}

// hashOf is a stable 64-bit hash of the parts (FNV-1a, the parts separated by a zero byte).
func hashOf(parts ...string) uint64 {
	h := fnv.New64a()
	for _, p := range parts {
		_, _ = h.Write([]byte(p))
		_, _ = h.Write([]byte{0})
	}
	return h.Sum64()
}
