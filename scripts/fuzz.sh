#!/usr/bin/env bash
# Runs every native Go fuzz target in the module for $FUZZTIME each.
#
# Each package's test binary is built once, instrumented for fuzzing
# (go test -c -fuzz), and run for each of its targets in the package's
# directory as go test -fuzz runs it (the same cache of interesting
# inputs, failing inputs written to testdata/fuzz/<target>/): go test
# -fuzz would link the binary again for every target.
#
# Go 1.26's fuzz coordinator can fail a target with a bare "context
# deadline exceeded" at the -fuzztime boundary without any failing input
# (golang/go#75804, fixed in Go 1.27). A failure counts only when the run
# wrote a new failing input under testdata/fuzz/<target>/ (or failed for
# another reason); the race is retried, at most twice.
#
# FUZZ_BINDIR=DIR keeps the binaries there and uses those already there
# (scripts/test.sh builds them beside the unit tests, FUZZ_BUILD_ONLY=1,
# and runs them after: a fresh directory each time, never a stale one).
set -euo pipefail
FUZZTIME=${FUZZTIME:-3s}
go=${GO:-go}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
log=$work/log
bins=${FUZZ_BINDIR:-$work}
mkdir -p "$bins"
build_only=${FUZZ_BUILD_ONLY:-}
cache=$($go env GOCACHE)/fuzz

# corpus lists a target's checked-in and newly written inputs.
corpus() { ls "$1/testdata/fuzz/$2" 2>/dev/null | sort || true; }

# The targets, from the test files this build compiles (go list applies
# the build constraints); one go list instead of linking every package's
# test binary for go test -list.
pkgs=$($go list -f '{{.ImportPath}} {{.Dir}} {{join .TestGoFiles " "}} {{join .XTestGoFiles " "}}' ./...)
n=0
while read -r pkg dir files; do
	[ -n "$files" ] || continue
	targets=$(cd "$dir" && sed -nE 's/^func (Fuzz[A-Za-z0-9_]*)\(.*/\1/p' $files)
	[ -n "$targets" ] || continue
	bin=$bins/$(echo "$pkg" | tr / _).test
	[ -x "$bin" ] || $go test -c -fuzz=. -o "$bin" "$pkg"
	for target in $targets; do
		n=$((n + 1))
		[ -z "$build_only" ] || continue
		for attempt in 1 2 3; do
			echo "fuzz: $pkg $target ($FUZZTIME)"
			before=$(corpus "$dir" "$target")
			if (cd "$dir" && "$bin" -test.run='^$' -test.fuzz="^${target}\$" -test.fuzztime="$FUZZTIME" \
				-test.fuzzcachedir="$cache/$pkg" -test.timeout=10m -test.paniconexit0 </dev/null >"$log" 2>&1); then
				break
			fi
			after=$(corpus "$dir" "$target")
			if [ "$before" = "$after" ] && grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written' "$log"; then
				echo "fuzz: $target: Go's -fuzztime race (golang/go#75804), no failing input written; again" >&2
				continue
			fi
			cat "$log" >&2
			exit 1
		done
	done
done <<<"$pkgs"
if [ "$n" = 0 ]; then
	echo "fuzz: no fuzz targets found (go list ./... in $(pwd))" >&2
	exit 1
fi
if [ -n "$build_only" ]; then
	echo "fuzz: built the binaries of $n targets in $bins"
	exit 0
fi
echo "fuzz: $n targets"
