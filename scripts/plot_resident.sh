#!/usr/bin/env bash
# Draws an `egpu-bench resident` CSV as bars: each case's floor / egpu time
# (1.0: at the floor), the last row of a repeated case winning; cases
# without a floor (the host time per call) and the CPU Eigen row are left out.
#
#   scripts/plot_resident.sh CSV PNG
#
# Needs python3 and gnuplot with the pngcairo terminal (Debian: apt-get
# install gnuplot-nox).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
egpu_plot_start 2 2 "$@"
csv=$1 png=$2
data=$EGPU_WORK/ratios.dat
# part,case -> ratio, keeping the last; the case names hold commas inside quotes.
python3 - "$csv" > "$data" <<'PY'
import csv, sys
rows = {}
for r in csv.DictReader(open(sys.argv[1])):
    if float(r["floor"]) <= 0 or "CPU Eigen" in r["case"]:
        continue
    rows[(r["part"], r["case"])] = float(r["floor_over_egpu"])
for (part, case), ratio in rows.items():
    print('"%s: %s"\t%.4f' % (part, case.replace('"', ''), ratio))
PY
gnuplot <<GP
set terminal pngcairo size 1100,600 font ",10"
set output "$png"
set style data histograms
set style fill solid 0.7
set boxwidth 0.8
set yrange [0:1.15]
set ylabel "floor / egpu (1.0: at the floor)"
set xtics rotate by -35 left noenhanced
set grid ytics
set key off
set rmargin 18
set bmargin 14
set title "egpu::DeviceMatrix (egpu-bench resident)" noenhanced
plot "$data" using 2:xtic(1) linecolor rgb "#3b6ea5", 1.0 with lines dashtype 2 linecolor rgb "black"
GP
