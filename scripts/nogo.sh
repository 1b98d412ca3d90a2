#!/usr/bin/env bash
# Runs a make target (default: demo) the way it runs on a Debian 12 that
# has no Go: in a private mount namespace where /usr/local/go and
# /usr/lib/go are empty, with a fresh HOME (no module or build cache) and
# a PATH without Go, so scripts/deps.sh must bootstrap the toolchain from
# the module proxy. Where /usr/local/go exists, the toolchain lands on a
# tmpfs over it and nothing outside the namespace changes; where it does
# not, deps.sh installs Go there for real. Root only.
#
#   scripts/nogo.sh [TARGET...]
set -euo pipefail
[ "$(id -u)" = 0 ] || { echo "nogo: run as root (it needs a mount namespace)" >&2; exit 1; }
repo=$(cd "$(dirname "$0")/.." && pwd)
targets=("${@:-demo}")
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
exec unshare --mount --propagation private bash -euo pipefail -c '
	for d in /usr/local/go /usr/lib/go; do
		if [ -d "$d" ]; then mount -t tmpfs -o size=1g tmpfs "$d"; fi
	done
	home=$1; repo=$2; shift 2
	if env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin bash -c "command -v go"; then
		echo "nogo: a go is still on PATH" >&2; exit 1
	fi
	cd "$repo"
	exec env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="$home" TERM=dumb make "$@"
' nogo "$home" "$repo" "${targets[@]}"
