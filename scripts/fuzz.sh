#!/usr/bin/env bash
# Runs every fuzz target of every package for $FUZZTIME each (default 20s).
# Targets are found with `go test -list`, so a new FuzzXxx beside the code
# it breaks is fuzzed without editing this script or the Makefile.
#
#   FUZZTIME=10m scripts/fuzz.sh            every target, ten minutes each
#   scripts/fuzz.sh ./loader/...            the targets of some packages
#   FUZZFLAGS='-parallel 1' scripts/fuzz.sh extra flags for `go test`
#
# A failing input is written to the package's testdata/fuzz/<Target>/ (Go
# then replays it in every `go test`). The script goes on with the other
# targets and exits non-zero at the end, naming the failed ones.
set -euo pipefail

GO=${GO:-go}
FUZZTIME=${FUZZTIME:-20s}
FUZZFLAGS=${FUZZFLAGS:-}
pkgs=("$@")
[ ${#pkgs[@]} -gt 0 ] || pkgs=(./...)

# `go test -list` prints a package's matching names, then "ok <package>".
# A package whose tests do not build fails the whole script here rather than
# losing its targets silently.
if ! listing=$($GO test -run '^$' -list '^Fuzz' "${pkgs[@]}" 2>&1); then
	echo "$listing" | grep -v '^ok\|^?\|^Fuzz' >&2
	echo "fuzz: listing the fuzz targets failed" >&2
	exit 1
fi
targets=()
names=()
while read -r first second _; do
	case "$first" in
	Fuzz*) names+=("$first") ;;
	ok)
		for n in "${names[@]+"${names[@]}"}"; do targets+=("$second $n"); done
		names=()
		;;
	esac
done <<<"$listing"

if [ ${#targets[@]} -eq 0 ]; then
	echo "fuzz: no fuzz targets in ${pkgs[*]}" >&2
	exit 1
fi
echo "fuzz: ${#targets[@]} targets, $FUZZTIME each:"
printf '  %s\n' "${targets[@]}"

failed=()
for t in "${targets[@]}"; do
	pkg=${t% *}
	name=${t#* }
	echo "=== $name ($pkg)"
	for attempt in 1 2; do
		log=$(mktemp)
		# shellcheck disable=SC2086 # FUZZFLAGS is a list of flags
		if $GO test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" $FUZZFLAGS "$pkg" 2>&1 | tee "$log"; then
			rm -f "$log"
			break
		fi
		# Go's fuzzing coordinator before go1.27 can fail a target with
		# "context deadline exceeded" as -fuzztime runs out, having found
		# nothing (golang/go#75804; likelier on a loaded machine). That is
		# retried once; a real failure writes its input and is not.
		if [ $attempt -eq 1 ] && grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written' "$log"; then
			echo "fuzz: $name: the fuzzing engine timed out without a failing input; once more"
			rm -f "$log"
			continue
		fi
		rm -f "$log"
		failed+=("$name ($pkg)")
		break
	done
done

if [ ${#failed[@]} -gt 0 ]; then
	echo "fuzz: ${#failed[@]} of ${#targets[@]} targets failed:" >&2
	printf '  %s\n' "${failed[@]}" >&2
	exit 1
fi
echo "fuzz: all ${#targets[@]} targets passed"
