#!/usr/bin/env bash
# Builds Tributary as of an earlier commit (default 2e28951, the build of two
# phases ago that the capacity test compares with) into the bench cache:
#   $TRIBUTARY_BENCH_CACHE/tributary-<commit>
# from `git archive` of that commit, so the work tree and its branch are
# untouched. Nothing here is committed: the binary and its sources live in
# the cache only. Prints the binary's path. Safe to run repeatedly; does
# nothing when the binary is present.
#   usage: build-baseline.sh [commit]
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
. "$here/lib.sh"

commit="${1:-2e28951}"
repo="$(git -C "$here" rev-parse --show-toplevel)"
full="$(git -C "$repo" rev-parse --verify --quiet "$commit^{commit}")" || {
  echo "build-baseline: commit $commit is not in $repo (fetch the full history)" >&2
  exit 1
}
bin="$TRIBUTARY_BENCH_CACHE/tributary-$commit"
if [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi
mkdir -p "$TRIBUTARY_BENCH_CACHE"
src="$(mktemp -d "$TRIBUTARY_BENCH_CACHE/src-$commit.XXXXXX")"
trap 'rm -rf "$src"' EXIT
git -C "$repo" archive "$full" | tar -x -C "$src"
(cd "$src" && CGO_ENABLED=0 go build -trimpath -o "$bin.tmp" ./cmd/tributary) >&2
mv "$bin.tmp" "$bin"
echo "$bin"
