#!/usr/bin/env bash
# Draws `egpu-bench dispatch` CSVs: the automatic choice's time over the
# better of CPU Eigen and the GPU (1.0: the better side's time), against
# size, one line per part, scalar and memory (a later row of the same case
# wins).
#
#   scripts/plot_dispatch.sh PNG CSV [CSV...]
#
# Needs python3 and gnuplot with the pngcairo terminal (Debian: apt-get
# install gnuplot-nox).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
egpu_plot_start 2 "" "$@"
png=$1
shift
data=$EGPU_WORK
python3 - "$data" "$@" <<'PY'
import csv, sys
out, rows = sys.argv[1], {}
for path in sys.argv[2:]:
    for r in csv.DictReader(open(path)):
        rows[(r["part"], r["scalar"], r["memory"], float(r["size"]))] = float(r["auto_over_best"])
series = {}
for (part, scalar, memory, size), ratio in sorted(rows.items()):
    series.setdefault(f"{part} {scalar} {memory}", []).append((size, ratio))
with open(f"{out}/list", "w") as names:
    for i, (name, points) in enumerate(series.items()):
        with open(f"{out}/{i}", "w") as f:
            f.writelines(f"{s} {r}\n" for s, r in points)
        names.write(f"{i}\t{name}\n")
PY
plots=$(awk -F'\t' -v d="$data" '{printf "%s\"%s/%s\" using 1:2 with linespoints title \"%s\"", (NR > 1 ? ", " : ""), d, $1, $2}' "$data/list")
gnuplot <<GP
set terminal pngcairo size 1100,600 font ",10"
set output "$png"
set logscale x 2
set format x "2^{%L}"
set yrange [0.5:2.5]
set xlabel "N (products) or elements (coefficient-wise)"
set ylabel "automatic / min(CPU Eigen, GPU)"
set grid
set key outside right noenhanced
set title "egpu's CPU/GPU dispatch (egpu-bench dispatch)" noenhanced
plot $plots, 1.1 with lines dashtype 2 linecolor rgb "black" title "1.10"
GP
