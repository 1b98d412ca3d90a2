#!/usr/bin/env bash
# bench-causes.sh: the path causes longhaul names, on emulated paths
# (root): issue 23's ground-truth matrix. Each case runs `longhaul test`
# (download on one stream, then 8 streams) over an emulated path with a
# known failure and big buffers at both ends (128 MiB, cubic), RUNS times,
# and prints what test named against what the path did: the direction's
# verdict and cause, the path rate it reports and its basis. On the same
# runs (MATRIX=1, the default) the server's end is captured (tcpdump -s
# 128 in its namespace: the sender of the download) and `longhaul
# analyze` judges the single-stream download in the capture, and
# `longhaul flows --netns` reads the server's sockets over the middle half
# of it (sampling them 20 times in between);
# each gets a column, and a tally per case ends the output (named right /
# runs, per tool; "weaker": a documented weaker verdict where the tool
# cannot see the cause).
#   RUNS=3 SHAPE="100ms 500Mbit/s" IPV6=1 MATRIX=0 scripts/bench-causes.sh [CASE...]
# (IPV6=1: the ends get 2001:2::/48 addresses too and test dials the
# server's IPv6 address; MATRIX=0: test only)
# Cases: clean, random-loss, shallow-buffer, bufferbloat, policer (at half
# the rate, 64 KB burst), reordering (5% held 30 ms), window-scale-stripped
# and cpu-bound (the server held to 0.01 of a core on its own 20 ms x
# 1 Gbit/s path: less does not bind at 100 Mbit/s) (all by default);
# competing (constant traffic at half the rate sharing the bottleneck
# towards the client, emulate --down-cross; not by default: an
# unresponsive constant load is a slower link to every end-to-end
# measure, so no tool names it; `longhaul lab causes` shares the path
# with another user's cubic download instead, which test names
# shared-bottleneck). test
# runs with --loss-probes (PROBES=0: without). KEEP=1 keeps the documents
# and captures (the directory is printed).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
L=${LONGHAUL:-$here/bin/longhaul}
RUNS=${RUNS:-3}
read -r rtt rate <<<"${SHAPE:-100ms 500Mbit/s}"
dur=${DURATION:-8s}
v6=() server='$LONGHAUL_SERVER'
if [ -n "${IPV6:-}" ]; then
	v6=(--ipv6) server='[$LONGHAUL_SERVER6]'
fi
out=$(mktemp -d /tmp/longhaul-causes.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$out"' EXIT
head -c 32 /dev/urandom | base64 >"$out/token"
chmod 600 "$out/token"
big="4096 131072 134217728"
half=$(awk -v r="$rate" 'BEGIN { n = r + 0; sub(/^[0-9.]+/, "", r); print n / 2 r }')
declare -A flags=(
	[clean]=""
	[random-loss]="--down-loss 0.01%"
	[shallow-buffer]="--down-queue 0.05bdp"
	[bufferbloat]="--down-queue 8bdp"
	[policer]="--down-policer $half/64KB"
	[reordering]="--down-reorder 5%/30ms"
	[window-scale-stripped]="--up-middlebox wscale=strip"
	[cpu-bound]="--server-cpu 0.01 --rtt 20ms --rate 1Gbit/s"
	[competing]="--down-cross $half"
)
probes=--loss-probes
[ "${PROBES:-1}" != 0 ] || probes=
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(clean random-loss shallow-buffer bufferbloat policer reordering window-scale-stripped cpu-bound)
matrix=${MATRIX:-1}
tally=$out/tally.tsv
: >"$tally"
printf '%-22s %-4s %-14s %-15s %-22s %-14s %-22s %-22s %s\n' case run single verdict cause path-rate analyze flows basis
for c in "${cases[@]}"; do
	extra=${flags[$c]-}
	for i in $(seq "$RUNS"); do
		doc="$out/$c-$i.json" pcap="$out/$c-$i.pcap" fl="$out/$c-$i.flows.json"
		srv="$L serve --auth $out/token --netns \$LONGHAUL_SERVER_NETNS 2>$out/serve.log"
		cli="$L test $server --auth $out/token --netns \$LONGHAUL_CLIENT_NETNS --download --duration $dur $probes --json >$doc"
		if [ "$matrix" = 1 ]; then
			# The sender's end captured; its sockets read over the middle
			# half of the single-stream download (it starts after the
			# session's set-up, a second and a few round trips).
			srv="tcpdump -i lh0 -s 128 -U -w $pcap 2>/dev/null & $srv"
			read -r wait span < <(awk -v d="$dur" -v r="$rtt" 'BEGIN { sub(/s$/, "", d); s = r + 0; if (r ~ /ms$/) s /= 1000; print 1 + 8 * s + d / 4, d / 2 }')
			cli="(sleep $wait; $L flows --netns \$LONGHAUL_SERVER_NETNS --interval ${span}s --json >$fl 2>/dev/null) & $cli; wait"
		fi
		# shellcheck disable=SC2086
		if ! "$L" emulate --rtt "$rtt" --rate "$rate" --cc cubic "${v6[@]}" $extra \
			--client-sysctl "net.ipv4.tcp_rmem=$big" --client-sysctl "net.ipv4.tcp_wmem=$big" \
			--server-sysctl "net.ipv4.tcp_rmem=$big" --server-sysctl "net.ipv4.tcp_wmem=$big" \
			--server "$srv" -- sh -c "$cli" 2>"$out/emulate.log"; then
			printf '%-22s %-4s %s\n' "$c" "$i" "not valid: $(tail -1 "$out/emulate.log")"
			continue
		fi
		an="$out/$c-$i.analyze.json"
		if [ "$matrix" = 1 ] && [ -s "$pcap" ]; then
			"$L" analyze --json "$pcap" >"$an" 2>/dev/null || true
		fi
		python3 "$here/scripts/causes-row.py" "$c" "$i" "$doc" "$an" "$fl" "$tally"
	done
done
python3 "$here/scripts/causes-row.py" --tally "$tally"
[ -z "${KEEP:-}" ] || echo "kept in $out" >&2
