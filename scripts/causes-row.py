#!/usr/bin/env python3
"""causes-row.py: one row of scripts/bench-causes.sh's matrix, and its tally.

  causes-row.py CASE RUN TEST.json ANALYZE.json FLOWS.json TALLY.tsv
  causes-row.py --tally TALLY.tsv

A row reads what `longhaul test` named for the download, what `longhaul
analyze` named for the single-stream download in the capture (the first
flow the server sent 1 MB or more on),
and what `longhaul flows` named for the server's busiest sending socket;
it prints them and appends to the tally whether each named the case's
failure. Missing files count as not named.
"""
import json
import sys

# What each case must be named; the weaker verdicts a tool may give
# where it cannot see the cause, and why (documented in docs/causes.md).
EXPECT = {
    "clean": None,
    "random-loss": "random-loss",
    "shallow-buffer": "shallow-buffer",
    "bufferbloat": "bufferbloat",
    "policer": "policer",
    "reordering": "reordering",
    "window-scale-stripped": "window-scale-stripped",
    "cpu-bound": "cpu-bound",
    "competing": "shared-bottleneck",
}
WEAKER = {
    # A capture at the server sees the client's SYN without the option:
    # scaling not negotiated, not that a middlebox removed it.
    ("analyze", "window-scale-stripped"): "no-window-scaling",
    # tcp_info says only that the socket runs without scaling.
    ("flows", "window-scale-stripped"): "no-window-scaling",
    # Neither a capture nor tcp_info shows another process's CPU.
    ("analyze", "cpu-bound"): "*",
    ("flows", "cpu-bound"): "*",
    # Without paced runs, bursts lost with no queue are a shallow buffer's
    # or a policer's; the cause's text says so (docs/analyze.md: "A capture cannot
    # tell a policer from a shallow buffer with no queue").
    ("analyze", "policer"): "shallow-buffer",
    ("flows", "policer"): "shallow-buffer",
}


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def named(cause, flags, seen=None):
    """The cause a judgement names: its cause, else the bufferbloat flag,
    else reordering it saw but did not call the limit (test's and flows'
    seen, analyze's reordering flag): "seen:reordering"."""
    if cause:
        return cause.get("name", "-")
    if "bufferbloat" in (flags or []):
        return "bufferbloat"
    if "no-window-scaling" in (flags or []):
        return "no-window-scaling"
    if "reordering" in (flags or []) or any(s.get("name") == "reordering" for s in (seen or [])):
        return "seen:reordering"
    return "-"


def from_test(doc):
    if not doc:
        return "?", "?", 0, 0, "?"
    dl = next((x for x in doc.get("directions", []) if x.get("name") == "download"), None)
    if not dl:
        return "?", "?", 0, 0, "?"
    flow = dl.get("flow") or {}
    return (named(dl.get("cause"), flow.get("flags"), dl.get("seen")), flow.get("verdict", "?"),
            dl.get("throughput_bps", 0), doc.get("path_rate_bps", 0), doc.get("path_rate_basis", ""))


def from_analyze(doc, server_port):
    """The single-stream download: the first flow (in the order the
    capture saw them) whose server sent 1 MB or more; the capacity
    phase's streams and the probes come after it."""
    if not doc:
        return "?"
    for f in doc.get("flows", []):
        for d in f.get("directions", []):
            if d.get("sender", "").endswith(server_port) and d.get("bytes", 0) >= 1 << 20:
                return named(d.get("cause"), d.get("flags"))
    return "?"


def from_flows(doc):
    if not doc:
        return "?"
    flows = [f for f in doc.get("flows", []) if f.get("direction") == "send"]
    if not flows:
        return "?"
    f = max(flows, key=lambda f: f.get("bytes_sent", 0))
    return named(f.get("cause"), f.get("flags"), f.get("seen"))


def judge(tool, case, got):
    want = EXPECT.get(case)
    if want is None:
        # A clean drop-tail queue of one BDP with cubic: the bufferbloat
        # flag is not a wrong name for a capture or a socket.
        ok = got == "-" or (tool != "test" and got == "bufferbloat")
        return "right" if ok else "wrong"
    if got == want:
        return "right"
    if got == "seen:" + want:
        # Reordering the flow tolerated (it filled the path, or its
        # losses were the bottleneck's): named, not as the limit.
        return "seen"
    weaker = WEAKER.get((tool, case))
    if weaker == "*" or weaker == got:
        return "weaker"
    return "wrong"


def row(case, run, test_path, an_path, flows_path, tally):
    test = load(test_path)
    cause, verdict, single, rate, basis = from_test(test)
    port = ":" + (test or {}).get("server", "x:5201").rsplit(":", 1)[-1] if test else ":5201"
    an = from_analyze(load(an_path), port)
    fl = from_flows(load(flows_path))
    print(f"{case:22s} {run:4s} {single/1e6:9.1f} Mb/s {verdict:15s} {cause:22s} {rate/1e6:9.1f} Mb/s "
          f"{an:22s} {fl:22s} {basis}")
    with open(tally, "a") as t:
        for tool, got in (("test", cause), ("analyze", an), ("flows", fl)):
            t.write(f"{case}\t{tool}\t{judge(tool, case, got)}\t{got}\n")


def summary(tally):
    counts = {}
    order = []
    with open(tally) as t:
        for line in t:
            case, tool, result, got = line.rstrip("\n").split("\t")
            if case not in order:
                order.append(case)
            c = counts.setdefault((case, tool), {"right": 0, "seen": 0, "weaker": 0, "wrong": 0, "got": {}})
            c[result] += 1
            c["got"][got] = c["got"].get(got, 0) + 1
    print()
    print(f"{'case':22s} {'test':>12s} {'analyze':>12s} {'flows':>12s}   named instead")
    for case in order:
        cells, instead = [], []
        for tool in ("test", "analyze", "flows"):
            c = counts.get((case, tool))
            if not c:
                cells.append(f"{'-':>12s}")
                continue
            n = c["right"] + c["seen"] + c["weaker"] + c["wrong"]
            cell = f"{c['right']}/{n}" + (f" (+{c['seen']}s)" if c["seen"] else "") + (f" (+{c['weaker']}w)" if c["weaker"] else "")
            cells.append(f"{cell:>12s}")
            wrong = {g: k for g, k in c["got"].items() if judge(tool, case, g) == "wrong"}
            if wrong:
                instead.append(tool + ": " + ", ".join(f"{g} x{k}" for g, k in sorted(wrong.items())))
        print(f"{case:22s} {' '.join(cells)}   {'; '.join(instead)}")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--tally":
        summary(sys.argv[2])
    elif len(sys.argv) == 7:
        row(*sys.argv[1:])
    else:
        sys.exit(__doc__)
