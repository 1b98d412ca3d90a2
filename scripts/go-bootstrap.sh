#!/usr/bin/env bash
# Installs the Go toolchain pinned in scripts/go-toolchain.sum when no Go
# is installed, the way the go command fetches a toolchain itself: the
# module golang.org/toolchain@v0.0.1-goVERSION.linux-ARCH from the module
# proxy, its zip hashed with the module hash (dirhash "h1:", SHA-256 over
# the sorted "sha256  name" lines of its files) and checked against the
# pinned go.sum line. That line was written by `go mod download`, which
# verified it against the checksum database's log; at install time the
# checksum database's current answer (fetched through the proxy, its
# signed tree head checked with openssl when it is installed) must agree
# too. Not done here, unlike go's own client: the log's inclusion proof.
#
#   GO_INSTALL_DIR=/usr/local/go GOPROXY=https://proxy.golang.org scripts/go-bootstrap.sh
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
pins=$here/go-toolchain.sum
dest=${GO_INSTALL_DIR:-/usr/local/go}
proxy=${GOPROXY:-https://proxy.golang.org}
proxy=${proxy%%[,|]*}
case "$proxy" in off | direct | "") proxy=https://proxy.golang.org ;; esac
# sum.golang.org's verifier key (cmd/go/internal/modfetch/key.go).
sumdb_key=sum.golang.org+033de0ae+Ac4zctda0e5eza+HJyk9SxEdh+s3Ux18htTTAD8OuAn8

die() { echo "go-bootstrap: $*" >&2; exit 1; }

case "$(uname -m)" in
x86_64) arch=amd64 ;;
aarch64 | arm64) arch=arm64 ;;
*) die "no pinned Go toolchain for $(uname -m): install Go >= 1.26 from https://go.dev/dl" ;;
esac
modver=$(awk -v a="linux-$arch" '$1 == "golang.org/toolchain" && $2 ~ a"$" {print $2; exit}' "$pins")
want=$(awk -v v="$modver" '$1 == "golang.org/toolchain" && $2 == v {print $3}' "$pins")
[ -n "$want" ] || die "$pins has no golang.org/toolchain line for linux-$arch"
for tool in curl unzip sha256sum base64; do
	command -v "$tool" >/dev/null || die "$tool not found (apt-get install curl unzip coreutils)"
done

# h1 is Go's module hash (golang.org/x/mod/sumdb/dirhash.Hash1) of the
# files under a directory, named relative to it.
h1() {
	local hex
	hex=$(cd "$1" && find . -type f -printf '%P\n' | LC_ALL=C sort | tr '\n' '\0' | xargs -0 sha256sum | sha256sum | cut -c1-64)
	printf "h1:%s\n" "$(printf "$(printf %s "$hex" | sed 's/../\\x&/g')" | base64)"
}

# sumdb_h1 prints the checksum database's h1 for the zip, read through
# the proxy, after checking the signature on the tree head it came with.
sumdb_h1() {
	local body sig key tmp
	body=$(curl -fsS --max-time 30 "$proxy/sumdb/sum.golang.org/lookup/golang.org/toolchain@$modver") || return 1
	if command -v openssl >/dev/null; then
		tmp=$(mktemp -d)
		printf '%s\n' "$body" | awk '/^go.sum database tree$/ {on=1} on && /^$/ {exit} on' >"$tmp/msg"
		sig=$(printf '%s\n' "$body" | awk '$1 == "\342\200\224" && $2 == "sum.golang.org" {print $3}')
		printf %s "$sig" | base64 -d | tail -c 64 >"$tmp/sig"
		key=$(printf %s "$sumdb_key" | cut -d+ -f3-)
		{ printf '\x30\x2a\x30\x05\x06\x03\x2b\x65\x70\x03\x21\x00'; printf %s "$key" | base64 -d | tail -c 32; } >"$tmp/key.der"
		if ! openssl pkeyutl -verify -pubin -keyform DER -inkey "$tmp/key.der" -rawin -in "$tmp/msg" -sigfile "$tmp/sig" >/dev/null 2>&1; then
			rm -rf "$tmp"
			return 2
		fi
		rm -rf "$tmp"
	fi
	printf '%s\n' "$body" | awk -v v="$modver" '$1 == "golang.org/toolchain" && $2 == v {print $3}'
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
url=$proxy/golang.org/toolchain/@v/$modver.zip
echo "go-bootstrap: no Go installed: fetching golang.org/toolchain@$modver from $proxy" >&2
rc=0
curl -fsL --retry 2 --max-time 600 -o "$tmp/toolchain.zip" "$url" || rc=$?
case $rc in
0) ;;
60 | 77) die "cannot verify the TLS certificate of $proxy (curl exit $rc): apt-get install ca-certificates" ;;
*) die "the Go module proxy $proxy is unreachable ($url, curl exit $rc): install Go >= 1.26 from https://go.dev/dl" ;;
esac
unzip -q "$tmp/toolchain.zip" -d "$tmp/x"
got=$(h1 "$tmp/x")
[ "$got" = "$want" ] || die "golang.org/toolchain@$modver: checksum mismatch: zip $got, go-toolchain.sum $want: not installing"
rc=0
db=$(sumdb_h1) || rc=$?
case $rc in
0) [ "$db" = "$want" ] || die "golang.org/toolchain@$modver: the checksum database says $db, go-toolchain.sum $want: not installing" ;;
2) die "the checksum database's tree head for $modver has a bad signature: not installing" ;;
*) echo "go-bootstrap: checksum database unreachable through $proxy: relying on the pinned checksum" >&2 ;;
esac
src=$tmp/x/golang.org/toolchain@$modver
chmod -R a+rX "$src"
chmod a+x "$src"/bin/* "$src"/pkg/tool/*/*
if [ -d "$dest" ] && [ -z "$(ls -A "$dest")" ]; then
	mv "$src"/* "$dest"/ # an empty directory (a mount point) is filled
elif [ -e "$dest" ]; then
	die "$dest exists and is not empty: remove it or set GO_INSTALL_DIR"
else
	mkdir -p "$(dirname "$dest")"
	mv "$src" "$dest"
fi
echo "go-bootstrap: installed $("$dest/bin/go" version) in $dest ($got)" >&2
