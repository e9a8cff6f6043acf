#!/usr/bin/env bash
# Runs every Go fuzz target (func FuzzXxx in a _test.go file) of edge-mc's packages under pkg/
# and cmd/, one after the other, each for FUZZTIME (default 3s): `make test-fuzz` runs it, and
# docs/reliability.md says how to run it longer. FUZZ_MATCH (a regular expression, default all)
# picks targets by name. A failing input is written under the package's testdata/fuzz/ and makes
# the run fail; `go test -run <Target>/<file> <package>` replays it.
set -euo pipefail

FUZZTIME=${FUZZTIME:-3s}
FUZZ_MATCH=${FUZZ_MATCH:-.}
cd "$(dirname "$0")/.."

# fuzz_once runs one target for FUZZTIME and prints its output once it has ended; FUZZ_FLAKE is
# 1 after a failure that was only the engine's deadline: no new failing input and "context
# deadline exceeded". That output is not printed (its "--- FAIL" would read as a finding): a line
# says what happened, with the engine's last progress line, and the caller runs the target again.
fuzz_once() {
  local target=$1 pkg=$2 log before after
  log=$(mktemp)
  before=$(ls "$pkg/testdata/fuzz/$target" 2>/dev/null | wc -l)
  FUZZ_FLAKE=0
  if go test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" "$pkg" >"$log" 2>&1; then
    cat "$log"
    rm -f "$log"
    return 0
  fi
  after=$(ls "$pkg/testdata/fuzz/$target" 2>/dev/null | wc -l)
  if [ "$after" = "$before" ] && grep -q "context deadline exceeded" "$log" && ! grep -q "Failing input written" "$log"; then
    FUZZ_FLAKE=1
    echo ">> $target: the engine stopped at its deadline with \"context deadline exceeded\" and no failing input; its last progress:"
    grep '^fuzz: elapsed' "$log" | tail -1 | sed 's/^/   /'
  else
    cat "$log"
  fi
  rm -f "$log"
  return 1
}

fail_target() {
  if [ "$FUZZ_FLAKE" = 1 ]; then
    echo "FAIL: $1 in $2: the engine stopped at its deadline twice in a row with no failing input"
  else
    echo "FAIL: $1 in $2 (the input is under $2/testdata/fuzz/$1/)"
  fi
  exit 1
}

count=0
start=$(date +%s)
for file in $(git ls-files 'pkg/*_test.go' 'cmd/*_test.go'); do
  for target in $(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$file"); do
    [[ $target =~ $FUZZ_MATCH ]] || continue
    pkg=./$(dirname "$file")
    echo ">> fuzzing $target in $pkg for $FUZZTIME"
    if ! fuzz_once "$target" "$pkg"; then
      # Go's fuzzing engine itself sometimes ends a run at its -fuzztime deadline with "context
      # deadline exceeded" and no failing input (seen in make test, go1.26): its coordinator
      # reads the deadline off its context an instant before the workers' child context is
      # cancelled, and so takes the deadline for a worker's error (internal/fuzz, stop in
      # CoordinateFuzzing). That is no finding, so the target runs once more; a failing input
      # or a second failure fails.
      if [ "$FUZZ_FLAKE" = 1 ]; then
        echo ">> $target: running it once more"
        fuzz_once "$target" "$pkg" || fail_target "$target" "$pkg"
      else
        fail_target "$target" "$pkg"
      fi
    fi
    count=$((count + 1))
  done
done
echo ">> $count fuzz targets ran for $FUZZTIME each, in $(( $(date +%s) - start ))s"
