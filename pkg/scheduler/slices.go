// Pure helpers that cut an EdgePlacement's destinations into SinglePlacementSlices and name them.

package scheduler

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	edgev1alpha1 "github.com/kcp-dev/edge-mc/pkg/apis/edge/v1alpha1"
)

// sliceNameHashLength is the number of hex digits of the placement name's SHA-256 that a
// shortened slice name carries (64 bits).
const sliceNameHashLength = 16

// DesiredSlice is one SinglePlacementSlice that a placement should own.
type DesiredSlice struct {
	Name         string
	Destinations []edgev1alpha1.SinglePlacement
}

// DesiredSlices cuts a placement's destinations into slices of at most maxPerSlice destinations
// (edgev1alpha1.MaxDestinationsPerSlice if maxPerSlice < 1), named by SliceName. There is always
// at least one slice, empty when there are no destinations, so that a placement that lost all
// its destinations says so.
func DesiredSlices(placementName string, destinations []edgev1alpha1.SinglePlacement, maxPerSlice int) []DesiredSlice {
	chunks := SplitDestinations(destinations, maxPerSlice)
	out := make([]DesiredSlice, len(chunks))
	for i, chunk := range chunks {
		out[i] = DesiredSlice{Name: SliceName(placementName, i), Destinations: chunk}
	}
	return out
}

// SplitDestinations cuts destinations, in order, into chunks of at most maxPerSlice
// (edgev1alpha1.MaxDestinationsPerSlice if maxPerSlice < 1). It returns at least one chunk,
// empty when there are no destinations. The chunks share the input's backing array but cannot
// append into one another.
func SplitDestinations(destinations []edgev1alpha1.SinglePlacement, maxPerSlice int) [][]edgev1alpha1.SinglePlacement {
	if maxPerSlice < 1 {
		maxPerSlice = edgev1alpha1.MaxDestinationsPerSlice
	}
	if len(destinations) == 0 {
		return [][]edgev1alpha1.SinglePlacement{{}}
	}
	out := make([][]edgev1alpha1.SinglePlacement, 0, (len(destinations)+maxPerSlice-1)/maxPerSlice)
	for start := 0; start < len(destinations); start += maxPerSlice {
		end := min(start+maxPerSlice, len(destinations))
		out = append(out, destinations[start:end:end])
	}
	return out
}

// SliceName names the index-th SinglePlacementSlice (index >= 0) of the placement:
// <placement>-<index> when that is short enough to be a DNS-1123 subdomain, otherwise a prefix
// of the placement name, 16 hex digits of the SHA-256 of the whole name, and the index. For any
// valid placement name (a DNS-1123 subdomain) the result is a valid object name, the same on
// every call, and different for different (placement, index) pairs unless someone names a
// placement after another's shortened slice prefix or SHA-256 collides on 64 bits.
func SliceName(placementName string, index int) string {
	suffix := "-" + strconv.Itoa(index)
	if len(placementName)+len(suffix) <= validation.DNS1123SubdomainMaxLength {
		return placementName + suffix
	}
	sum := sha256.Sum256([]byte(placementName))
	hash := hex.EncodeToString(sum[:])[:sliceNameHashLength]
	keep := validation.DNS1123SubdomainMaxLength - len(suffix) - 1 - len(hash)
	// A DNS-1123 label ends with a letter or digit, so the cut may not end in '-' or '.'.
	prefix := strings.TrimRight(placementName[:keep], "-.")
	if prefix == "" {
		return hash + suffix
	}
	return prefix + "-" + hash + suffix
}
