#!/usr/bin/env bash
# bench-analyze: how fast does `longhaul analyze` read a big capture, and
# in how much memory, next to tcptrace and tshark on the same file in the
# same run. Root (network namespaces); ~6 min; make bench-analyze.
#
# Recipe: two throwaway namespaces joined by a veth pair (198.18.0.1 and
# .2, the benchmarking range of RFC 2544), segmentation offload off on
# both ends (gso_max_segs 1: one MSS per packet, as on the wire), iperf3
# with 4 streams, tcpdump -s 128 on the sender's end until the file
# reaches SIZE_MB. Then each tool reads the file REPEATS times,
# interleaved so that drifting noise hits them alike, from the page cache
# (the file was just written; 20+ GB of RAM here): wall seconds, MB/s,
# max RSS (GNU time). The capture and the namespaces are removed on exit,
# whatever happens.
#
#   OUT=bench-analyze.json  results file
#   SIZE_MB=600             capture size (>= 500 for the issue's target)
#   REPEATS=3               runs per tool
#   BIN=bin/longhaul        the binary to time
#   TOOLS="longhaul tcptrace tshark"
#   KEEP_CAPTURE=FILE       keep the capture there instead of deleting it
#                           (e.g. to refresh cmd/longhaul/default.pgo, see
#                           BenchmarkAnalyzeFile in internal/tcpflow)
set -euo pipefail

OUT=${OUT:-bench-analyze.json}
SIZE_MB=${SIZE_MB:-600}
REPEATS=${REPEATS:-3}
BIN=${BIN:-bin/longhaul}
TOOLS=${TOOLS:-longhaul tcptrace tshark}
KEEP_CAPTURE=${KEEP_CAPTURE:-}
TIME=/usr/bin/time

die() { echo "bench-analyze: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (network namespaces); run: sudo make bench-analyze"
[ -x "$BIN" ] || die "$BIN not found; run make build"
for t in ip iperf3 tcpdump tcptrace tshark "$TIME"; do
	command -v "$t" >/dev/null || die "$t not installed; run scripts/deps.sh"
done
"$TIME" -f %M true >/dev/null 2>&1 || die "$TIME is not GNU time (needs -f %M); run scripts/deps.sh"

run=lhbench$$
A=$run-a B=$run-b
WORK=$(mktemp -d /var/tmp/bench-analyze.XXXXXX)
CAP=$WORK/bench.pcap
spid= tdpid= ipid=

cleanup() {
	local rc=$?
	# Only our own children that have not been reaped yet.
	for p in $ipid $tdpid $spid; do kill "$p" 2>/dev/null || true; done
	for p in $ipid $tdpid $spid; do wait "$p" 2>/dev/null || true; done
	ip netns del "$A" 2>/dev/null || true
	ip netns del "$B" 2>/dev/null || true
	if [ -n "$KEEP_CAPTURE" ] && [ -f "$CAP" ]; then
		mv "$CAP" "$KEEP_CAPTURE" && echo "bench-analyze: capture kept in $KEEP_CAPTURE" >&2
	fi
	rm -rf "$WORK"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
trap 'echo "bench-analyze: failed at line $LINENO: $BASH_COMMAND" >&2' ERR

echo "bench-analyze: generating a ${SIZE_MB} MB capture (iperf3 + tcpdump -s 128 in namespaces $A, $B)" >&2
ip netns add "$A"
ip netns add "$B"
ip link add "$run-v0" netns "$A" type veth peer name "$run-v1" netns "$B"
ip -n "$A" link set "$run-v0" name veth0
ip -n "$B" link set "$run-v1" name veth0
ip -n "$A" addr add 198.18.0.1/30 dev veth0
ip -n "$B" addr add 198.18.0.2/30 dev veth0
for ns in "$A" "$B"; do
	ip -n "$ns" link set lo up
	# One MSS per packet, as a capture on a router or a NIC without
	# offloads sees it (TSO super-frames would make few, huge packets).
	ip -n "$ns" link set veth0 gso_max_segs 1 gso_max_size 1500 up
done

ip netns exec "$B" iperf3 -s -1 -B 198.18.0.2 >/dev/null 2>&1 &
spid=$!
ip netns exec "$A" tcpdump -i veth0 -s 128 -B 131072 -n -w "$CAP" tcp port 5201 2>"$WORK/tcpdump.err" &
tdpid=$!
for _ in $(seq 100); do
	grep -q "listening on" "$WORK/tcpdump.err" 2>/dev/null && ss -N "$B" -ltn 2>/dev/null | grep -q 5201 && break
	sleep 0.1
done
# Rate-capped so that tcpdump keeps up on two cores; stopped once the
# file is big enough.
ip netns exec "$A" iperf3 -c 198.18.0.2 -P 4 -b 400M -t 120 -i 0 >/dev/null 2>&1 &
ipid=$!
want=$((SIZE_MB * 1000 * 1000))
while kill -0 "$ipid" 2>/dev/null; do
	size=$(stat -c %s "$CAP" 2>/dev/null || echo 0)
	[ "$size" -ge "$want" ] && break
	sleep 0.2
done
kill -INT "$ipid" 2>/dev/null || true
wait "$ipid" 2>/dev/null || true
ipid=
sleep 0.5
kill -TERM "$tdpid"
wait "$tdpid" 2>/dev/null || true
tdpid=
kill "$spid" 2>/dev/null || true
wait "$spid" 2>/dev/null || true
spid=
ip netns del "$A"
ip netns del "$B"
bytes=$(stat -c %s "$CAP")
[ "$bytes" -ge "$want" ] || die "capture reached only $bytes bytes of $want"
drops=$(sed -n 's/^\([0-9]*\) packets dropped by kernel.*/\1/p' "$WORK/tcpdump.err")

# Not timed: checks the file and counts what is in it (the table's first
# line: "Capture F: pcap, 776,208 packets (776,208 TCP), 5 TCP flow(s), ...").
"$BIN" analyze "$CAP" >"$WORK/analysis.txt"
head=$(head -1 "$WORK/analysis.txt")
packets=$(sed -n 's/.*: [a-z ()]*, \([0-9,]*\) packets.*/\1/p' <<<"$head" | tr -d ,)
flows=$(sed -n 's/.*, \([0-9,]*\) TCP flow(s).*/\1/p' <<<"$head" | tr -d ,)
[ -n "$packets" ] && [ -n "$flows" ] || die "cannot read the analysis of the capture: $head"
mb=$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1e6 }')
echo "bench-analyze: capture $mb MB, $packets packets, $flows flows (tcpdump dropped ${drops:-0})" >&2

cmd_longhaul=("$BIN" analyze "$CAP")
cmd_tcptrace=(tcptrace -n -l "$CAP")
cmd_tshark=(tshark -q -z conv,tcp -r "$CAP")

# timed TOOL REP: appends "tool wall_s rss_kb" to $WORK/runs.
timed() {
	local name=$1 cmd t0 t1
	local -n c="cmd_$name"
	# Let the previous run's aftermath (tshark frees 2+ GB) settle.
	sync
	sleep 1
	t0=$(date +%s%N)
	"$TIME" -f %M -o "$WORK/rss" "${c[@]}" >/dev/null 2>"$WORK/$name.err" || die "$name failed: $(tail -3 "$WORK/$name.err")"
	t1=$(date +%s%N)
	echo "$name $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }') $(tail -1 "$WORK/rss")" >>"$WORK/runs"
}

: >"$WORK/runs"
for r in $(seq "$REPEATS"); do
	for tool in $TOOLS; do
		echo "bench-analyze: run $r/$REPEATS: $tool" >&2
		timed "$tool"
	done
done

# json quotes a string.
json() {
	local s=${1//\\/\\\\}
	s=${s//\"/\\\"}
	printf '"%s"' "$s"
}

version() {
	case $1 in
	longhaul) git describe --always --dirty 2>/dev/null || echo dev ;;
	tcptrace) tcptrace -v 2>&1 | head -1 ;;
	tshark) tshark -v 2>/dev/null | head -1 ;;
	esac
}

# Per tool: median wall, spread, MB/s at the median, largest RSS.
summary() {
	local tool=$1
	awk -v t="$tool" -v bytes="$bytes" '
		$1 == t { w[n++] = $2; if ($3 > rss) rss = $3 }
		END {
			for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (w[j] < w[i]) { x = w[i]; w[i] = w[j]; w[j] = x }
			med = (n % 2) ? w[int(n / 2)] : (w[n / 2 - 1] + w[n / 2]) / 2
			printf "%.3f %.3f %.3f %.1f %.1f\n", med, w[0], w[n - 1], bytes / 1e6 / med, rss / 1024
		}' "$WORK/runs"
}

declare -A med mbps rss
{
	printf '{\n  "schema": "longhaul.bench-analyze/v1",\n'
	printf '  "date": "%s",\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	printf '  "host": {"kernel": "%s", "cpus": %d, "cpu": "%s", "mem_kb": %d},\n' \
		"$(uname -r)" "$(nproc)" "$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)" "$(awk '/MemTotal/ { print $2 }' /proc/meminfo)"
	printf '  "capture": {"bytes": %d, "packets": %d, "flows": %d, "snaplen": 128, "tcpdump_drops": %d, "recipe": "veth in two namespaces, gso_max_segs 1, iperf3 -P 4 -b 400M, tcpdump -s 128 on the sender"},\n' \
		"$bytes" "$packets" "$flows" "${drops:-0}"
	printf '  "repeats": %d,\n  "tools": [\n' "$REPEATS"
	first=1
	for tool in $TOOLS; do
		read -r m lo hi mbs r <<<"$(summary "$tool")"
		med[$tool]=$m mbps[$tool]=$mbs rss[$tool]=$r
		local_cmd="cmd_$tool[*]"
		[ $first = 1 ] || printf ',\n'
		first=0
		printf '    {"tool": "%s", "version": %s, "command": %s, "wall_s": [%s], "median_wall_s": %s, "min_wall_s": %s, "max_wall_s": %s, "mb_per_s": %s, "max_rss_mb": %s}' \
			"$tool" "$(json "$(version "$tool")")" "$(json "$(echo "${!local_cmd}" | sed "s|$CAP|CAPTURE|")")" \
			"$(awk -v t="$tool" '$1 == t { printf "%s%s", s, $2; s = ", " }' "$WORK/runs")" "$m" "$lo" "$hi" "$mbs" "$r"
	done
	printf '\n  ]'
	if [ -n "${mbps[longhaul]:-}" ] && [ -n "${mbps[tcptrace]:-}" ]; then
		speedup=$(awk -v a="${mbps[longhaul]}" -v b="${mbps[tcptrace]}" 'BEGIN { printf "%.2f", a / b }')
		printf ',\n  "targets": {"speedup_vs_tcptrace": %s, "speedup_target": 3, "max_rss_mb": %s, "max_rss_target_mb": 64, "met": %s}' \
			"$speedup" "${rss[longhaul]}" "$(awk -v s="$speedup" -v r="${rss[longhaul]}" 'BEGIN { print (s >= 3 && r <= 64) ? "true" : "false" }')"
	fi
	printf '\n}\n'
} >"$WORK/out.json"
cp "$WORK/out.json" "$OUT"

printf '\ncapture: %s MB, %s packets, %s flows (snaplen 128); %s runs each, median [min-max]\n\n' "$mb" "$packets" "$flows" "$REPEATS"
printf '%-10s %28s %10s %12s\n' tool "wall s" "MB/s" "max RSS MB"
for tool in $TOOLS; do
	read -r m lo hi mbs r <<<"$(summary "$tool")"
	printf '%-10s %28s %10s %12s\n' "$tool" "$m [$lo-$hi]" "$mbs" "$r"
done
[ -z "${speedup:-}" ] || printf '\nlonghaul vs tcptrace: %sx the MB/s (target >= 3x), max RSS %s MB (target <= 64)\n' "$speedup" "${rss[longhaul]}"
echo "results: $OUT" >&2
