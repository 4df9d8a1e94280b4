#!/usr/bin/env bash
# Plots host-resident products against their floor: for each LABEL=CSV
# (`egpu-bench product` CSVs, e.g. two builds run on one machine), the
# time over the same run's floor (x_floor) of egpu's plain products (and of
# the movement system's rows, where the CSV has them: the bytes alone) in
# one memory mode against N, one line per (label, scalar, system), the
# median where a CSV holds several runs; issue 19's targets as a grey
# dotted line.
#
#   scripts/plot_floor.sh PNG MEMORY LABEL=CSV [LABEL=CSV ...]
#
# MEMORY is pageable or pinned. Needs gnuplot with the pngcairo terminal
# (Debian: apt-get install gnuplot-nox).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
egpu_plot_start 3 "" "$@"
png=$1
memory=$2
shift 2
work=$EGPU_WORK

plots=()
for pair in "$@"; do
  label=${pair%%=*}
  csv=${pair#*=}
  [ -r "$csv" ] || { echo "plot_floor.sh: cannot read $csv" >&2; exit 1; }
  # "scalar system N x_floor" per usable row, then the median per group.
  awk -F, -v memory="$memory" '
    NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    $col["memory"] == memory && ($col["system"] ~ /^egpu-[a-z]+$/ || $col["system"] == "movement") &&
    $col["x_floor"] != "" {
      n = $col["shape"]; sub(/x.*/, "", n)
      print $col["scalar"], $col["system"], n, $col["x_floor"]
    }' "$csv" | sort -k1,1 -k2,2 -k3,3n -k4,4g >"$work/rows"
  while read -r scalar system; do
    file="$work/${label}__${scalar}__${system}.dat"
    awk -v s="$scalar" -v y="$system" '$1 == s && $2 == y { v[$3] = v[$3] " " $4 }
      END { for (n in v) { k = split(v[n], a, " "); print n, (k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2) } }' \
      "$work/rows" | sort -n >"$file"
    dt=1; [ "$label" = "${1%%=*}" ] && dt=2
    plots+=("'$file' using 1:2 with linespoints lw 2 dt $dt title '$label $scalar ${system#egpu-}'")
  done < <(awk '{ print $1, $2 }' "$work/rows" | sort -u)
done
printf '1024 2.0\n2048 1.5\n4096 1.25\n8192 1.15\n16384 1.10\n' >"$work/targets.dat"
# The bytes alone come under a floor that the GEMM sets.
ymin=0.9
compgen -G "$work/*__movement.dat" >/dev/null && ymin=0.4
plots+=("'$work/targets.dat' using 1:2 with lines lw 5 lc rgb '#aaaaaa' dt 3 title 'target'")
plot_line=$(printf '%s, ' "${plots[@]}")
gnuplot <<GNUPLOT
set terminal pngcairo size 960,640 noenhanced font ',11'
set output '$png'
set title "host-resident C = A * B, $memory operands: time over the floor (median over runs)"
set logscale x 2
set xlabel 'N (n x n x n)'
set ylabel 'time / floor'
set yrange [$ymin:*]
set key top right
set grid xtics ytics
plot ${plot_line%, }
GNUPLOT
echo "plot_floor.sh: wrote $png"
