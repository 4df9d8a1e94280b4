#!/usr/bin/env bash
# Installs what is missing, configures and builds everything into build/ and
# runs the whole test suite; ends with ctest's summary and its exit status.
# The bench is compiled here as a check, at -O0 (EGPU_BENCH_LEAN): time with
# scripts/bench.sh's build. The examples are built by the install test,
# against the installed package, not here as well.
# Environment:
#   EGPU_CUDA_ARCHITECTURES  CUDA architectures to build (the library, the
#                            tests and the bench); default: those of the GPUs
#                            on this machine, or 90-virtual where there is
#                            none: PTX for compute_90 only. No device code
#                            can run there, so the compile to PTX is the
#                            check, and ptxas (PTX to machine code, half of
#                            the kernels' compile) runs where the GPU tests
#                            do. The library's own default, the list
#                            sm_80/86/89/90 and PTX, is what scripts/bench.sh
#                            and an install build.
#   EGPU_JOBS                parallel build and test jobs (default 2)
#   EGPU_COMPILE_WITHOUT_GC  ON/OFF: GCC compiles without collecting its
#                            garbage (7-18 % faster on the largest tests,
#                            up to 4 GB a compile); default ON where the
#                            machine has 6 GB of available memory per job
#   EGPU_BUILD_DIR           build folder (default build)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
started=$SECONDS

"$EGPU_ROOT/scripts/setup.sh"
egpu_find_nvcc
export CUDACXX=$NVCC

# The tests run on this machine's GPUs only: compile for those.
archs=${EGPU_CUDA_ARCHITECTURES:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null |
  tr -d '. ' | grep -E '^[0-9]+$' | sort -u | paste -sd ';' || true)}
archs=${archs:-90-virtual}
jobs=${EGPU_JOBS:-2}
available_kb=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo 2>/dev/null || true)
no_gc=OFF
[ "${available_kb:-0}" -ge $((jobs * 6 * 1024 * 1024)) ] && no_gc=ON
no_gc=${EGPU_COMPILE_WITHOUT_GC:-$no_gc}
build_dir=${EGPU_BUILD_DIR:-$EGPU_ROOT/build}

cmake -S "$EGPU_ROOT" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES="$archs" -DEGPU_TOOLS_CUDA_ARCHITECTURES="$archs" -DEGPU_BUILD_TESTS=ON -DEGPU_BENCH_LEAN=ON -DEGPU_BUILD_EXAMPLES=OFF \
  -DEGPU_COMPILE_WITHOUT_GC="$no_gc"
# Keep going past a failed compile so that everything else is built and
# tested; an executable that did not build is removed (not left stale), so
# ctest reports its tests as not run.
build_status=0
cmake --build "$build_dir" -j "$jobs" -- -k 0 || build_status=$?
if [ "$build_status" -ne 0 ]; then
  cmake --build "$build_dir" -- -n 2>/dev/null | sed -n 's/.*Linking [A-Z]* executable \(.*\)$/\1/p' |
    while IFS= read -r stale; do rm -f "$build_dir/$stale"; done
  echo "test.sh: THE BUILD FAILED (exit $build_status, errors above); running the tests that did build" >&2
fi

# How long the set-up and build took; ctest's last line gives the tests' time.
echo "test.sh: CUDA architectures $archs, GCC without garbage collection $no_gc; set-up and build took $((SECONDS - started)) s"
test_status=0
ctest --test-dir "$build_dir" --output-on-failure --no-tests=error -j "$jobs" || test_status=$?
[ "$build_status" -eq 0 ] || exit "$build_status"
exit "$test_status"
