#!/usr/bin/env bash
# Plots the plans of a sweep against each other: for an `egpu-bench
# product` CSV whose rows ran with different pipeline settings, the time
# over the same run's floor (x_floor) of each egpu system, one column of
# points per plan (the plan named by the values of the LABEL_COLUMNS, e.g.
# tile_m,tile_n,args of a merged CSV, or egpu_options), every run a point,
# so that the spread between rounds shows beside the plans' differences;
# issue 19's target for the CSV's size as a grey dotted line.
#
#   scripts/plot_variants.sh PNG CSV LABEL_COLUMNS [TITLE]
#
# Needs gnuplot with the pngcairo terminal (Debian: apt-get install
# gnuplot-nox).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
egpu_plot_start 3 4 "$@"
png=$1
csv=$2
labels=$3
title=${4:-x floor by plan}
work=$EGPU_WORK
[ -r "$csv" ] || { echo "plot_variants.sh: cannot read $csv" >&2; exit 1; }

# "plan-index system x_floor target" per egpu row, plans numbered in order of
# first appearance; the plans' names into names.txt.
awk -F, -v labels="$labels" -v names="$work/names.txt" '
  NR == 1 {
    for (i = 1; i <= NF; i++) col[$i] = i
    n = split(labels, want, ",")
    for (i = 1; i <= n; i++) if (!(want[i] in col)) { print "plot_variants.sh: no column " want[i] > "/dev/stderr"; exit 1 }
    next
  }
  $col["system"] ~ /^egpu-[a-z]+$/ && $col["x_floor"] != "" {
    name = ""
    for (i = 1; i <= n; i++) name = name (i > 1 ? " " : "") $col[want[i]]
    gsub(/--/, "", name)  # command-line flags, shorter
    if (!(name in plan)) { plan[name] = ++plans; print plans, name > names }
    split($col["shape"], s, "x")
    target = s[1] <= 1024 ? 2.0 : s[1] <= 2048 ? 1.5 : s[1] <= 4096 ? 1.25 : s[1] <= 8192 ? 1.15 : 1.10
    print plan[name], $col["system"], $col["x_floor"], target
  }' "$csv" > "$work/points.txt"
[ -s "$work/points.txt" ] || { echo "plot_variants.sh: no egpu rows in $csv" >&2; exit 1; }

plots=()
for system in $(awk '{print $2}' "$work/points.txt" | sort -u); do
  awk -v s="$system" '$2 == s {print $1 + (s == "egpu-own" ? -0.12 : 0.12), $3}' "$work/points.txt" > "$work/$system.dat"
  plots+=("'$work/$system.dat' using 1:2 with points pointsize 1.2 title '$system'")
done
plans=$(wc -l < "$work/names.txt")
target=$(awk 'NR == 1 {print $4}' "$work/points.txt")
low=$(awk 'NR == 1 || $3 < m {m = $3} END {print (m < $4 ? m : $4) - 0.05}' "$work/points.txt")  # the target and every point
xtics=$(awk '{i = $1; $1 = ""; sub(/^ /, ""); printf "%s\"%s\" %d", (NR > 1 ? ", " : ""), $0, i}' "$work/names.txt")
gnuplot <<GNUPLOT
set terminal pngcairo size 1200,640 font ",10"
set output '$png'
set title "$title"
set ylabel 'x floor'
set xrange [0.5:$plans + 0.5]
set yrange [$low:*]
set xtics rotate by 35 right ($xtics)
set grid ytics
set key outside right top
set bmargin 9
set lmargin 16
plot $(IFS=,; echo "${plots[*]}"), $target with lines dashtype 3 linecolor rgb 'grey50' title 'target'
GNUPLOT
