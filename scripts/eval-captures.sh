#!/usr/bin/env bash
# eval-captures: score analyze against the labelled public captures of
# testdata/corpus/manifest.tsv (make eval-captures). It fetches nothing:
# it judges the captures present under CORPUS_DIR, laid out as
# CORPUS_DIR/owner+repo/path-in-repo (e.g. a checkout or an export of
# ntop/nDPI at the manifest's commit under CORPUS_DIR/ntop+nDPI), checks
# each file's sha256 against the manifest, and prints every miss (with
# the label's reason) and the score. Exit 1 when a flow gets a verdict
# the manifest marks wrong or breaks an output invariant.
#
#   CORPUS_DIR=testdata/corpus/cache   where the captures are
#   VERBOSE=1                          print every flow, not only misses
set -euo pipefail
cd "$(dirname "$0")/.."
CORPUS_DIR=${CORPUS_DIR:-testdata/corpus/cache}
GO=${GO:-go}
args=(-manifest testdata/corpus/manifest.tsv -root "$CORPUS_DIR")
if [ -n "${VERBOSE:-}" ]; then args+=(-v); fi
if [ ! -d "$CORPUS_DIR" ]; then
	echo "eval-captures: $CORPUS_DIR: no such directory: put the captures the manifest names there (CORPUS_DIR=... to use another)" >&2
	exit 2
fi
exec "$GO" run ./cmd/evalcaptures "${args[@]}"
