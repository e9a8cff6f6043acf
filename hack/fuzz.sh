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

count=0
start=$(date +%s)
for file in $(git ls-files 'pkg/*_test.go' 'cmd/*_test.go'); do
  for target in $(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$file"); do
    [[ $target =~ $FUZZ_MATCH ]] || continue
    pkg=./$(dirname "$file")
    echo ">> fuzzing $target in $pkg for $FUZZTIME"
    go test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" "$pkg" || {
      echo "FAIL: $target in $pkg (the input is under $pkg/testdata/fuzz/$target/)"
      exit 1
    }
    count=$((count + 1))
  done
done
echo ">> $count fuzz targets ran for $FUZZTIME each, in $(( $(date +%s) - start ))s"
