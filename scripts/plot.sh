#!/usr/bin/env bash
# Plots an `egpu-bench product` CSV: seconds per call against N, log-log,
# one line per system (cpu-eigen, cublasxt, egpu-own, egpu-cublas) and the
# floors of the two backends dashed, one PNG per scalar x memory mode:
#
#   scripts/plot.sh CSV [OUTDIR]
#
# writes OUTDIR/product-<scalar>-<memory>.png (OUTDIR defaults to
# bench/results), e.g. bench/results/product-f64-pageable.png. Rows that
# failed, were wrong or skipped are left out; where the CSV holds the same
# (scalar, memory, system, N) more than once (rows are appended run after
# run), the last row wins. CSVs of older benches without a memory column
# count as pageable. Needs gnuplot with the pngcairo terminal (Debian:
# apt-get install gnuplot-nox).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

egpu_plot_start 1 2 "$@"
csv=$1
out=${2:-$EGPU_ROOT/bench/results}
[ -r "$csv" ] || { echo "plot.sh: cannot read $csv" >&2; exit 1; }
mkdir -p "$out"
work=$EGPU_WORK

# One data file per (scalar, memory, series): "N seconds", sorted by N, and
# a title line per (scalar, memory). Cells hold no commas (egpu-bench writes
# plain cells), so a comma split is enough.
awk -F, -v dir="$work" '
  NR == 1 {
    for (i = 1; i <= NF; i++) col[$i] = i
    if (!("scalar" in col) || !("shape" in col) || !("system" in col) || !("seconds" in col)) {
      print "plot.sh: not an egpu-bench product CSV (no scalar, shape, system or seconds column)" > "/dev/stderr"
      bad = 1; exit 1
    }
    next
  }
  {
    status = ("status" in col) ? $col["status"] : "ok"
    if (status != "ok" && status != "reference") next
    if ($col["seconds"] == "") next
    memory = ("memory" in col) ? $col["memory"] : "pageable"
    if (memory == "") memory = "pageable"
    n = $col["shape"]; sub(/x.*/, "", n)
    key = $col["scalar"] SUBSEP memory
    combos[key] = 1
    title[key] = (("device" in col) ? $col["device"] : "") \
                 (("date" in col) ? ", " $col["date"] : "") \
                 (("commit" in col) ? ", commit " $col["commit"] : "")
    value[key SUBSEP $col["system"] SUBSEP n] = $col["seconds"]
    if (("floor_seconds" in col) && $col["floor_seconds"] != "") {
      if ($col["system"] == "egpu-own") value[key SUBSEP "floor-own" SUBSEP n] = $col["floor_seconds"]
      if ($col["system"] == "egpu-cublas") value[key SUBSEP "floor-cublas" SUBSEP n] = $col["floor_seconds"]
      if ($col["system"] == "cublasxt" && !((key SUBSEP "floor-cublas" SUBSEP n) in value))
        value[key SUBSEP "floor-cublas" SUBSEP n] = $col["floor_seconds"]
    }
  }
  END {
    if (bad) exit 1
    for (k in value) {
      split(k, p, SUBSEP)
      file = dir "/" p[1] "__" p[2] "__" p[3] ".dat"
      print p[4], value[k] > file
    }
    for (k in combos) {
      split(k, p, SUBSEP)
      print p[1], p[2], title[k] > (dir "/combos.txt")
    }
  }
' "$csv"

[ -s "$work/combos.txt" ] || { echo "plot.sh: no usable rows in $csv" >&2; exit 1; }
for f in "$work"/*.dat; do sort -n -o "$f" "$f"; done

# Fixed colours per series, so the same system looks the same in every PNG.
series_style() {
  case $1 in
    cpu-eigen) echo "lc rgb '#555555' pt 5 dt 1" ;;
    cublasxt) echo "lc rgb '#d62728' pt 7 dt 1" ;;
    egpu-own) echo "lc rgb '#1f77b4' pt 9 dt 1" ;;
    egpu-cublas) echo "lc rgb '#2ca02c' pt 11 dt 1" ;;
    floor-own) echo "lc rgb '#1f77b4' pt 0 dt 2" ;;
    floor-cublas) echo "lc rgb '#2ca02c' pt 0 dt 2" ;;
    *) echo "lc rgb '#9467bd' pt 13 dt 1" ;;
  esac
}
series_title() {
  case $1 in
    floor-own) echo "floor (own kernel)" ;;
    floor-cublas) echo "floor (cuBLAS)" ;;
    *) echo "$1" ;;
  esac
}

made=()
while read -r scalar memory title; do
  plots=()
  for series in cpu-eigen cublasxt egpu-own egpu-cublas floor-own floor-cublas; do
    file="$work/${scalar}__${memory}__${series}.dat"
    [ -s "$file" ] || continue
    plots+=("'$file' using 1:2 with linespoints lw 2 $(series_style "$series") title '$(series_title "$series")'")
  done
  for file in "$work/${scalar}__${memory}__"*.dat; do  # any other system
    series=${file##*__}
    series=${series%.dat}
    case $series in cpu-eigen | cublasxt | egpu-own | egpu-cublas | floor-own | floor-cublas) continue ;; esac
    plots+=("'$file' using 1:2 with linespoints lw 2 $(series_style "$series") title '$series'")
  done
  [ ${#plots[@]} -gt 0 ] || continue
  png="$out/product-$scalar-$memory.png"
  plot_line=$(printf '%s, ' "${plots[@]}")
  gnuplot <<EOF
set terminal pngcairo size 960,640 noenhanced font ',11'
set output '$png'
set title "C.noalias() = A * B, $scalar, $memory host memory, n x n x n\n$title"
set logscale x 2
set logscale y 10
set format y '%g'
set xlabel 'N'
set ylabel 'seconds per call (wall-clock, median)'
set key top left
set grid xtics ytics mytics
plot ${plot_line%, }
EOF
  made+=("$png")
done <"$work/combos.txt"

printf 'plot.sh: wrote %s\n' "${made[@]}"
