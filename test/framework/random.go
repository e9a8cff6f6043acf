package framework

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"
)

// SeedEnv names the environment variable that fixes the seed of Rand, to replay a run.
const SeedEnv = "EDGE_E2E_SEED"

// Rand returns a random source for a test's choices (which fault, at which point), seeded from
// EDGE_E2E_SEED if it is set, else from the clock. The seed is logged, and repeated if the test
// fails, so that `EDGE_E2E_SEED=<seed> go test -run <test>` makes the same choices again.
func Rand(t testing.TB) *rand.Rand {
	t.Helper()
	seed, fromEnv, err := seedFrom(os.Getenv(SeedEnv), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	how := "from the clock"
	if fromEnv {
		how = "from " + SeedEnv
	}
	t.Logf("random seed %d (%s); replay with %s=%d", seed, how, SeedEnv, seed)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("this run's random seed was %d: replay it with %s=%d", seed, SeedEnv, seed)
		}
	})
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// seedFrom is the seed from the text of EDGE_E2E_SEED, or from now if the text is empty.
func seedFrom(env string, now time.Time) (seed uint64, fromEnv bool, err error) {
	if env == "" {
		return uint64(now.UnixNano()), false, nil
	}
	seed, err = strconv.ParseUint(env, 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("%s=%q is not a seed: give the unsigned integer a test logged", SeedEnv, env)
	}
	return seed, true, nil
}

// RandomPoints returns n distinct points of [lo, hi), chosen by r, in increasing order: where a
// test injects its faults, e.g. after how many of a fan-out's objects arrived. It returns fewer
// than n if the interval holds fewer.
func RandomPoints(r *rand.Rand, n, lo, hi int) []int {
	if hi <= lo || n <= 0 {
		return nil
	}
	n = min(n, hi-lo)
	picked := map[int]bool{}
	out := make([]int, 0, n)
	for len(out) < n {
		x := lo + r.IntN(hi-lo)
		if !picked[x] {
			picked[x] = true
			out = append(out, x)
		}
	}
	slices.Sort(out)
	return out
}
