#!/usr/bin/env python3
"""Where a traced call's time goes: one line per call of an EGPU_TRACE file.

  EGPU_TRACE=trace.json ./my_program
  scripts/trace_breakdown.py trace.json [--last N]

For each call: its time on the host (the "host" lane), the span its device
work covers, the host time outside that span (set-up before the first copy,
finishing after the last), each lane's busy time (H2D, kernels, D2H), when
the first kernel starts and how long the last download takes, and the host
time spent queueing the device work (the "issue" lanes). Times in ms.
"""
import argparse
import collections
import json


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace")
    ap.add_argument("--last", type=int, default=0, help="only the last N calls")
    args = ap.parse_args()
    events = json.load(open(args.trace))["traceEvents"]
    calls = collections.defaultdict(list)
    for e in events:
        calls[e.get("args", {}).get("call", 0)].append(e)
    ids = sorted(calls)
    if args.last > 0:
        ids = ids[-args.last:]
    for call in ids:
        spans = calls[call]
        host = [e for e in spans if e["tid"] == "host"]
        device = [e for e in spans if e["tid"] != "host" and not e["tid"].startswith("issue")]
        issued = [e for e in spans if e["tid"].startswith("issue")]
        if not device:
            continue
        start = min(e["ts"] for e in device)
        end = max(e["ts"] + e["dur"] for e in device)
        busy = collections.defaultdict(float)
        for e in device:
            lane = "kernels" if e["tid"].startswith("kernels") else e["tid"]
            busy[lane] += e["dur"]
        kernels = [e for e in device if e["tid"].startswith("kernels")]
        downloads = [e for e in device if e["name"].startswith("download")]
        line = f"call {call}:"
        if host:
            h = host[0]
            line += f" host {h['dur'] / 1e3:.3f}, before the device {(start - h['ts']) / 1e3:.3f}," \
                    f" after it {(h['ts'] + h['dur'] - end) / 1e3:.3f};"
        line += f" device span {(end - start) / 1e3:.3f};"
        line += " busy " + ", ".join(f"{k} {v / 1e3:.3f}" for k, v in sorted(busy.items())) + ";"
        if issued:
            line += f" queueing {sum(e['dur'] for e in issued) / 1e3:.3f};"
        if kernels:
            line += f" first kernel at {(min(e['ts'] for e in kernels) - start) / 1e3:.3f}"
        if downloads:
            last = max(downloads, key=lambda e: e["ts"] + e["dur"])
            line += f", last download {last['dur'] / 1e3:.3f}"
        print(line)


if __name__ == "__main__":
    main()
