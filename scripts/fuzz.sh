#!/usr/bin/env bash
# Runs every native Go fuzz target in the module for $FUZZTIME each.
#
# Go 1.26's fuzz coordinator can fail a target with a bare "context
# deadline exceeded" at the -fuzztime boundary without any failing input
# (golang/go#75804, fixed in Go 1.27). A failure counts only when the run
# wrote a new failing input under testdata/fuzz/<target>/ (or failed for
# another reason); the race is retried, at most twice.
set -euo pipefail
FUZZTIME=${FUZZTIME:-3s}
go=${GO:-go}
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# corpus lists a target's checked-in and newly written inputs.
corpus() { ls "$1/testdata/fuzz/$2" 2>/dev/null | sort || true; }

for pkg in $($go list ./...); do
	dir=$($go list -f '{{.Dir}}' "$pkg")
	for target in $($go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
		for attempt in 1 2 3; do
			echo "fuzz: $pkg $target ($FUZZTIME)"
			before=$(corpus "$dir" "$target")
			if $go test -run='^$' -fuzz="^${target}\$" -fuzztime="$FUZZTIME" "$pkg" >"$log" 2>&1; then
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
done
