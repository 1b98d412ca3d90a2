#!/usr/bin/env bash
# Builds the Debian package from a built binary and generated man pages,
# with dpkg-deb alone (no debhelper): the static binary, man pages, shell
# completions, every systemd unit found under deploy/ at build time, and
# the Prometheus alert rules and Grafana dashboards under deploy/ (in
# /usr/share/longhaul/prometheus and /usr/share/longhaul/grafana).
#
#   BIN=bin/longhaul MAN=out/man DEPLOY=deploy OUT=out/deb VERSION=... scripts/mkdeb.sh
#
# COMPRESS=xz (the default, what Debian ships) or gzip or none: the
# members' compression, which changes nothing that is installed (the
# tests build with none: xz takes 7 s for the binary).
#
# Prints the path of the .deb on stdout.
set -euo pipefail

BIN=${BIN:-bin/longhaul}
MAN=${MAN:-out/man}
DEPLOY=${DEPLOY:-deploy}
OUT=${OUT:-out/deb}
COMPRESS=${COMPRESS:-xz}
case "$COMPRESS" in xz | gzip | none) ;; *) echo "mkdeb: COMPRESS=$COMPRESS: xz, gzip or none" >&2; exit 1 ;; esac
die() { echo "mkdeb: $*" >&2; exit 1; }
[ -n "${VERSION:-}" ] || [ -x "$BIN" ] || die "$BIN: no binary: run make build first"
VERSION=${VERSION:-$("$BIN" version --json | sed -n 's/.*"version": "\(.*\)".*/\1/p')}

# Debian versions start with a digit: a tag v1.2.3 (or 1.2.3, and what
# git describe makes of a later commit, v1.2.3-4-gHASH) becomes 1.2.3...,
# an untagged build 0.0~gitYYYYMMDD.HASH (sorts before any release). A
# bare commit hash (git describe --always without a tag) is not a
# version even when it starts with a digit: 8d6dd56 would sort above
# every later 0.0~git build, whose install dpkg would call a downgrade.
case "$VERSION" in
[0-9]*.[0-9]*) debver=$VERSION ;;
v[0-9]*.[0-9]*) debver=${VERSION#v} ;;
*)
	hash=$(git rev-parse --short=12 HEAD 2>/dev/null || echo 0)
	day=$(git log -1 --format=%cd --date=format:%Y%m%d 2>/dev/null || date -u +%Y%m%d)
	debver=0.0~git$day.$hash
	;;
esac
debver=$(printf %s "$debver" | tr -c 'A-Za-z0-9.+~\n' '+')
# --print-version: the Debian version alone (tests, release scripts).
if [ "${1:-}" = --print-version ]; then
	echo "$debver"
	exit 0
fi
[ -x "$BIN" ] || die "$BIN: no binary: run make build first"
ls "$MAN"/*.1 >/dev/null 2>&1 || die "$MAN: no man pages: run make man first"
command -v dpkg-deb >/dev/null || die "dpkg-deb not found: apt-get install dpkg"
case "$("$BIN" version --json | sed -n 's/.*"platform": "\(.*\)".*/\1/p')" in
linux/amd64) arch=amd64 ;;
linux/arm64) arch=arm64 ;;
linux/386) arch=i386 ;;
*) arch=$(dpkg --print-architecture) ;;
esac

stage=$(mktemp -d)
chmod 0755 "$stage"
trap 'rm -rf "$stage"' EXIT
install -D -m 0755 "$BIN" "$stage/usr/bin/longhaul"
install -d "$stage/usr/share/man/man1"
for page in "$MAN"/*.1; do
	gzip -9n -c "$page" >"$stage/usr/share/man/man1/$(basename "$page").gz"
done
install -d "$stage/usr/share/bash-completion/completions" "$stage/usr/share/zsh/vendor-completions" "$stage/usr/share/fish/vendor_completions.d"
"$BIN" completion bash >"$stage/usr/share/bash-completion/completions/longhaul"
"$BIN" completion zsh >"$stage/usr/share/zsh/vendor-completions/_longhaul"
"$BIN" completion fish >"$stage/usr/share/fish/vendor_completions.d/longhaul.fish"
units=()
for unit in "$DEPLOY"/*.service "$DEPLOY"/*.socket "$DEPLOY"/*.timer "$DEPLOY"/systemd/*.service "$DEPLOY"/systemd/*.socket "$DEPLOY"/systemd/*.timer; do
	[ -f "$unit" ] || continue
	install -D -m 0644 "$unit" "$stage/lib/systemd/system/$(basename "$unit")"
	units+=("$(basename "$unit")")
done
# The exporter's alert rules (not their promtool unit tests), scrape jobs
# and file_sd examples, dashboards and their Grafana provisioning file.
for f in "$DEPLOY"/prometheus/*.yml "$DEPLOY"/grafana/*.json "$DEPLOY"/grafana/*.yml; do
	[ -f "$f" ] || continue
	case "$f" in *.test.yml) continue ;; esac
	install -D -m 0644 "$f" "$stage/usr/share/longhaul/$(basename "$(dirname "$f")")/$(basename "$f")"
done
install -d "$stage/usr/share/doc/longhaul"
cat >"$stage/usr/share/doc/longhaul/copyright" <<'EOF'
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: longhaul

Files: *
Copyright: the longhaul authors
License: not stated in the source repository

Files: internal/report/uplot/*
Copyright: Leon Sorokin
License: MIT (embedded in the binary; full text in the source, internal/report/uplot/LICENSE)
EOF

install -d "$stage/DEBIAN"
size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
cat >"$stage/DEBIAN/control" <<EOF
Package: longhaul
Version: $debver
Architecture: $arch
Maintainer: longhaul developers <longhaul@localhost>
Installed-Size: $size
Section: net
Priority: optional
Recommends: iproute2
Suggests: iperf3, nginx-light, curl, tcpdump
Description: explains, fixes and proves slow TCP transfers over long paths
 longhaul says what limits a TCP transfer over a long path (path model,
 host audit, packet captures, live sockets), the smallest change that
 fixes it (plan, apply, rollback; emitted for Ansible, tuned, Kubernetes,
 nmstate), and proves it on an emulated copy of the path.
EOF
if ((${#units[@]})); then
	# Units are reloaded, not enabled: the administrator decides what runs.
	# Under dpkg --root (DPKG_ROOT set) the host's systemd is left alone.
	cat >"$stage/DEBIAN/postinst" <<'EOF'
#!/bin/sh
set -e
if [ "$1" = configure ] && [ -z "${DPKG_ROOT:-}" ] && [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null 2>&1 || true
fi
EOF
	cp "$stage/DEBIAN/postinst" "$stage/DEBIAN/postrm"
	chmod 0755 "$stage/DEBIAN/postinst" "$stage/DEBIAN/postrm"
fi
(cd "$stage" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z | xargs -0 md5sum >DEBIAN/md5sums)

mkdir -p "$OUT"
deb="$OUT/longhaul_${debver}_${arch}.deb"
dpkg-deb --root-owner-group -Z"$COMPRESS" --build "$stage" "$deb" >/dev/null
echo "$deb"
