#!/usr/bin/env bash
# Plots the device-resident rows of an `egpu-bench elementwise` or
# `egpu-bench reduce` CSV at its largest size: one group of bars per case
# (scalar, expression or reduction and layout), the effective bandwidth of
# egpu, of the baseline (CUB, or the hand-written kernel where the reduce
# bench names it) and of Eigen's Tensor module, each over the same run's
# device-to-device copy rate; a line at 1. Rows with a quoted field (the
# compute-bound expression, whose name holds commas, judged against the
# hand-written kernel instead) are left out.
#
#   scripts/plot_bandwidth.sh CSV PNG
#
# Needs gnuplot with the pngcairo terminal (Debian: apt-get install
# gnuplot-nox).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
egpu_plot_start 2 2 "$@"
csv=$1
png=$2
[ -r "$csv" ] || { echo "plot_bandwidth.sh: cannot read $csv" >&2; exit 1; }
work=$EGPU_WORK

# label egpu baseline tensor, one line per case at the largest size.
awk -F, '
  NR == 1 { for (i = 1; i <= NF; ++i) col[$i] = i; next }
  /"/ { next }
  { rows[NR] = $0 }
  END {
    what = ("expression" in col) ? "expression" : "op"
    base = ("cub_of_copy" in col) ? "cub_of_copy" : "baseline_of_copy"
    largest = 0
    for (r in rows) { split(rows[r], f, ","); if (f[col["elements"]] + 0 > largest) largest = f[col["elements"]] + 0 }
    for (r = 2; r <= NR; ++r) {
      if (!(r in rows)) continue
      split(rows[r], f, ",")
      if (f[col["elements"]] + 0 != largest) continue
      label = f[col["scalar"]] " " f[col[what]]
      if (("layout" in col) && f[col["layout"]] != "-") label = label " (" f[col["layout"]] ")"
      printf "\"%s\" %s %s %s\n", label, f[col["egpu_of_copy"]], f[col[base]], f[col["tensor_of_copy"]]
    }
  }' "$csv" > "$work/data"
[ -s "$work/data" ] || { echo "plot_bandwidth.sh: no device rows in $csv" >&2; exit 1; }
baseline=$(head -1 "$csv" | grep -q cub_of_copy && echo "CUB DeviceTransform" || echo "CUB or hand-written")

gnuplot <<GP
set terminal pngcairo size 1200,560 font "sans,10"
set output "$png"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set yrange [0:1.15]
set ylabel "effective bandwidth / device copy rate"
set xtics rotate by -35 scale 0
set grid ytics
set key outside top center horizontal
set title "$(basename "$csv" .csv)"
plot "$work/data" using 2:xtic(1) title "egpu" lc rgb "#1f77b4", \
     "" using 3 title "$baseline" lc rgb "#7f7f7f", \
     "" using 4 title "Eigen Tensor (GpuDevice)" lc rgb "#ff7f0e", \
     1 with lines dt 2 lc rgb "black" notitle
GP
echo "plot_bandwidth.sh: wrote $png"
