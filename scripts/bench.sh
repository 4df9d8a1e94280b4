#!/usr/bin/env bash
# Installs what is missing, builds egpu-bench (Release, the project's default
# CUDA architectures) and runs `egpu-bench product` against CPU Eigen.
# Arguments are passed to egpu-bench product, e.g.
#   scripts/bench.sh --sizes 1024,4096 --scalars f64
# Environment: EGPU_BUILD_DIR (default build-release), EGPU_JOBS (default: all cores).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

"$EGPU_ROOT/scripts/setup.sh"
egpu_find_nvcc
export CUDACXX=$NVCC

build_dir=${EGPU_BUILD_DIR:-$EGPU_ROOT/build-release}
cmake -S "$EGPU_ROOT" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$build_dir" --target egpu-bench -j "${EGPU_JOBS:-$(nproc)}"
exec "$build_dir/bench/egpu-bench" product "$@"
