#!/usr/bin/env bash
# bench-analyze: how fast does `longhaul analyze` read a big capture, in
# CPU per packet and in memory, next to tcptrace and tshark on the same
# file in the same run. Root (network namespaces) unless CAPTURE is
# given; ~6 min; make bench-analyze.
#
# Recipe: two throwaway namespaces joined by a veth pair (198.18.0.1 and
# .2, the benchmarking range of RFC 2544), segmentation offload off on
# both ends (gso_max_segs 1: one MSS per packet, as on the wire), iperf3
# with 4 streams, tcpdump -s 128 on the sender's end until the file
# reaches SIZE_MB. Then each tool reads the file REPEATS times,
# interleaved so that drifting noise hits them alike, from the page cache
# (the file was just written; 20+ GB of RAM here): wall seconds, CPU
# seconds (user + sys) and CPU ns per packet, max RSS (GNU time). A last,
# untimed run of longhaul writes a CPU profile (pprof) of it next to the
# results. A capture made here and the namespaces are removed on exit,
# whatever happens.
#
#   OUT=bench-analyze.json  results file
#   PROFILE=FILE            longhaul's CPU profile (default: OUT without
#                           .json, then -cpu.pprof; go tool pprof BIN FILE)
#   SIZE_MB=600             capture size (>= 500 for the issue's target)
#   REPEATS=3               runs per tool
#   BIN=bin/longhaul        the binary to time
#   BASE=BIN2               another longhaul build to time alongside, as
#                           "longhaul-base" (e.g. main's, for the speedup)
#   TOOLS="longhaul tcptrace tshark"
#   INSTR=N                 also count each tool's instructions on the
#                           capture's first N packets (valgrind
#                           --tool=cachegrind; deterministic, unlike CPU
#                           time on a shared machine; ~2 min for 500000;
#                           not tshark's, which would take half an hour)
#   CAPTURE=FILE            time this capture instead of making one (no
#                           root needed; the file is left as it is)
#   KEEP_CAPTURE=FILE       keep the capture made there instead of
#                           deleting it (e.g. to refresh
#                           cmd/longhaul/default.pgo, see
#                           BenchmarkAnalyzeFile in internal/tcpflow)
set -euo pipefail

OUT=${OUT:-bench-analyze.json}
SIZE_MB=${SIZE_MB:-600}
REPEATS=${REPEATS:-3}
BIN=${BIN:-bin/longhaul}
TOOLS=${TOOLS:-longhaul tcptrace tshark}
BASE=${BASE:-}
CAPTURE=${CAPTURE:-}
KEEP_CAPTURE=${KEEP_CAPTURE:-}
PROFILE=${PROFILE:-${OUT%.json}-cpu.pprof}
TIME=/usr/bin/time

die() { echo "bench-analyze: $*" >&2; exit 1; }

[ -n "$CAPTURE" ] || [ "$(id -u)" = 0 ] || die "needs root (network namespaces) to make a capture; run: sudo make bench-analyze (or CAPTURE=FILE to time one)"
[ -z "$CAPTURE" ] || [ -f "$CAPTURE" ] || die "CAPTURE=$CAPTURE: no such file"
[ -x "$BIN" ] || die "$BIN not found; run make build"
[ -z "$BASE" ] || [ -x "$BASE" ] || die "BASE=$BASE: not an executable"
[ -z "$BASE" ] || TOOLS="longhaul-base $TOOLS"
need="$TIME"
INSTR=${INSTR:-}
[ -z "$INSTR" ] || [[ "$INSTR" =~ ^[1-9][0-9]*$ ]] || die "INSTR=$INSTR: a number of packets, e.g. INSTR=500000"
[ -z "$INSTR" ] || need="$need valgrind tcpdump"
[ -n "$CAPTURE" ] || need="$need ip iperf3 tcpdump"
for t in $need $TOOLS; do
	case $t in longhaul | longhaul-base) continue ;; esac
	command -v "$t" >/dev/null || die "$t not installed; run scripts/deps.sh bench (as root), or leave it out: TOOLS=\"longhaul\""
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
	if [ -z "$CAPTURE" ]; then
		ip netns del "$A" 2>/dev/null || true
		ip netns del "$B" 2>/dev/null || true
	fi
	if [ -z "$CAPTURE" ] && [ -n "$KEEP_CAPTURE" ] && [ -f "$CAP" ]; then
		mv "$CAP" "$KEEP_CAPTURE" && echo "bench-analyze: capture kept in $KEEP_CAPTURE" >&2
	fi
	rm -rf "$WORK"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
trap 'echo "bench-analyze: failed at line $LINENO: $BASH_COMMAND" >&2' ERR

drops=0
if [ -n "$CAPTURE" ]; then
	CAP=$CAPTURE
	echo "bench-analyze: timing $CAP" >&2
else
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
fi
bytes=$(stat -c %s "$CAP")

# Not timed: checks the file and counts what is in it (the table's first
# line: "Capture F: pcap, 776,208 packets (776,208 TCP), 5 TCP flow(s), ...").
"$BIN" analyze "$CAP" >"$WORK/analysis.txt"
head=$(head -1 "$WORK/analysis.txt")
packets=$(sed -n 's/.*: [a-z ()]*, \([0-9,]*\) packets.*/\1/p' <<<"$head" | tr -d ,)
flows=$(sed -n 's/.*, \([0-9,]*\) TCP flow(s).*/\1/p' <<<"$head" | tr -d ,)
[ -n "$packets" ] && [ -n "$flows" ] || die "cannot read the analysis of the capture: $head"
mb=$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1e6 }')
echo "bench-analyze: capture $mb MB, $packets packets, $flows flows (tcpdump dropped ${drops:-0})" >&2

# The packet count is longhaul's; capinfos (Wireshark) checks it when
# installed.
if command -v capinfos >/dev/null; then
	n=$(capinfos -M -c "$CAP" 2>/dev/null | sed -n 's/^Number of packets: *\([0-9]*\).*/\1/p')
	[ -z "$n" ] || [ "$n" = "$packets" ] || die "longhaul counts $packets packets, capinfos $n"
fi

cmd_longhaul=("$BIN" analyze "$CAP")
cmd_longhaul_base=("$BASE" analyze "$CAP")
cmd_tcptrace=(tcptrace -n -l "$CAP")
cmd_tshark=(tshark -q -z conv,tcp -r "$CAP")

# timed TOOL: appends "tool wall_s user_s sys_s rss_kb" to $WORK/runs.
timed() {
	local name=$1
	local -n c="cmd_${name//-/_}"
	# Let the previous run's aftermath (tshark frees 2+ GB) settle.
	sync
	sleep 1
	"$TIME" -f '%e %U %S %M' -o "$WORK/time" "${c[@]}" >/dev/null 2>"$WORK/$name.err" || die "$name failed: $(tail -3 "$WORK/$name.err")"
	echo "$name $(tail -1 "$WORK/time")" >>"$WORK/runs"
}

: >"$WORK/runs"
for r in $(seq "$REPEATS"); do
	for tool in $TOOLS; do
		echo "bench-analyze: run $r/$REPEATS: $tool" >&2
		timed "$tool"
	done
done

# Instructions (INSTR=N): each tool once under cachegrind on the first N
# packets; "tool instructions" lines in $WORK/instr.
: >"$WORK/instr"
if [ -n "$INSTR" ]; then
	EX=$WORK/excerpt.pcap
	tcpdump -r "$CAP" -c "$INSTR" -w "$EX" 2>/dev/null || die "tcpdump could not cut the first $INSTR packets of $CAP"
	INSTR=$((INSTR < packets ? INSTR : packets))
	for tool in $TOOLS; do
		# tshark would take half an hour under valgrind.
		[ "$tool" != tshark ] || continue
		echo "bench-analyze: instructions: $tool on the first $INSTR packets (valgrind)" >&2
		declare -n c="cmd_${tool//-/_}"
		valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null "${c[@]//"$CAP"/"$EX"}" >/dev/null 2>"$WORK/vg.err" ||
			die "$tool under valgrind failed: $(tail -3 "$WORK/vg.err")"
		unset -n c
		n=$(sed -n 's/.*I *refs: *\([0-9,]*\).*/\1/p' "$WORK/vg.err" | tr -d ,)
		[ -n "$n" ] || die "no instruction count from valgrind for $tool"
		echo "$tool $n" >>"$WORK/instr"
	done
fi

# Not timed: where longhaul's CPU goes.
if [[ " $TOOLS " == *" longhaul "* ]]; then
	"$BIN" analyze --cpuprofile "$PROFILE" "$CAP" >/dev/null || die "longhaul --cpuprofile failed"
	echo "bench-analyze: CPU profile: $PROFILE (go tool pprof -top $BIN $PROFILE)" >&2
fi

# json quotes a string.
json() {
	local s=${1//\\/\\\\}
	s=${s//\"/\\\"}
	printf '"%s"' "$s"
}

version() {
	case $1 in
	longhaul) git describe --always --dirty 2>/dev/null || echo dev ;;
	longhaul-base) "$BASE" version 2>/dev/null | head -1 || echo dev ;;
	tcptrace) tcptrace -v 2>&1 | head -1 ;;
	tshark) tshark -v 2>/dev/null | head -1 ;;
	esac
}

# stats TOOL FIELD: median, min and max of a column of $WORK/runs (2 wall,
# 3 user, 4 sys; 0 is user + sys).
stats() {
	awk -v t="$1" -v f="$2" '
		$1 == t { v[n++] = f ? $f : $3 + $4 }
		END {
			for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (v[j] < v[i]) { x = v[i]; v[i] = v[j]; v[j] = x }
			med = (n % 2) ? v[int(n / 2)] : (v[n / 2 - 1] + v[n / 2]) / 2
			printf "%.3f %.3f %.3f\n", med, v[0], v[n - 1]
		}' "$WORK/runs"
}

# list TOOL FIELD: the runs' values, comma-separated.
list() {
	awk -v t="$1" -v f="$2" '$1 == t { printf "%s%.2f", s, f ? $f : $3 + $4; s = ", " }' "$WORK/runs"
}

maxrss() {
	awk -v t="$1" '$1 == t && $5 > m { m = $5 } END { printf "%.1f", m / 1024 }' "$WORK/runs"
}

declare -A cpu rss
for tool in $TOOLS; do
	read -r m _ _ <<<"$(stats "$tool" 0)"
	cpu[$tool]=$m
	rss[$tool]=$(maxrss "$tool")
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

# instr TOOL: its instruction count (INSTR), or nothing.
instr() { awk -v t="$1" '$1 == t { print $2 }' "$WORK/instr"; }

# paired A B: the ratio of A's CPU to B's in each round (their runs came
# one after the other, so a slow spell of the machine hits both), as
# median, lower and upper quartile: the noise that one ratio of medians
# hides.
paired() {
	awk -v a="$1" -v b="$2" '
		$1 == a { x[na++] = $3 + $4 }
		$1 == b { y[nb++] = $3 + $4 }
		function q(p, h, i) { h = p * (n - 1); i = int(h); return i + 1 < n ? r[i] + (h - i) * (r[i + 1] - r[i]) : r[i] }
		END {
			for (i = 0; i < na && i < nb; i++) if (y[i] > 0) r[n++] = x[i] / y[i]
			if (n == 0) { print "0 0 0"; exit }
			for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (r[j] < r[i]) { t = r[i]; r[i] = r[j]; r[j] = t }
			printf "%.2f %.2f %.2f\n", q(0.5), q(0.25), q(0.75)
		}' "$WORK/runs"
}

# ratios A B: A's CPU over B's, by the medians and per round (median,
# quartiles), as "ratio median q1 q3".
ratios() { echo "$(ratio "${cpu[$1]}" "${cpu[$2]}") $(paired "$1" "$2")"; }

# target NAME A B: the JSON members of a ratio target, A's CPU over B's.
target() {
	local r m q1 q3
	read -r r m q1 q3 <<<"$(ratios "$2" "$3")"
	printf ', "cpu_vs_%s": %s, "cpu_vs_%s_per_round": {"median": %s, "q1": %s, "q3": %s}' "$1" "$r" "$1" "$m" "$q1" "$q3"
}

# ratioline A B TARGET: the text line of a ratio target.
ratioline() {
	local r m q1 q3
	read -r r m q1 q3 <<<"$(ratios "$1" "$2")"
	printf '%s / %s CPU: %sx (target >= %sx); per round %sx, quartiles %s-%sx\n' "$1" "$2" "$r" "$3" "$m" "$q1" "$q3"
}

# The instruction ratios (INSTR), empty without both counts.
iratio() {
	local a b
	a=$(instr "$1") b=$(instr "$2")
	[ -z "$a" ] || [ -z "$b" ] || ratio "$a" "$b"
}
ivs_base=$(iratio longhaul-base longhaul)
ivs_tcptrace=$(iratio tcptrace longhaul)
{
	printf '{\n  "schema": "longhaul.bench-analyze/v3",\n'
	printf '  "date": "%s",\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	printf '  "host": {"kernel": "%s", "cpus": %d, "cpu": "%s", "mem_kb": %d},\n' \
		"$(uname -r)" "$(nproc)" "$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)" "$(awk '/MemTotal/ { print $2 }' /proc/meminfo)"
	printf '  "capture": {"bytes": %d, "packets": %d, "flows": %d, "snaplen": 128, "tcpdump_drops": %d, "recipe": %s},\n' \
		"$bytes" "$packets" "$flows" "${drops:-0}" \
		"$(json "$([ -n "$CAPTURE" ] && echo "given: $(basename "$CAPTURE")" || echo "veth in two namespaces, gso_max_segs 1, iperf3 -P 4 -b 400M, tcpdump -s 128 on the sender")")"
	printf '  "repeats": %d,\n  "tools": [\n' "$REPEATS"
	first=1
	for tool in $TOOLS; do
		read -r cm clo chi <<<"$(stats "$tool" 0)"
		read -r wm wlo whi <<<"$(stats "$tool" 2)"
		local_cmd="cmd_${tool//-/_}[*]"
		[ $first = 1 ] || printf ',\n'
		first=0
		printf '    {"tool": "%s", "version": %s, "command": %s, "wall_s": [%s], "cpu_s": [%s], "median_wall_s": %s, "min_wall_s": %s, "max_wall_s": %s, "median_cpu_s": %s, "min_cpu_s": %s, "max_cpu_s": %s, "cpu_ns_per_packet": %s, "mb_per_s": %s, "max_rss_mb": %s}' \
			"$tool" "$(json "$(version "$tool")")" "$(json "$(echo "${!local_cmd}" | sed "s|$CAP|CAPTURE|")")" \
			"$(list "$tool" 2)" "$(list "$tool" 0)" "$wm" "$wlo" "$whi" "$cm" "$clo" "$chi" \
			"$(awk -v c="$cm" -v p="$packets" 'BEGIN { printf "%.1f", c * 1e9 / p }')" \
			"$(awk -v w="$wm" -v b="$bytes" 'BEGIN { printf "%.1f", b / 1e6 / w }')" "${rss[$tool]}"
	done
	printf '\n  ]'
	if [ -n "${cpu[longhaul]:-}" ]; then
		printf ',\n  "profile": %s' "$(json "$(basename "$PROFILE")")"
		printf ',\n  "targets": {"max_rss_mb": %s, "max_rss_target_mb": 64' "${rss[longhaul]}"
		[ -z "${cpu[tcptrace]:-}" ] || { target tcptrace tcptrace longhaul; printf ', "cpu_vs_tcptrace_target": 5'; }
		[ -z "${cpu[longhaul-base]:-}" ] || { target base longhaul-base longhaul; printf ', "cpu_vs_base_target": 2'; }
		printf '}'
	fi
	if [ -s "$WORK/instr" ]; then
		printf ',\n  "instructions": {"packets": %d, "tool": "valgrind --tool=cachegrind --cache-sim=no"' "$INSTR"
		while read -r tool n; do printf ', "%s": %s' "$tool" "$n"; done <"$WORK/instr"
		[ -z "$ivs_tcptrace" ] || printf ', "vs_tcptrace": %s' "$ivs_tcptrace"
		[ -z "$ivs_base" ] || printf ', "vs_base": %s' "$ivs_base"
		printf '}'
	fi
	printf '\n}\n'
} >"$WORK/out.json"
cp "$WORK/out.json" "$OUT"

printf '\ncapture: %s MB, %s packets, %s flows (snaplen 128); %s runs each, interleaved, median [min-max]\n\n' "$mb" "$packets" "$flows" "$REPEATS"
printf '%-14s %22s %22s %9s %11s\n' tool "CPU s (user+sys)" "wall s" "ns/packet" "max RSS MB"
for tool in $TOOLS; do
	read -r cm clo chi <<<"$(stats "$tool" 0)"
	read -r wm wlo whi <<<"$(stats "$tool" 2)"
	printf '%-14s %22s %22s %9s %11s\n' "$tool" "$cm [$clo-$chi]" "$wm [$wlo-$whi]" \
		"$(awk -v c="$cm" -v p="$packets" 'BEGIN { printf "%.0f", c * 1e9 / p }')" "${rss[$tool]}"
done
if [ -n "${cpu[longhaul]:-}" ]; then
	printf '\n'
	[ -z "${cpu[longhaul-base]:-}" ] || ratioline longhaul-base longhaul 2
	[ -z "${cpu[tcptrace]:-}" ] || ratioline tcptrace longhaul 5
	printf 'longhaul max RSS %s MB (target <= 64); CPU profile %s\n' "${rss[longhaul]}" "$PROFILE"
fi
if [ -s "$WORK/instr" ]; then
	printf '\ninstructions on the first %s packets (valgrind --tool=cachegrind):\n' "$INSTR"
	while read -r tool n; do
		printf '%-14s %16s  %6s per packet\n' "$tool" "$n" "$(awk -v n="$n" -v p="$INSTR" 'BEGIN { printf "%.0f", n / p }')"
	done <"$WORK/instr"
	[ -z "$ivs_base" ] || printf 'longhaul-base / longhaul: %sx\n' "$ivs_base"
	[ -z "$ivs_tcptrace" ] || printf 'tcptrace / longhaul: %sx\n' "$ivs_tcptrace"
fi
echo "results: $OUT" >&2
