# Sourced by the scripts in this folder: paths and the CUDA Toolkit lookup.
# shellcheck shell=bash

EGPU_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Sets NVCC to the CUDA compiler (CUDACXX, nvcc on PATH, /usr/local/cuda/bin)
# and puts its folder on PATH; returns 1 when there is none.
egpu_find_nvcc() {
  local candidate
  for candidate in "${CUDACXX:-}" "$(command -v nvcc 2>/dev/null || true)" /usr/local/cuda/bin/nvcc; do
    if [ -n "$candidate" ] && [ -x "$candidate" ]; then
      NVCC=$candidate
      case ":$PATH:" in *":$(dirname "$NVCC"):"*) ;; *) PATH="$(dirname "$NVCC"):$PATH" ;; esac
      export PATH
      return 0
    fi
  done
  return 1
}


# The plot scripts' start: egpu_plot_start MIN MAX "$@". A script whose
# header comment is its usage prints it and exits, 0 for -h or --help, 2
# for fewer than MIN or more than MAX arguments (MAX empty: no limit); then
# gnuplot must be there; EGPU_WORK is set to a folder removed at exit.
egpu_plot_start() {
  local min=$1 max=$2
  shift 2
  if [ "${1:-}" = -h ] || [ "${1:-}" = --help ] || [ $# -lt "$min" ] || { [ -n "$max" ] && [ $# -gt "$max" ]; }; then
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
    case ${1:-} in -h | --help) exit 0 ;; esac
    exit 2
  fi
  command -v gnuplot >/dev/null ||
    { echo "$(basename "$0"): gnuplot not found (Debian: apt-get install gnuplot-nox)" >&2; exit 1; }
  EGPU_WORK=$(mktemp -d)
  trap 'rm -rf "$EGPU_WORK"' EXIT
}
