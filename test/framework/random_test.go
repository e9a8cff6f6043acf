package framework

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestSeedFrom(t *testing.T) {
	now := time.Unix(0, 1234567)
	if seed, fromEnv, err := seedFrom("", now); err != nil || fromEnv || seed != 1234567 {
		t.Errorf("no EDGE_E2E_SEED: %d, %v, %v; want the clock's 1234567", seed, fromEnv, err)
	}
	if seed, fromEnv, err := seedFrom("42", now); err != nil || !fromEnv || seed != 42 {
		t.Errorf("EDGE_E2E_SEED=42: %d, %v, %v", seed, fromEnv, err)
	}
	if _, _, err := seedFrom("-1", now); err == nil {
		t.Error("EDGE_E2E_SEED=-1 was accepted")
	}
}

func TestRandReplaysWithTheSameSeed(t *testing.T) {
	t.Setenv(SeedEnv, "7")
	a, b := Rand(t), Rand(t)
	for i := 0; i < 10; i++ {
		if x, y := a.Uint64(), b.Uint64(); x != y {
			t.Fatalf("draw %d differs with the same seed: %d, %d", i, x, y)
		}
	}
	seven := Rand(t).Uint64()
	t.Setenv(SeedEnv, "8")
	if Rand(t).Uint64() == seven {
		t.Error("seeds 7 and 8 draw the same first number")
	}
}

func TestRandomPoints(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct{ n, lo, hi, want int }{
		{3, 0, 50, 3}, {50, 0, 50, 50}, {60, 10, 20, 10}, {0, 0, 10, 0}, {3, 5, 5, 0}, {1, 9, 10, 1},
	} {
		got := RandomPoints(r, c.n, c.lo, c.hi)
		if len(got) != c.want {
			t.Errorf("RandomPoints(%d, [%d, %d)) = %v: %d points, want %d", c.n, c.lo, c.hi, got, len(got), c.want)
		}
		if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
			t.Errorf("RandomPoints(%d, [%d, %d)) = %v: not increasing and distinct", c.n, c.lo, c.hi, got)
		}
		for _, x := range got {
			if x < c.lo || x >= c.hi {
				t.Errorf("RandomPoints(%d, [%d, %d)) = %v: %d is outside", c.n, c.lo, c.hi, got, x)
			}
		}
	}
	a := RandomPoints(rand.New(rand.NewPCG(5, 5)), 4, 0, 1000)
	b := RandomPoints(rand.New(rand.NewPCG(5, 5)), 4, 0, 1000)
	if !slices.Equal(a, b) {
		t.Errorf("the same seed chose %v and %v", a, b)
	}
}
