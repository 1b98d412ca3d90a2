#!/usr/bin/env bash
# Installs what longhaul's build, tests and demo need on Debian 12, as root.
# Idempotent: only missing packages are installed. "scripts/deps.sh bench"
# adds the peers make bench-analyze times.
set -euo pipefail

need=()
have() { command -v "$1" >/dev/null 2>&1; }
have ip || need+=(iproute2)
have git || need+=(git)
# real peers the emulator's tests run across the emulated path
have ping || need+=(iputils-ping)
have iperf3 || need+=(iperf3)
have nginx || need+=(nginx-light)
have curl || need+=(curl)
# captures: the lab keeps pcaps
have tcpdump || need+=(tcpdump)
# make bench-analyze (scripts/deps.sh bench) times analyze against tcptrace
# and tshark; make test and make demo do not need them.
if [ "${1:-}" = bench ]; then
	have tcptrace || need+=(tcptrace)
	# INSTR=N counts instructions under cachegrind
	have valgrind || need+=(valgrind)
	have tshark || need+=(tshark)
fi
# the exporter is scraped by a real Prometheus; promtool checks its output and alert rules
have prometheus && have promtool || need+=(prometheus)
# GNU time: max RSS for make bench-analyze
have /usr/bin/time || need+=(time)
# the report is checked in a real browser (headless)
have chromium || need+=(chromium)
# plan --emit is checked with the real tools: ansible-core applies the
# playbook (sysctl -w) in a namespace; make deb is installed with dpkg
# and read with man and systemd-analyze
have ansible-playbook || need+=(ansible-core)
have sysctl || need+=(procps)
have man || need+=(man-db)
have systemd-analyze || need+=(systemd)
# make race: the race detector needs cgo, so a C compiler.
have gcc || need+=(gcc libc6-dev)
# the Go bootstrap (no Go installed): zip, openssl for the checksum
# database's signature
[ -s /etc/ssl/certs/ca-certificates.crt ] || need+=(ca-certificates) # https: apt's curl only recommends it
have unzip || need+=(unzip)
have openssl || need+=(openssl)

if ((${#need[@]})); then
	if [ "$(id -u)" != 0 ]; then
		echo "deps: missing packages ${need[*]}; run as root or: sudo apt-get install ${need[*]}" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# tuned's own profile loader and sysctl plugin check plan --emit tuned;
# the package is unpacked, not installed, so no tuned daemon starts and
# retunes this host (tests find it through LONGHAUL_TUNED_DIR).
tuned_dir=/var/cache/longhaul/tuned
if [ ! -d "$tuned_dir/usr/lib/python3/dist-packages/tuned" ] && [ "$(id -u)" = 0 ]; then
	tmp=$(mktemp -d)
	if (cd "$tmp" && apt-get download -qq tuned >/dev/null 2>&1); then
		mkdir -p "$tuned_dir" && dpkg-deb -x "$tmp"/tuned_*.deb "$tuned_dir"
	else
		echo "deps: could not download Debian's tuned package: the tuned profile test will skip" >&2
	fi
	rm -rf "$tmp"
fi

for go in go /usr/local/go/bin/go /usr/lib/go/bin/go; do
	if have "$go"; then
		exit 0
	fi
done
# No Go: fetch the pinned toolchain from the module proxy, checksum-verified.
if [ "$(id -u)" != 0 ] && [ -z "${GO_INSTALL_DIR:-}" ]; then
	echo "deps: Go is not installed; run as root to bootstrap Go into /usr/local/go (make deps), or install Go >= 1.26 from https://go.dev/dl" >&2
	exit 1
fi
exec "$(dirname "$0")/go-bootstrap.sh"
