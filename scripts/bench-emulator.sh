#!/usr/bin/env bash
# bench-emulator: how fast and how accurate is `longhaul emulate`?
#
# One run measures, on this machine:
#   1. the ceiling: raw veth throughput between two throwaway namespaces;
#   2. iperf3 downloads (-R: the server sends) through the emulator at
#      {0, 50, 200 ms RTT} x {100 Mbit/s, 1 Gbit/s, unlimited}: goodput
#      against the configured rate and the goodput ceiling
#      rate x 1448/1538, emulator CPU, overload, lateness, queue peak;
#   3. RTT error: idle (ping in its own emulate run) and under load (ping
#      alongside the iperf3 download of every run above, in the same
#      emulate run; under a rate limit it includes the bottleneck queue's
#      standing delay, at unlimited rate no queue forms);
#   4. every configuration REPEATS times, interleaved, reported as median
#      and min-max.
# It then prints PASS/FAIL against the targets (never exits non-zero on a
# FAIL: this is a benchmark, not a test).
#
# Output: JSON to $OUT (default bench/emulator.json under the repository),
# the Markdown table on stdout and to ${OUT%.json}.md; progress on stderr.
#
# Environment:
#   REPEATS=N        repeats per configuration (default 3)
#   QUICK=1          smoke run: 1 repeat, short transfers
#   OUT=FILE         JSON output file
#   LONGHAUL=PATH    the binary (default bin/longhaul; `make bench-emulator` builds it)
#   KEEP_RAW=DIR     keep every run's raw files (iperf3 JSON, stats JSON, ping, logs) in DIR
#   CC=NAME          congestion control of the endpoints (default cubic; emulate --cc).
#                    Pinned because namespaces inherit the host's default: with
#                    bbr, PROBE_RTT cuts cwnd to 4 packets every 10 s, a 40%
#                    dip per 10 s at 200 ms that has nothing to do with the emulator.
#
# Needs root, iperf3, ping, python3, ip. Runs take ~10 minutes with the
# defaults. Namespaces: this run's own prefix lhb<random> (ceiling:
# <prefix>-ca/-cb; emulate: <prefix>-<runid>-c/-s); all are removed on
# exit, INT and TERM, and the end checks that none is left.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LONGHAUL=${LONGHAUL:-$here/bin/longhaul}
QUICK=${QUICK:-0}
if [ "$QUICK" = 1 ]; then
	REPEATS=${REPEATS:-1}
else
	REPEATS=${REPEATS:-3}
fi
OUT=${OUT:-$here/bench/emulator.json}
case $OUT in /*) ;; *) OUT=$PWD/$OUT ;; esac
MD=${OUT%.json}.md
KEEP_RAW=${KEEP_RAW:-}
CC=${CC:-cubic}

# Progress goes to fd 3, a copy of the original stderr, so that messages
# from a trap that fires inside a redirected command still reach it.
exec 3>&2
log() { printf 'bench-emulator: %s\n' "$*" >&3; }
die() {
	log "error: $*"
	exit 2
}

# ---- preflight ---------------------------------------------------------
[ "$(id -u)" = 0 ] || die "needs root (it creates network namespaces); run it with sudo"
for t in iperf3 ping python3 ip timeout; do
	command -v "$t" >/dev/null || die "$t not found in PATH; install it first (iperf3, iputils-ping, python3, iproute2, coreutils)"
done
[ -x "$LONGHAUL" ] || die "$LONGHAUL not found; run make build (or make bench-emulator)"
grep -qw -- "$CC" /proc/sys/net/ipv4/tcp_available_congestion_control ||
	die "congestion control $CC not available (have: $(cat /proc/sys/net/ipv4/tcp_available_congestion_control)); modprobe tcp_$CC or set CC"
case $REPEATS in '' | *[!0-9]* | 0) die "REPEATS must be a whole number >= 1 (got '$REPEATS')" ;; esac
mkdir -p "$(dirname "$OUT")"

# A unique prefix: letters and digits only (longhaul's --prefix rule).
P=lhb$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
TMP=$(mktemp -d /tmp/bench-emulator.XXXXXX)
CEIL_A=$P-ca
CEIL_B=$P-cb
CUR_PID=   # the background job being waited for (emulate or iperf3)
SRV_PID=   # the ceiling's iperf3 server
ALLOWED_ORIG= # host's tcp_allowed_congestion_control while widened for the ceiling
AC=/proc/sys/net/ipv4/tcp_allowed_congestion_control
T0=$(date +%s)

ours() { ip netns list 2>/dev/null | awk '{print $1}' | grep "^$P-" || true; }

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	set +e
	for pid in $CUR_PID $SRV_PID; do
		# By PID only: emulate removes its namespaces on TERM.
		if kill -0 "$pid" 2>/dev/null; then
			kill -TERM "$pid" 2>/dev/null
			for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
			kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
			wait "$pid" 2>/dev/null
		fi
	done
	# Leftovers (e.g. an emulate killed with SIGKILL): kill what runs in
	# them, by PID, then delete them and their state files.
	for ns in $(ours); do
		log "cleanup: removing leftover namespace $ns"
		for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
		ip netns del "$ns" 2>/dev/null
	done
	rm -f /run/longhaul/"$P"-*.json 2>/dev/null
	restore_cc
	left=$(ours)
	if [ -n "$left" ]; then
		log "cleanup: FAILED, namespaces still present: $left"
		rc=3
	fi
	if [ -n "$KEEP_RAW" ]; then
		mkdir -p "$KEEP_RAW" && cp -r "$TMP"/. "$KEEP_RAW"/ && log "raw files kept in $KEEP_RAW"
	fi
	rm -rf "$TMP"
	exit "$rc"
}
# A namespace can only select what the host's tcp_allowed_congestion_control
# lists. emulate --cc widens it for its own runs; the ceiling's namespaces
# need the same, for as long as it takes to set their default.
allow_cc() {
	local cur
	cur=$(cat "$AC")
	case " $cur " in *" $CC "*) return 0 ;; esac
	ALLOWED_ORIG=$cur
	echo "$cur $CC" >"$AC"
	log "added $CC to the host's net.ipv4.tcp_allowed_congestion_control for the ceiling's namespaces (was \"$cur\"; restored at once)"
}
restore_cc() {
	if [ -n "$ALLOWED_ORIG" ]; then
		echo "$ALLOWED_ORIG" >"$AC" || log "could not restore $AC to \"$ALLOWED_ORIG\"; restore it by hand"
		ALLOWED_ORIG=
	fi
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM

# bg_wait CMD...: run CMD in the background (so a signal to this script is
# handled at once, not after CMD ends) and return its exit status.
bg_wait() {
	local rc=0
	"$@" </dev/null &
	CUR_PID=$!
	wait "$CUR_PID" || rc=$?
	CUR_PID=
	return "$rc"
}

# ---- durations -----------------------------------------------------------
# iperf3 -t (measured) and -O (omitted: slow start) per RTT in ms.
dur_t() { if [ "$QUICK" = 1 ]; then case $1 in 0) echo 3 ;; 50) echo 4 ;; *) echo 6 ;; esac; else case $1 in 0) echo 8 ;; 50) echo 12 ;; *) echo 15 ;; esac; fi; }
dur_o() { if [ "$QUICK" = 1 ]; then case $1 in 0) echo 1 ;; 50) echo 1 ;; *) echo 3 ;; esac; else case $1 in 0) echo 2 ;; 50) echo 3 ;; *) echo 5 ;; esac; fi; }
CEIL_T=10
[ "$QUICK" = 1 ] && CEIL_T=3
RTTS="0 50 200"
RATES="100000000 1000000000 0"
IDLE_RTTS="0 50 200"

rate_flag() { case $1 in 0) echo "" ;; 100000000) echo 100Mbit/s ;; 1000000000) echo 1Gbit/s ;; *) echo "$1bit/s" ;; esac; }
rate_name() { case $1 in 0) echo unlimited ;; *) rate_flag "$1" ;; esac; }
# Endpoint buffer max: 2 BDP (>= 1.5 BDP: the window is 0.66-0.8 of
# tcp_rmem's max on this kernel, so 1.5 BDP could leave it below 1 BDP;
# 2 BDP gives ~1.6 BDP, which fills the link without overflowing the 1-BDP
# queue, so the steady state has no losses), rounded up to 64 KiB; 4 MiB at
# 0 ms; 256 MiB without a rate limit.
bufsize() {
	local rate=$1 rtt=$2 mib=$((1 << 20)) g=$((64 << 10))
	if [ "$rate" = 0 ]; then echo $((256 * mib)); return; fi
	if [ "$rtt" = 0 ]; then echo $((4 * mib)); return; fi
	local b=$((rate * rtt / 8000 * 2))
	echo $(((b + g - 1) / g * g))
}
# Bottleneck queue: one BDP (emulate's default); at 0 ms a BDP is one
# packet, which cannot hold even one TSO burst (2 Mbit/s of 1 Gbit/s in a
# trial), so 1000 packets there.
queue_for() { if [ "$1" = 0 ]; then echo 1000p; else echo 1bdp; fi; }

# ---- helpers run inside the client namespace ----------------------------
cat >"$TMP/load.sh" <<'EOF'
#!/bin/sh
# load.sh OUT T O PING_START PING_COUNT: iperf3 download with ping alongside.
out=$1 t=$2 o=$3 pstart=$4 pcount=$5
srv=${LONGHAUL_SERVER:-198.18.0.2}
iperf3 -c "$srv" -R -t "$t" -O "$o" -J >"$out/iperf.json" 2>"$out/iperf.err" &
ipid=$!
sleep "$pstart"
ping -D -n -i 0.1 -c "$pcount" -w $((pcount / 10 + 5)) "$srv" >"$out/ping.txt" 2>&1 &
ppid=$!
wait "$ipid"
rc=$?
wait "$ppid"
exit $rc
EOF

# ---- analysis (python3) -------------------------------------------------
cat >"$TMP/analyze.py" <<'EOF'
import json, os, re, statistics, sys

def load(p):
    try:
        with open(p) as f:
            return json.load(f)
    except Exception:
        return None

def pings(p):
    """Per-packet RTTs in ms, the echo requests sent and ping's summary
    (min, avg, max, mdev in ms). Per-packet times are printed rounded to 3
    significant digits (1 ms at >= 100 ms, 0.1 ms at >= 10 ms); the
    summary line is exact to the microsecond."""
    ts, sent, summ = [], None, None
    try:
        txt = open(p).read()
    except Exception:
        return ts, sent, summ
    for m in re.finditer(r"time=([0-9.]+) ms", txt):
        ts.append(float(m.group(1)))
    m = re.search(r"(\d+) packets transmitted", txt)
    if m:
        sent = int(m.group(1))
    m = re.search(r"= ([0-9.]+)/([0-9.]+)/([0-9.]+)/([0-9.]+) ms", txt)
    if m:
        summ = [float(x) for x in m.groups()]
    return ts, sent, summ

def pct(xs, q):
    """Nearest-rank percentile."""
    xs = sorted(xs)
    if not xs:
        return None
    return xs[rank(q, len(xs))]

def rank(q, n):
    return max(0, min(n - 1, int(-(-q * n // 100)) - 1))

def ovl_from_log(p):
    """drop-ovl column (drops_overload + overload_frames) of emulate's table."""
    n = 0
    try:
        for line in open(p):
            f = line.split()
            if len(f) >= 6 and f[0] in ("up", "down") and f[5].isdigit():
                n += int(f[5])
    except Exception:
        pass
    return n

def run_record(d):
    meta = load(os.path.join(d, "meta.json")) or {}
    r = dict(meta)
    st = load(os.path.join(d, "stats.json"))
    if st:
        cpu = st.get("cpu_s", 0.0) / max(st.get("elapsed_s", 0.0), 1e-9)
        ovl_json = sum(st.get(k, {}).get("drops_overload", 0) + st.get(k, {}).get("overload_frames", 0) for k in ("up", "down"))
        r.update({
            "emu_cpu_s": st.get("cpu_s"), "emu_elapsed_s": st.get("elapsed_s"),
            "emu_cpu_frac": cpu, "overloaded": bool(st.get("overloaded")),
            # --stats-json lacks overload_frames (see the report): also read
            # the drop-ovl column of the stderr table, which has both.
            "overload_drops": max(ovl_json, ovl_from_log(os.path.join(d, "emulate.log"))),
            "late_over_max": sum(st.get(k, {}).get("late_over_max", 0) for k in ("up", "down")),
            "over_max": sum(st.get(k, {}).get("over_max", 0) for k in ("up", "down")),
        })
        for k in ("up", "down"):
            s = st.get(k, {})
            r[k] = {x: s.get(x) for x in ("packets", "segments", "bytes", "drops_queue", "drops_loss",
                                           "drops_overload", "overload_frames", "queue_peak_bytes",
                                           "delivered", "lateness_p50_s", "lateness_p99_s",
                                           "lateness_max_s", "late_over_max", "wait_p50_s", "wait_p99_s",
                                           "wait_max_s", "slip_over_max", "over_max", "rate_bps")}
    ip = load(os.path.join(d, "iperf.json"))
    if ip is not None:
        end = ip.get("end", {})
        rcv = end.get("sum_received", {})
        if ip.get("error"):
            r["iperf_error"] = ip["error"]
        if rcv.get("bits_per_second"):
            r["goodput_bps"] = rcv["bits_per_second"]
            r["goodput_seconds"] = rcv.get("seconds")
            cu = end.get("cpu_utilization_percent", {})
            r["iperf3_cpu_pct_client_receiver"] = cu.get("host_total")
            r["iperf3_cpu_pct_server_sender"] = cu.get("remote_total")
            iv = [i["sum"]["bits_per_second"] for i in ip.get("intervals", []) if not i["sum"].get("omitted") and i["sum"].get("seconds", 0) > 0.5]
            if iv:
                r["interval_min_bps"], r["interval_max_bps"] = min(iv), max(iv)
    ts, sent, summ = pings(os.path.join(d, "ping.txt"))
    if ts:
        rtt = meta.get("rtt_ms", 0)
        err = [t - rtt for t in ts]
        # Mean, min and max from ping's exact summary; p99 (nearest rank)
        # from the rounded per-packet times, except when it is the largest
        # sample (n <= 100), which the summary gives exactly.
        mean, lo, hi = (summ[1], summ[0], summ[2]) if summ else (statistics.fmean(ts), min(ts), max(ts))
        p99 = hi - rtt if rank(99, len(err)) == len(err) - 1 else pct(err, 99)
        r["ping"] = {"n": len(ts), "sent": sent, "mean_ms": mean, "mdev_ms": summ[3] if summ else None,
                     "err_mean_ms": mean - rtt, "err_p50_ms": pct(err, 50),
                     "err_p99_ms": p99, "err_min_ms": lo - rtt, "err_max_ms": hi - rtt}
    return r

def agg(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return None
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "n": len(xs)}

def main(tmp, out, mdpath, meta_path):
    meta = load(meta_path)
    runs = []
    for name in sorted(os.listdir(tmp)):
        d = os.path.join(tmp, name)
        if name.startswith("run-") and os.path.isdir(d):
            runs.append(run_record(d))
    res = {"schema": "longhaul.bench-emulator/v1", "meta": meta, "ceiling": None, "throughput": [], "idle_rtt": [], "targets": [], "runs": runs}

    ceil = [r for r in runs if r.get("kind") == "ceiling"]
    res["ceiling"] = {"goodput_bps": agg([r.get("goodput_bps") for r in ceil]), "runs": len(ceil)}

    def key(r):
        return (r["rtt_ms"], r["rate_bps"])
    seen = []
    for r in runs:
        if r.get("kind") == "load" and key(r) not in seen:
            seen.append(key(r))
    for k in seen:
        rs = [r for r in runs if r.get("kind") == "load" and key(r) == k]
        valid = [r for r in rs if r.get("goodput_bps") and not r.get("overloaded")]
        rate = k[1]
        gc = rate * 1448 / 1538 if rate else None
        g = agg([r.get("goodput_bps") for r in valid])
        c = {"rtt_ms": k[0], "rate_bps": rate, "rate": rs[0].get("rate"), "queue": rs[0].get("queue"),
             "buffer_bytes": rs[0].get("buffer_bytes"), "iperf_t": rs[0].get("t"), "iperf_omit": rs[0].get("o"),
             "runs": len(rs), "valid_runs": len(valid),
             "failed_runs": sum(1 for r in rs if not r.get("goodput_bps")),
             "overloaded_runs": sum(1 for r in rs if r.get("overloaded")),
             "goodput_bps": g,
             "goodput_all_runs_bps": [r.get("goodput_bps") for r in rs],
             "goodput_invalid_runs_bps": agg([r.get("goodput_bps") for r in rs if r.get("overloaded")]),
             "iperf3_cpu_pct_server_sender": agg([r.get("iperf3_cpu_pct_server_sender") for r in rs]),
             "iperf3_cpu_pct_client_receiver": agg([r.get("iperf3_cpu_pct_client_receiver") for r in rs]),
             "goodput_ceiling_bps": gc,
             "pct_of_rate": agg([100 * r["goodput_bps"] / rate for r in valid]) if rate else None,
             "pct_of_goodput_ceiling": agg([100 * r["goodput_bps"] / gc for r in valid]) if rate else None,
             "emu_cpu_pct": agg([100 * r["emu_cpu_frac"] for r in rs if r.get("emu_cpu_frac") is not None]),
             "overload_drops": sum(r.get("overload_drops", 0) for r in rs),
             "late_over_max": sum(r.get("late_over_max", 0) for r in rs),
             "over_max": sum(r.get("over_max", 0) for r in rs),
             "delivered": sum(r["up"]["delivered"] + r["down"]["delivered"] for r in rs if r.get("down")),
             "queue_drops_down": agg([r["down"]["drops_queue"] for r in rs if r.get("down")]),
             "lateness_down_p50_ms": agg([1e3 * r["down"]["lateness_p50_s"] for r in rs if r.get("down")]),
             "lateness_down_p99_ms": agg([1e3 * r["down"]["lateness_p99_s"] for r in rs if r.get("down")]),
             "lateness_up_p99_ms": agg([1e3 * r["up"]["lateness_p99_s"] for r in rs if r.get("up")]),
             "wait_down_p50_ms": agg([1e3 * (r["down"]["wait_p50_s"] or 0) for r in rs if r.get("down")]),
             "wait_down_p99_ms": agg([1e3 * (r["down"]["wait_p99_s"] or 0) for r in rs if r.get("down")]),
             "lateness_max_ms": agg([1e3 * max(r["down"]["lateness_max_s"], r["up"]["lateness_max_s"]) for r in rs if r.get("down")]),
             "queue_peak_down_bytes": agg([r["down"]["queue_peak_bytes"] for r in rs if r.get("down")]),
             "queue_peak_down_ms": agg([8e3 * r["down"]["queue_peak_bytes"] / rate for r in rs if r.get("down")]) if rate else None,
             "ping_under_load_err_mean_ms": agg([r["ping"]["err_mean_ms"] for r in rs if r.get("ping")]),
             "ping_under_load_err_p99_ms": agg([r["ping"]["err_p99_ms"] for r in rs if r.get("ping")]),
             }
        res["throughput"].append(c)

    for rtt in sorted({r["rtt_ms"] for r in runs if r.get("kind") == "idle"}):
        rs = [r for r in runs if r.get("kind") == "idle" and r["rtt_ms"] == rtt]
        res["idle_rtt"].append({
            "rtt_ms": rtt, "runs": len(rs),
            "overloaded_runs": sum(1 for r in rs if r.get("overloaded")),
            "replies": sum(r["ping"]["n"] for r in rs if r.get("ping")),
            "sent": sum((r["ping"]["sent"] or 0) for r in rs if r.get("ping")),
            "err_mean_ms": agg([r["ping"]["err_mean_ms"] for r in rs if r.get("ping")]),
            "err_p99_ms": agg([r["ping"]["err_p99_ms"] for r in rs if r.get("ping")]),
            "err_min_ms": agg([r["ping"]["err_min_ms"] for r in rs if r.get("ping")]),
            "lateness_p99_ms": agg([1e3 * max(r["down"]["lateness_p99_s"], r["up"]["lateness_p99_s"]) for r in rs if r.get("down")]),
        })

    # ---- targets (on medians of valid runs; min/max shown alongside) ----
    def cfg(rtt, rate):
        for c in res["throughput"]:
            if c["rtt_ms"] == rtt and c["rate_bps"] == rate:
                return c
    T = res["targets"]
    c = cfg(200, 1000000000)
    if c:
        g, cpu = c["pct_of_goodput_ceiling"], c["emu_cpu_pct"]
        ok = bool(g and g["median"] >= 95)
        t = {"target": "200 ms x 1 Gbit/s: goodput >= 95% of the goodput ceiling (941.5 Mbit/s), steady", "pass": ok,
             "value": g, "unit": "% of goodput ceiling", "valid_runs": c["valid_runs"], "runs": c["runs"]}
        if c["goodput_invalid_runs_bps"]:
            gi = c["goodput_invalid_runs_bps"]
            t["invalid_runs_goodput_gbps"] = {k: (v / 1e9 if k != "n" else v) for k, v in gi.items()}
        T.append(t)
        ok = bool(cpu and cpu["median"] <= 30)
        T.append({"target": "200 ms x 1 Gbit/s: emulator <= 30% of a core", "pass": ok, "value": cpu, "unit": "% of a core"})
    c = cfg(200, 0)
    if c:
        g = c["goodput_bps"]
        t = {"target": "200 ms x unlimited: goodput >= 5 Gbit/s", "pass": bool(g and g["median"] >= 5e9),
             "value": {k: (v / 1e9 if k != "n" else v) for k, v in g.items()} if g else None, "unit": "Gbit/s",
             "valid_runs": c["valid_runs"], "runs": c["runs"]}
        if c["goodput_invalid_runs_bps"]:
            gi = c["goodput_invalid_runs_bps"]
            t["invalid_runs_goodput_gbps"] = {k: (v / 1e9 if k != "n" else v) for k, v in gi.items()}
        T.append(t)
    for i in res["idle_rtt"]:
        if i["rtt_ms"] in (50, 200):
            e = i["err_mean_ms"]
            T.append({"target": "idle %d ms: mean RTT error <= 0.5 ms" % i["rtt_ms"], "pass": bool(e and abs(e["median"]) <= 0.5),
                      "value": e, "unit": "ms"})

    with open(out, "w") as f:
        json.dump(res, f, indent=2)
        f.write("\n")
    md = render(res)
    with open(mdpath, "w") as f:
        f.write(md)
    sys.stdout.write(md)

def f_rng(a, scale=1.0, fmt="%.0f"):
    if not a:
        return "n/a"
    m, lo, hi = (fmt % (a["median"] * scale), fmt % (a["min"] * scale), fmt % (a["max"] * scale))
    if a["n"] == 1 or lo == hi:
        return m
    return "%s (%s-%s)" % (m, lo, hi)

def goodput_cell(t):
    s = f_rng(t["goodput_bps"], 1e-6)
    if t["goodput_invalid_runs_bps"]:
        s += " [overloaded runs: %s]" % f_rng(t["goodput_invalid_runs_bps"], 1e-6)
    return s

def render(res):
    m = res["meta"] or {}
    L = []
    L.append("## longhaul emulate benchmark")
    L.append("")
    L.append("%s, kernel %s, %s CPUs, %s, longhaul %s; %s repeat(s) per configuration%s; median (min-max) over repeats; total runtime %s s." % (
        m.get("date"), m.get("kernel"), m.get("cpus"), m.get("iperf3"), m.get("longhaul"), m.get("repeats"),
        " (QUICK)" if m.get("quick") else "", m.get("runtime_s", "?")))
    L.append("")
    c = res["ceiling"]["goodput_bps"]
    L.append("Ceiling, raw veth between two namespaces, iperf3 -R 1 flow -t %s (%s): **%s Gbit/s**" % (m.get("ceiling_t"), m.get("ceiling_cc"), f_rng(c, 1e-9, "%.1f")))
    L.append("")
    L.append("Throughput: iperf3 -R (server sends), 1 flow, %s; goodput = iperf3 sum_received after -O; goodput ceiling = rate x 1448/1538; "
             "queue 1 BDP (1000 packets at 0 ms); endpoint buffers (receiver tcp_rmem max, sender tcp_wmem max) 2 BDP (4 MiB at 0 ms; 256 MiB unlimited); " % m.get("cc")
             + 
             "CPU = emulator cpu_s/elapsed_s; lateness of the data (down) direction, and the part of it spent waiting behind the "
             "writer's own earlier writes (wait); ping error = RTT - configured RTT, "
             "measured alongside the download (includes the bottleneck queue's standing delay; at unlimited rate, the wait). "
             "Validity: frames > 5 ms late count against the run; at unlimited rate only the lateness beyond the wait does "
             "(without a rate limit a burst leaves at the writer's own speed, the link's real rate). A run with overload drops or "
             "more than 0.1% of frames counted (at least 50) is flagged overloaded, not valid: left out of the medians and shown in brackets.")
    L.append("")
    L.append("| RTT | rate | goodput Mbit/s | % of rate | % of goodput ceiling | emulator CPU % of a core | overloaded runs | overload drops / frames > 5 ms late / counted | lateness p50 / p99 ms | wait p50 / p99 ms | queue peak ms | ping under load err mean / p99 ms | queue drops |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for t in res["throughput"]:
        L.append("| %d ms | %s | %s | %s | %s | %s | %d/%d | %d / %d / %d | %s / %s | %s / %s | %s | %s / %s | %s |" % (
            t["rtt_ms"], t["rate"], goodput_cell(t), f_rng(t["pct_of_rate"], 1, "%.1f"),
            f_rng(t["pct_of_goodput_ceiling"], 1, "%.1f"), f_rng(t["emu_cpu_pct"]),
            t["overloaded_runs"], t["runs"], t["overload_drops"], t["late_over_max"], t["over_max"],
            f_rng(t["lateness_down_p50_ms"], 1, "%.3f"), f_rng(t["lateness_down_p99_ms"], 1, "%.2f"),
            f_rng(t["wait_down_p50_ms"], 1, "%.3f"), f_rng(t["wait_down_p99_ms"], 1, "%.2f"),
            f_rng(t["queue_peak_down_ms"], 1, "%.1f") if t["queue_peak_down_ms"] else "-",
            f_rng(t["ping_under_load_err_mean_ms"], 1, "%.2f"), f_rng(t["ping_under_load_err_p99_ms"], 1, "%.2f"),
            f_rng(t["queue_drops_down"])))
    L.append("")
    L.append("Idle RTT error (ping -c 20 -i 0.1, own emulate run; error = RTT - configured RTT; mean/min exact from ping's summary, "
             "p99 of 20 samples = the maximum):")
    L.append("")
    L.append("| RTT | replies | err mean ms | err p99 ms | err min ms | emulator lateness p99 ms | overloaded runs |")
    L.append("|---|---|---|---|---|---|---|")
    for i in res["idle_rtt"]:
        L.append("| %d ms | %d/%d | %s | %s | %s | %s | %d/%d |" % (
            i["rtt_ms"], i["replies"], i["sent"], f_rng(i["err_mean_ms"], 1, "%.3f"), f_rng(i["err_p99_ms"], 1, "%.3f"),
            f_rng(i["err_min_ms"], 1, "%.3f"), f_rng(i["lateness_p99_ms"], 1, "%.3f"), i["overloaded_runs"], i["runs"]))
    L.append("")
    L.append("Targets (on the median of the valid runs):")
    L.append("")
    for t in res["targets"]:
        v = t["value"]
        note = ""
        if t.get("invalid_runs_goodput_gbps"):
            note = " (%d/%d runs flagged overloaded, not counted; their goodput: %s Gbit/s)" % (
                t["runs"] - t["valid_runs"], t["runs"], f_rng(t["invalid_runs_goodput_gbps"], 1, "%.2f"))
        L.append("- **%s** %s: %s%s" % ("PASS" if t["pass"] else "FAIL", t["target"],
                                         f_rng(v, 1, "%.2f") + " " + t["unit"] if v else "no valid run", note))
    L.append("")
    return "\n".join(L)

if __name__ == "__main__":
    if sys.argv[1] == "summary":
        r = run_record(sys.argv[2])
        parts = []
        if r.get("goodput_bps"):
            parts.append("goodput %.1f Mbit/s" % (r["goodput_bps"] / 1e6))
        if r.get("emu_cpu_frac") is not None:
            parts.append("emulator %.0f%% of a core" % (100 * r["emu_cpu_frac"]))
        if r.get("ping"):
            parts.append("ping err mean %.2f ms p99 %.2f ms (%d replies)" % (r["ping"]["err_mean_ms"], r["ping"]["err_p99_ms"], r["ping"]["n"]))
        if r.get("overloaded"):
            parts.append("OVERLOADED (%d overload drops, %d late, %d counted)" % (r.get("overload_drops", 0), r.get("late_over_max", 0), r.get("over_max", 0)))
        if r.get("iperf_error"):
            parts.append("iperf3 error: " + r["iperf_error"])
        print(", ".join(parts) or "no result")
    else:
        main(*sys.argv[2:])
EOF

summary() { python3 "$TMP/analyze.py" summary "$1" 2>/dev/null || echo "no result"; }

# ---- 1. the ceiling: raw veth ------------------------------------------
ceiling_run() { # ceiling_run DIR
	local d=$1 rc=0
	ip netns exec "$CEIL_B" iperf3 -s -1 -B 198.18.100.2 >"$d/server.log" 2>&1 &
	SRV_PID=$!
	for _ in $(seq 100); do
		ip netns exec "$CEIL_B" cat /proc/net/tcp 2>/dev/null | awk '$4 == "0A"' | grep -q . && break
		sleep 0.05
	done
	bg_wait timeout -k 10 $((CEIL_T + 30)) ip netns exec "$CEIL_A" iperf3 -c 198.18.100.2 -R -t "$CEIL_T" -J >"$d/iperf.json" 2>"$d/iperf.err" || rc=$?
	if kill -0 "$SRV_PID" 2>/dev/null; then kill -TERM "$SRV_PID" 2>/dev/null || true; fi
	wait "$SRV_PID" 2>/dev/null || true
	SRV_PID=
	return "$rc"
}

log "prefix $P, $REPEATS repeat(s)$([ "$QUICK" = 1 ] && echo ', QUICK'), congestion control $CC, output $OUT"
ip netns add "$CEIL_A"
ip netns add "$CEIL_B"
ip link add "${P}a" netns "$CEIL_A" type veth peer name "${P}b" netns "$CEIL_B"
ip -n "$CEIL_A" addr add 198.18.100.1/30 dev "${P}a"
ip -n "$CEIL_B" addr add 198.18.100.2/30 dev "${P}b"
allow_cc
for ns in "$CEIL_A" "$CEIL_B"; do
	ip -n "$ns" link set lo up
	ip netns exec "$ns" sysctl -qw net.ipv4.tcp_congestion_control="$CC" 2>/dev/null || true
done
restore_cc
CEIL_CC=$(ip netns exec "$CEIL_B" cat /proc/sys/net/ipv4/tcp_congestion_control)
ip -n "$CEIL_A" link set "${P}a" up
ip -n "$CEIL_B" link set "${P}b" up

n=0
for rep in $(seq "$REPEATS"); do
	n=$((n + 1))
	d=$TMP/run-ceil-$rep
	mkdir -p "$d"
	printf '{"kind":"ceiling","rep":%d,"t":%d}\n' "$rep" "$CEIL_T" >"$d/meta.json"
	log "ceiling (raw veth) rep $rep/$REPEATS ..."
	ceiling_run "$d" || log "  iperf3 failed (exit $?)"
	log "  $(summary "$d")"
done
ip netns del "$CEIL_A"
ip netns del "$CEIL_B"

# ---- 2+3. the matrix and idle RTT, repeats interleaved ------------------
total=$((REPEATS * (9 + 3)))
k=0
for rep in $(seq "$REPEATS"); do
	for rtt in $RTTS; do
		for rate in $RATES; do
			k=$((k + 1))
			t=$(dur_t "$rtt")
			o=$(dur_o "$rtt")
			buf=$(bufsize "$rate" "$rtt")
			q=$(queue_for "$rtt")
			rf=$(rate_flag "$rate")
			rn=$(rate_name "$rate")
			pstart=$(awk -v o="$o" -v r="$rtt" 'BEGIN { print o + 1 + 5 * r / 1000 }')
			pcount=$(((t - 2) * 10))
			[ "$pcount" -lt 10 ] && pcount=10
			d=$TMP/run-load-$(printf '%03d' "$k")
			mkdir -p "$d"
			printf '{"kind":"load","rep":%d,"rtt_ms":%d,"rate_bps":%d,"rate":"%s","queue":"%s","buffer_bytes":%d,"t":%d,"o":%d}\n' \
				"$rep" "$rtt" "$rate" "$rn" "$q" "$buf" "$t" "$o" >"$d/meta.json"
			log "[$k/$total] rep $rep/$REPEATS: ${rtt} ms x $rn (iperf3 -R -t $t -O $o, buffers $((buf >> 10)) KiB, queue $q) ..."
			args=(emulate --prefix "$P" --cc "$CC" --rtt "${rtt}ms" --queue "$q" --stats-json "$d/stats.json"
				--client-sysctl "net.ipv4.tcp_rmem=4096 131072 $buf"
				--server-sysctl "net.ipv4.tcp_wmem=4096 16384 $buf"
				--server "iperf3 -s -1")
			[ -n "$rf" ] && args+=(--rate "$rf")
			rc=0
			bg_wait timeout -k 15 $((t + o + 60)) "$LONGHAUL" "${args[@]}" -- sh "$TMP/load.sh" "$d" "$t" "$o" "$pstart" "$pcount" \
				>"$d/emulate.out" 2>"$d/emulate.log" || rc=$?
			if [ "$rc" != 0 ]; then
				log "  emulate exited $rc; last lines of its log:"
				tail -3 "$d/emulate.log" >&3 || true
			fi
			log "  $(summary "$d")"
		done
	done
	for rtt in $IDLE_RTTS; do
		k=$((k + 1))
		d=$TMP/run-idle-$(printf '%03d' "$k")
		mkdir -p "$d"
		printf '{"kind":"idle","rep":%d,"rtt_ms":%d}\n' "$rep" "$rtt" >"$d/meta.json"
		log "[$k/$total] rep $rep/$REPEATS: idle ping at ${rtt} ms ..."
		rc=0
		bg_wait timeout -k 15 60 "$LONGHAUL" emulate --prefix "$P" --rtt "${rtt}ms" --stats-json "$d/stats.json" \
			-- ping -D -n -c 20 -i 0.1 198.18.0.2 >"$d/ping.txt" 2>"$d/emulate.log" || rc=$?
		[ "$rc" = 0 ] || log "  emulate exited $rc"
		log "  $(summary "$d")"
	done
done

# ---- results -----------------------------------------------------------
left=$(ours)
[ -z "$left" ] || log "WARNING: namespaces left after the runs: $left"
runtime=$(($(date +%s) - T0))
python3 - "$TMP/meta.json" <<EOF
import json, subprocess, sys, datetime, platform, os
def sh(c):
    try:
        return subprocess.run(c, shell=True, capture_output=True, text=True).stdout.strip()
    except Exception:
        return ""
m = {
    "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    "kernel": platform.release(), "cpus": os.cpu_count(),
    "iperf3": sh("iperf3 --version | head -1").split(" (")[0],
    "longhaul": sh("git -C '$here' describe --always --dirty 2>/dev/null") or "unknown",
    "repeats": $REPEATS, "quick": "$QUICK" == "1", "runtime_s": $runtime, "prefix": "$P",
    "ceiling_t": $CEIL_T, "cc": "$CC", "ceiling_cc": "$CEIL_CC", "leftover_namespaces": [x for x in """$left""".split() if x],
    "host_tcp_rmem": open("/proc/sys/net/ipv4/tcp_rmem").read().split(),
    "host_tcp_wmem": open("/proc/sys/net/ipv4/tcp_wmem").read().split(),
}
json.dump(m, open(sys.argv[1], "w"))
EOF
python3 "$TMP/analyze.py" report "$TMP" "$OUT" "$MD" "$TMP/meta.json"
log "done in ${runtime} s; JSON $OUT, Markdown $MD"
