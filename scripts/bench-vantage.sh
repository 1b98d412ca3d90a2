#!/usr/bin/env bash
# bench-vantage: analyze's verdicts on the same transfer captured at its
# sender and at its receiver, over emulated paths with a known failure
# (issue 51's vantage check). Each case runs `longhaul emulate` with an
# iperf3 download (iperf3 -R: the server sends), tcpdump in both
# namespaces (headers only, from the SYN), then `longhaul analyze --json`
# of each capture; the bulk flow's verdict and cause are scored against
# what that vantage can tell (the truth column).
#
#   sudo scripts/bench-vantage.sh [REPEATS]      (default 3; BIN=bin/longhaul)
#
# Needs root, iperf3 and tcpdump. Prints one line per case, repeat and
# vantage, then the score per vantage. Traffic stays between the
# namespaces emulate creates; they and the captures are removed on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin/longhaul}
REPEATS=${1:-3}
for c in iperf3 tcpdump python3; do
	command -v "$c" >/dev/null || { echo "bench-vantage: $c is missing: apt-get install $c" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "bench-vantage: run as root (network namespaces)" >&2; exit 2; }
[ -x "$BIN" ] || { echo "bench-vantage: $BIN missing: make build" >&2; exit 2; }
work=$(mktemp -d /tmp/bench-vantage.XXXXXX)
trap 'rm -rf "$work"' EXIT

# The client side, run by emulate in the client namespace: captures at
# both ends around an iperf3 download.
cat >"$work/client.sh" <<'EOF'
#!/bin/sh
d=$1; shift
ns=$(ip netns identify $$); sns=${ns%-c}-s
tcpdump -i lh0 -s 96 -U -w "$d/receiver.pcap" 2>/dev/null & p1=$!
ip netns exec "$sns" tcpdump -i lh0 -s 96 -U -w "$d/sender.pcap" 2>/dev/null & p2=$!
sleep 1
timeout 40 iperf3 -c "$LONGHAUL_SERVER" -R "$@" >/dev/null
sleep 1
kill -INT $p1 $p2; wait $p1 $p2
exit 0
EOF
chmod +x "$work/client.sh"

# case | emulate flags | iperf3 flags | sender truth | receiver truth
# A truth is VERDICT/CAUSE ("-" no cause, "*" any cause: not told there).
cases=(
	"loss-cubic-80ms|--rtt 80ms --rate 150Mbit/s --down-loss 0.03%|-t 10 -C cubic|loss-limited/random-loss|loss-limited/*"
	"loss-cubic-150ms|--rtt 150ms --rate 150Mbit/s --down-loss 0.03%|-t 12 -C cubic|loss-limited/random-loss|loss-limited/*"
	"loss-bbr-80ms|--rtt 80ms --rate 150Mbit/s --down-loss 0.03%|-t 10 -C bbr|bottleneck/*|bottleneck/*"
	"policer-cubic-80ms|--rtt 80ms --rate 150Mbit/s --down-policer 105Mbit/s/128KB|-t 10 -C cubic|loss-limited/policer|loss-limited/*"
	"blackhole-cubic-80ms|--rtt 80ms --rate 150Mbit/s --mtu 1280/blackhole|-t 10 -C cubic|loss-limited/pmtu-black-hole|*/*"
	"clean-cubic-80ms|--rtt 80ms --rate 150Mbit/s|-t 10 -C cubic|bottleneck/-|bottleneck/-"
	"clean-cubic-30ms|--rtt 30ms --rate 150Mbit/s|-t 10 -C cubic|bottleneck/-|bottleneck/-"
	"clean-bbr-80ms|--rtt 80ms --rate 150Mbit/s|-t 10 -C bbr|bottleneck/-|bottleneck/-"
)
buf=(--client-sysctl 'net.ipv4.tcp_rmem=4096 131072 67108864' --client-sysctl 'net.ipv4.tcp_wmem=4096 16384 67108864'
	--server-sysctl 'net.ipv4.tcp_rmem=4096 131072 67108864' --server-sysctl 'net.ipv4.tcp_wmem=4096 16384 67108864')

judge() { # capture truth -> "verdict cause ok|WRONG"
	"$BIN" analyze --json "$1" | python3 -c '
import json, sys
truth = sys.argv[1].split("/")
d = json.load(sys.stdin)
best = max((x for f in d["flows"] for x in f["directions"]), key=lambda x: x.get("bytes", 0))
v, c = best["verdict"], (best.get("cause") or {}).get("name", "-")
ok = truth[0] in ("*", v) and (truth[1] == "*" or truth[1] == c)
print(v, c, "ok" if ok else "WRONG")' "$2"
}

declare -A right total
printf '%-22s %-3s %-9s %-14s %-16s %s\n' case run vantage verdict cause score
for spec in "${cases[@]}"; do
	IFS='|' read -r name eflags iflags struth rtruth <<<"$spec"
	for r in $(seq 1 "$REPEATS"); do
		d="$work/$name-$r"; mkdir -p "$d"
		# shellcheck disable=SC2086
		timeout 120 "$BIN" emulate $eflags "${buf[@]}" --server "iperf3 -s" -- "$work/client.sh" "$d" $iflags >"$d/emulate.log" 2>&1 || true
		for v in sender receiver; do
			truth=$struth; [ $v = receiver ] && truth=$rtruth
			if [ -s "$d/$v.pcap" ]; then read -r verdict cause score < <(judge "$d/$v.pcap" "$truth"); else verdict=none cause=- score=WRONG; fi
			printf '%-22s %-3s %-9s %-14s %-16s %s\n' "$name" "$r" "$v" "$verdict" "$cause" "$score"
			total[$v]=$(( ${total[$v]:-0} + 1 ))
			[ "$score" = ok ] && right[$v]=$(( ${right[$v]:-0} + 1 ))
		done
		rm -f "$d"/*.pcap
	done
done
for v in sender receiver; do
	echo "score $v: ${right[$v]:-0}/${total[$v]:-0}"
done
