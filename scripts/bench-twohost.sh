#!/usr/bin/env bash
# bench-twohost: does `longhaul test` fill a long fat path, and at what
# CPU cost, next to iperf3 on the same emulated path?
#
# On an emulated 1 Gbit/s x 200 ms path with big buffers at both ends
# (tcp_rmem/tcp_wmem max 128 MiB, cubic), REPEATS times, interleaved:
#   iperf3 -R  (the server sends) for $SECS s, the first $OMIT s omitted;
#   longhaul test --download --streams 0 --duration $SECS s (its steady
#   half is judged), longhaul serve on the far end.
# Each run reports the goodput against the path's ceiling 1e9 x 1448/1538
# and the CPU seconds (user + system) of the sender and the receiver
# processes per GB moved. It prints PASS/FAIL against the targets
# (>= 95% of the goodput ceiling; no more CPU per GB than iperf3) and
# never exits non-zero on a FAIL: this is a benchmark, not a test.
#
# Environment: LONGHAUL=PATH (default bin/longhaul), REPEATS=N (default
# 2), SECS=N (default 30), OMIT=N (default 10), OUT=FILE (default
# bench/twohost.json). Needs root, iperf3, python3.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LONGHAUL=${LONGHAUL:-$here/bin/longhaul}
REPEATS=${REPEATS:-2}
SECS=${SECS:-30}
OMIT=${OMIT:-10}
OUT=${OUT:-$here/bench/twohost.json}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
head -c 32 /dev/urandom | base64 >"$work/token"
chmod 600 "$work/token"
big="4096 131072 134217728"
path=(emulate --rtt 200ms --rate 1Gbit/s --cc cubic
	--client-sysctl "net.ipv4.tcp_rmem=$big" --client-sysctl "net.ipv4.tcp_wmem=$big"
	--server-sysctl "net.ipv4.tcp_rmem=$big" --server-sysctl "net.ipv4.tcp_wmem=$big")

# cpu PIDFILE: user+system seconds of the process (it must still run).
cat >"$work/cpu.sh" <<'EOF'
#!/bin/sh
pid=$(cat "$1")
awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$pid/stat"
EOF
chmod +x "$work/cpu.sh"

run_iperf() { # $1: run index
	local d=$work/iperf-$1
	mkdir -p "$d"
	"$LONGHAUL" "${path[@]}" --server "sh -c 'iperf3 -s -1 >/dev/null & echo \$! > $d/server.pid; wait'" -- \
		sh -c "sleep 0.5; /usr/bin/time -f '%U %S' -o $d/client.time iperf3 -c 198.18.0.2 -R -t $SECS -O $OMIT --json > $d/iperf.json; $work/cpu.sh $d/server.pid > $d/server.cpu 2>/dev/null || true" \
		2>"$d/emulate.log"
	python3 - "$d" <<'EOF'
import json, sys
d = sys.argv[1]
r = json.load(open(d + "/iperf.json"))
bps = r["end"]["sum_received"]["bits_per_second"]
moved = r["end"]["sum_received"]["bytes"]
u, s = map(float, open(d + "/client.time").read().split()[-2:])
try:
    srv = float(open(d + "/server.cpu").read())
except Exception:
    srv = float("nan")
print(json.dumps({"tool": "iperf3", "goodput_bps": bps, "receiver_cpu_s": u + s, "sender_cpu_s": srv, "bytes": moved}))
EOF
}

run_longhaul() { # $1: run index
	local d=$work/longhaul-$1
	mkdir -p "$d"
	"$LONGHAUL" "${path[@]}" --server "sh -c '$LONGHAUL serve --auth $work/token 2>$d/serve.log & echo \$! > $d/server.pid; wait'" -- \
		sh -c "/usr/bin/time -f '%U %S' -o $d/client.time $LONGHAUL test 198.18.0.2 --auth $work/token --download --streams 0 --duration ${SECS}s --json > $d/test.json 2>$d/test.log; $work/cpu.sh $d/server.pid > $d/server.cpu" \
		2>"$d/emulate.log"
	python3 - "$d" <<'EOF'
import json, sys
d = sys.argv[1]
t = json.load(open(d + "/test.json"))
down = [x for x in t["directions"] if x["name"] == "download"][0]
ph = [p for p in t["phases"] if p["name"] == "download"][0]
u, s = map(float, open(d + "/client.time").read().split()[-2:])
srv = float(open(d + "/server.cpu").read())
print(json.dumps({"tool": "longhaul test", "goodput_bps": down["throughput_bps"], "receiver_cpu_s": u + s, "sender_cpu_s": srv,
                  "bytes": ph["client_bytes"], "verdict": down["flow"]["verdict"]}))
EOF
}

: >"$work/runs.jsonl"
for i in $(seq 1 "$REPEATS"); do
	echo "bench-twohost: run $i/$REPEATS: iperf3" >&2
	run_iperf "$i" >>"$work/runs.jsonl"
	echo "bench-twohost: run $i/$REPEATS: longhaul test" >&2
	run_longhaul "$i" >>"$work/runs.jsonl"
done
python3 - "$work/runs.jsonl" "$OUT" "$SECS" "$OMIT" <<'EOF'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
ceiling = 1e9 * 1448 / 1538
out = {"path": "1 Gbit/s x 200 ms, cubic, tcp_rmem/tcp_wmem max 128 MiB", "goodput_ceiling_bps": ceiling,
       "secs": int(sys.argv[3]), "iperf3_omit_s": int(sys.argv[4]), "runs": runs, "summary": {}}
print("| tool | goodput (median) | of the ceiling | CPU s per GB (sender + receiver) |")
print("|---|---|---|---|")
for tool in ("iperf3", "longhaul test"):
    rs = [r for r in runs if r["tool"] == tool]
    g = statistics.median(r["goodput_bps"] for r in rs)
    cpu = statistics.median((r["sender_cpu_s"] + r["receiver_cpu_s"]) / (r["bytes"] / 1e9) for r in rs)
    out["summary"][tool] = {"goodput_bps": g, "share_of_ceiling": g / ceiling, "cpu_s_per_gb": cpu}
    print(f"| {tool} | {g/1e6:.1f} Mbit/s | {100*g/ceiling:.1f}% | {cpu:.2f} |")
s = out["summary"]
ok_rate = s["longhaul test"]["share_of_ceiling"] >= 0.95
ok_cpu = s["longhaul test"]["cpu_s_per_gb"] <= s["iperf3"]["cpu_s_per_gb"] * 1.05
print(f"\ngoodput >= 95% of the ceiling: {'PASS' if ok_rate else 'FAIL'}; CPU per GB <= iperf3 (+5% noise): {'PASS' if ok_cpu else 'FAIL'}")
json.dump(out, open(sys.argv[2], "w"), indent=1)
EOF
