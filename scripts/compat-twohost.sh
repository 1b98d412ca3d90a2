#!/usr/bin/env bash
# compat-twohost.sh OLD NEW: the two-host protocol between two builds of
# longhaul, both ways (an old client against a new server and the
# reverse), on loopback: each pair runs a short download, upload and
# capacity test and must produce a judged document with both directions.
# make compat builds OLD from a git ref (COMPAT_REF, default the last
# tag, else HEAD~) and NEW from the tree.
set -euo pipefail
old=${1:?usage: compat-twohost.sh OLD-BINARY NEW-BINARY}
new=${2:?usage: compat-twohost.sh OLD-BINARY NEW-BINARY}
dir=$(mktemp -d /tmp/longhaul-compat.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT INT TERM
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$dir/token"
chmod 600 "$dir/token"
port=$((20000 + RANDOM % 20000))
fail=0
run() { # SERVER CLIENT LABEL
	local srv=$1 cli=$2 label=$3
	port=$((port + 1))
	"$srv" serve --listen "127.0.0.1:$port" --auth "$dir/token" --max-rate 200Mbit/s >"$dir/$label.serve.log" 2>&1 &
	local spid=$!
	pids+=("$spid")
	for _ in $(seq 50); do
		grep -q "listening" "$dir/$label.serve.log" 2>/dev/null && break
		sleep 0.1
	done
	if "$cli" test "127.0.0.1:$port" --auth "$dir/token" --duration 2s --streams 2 --json >"$dir/$label.json" 2>"$dir/$label.err" &&
		python3 - "$dir/$label.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "longhaul.test/v1", d["schema"]
names = sorted(x["name"] for x in d["directions"])
assert names == ["download", "upload"], names
for x in d["directions"]:
    assert x["throughput_bps"] > 1e6, (x["name"], x["throughput_bps"])
    assert x["flow"]["state"], x["name"]
assert d["capacity"] and d["capacity"]["streams"] == 2, d.get("capacity")
# the server's samples crossed the wire whole: in the download phase the
# server sends, so its sockets show a window, an RTT and acked bytes
srv = [s for p in d["phases"] if p["name"] == "download" for s in p["samples"] if s["end"] == "server"]
assert srv, "no server samples"
for k in ("cwnd_bytes", "rtt_s", "bytes_acked", "busy_s"):
    assert any(s[k] > 0 for s in srv), ("server sample field lost on the wire", k, srv[-1])
PY
	then
		echo "ok   $label"
	else
		echo "FAIL $label"; sed 's/^/     /' "$dir/$label.err" | tail -5; tail -5 "$dir/$label.serve.log" | sed 's/^/     serve: /'
		fail=1
	fi
	kill "$spid" 2>/dev/null || true
	wait "$spid" 2>/dev/null || true
}
run "$new" "$old" "old-client-new-server"
run "$old" "$new" "new-client-old-server"
run "$new" "$new" "new-client-new-server"
exit $fail
