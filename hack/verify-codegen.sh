#!/usr/bin/env bash
# Fails if anything generated differs from what `make codegen` makes of the current sources. It
# regenerates in a scratch copy of the tree, so the working tree is left as it is.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
paths=(pkg/apis config/crds config/exports config/workload-crds docs/api-reference.md docs/cli-reference.md)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
tar --exclude=./bin --exclude=./.git --exclude=./_output -cf - . | tar -C "$scratch" -xf -
# apigen names a changed schema after the git HEAD; let it read this repository's.
(cd "$scratch" && BIN="$root/bin" GIT_DIR="$root/.git" hack/codegen.sh >"$scratch/.codegen.log" 2>&1) || {
  echo "verify-codegen: code generation failed:" >&2
  cat "$scratch/.codegen.log" >&2
  exit 1
}
drift=0
for p in "${paths[@]}"; do
  if ! diff -r -u "$root/$p" "$scratch/$p" >"$scratch/.diff" 2>&1; then
    drift=1
    echo "verify-codegen: $p is out of date:" >&2
    head -n 40 "$scratch/.diff" >&2
  fi
done
if [ "$drift" -ne 0 ]; then
  echo "verify-codegen: run 'make codegen' and commit the result." >&2
  exit 1
fi
echo ">> generated files are up to date"
