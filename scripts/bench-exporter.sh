#!/usr/bin/env bash
# bench-exporter: what `longhaul exporter` costs with many open sockets.
# Root (a network namespace); ~1 min; make bench-exporter.
#
# Recipe: a throwaway namespace with loopback up; sockhold
# (internal/exporter/sockhold) opens SOCKETS TCP sockets there (SOCKETS/2
# loopback connections, both ends) and holds them; the exporter runs in
# the host namespace with --netns, --interval 1s, and is scraped once a
# second with curl for DURATION seconds. Reported: the exporter's CPU
# (utime+stime from /proc over the scraped period, so sampling and
# scraping both count), each scrape's wall time (curl time_total), the
# last sample's duration (its own gauge), the sockets it tracks, the
# series it serves, and its memory (VmRSS, VmHWM). Everything is removed
# on exit, whatever happens.
#
#   OUT=bench-exporter.json  results file
#   SOCKETS=10000            sockets held open
#   DURATION=30              seconds of 1 s scrapes measured
#   INTERVAL=1s              the exporter's --interval (the target is for 1s)
#   BIN=bin/longhaul         the binary to measure
set -euo pipefail

OUT=${OUT:-bench-exporter.json}
SOCKETS=${SOCKETS:-10000}
DURATION=${DURATION:-30}
INTERVAL=${INTERVAL:-1s}
BIN=${BIN:-bin/longhaul}
GO=${GO:-go}
PORT=${PORT:-19979}

die() { echo "bench-exporter: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (network namespace); run: sudo make bench-exporter"
[ -x "$BIN" ] || die "$BIN not found; run make build"
for t in ip curl; do command -v "$t" >/dev/null || die "$t not installed; run scripts/deps.sh"; done

ns=lhbexp$$
WORK=$(mktemp -d /tmp/bench-exporter.XXXXXX)
hpid= epid=
cleanup() {
	local rc=$?
	for p in $epid $hpid; do kill "$p" 2>/dev/null || true; done
	for p in $epid $hpid; do wait "$p" 2>/dev/null || true; done
	ip netns del "$ns" 2>/dev/null || true
	rm -rf "$WORK"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

$GO build -o "$WORK/sockhold" ./internal/exporter/sockhold
ip netns add "$ns"
ip -n "$ns" link set lo up
ip netns exec "$ns" "$WORK/sockhold" -n "$SOCKETS" >"$WORK/hold.out" 2>&1 &
hpid=$!
for _ in $(seq 600); do grep -q ready "$WORK/hold.out" && break; kill -0 "$hpid" || die "sockhold: $(cat "$WORK/hold.out")"; sleep 0.1; done
grep -q ready "$WORK/hold.out" || die "sockhold did not open $SOCKETS sockets in 60 s"
echo "bench-exporter: $(cat "$WORK/hold.out") sockets held in $ns" >&2

"$BIN" exporter --netns "$ns" --listen "127.0.0.1:$PORT" --interval "$INTERVAL" 2>"$WORK/exporter.log" &
epid=$!
url=http://127.0.0.1:$PORT/metrics
for _ in $(seq 100); do curl -sf -o /dev/null "$url" && break; sleep 0.1; done
sleep 3 # a few samples: past the baseline

hz=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$epid/stat"; }
sys() { awk '{print $15}' "/proc/$epid/stat"; }
c0=$(cpu) s0=$(sys) t0=$(date +%s.%N)
: >"$WORK/scrapes"
for _ in $(seq "$DURATION"); do
	next=$(date -d "+1 second" +%s.%N)
	curl -sf -o "$WORK/metrics" -w '%{time_total}\n' "$url" >>"$WORK/scrapes"
	sleep "$(awk -v n="$next" -v t="$(date +%s.%N)" 'BEGIN {d = n - t; print (d > 0 ? d : 0)}')"
done
c1=$(cpu) s1=$(sys) t1=$(date +%s.%N)

metric() { awk -v m="$1" '$1 == m {print $2}' "$WORK/metrics"; }
cpu_pct=$(awk -v c0="$c0" -v c1="$c1" -v hz="$hz" -v t0="$t0" -v t1="$t1" 'BEGIN {printf "%.3f", 100 * (c1 - c0) / hz / (t1 - t0)}')
sys_pct=$(awk -v c0="$s0" -v c1="$s1" -v hz="$hz" -v t0="$t0" -v t1="$t1" 'BEGIN {printf "%.3f", 100 * (c1 - c0) / hz / (t1 - t0)}')
read -r p50 max < <(sort -n "$WORK/scrapes" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)], a[NR]}')
rss=$(awk '/^VmRSS/ {print $2 * 1024}' "/proc/$epid/status")
hwm=$(awk '/^VmHWM/ {print $2 * 1024}' "/proc/$epid/status")
series=$(grep -c '^longhaul_' "$WORK/metrics")
sample=$(metric longhaul_exporter_sample_duration_seconds)
tracked=$(metric longhaul_exporter_tracked_sockets)

cat >"$OUT" <<JSON
{
  "sockets_held": $SOCKETS,
  "sockets_tracked": $tracked,
  "duration_s": $DURATION,
  "interval": "$INTERVAL",
  "cpu_percent_of_one_core": $cpu_pct,
  "cpu_percent_in_kernel": $sys_pct,
  "scrape_seconds_p50": $p50,
  "scrape_seconds_max": $max,
  "sample_seconds_last": $sample,
  "longhaul_series": $series,
  "rss_bytes": $rss,
  "rss_peak_bytes": $hwm,
  "kernel": "$(uname -r)",
  "cpus": $(nproc),
  "load_average_1m": $(cut -d' ' -f1 /proc/loadavg)
}
JSON
cat "$OUT"
ok=1
awk -v v="$cpu_pct" 'BEGIN {exit !(v <= 2)}' || { echo "bench-exporter: CPU ${cpu_pct}% of a core, target <= 2%" >&2; ok=0; }
awk -v v="$max" 'BEGIN {exit !(v <= 0.1)}' || { echo "bench-exporter: slowest scrape ${max} s, target <= 0.1 s" >&2; ok=0; }
[ "$tracked" -ge "$SOCKETS" ] || { echo "bench-exporter: tracked $tracked of $SOCKETS sockets" >&2; ok=0; }
[ "$ok" = 1 ] && echo "bench-exporter: targets met" >&2
[ "$ok" = 1 ]
