#!/usr/bin/env bash
# Plots the forms table of an `egpu-bench product --forms ...` CSV: each
# form's median time over plain's, one bar per form, grouped by scalar and
# memory mode (rows "<system>:<form>" against the plain row of the same
# scalar, memory, system and N):
#
#   scripts/plot_forms.sh CSV PNG
#
# Needs gnuplot with the pngcairo terminal (Debian: apt-get install gnuplot-nox).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
egpu_plot_start 2 2 "$@"
csv=$1 png=$2
work=$EGPU_WORK
# One line per group: "scalar memory" then each form's ratio, forms in the CSV's order.
awk -F, 'NR == 1 { for (i = 1; i <= NF; ++i) col[$i] = i; next }
  $col["status"] != "ok" { next }
  { split($col["system"], sf, ":"); form = (2 in sf) ? sf[2] : "plain";
    key = $col["scalar"] " " $col["memory"] " " sf[1] " " $col["shape"];
    t[key, form] = $col["seconds"];
    if (!(key in seen)) { seen[key] = 1; keys[++nk] = key }
    if (!(form in fseen)) { fseen[form] = 1; forms[++nf] = form } }
  END { printf "group"; for (f = 2; f <= nf; ++f) printf " %s/plain", forms[f]; printf "\n";
    for (k = 1; k <= nk; ++k) { split(keys[k], g, " "); printf "%s-%s", g[1], g[2];
      for (f = 2; f <= nf; ++f) printf " %.4f", t[keys[k], forms[f]] / t[keys[k], "plain"]; printf "\n" } }' \
  "$csv" > "$work/ratios.dat"
forms=$(head -1 "$work/ratios.dat" | wc -w)
gnuplot <<GP
set terminal pngcairo size 900,480 font ",10"
set output "$png"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set key autotitle columnhead top left
set ylabel "time / plain product's time"
set yrange [0:*]
set grid ytics
set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2
plot for [c=2:$forms] "$work/ratios.dat" using c:xtic(1)
GP
echo "plot_forms.sh: wrote $png"
