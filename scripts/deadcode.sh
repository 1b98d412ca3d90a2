#!/usr/bin/env bash
# Reports unreachable functions (golang.org/x/tools/cmd/deadcode) that
# scripts/deadcode.allow does not explain, and fails if there are any.
# Each allow line is "path:Func  reason"; the reason is required.
set -euo pipefail
cd "$(dirname "$0")/.."
go=${GO:-go}
deadcode=${DEADCODE:-}
if [ -z "$deadcode" ]; then
	if command -v deadcode >/dev/null; then
		deadcode=deadcode
	else
		GOBIN=$(pwd)/bin $go install golang.org/x/tools/cmd/deadcode@v0.52.0
		deadcode=$(pwd)/bin/deadcode
	fi
fi
allow=scripts/deadcode.allow
missing_reason=$(grep -vE '^(#|$)' "$allow" | awk 'NF < 2' || true)
if [ -n "$missing_reason" ]; then
	echo "deadcode: allow lines without a reason:" >&2
	echo "$missing_reason" >&2
	exit 1
fi
unexplained=0
while IFS= read -r line; do
	file=${line%%:*}
	fn=${line##*unreachable func: }
	# A whole package may be allowed with "path/  reason".
	if grep -qE "^(${file}:${fn}|$(dirname "$file")/)[[:space:]]" "$allow"; then
		continue
	fi
	echo "deadcode: $line" >&2
	unexplained=$((unexplained + 1))
done < <("$deadcode" ./... 2>&1)
if [ "$unexplained" -gt 0 ]; then
	echo "deadcode: $unexplained unreachable function(s): remove them, or explain each in $allow" >&2
	exit 1
fi
echo "deadcode: nothing unexplained"
