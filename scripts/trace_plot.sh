#!/usr/bin/env bash
# Renders an EGPU_TRACE timeline (Chrome trace JSON) as a PNG: one row per
# stream (H2D, kernels, D2H), one box per copy or kernel, and below each an
# "issue" row: when the host queued that work.
#
#   scripts/trace_plot.sh trace.json out.png [first_ms last_ms]
#
# Needs python3 and gnuplot (Debian: gnuplot-nox).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
egpu_plot_start 2 4 "$@"
trace=$1 png=$2 first=${3:-} last=${4:-}
data=$EGPU_WORK/boxes.dat lanes=$EGPU_WORK/lanes.dat

python3 - "$trace" "$data" "$lanes" "$first" "$last" <<'PY'
import json, sys
trace, data, lanes, first, last = sys.argv[1:6]
events = json.load(open(trace))["traceEvents"]
t0 = min(e["ts"] for e in events)
order = ["H2D", "D2H"]
names = sorted({e["tid"] for e in events}, key=lambda t: (order.index(t) if t in order else 1, t))
rows = {name: i for i, name in enumerate(names)}
lo = float(first) if first else None
hi = float(last) if last else None
with open(data, "w") as f:
    for e in events:
        start = (e["ts"] - t0) / 1000.0
        end = start + e["dur"] / 1000.0
        if (lo is not None and end < lo) or (hi is not None and start > hi):
            continue
        kind = 1 if e["name"].startswith("upload") else 3 if e["name"].startswith("download") else 2
        f.write(f"{(start + end) / 2} {rows[e['tid']]} {(end - start) / 2} 0.35 {kind}\n")
with open(lanes, "w") as f:
    f.write(", ".join(f'"{n}" {i}' for n, i in rows.items()))
PY

gnuplot <<GP
set terminal pngcairo size 1400,420 noenhanced font ",10"
set output "$png"
set title "egpu pipeline timeline: $(basename "$trace")"
set xlabel "ms"
set ytics ($(cat "$lanes"))
set yrange [-0.6:*] reverse
set style fill solid 1.0 noborder
set palette defined (1 "#4878d0", 2 "#ee854a", 3 "#6acc64")
unset colorbox
set grid xtics
$( [ -n "$first" ] && echo "set xrange [$first:$last]" )
plot "$data" using 1:2:3:4:5 with boxxyerror fc palette notitle
GP
echo "wrote $png"
