#!/usr/bin/env bash
# bench-causes.sh: the path causes test names, on emulated paths (root).
# Each case runs `longhaul test` (download on one stream, then 8 streams)
# over an emulated path with a known failure and big buffers at both ends
# (128 MiB, cubic), RUNS times, and prints what test named against what
# the path did: the direction's verdict and cause, the path rate it
# reports and its basis. The start of issue 23's ground-truth matrix.
#   RUNS=3 SHAPE="100ms 500Mbit/s" IPV6=1 scripts/bench-causes.sh [CASE...]
# (IPV6=1: the ends get 2001:2::/48 addresses too and test dials the
# server's IPv6 address)
# Cases: clean, random-loss, shallow-buffer, bufferbloat, policer (at half
# the rate, 64 KB burst), reordering (5% held 30 ms), window-scale-stripped
# and cpu-bound (the server held to 0.01 of a core on its own 20 ms x
# 1 Gbit/s path: less does not bind at 100 Mbit/s) (all by default). test
# runs with --loss-probes (PROBES=0: without).
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
)
probes=--loss-probes
[ "${PROBES:-1}" != 0 ] || probes=
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(clean random-loss shallow-buffer bufferbloat policer reordering window-scale-stripped cpu-bound)
printf '%-22s %-4s %-14s %-15s %-22s %-14s %s\n' case run single verdict cause path-rate basis
for c in "${cases[@]}"; do
	extra=${flags[$c]-}
	for i in $(seq "$RUNS"); do
		doc="$out/$c-$i.json"
		# shellcheck disable=SC2086
		if ! "$L" emulate --rtt "$rtt" --rate "$rate" --cc cubic "${v6[@]}" $extra \
			--client-sysctl "net.ipv4.tcp_rmem=$big" --client-sysctl "net.ipv4.tcp_wmem=$big" \
			--server-sysctl "net.ipv4.tcp_rmem=$big" --server-sysctl "net.ipv4.tcp_wmem=$big" \
			--server "$L serve --auth $out/token --netns \$LONGHAUL_SERVER_NETNS 2>$out/serve.log" -- \
			sh -c "$L test $server --auth $out/token --netns \$LONGHAUL_CLIENT_NETNS --download --duration $dur $probes --json >$doc" \
			2>"$out/emulate.log"; then
			printf '%-22s %-4s %s\n' "$c" "$i" "not valid: $(tail -1 "$out/emulate.log")"
			continue
		fi
		python3 - "$c" "$i" "$doc" <<'PY'
import json, sys
c, i, path = sys.argv[1:]
d = json.load(open(path))
dl = next(x for x in d["directions"] if x["name"] == "download")
cause = (dl.get("cause") or {}).get("name", "-")
flags = dl["flow"].get("flags") or []
if "bufferbloat" in flags and cause == "-":
    cause = "(bloat flag)"
seen = [x["name"] for x in dl.get("seen") or []]
if seen and cause == "-":
    cause = "(seen " + ",".join(seen) + ")"
print(f'{c:22s} {i:4s} {dl["throughput_bps"]/1e6:9.1f} Mb/s {dl["flow"]["verdict"]:15s} {cause:22s} {d["path_rate_bps"]/1e6:9.1f} Mb/s {d["path_rate_basis"]}')
PY
	done
done
