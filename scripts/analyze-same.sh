#!/usr/bin/env bash
# analyze-same: do two longhaul builds print the same analysis? For a
# change meant to make analyze faster and nothing else: runs
# `analyze --json` and `analyze --json --timeline` of both builds on each
# capture given (files, or directories searched for *.pcap, *.pcapng and
# their .gz) and prints every capture whose output differs. Exit status
# 1 when one does, 0 when all are the same.
#
#   scripts/analyze-same.sh OLD_BIN NEW_BIN CAPTURE|DIR...
#
# e.g. against main's build, over the truth captures, the corpus
# (CORPUS_DIR of make eval-captures) and lab captures:
#   git stash; make build; cp bin/longhaul /tmp/lh-old; git stash pop; make build
#   scripts/analyze-same.sh /tmp/lh-old bin/longhaul internal/tcpflow/testdata/truth "$CORPUS_DIR" out/lab/captures
set -euo pipefail

die() { echo "analyze-same: $*" >&2; exit 2; }
[ $# -ge 3 ] || die "usage: $0 OLD_BIN NEW_BIN CAPTURE|DIR..."
old=$1 new=$2
shift 2
for b in "$old" "$new"; do [ -x "$b" ] || die "$b: not an executable"; done

list=$(mktemp)
trap 'rm -f "$list"' EXIT
for c in "$@"; do
	if [ -d "$c" ]; then
		find "$c" -type f \( -name '*.pcap' -o -name '*.pcapng' -o -name '*.pcap.gz' -o -name '*.pcapng.gz' -o -name '*.cap' \) >>"$list"
	elif [ -f "$c" ]; then
		echo "$c" >>"$list"
	else
		die "$c: no such file or directory"
	fi
done
sort -o "$list" "$list"
n=$(wc -l <"$list")
[ "$n" -gt 0 ] || die "no captures found in $*"

# out BIN FILE FLAGS...: the output's digest, exit status included (a
# capture that fails must fail the same way).
out() {
	local bin=$1 f=$2
	shift 2
	{
		rc=0
		"$bin" analyze "$@" "$f" 2>&1 || rc=$?
		echo "exit $rc"
	} | sha256sum | cut -c1-16
}

diff=0
while IFS= read -r f; do
	for flags in "--json" "--json --timeline"; do
		# shellcheck disable=SC2086 # flags is two fixed words
		if [ "$(out "$old" "$f" $flags)" != "$(out "$new" "$f" $flags)" ]; then
			echo "differs ($flags): $f"
			diff=$((diff + 1))
		fi
	done
done <"$list"
echo "analyze-same: $n captures, $diff outputs differ" >&2
[ "$diff" -eq 0 ]
