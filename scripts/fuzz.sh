#!/usr/bin/env bash
# Runs every native Go fuzz target in the module for $FUZZTIME each.
set -euo pipefail
FUZZTIME=${FUZZTIME:-3s}
go=${GO:-go}
for pkg in $($go list ./...); do
	for target in $($go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
		echo "fuzz: $pkg $target ($FUZZTIME)"
		$go test -run='^$' -fuzz="^${target}\$" -fuzztime="$FUZZTIME" "$pkg" >/tmp/longhaul-fuzz.log 2>&1 || {
			cat /tmp/longhaul-fuzz.log >&2
			exit 1
		}
	done
done
