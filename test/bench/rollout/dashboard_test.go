package main

import "testing"

// Each extra placement's group holds the destinations i with i mod 10 equal to its number.
func TestGroupSize(t *testing.T) {
	for _, n := range []int{1, 9, 10, 300, 1000, 1005} {
		want := make([]int, extraGroups)
		for i := 0; i < n; i++ {
			want[i%extraGroups]++
		}
		for g := 0; g < extraGroups; g++ {
			if got := groupSize(n, g); got != want[g] {
				t.Errorf("groupSize(%d, %d) = %d, want %d", n, g, got, want[g])
			}
		}
	}
}
