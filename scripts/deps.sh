#!/usr/bin/env bash
# Installs what longhaul's build, tests and demo need on Debian 12, as root.
# Idempotent: only missing packages are installed.
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
# captures: the lab keeps pcaps; analyze is benchmarked against tcptrace and tshark
have tcpdump || need+=(tcpdump)
have tcptrace || need+=(tcptrace)
have tshark || need+=(tshark)
# the exporter is scraped by a real Prometheus; promtool checks its output and alert rules
have prometheus && have promtool || need+=(prometheus)
# GNU time: max RSS for make bench-analyze
have /usr/bin/time || need+=(time)
# the report is checked in a real browser (headless)
have chromium || need+=(chromium)

if ((${#need[@]})); then
	if [ "$(id -u)" != 0 ]; then
		echo "deps: missing packages ${need[*]}; run as root or: sudo apt-get install ${need[*]}" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

for go in go /usr/local/go/bin/go /usr/lib/go/bin/go; do
	if have "$go"; then
		exit 0
	fi
done
echo "deps: Go is not installed; install Go >= 1.23 from https://go.dev/dl (Debian 12's golang is too old)" >&2
exit 1
