#!/usr/bin/env bash
# Checks and benches egpu on the GPU machine from a build made elsewhere:
# nothing is compiled here (the GPU machine has no Eigen or Boost headers).
#
#   scripts/device.sh [SECTION...] [-- EGPU-BENCH-PRODUCT-ARGS...]
#
# Sections (default: info tests sanitize bench):
#   build      run on the DEVELOPMENT machine: configure and build the build
#              folder for sm_90 (-DCMAKE_CUDA_ARCHITECTURES=90, Release)
#   info       nvidia-smi, toolkit and sanitizer versions
#   tests      the GPU tests (ctest label "gpu"), run as built
#   sanitize   memcheck and racecheck (or name one: memcheck, racecheck) on
#              each GPU test with EGPU_TEST_SCALE=0.05
#   bench      egpu-bench product (arguments after -- are passed on)
#   gemm       egpu-bench gemm: the own kernel family against cuBLAS on
#              device-resident data, rates and errors against fp64 (not in
#              the default list; EGPU_GEMM_ARGS passes it options)
#   ooc        egpu-bench ooc: out-of-core against in-core (not in the
#              default list; EGPU_OOC_ARGS passes it options)
#
# Environment:
#   EGPU_BUILD_DIR         build folder (default build-dev in the repository)
#   OUT                    where logs and CSVs go (default <build>/device-<time>)
#   EGPU_GPU_LABEL         ctest label of the GPU tests (default gpu)
#   EGPU_TEST_SCALE        case-count scale under the sanitizers (default 0.05)
#   EGPU_SANITIZE_TIMEOUT  seconds per test under a sanitizer (default 300)
#   EGPU_SANITIZE_EXCLUDE  ctest label regex of GPU tests the sanitizers skip
#                          (e.g. large; default: none skipped)
#   EGPU_RACECHECK_EXCLUDE label regex racecheck skips besides (default
#                          "pipeline|large"). racecheck looks for shared-memory
#                          hazards inside kernels; those tests launch the
#                          kernels gemm_property_test and gemm_kernel_config_test
#                          cover, over sizes racecheck's instrumentation turns
#                          into tens of minutes. memcheck runs them all.
#   EGPU_GEMM_ARGS         options of egpu-bench gemm, word-split (e.g.
#                          "--quick --scalars f32")
#   EGPU_OOC_ARGS          options of egpu-bench ooc, word-split (e.g.
#                          "--sizes 8192 --scalars f64")
#
# Example: scripts/device.sh tests sanitize bench -- --sizes 1024,4096,8192
# Plot a product CSV afterwards (development machine, gnuplot):
#   scripts/plot.sh <OUT>/product-<date>-<device>.csv
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

sections=()
bench_args=()
while [ $# -gt 0 ]; do
  case $1 in
    --) shift; bench_args=("$@"); break ;;
    build | info | tests | sanitize | memcheck | racecheck | bench | gemm | ooc) sections+=("$1") ;;
    -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "device.sh: unknown section \"$1\" (build info tests sanitize memcheck racecheck bench gemm ooc)" >&2; exit 2 ;;
  esac
  shift
done
[ ${#sections[@]} -gt 0 ] || sections=(info tests sanitize bench)

build_dir=${EGPU_BUILD_DIR:-$EGPU_ROOT/build-dev}
case $build_dir in /*) ;; *) build_dir=$EGPU_ROOT/$build_dir ;; esac
label=${EGPU_GPU_LABEL:-gpu}
out=${OUT:-$build_dir/device-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
echo "device.sh: build $build_dir, logs in $out, sections: ${sections[*]}"

declare -a summary=()
failed=0
record() {  # record <section> <exit status> <seconds>
  summary+=("$(printf '%-10s %-20s %5s s' "$1" "$([ "$2" -eq 0 ] && echo ok || echo "FAILED (exit $2)")" "$3")")
  [ "$2" -eq 0 ] || failed=1
}

# ---- sections -------------------------------------------------------------

section_build() {
  "$EGPU_ROOT/scripts/setup.sh" || return 1
  egpu_find_nvcc || return 1
  export CUDACXX=$NVCC
  cmake -S "$EGPU_ROOT" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 &&
    cmake --build "$build_dir" -j "${EGPU_JOBS:-$(nproc)}" || return 1
  echo "device.sh: built; the GPU machine needs $build_dir ($(du -sh "$build_dir" | cut -f1)) at the same path"
}

section_info() {
  date -u +"%Y-%m-%dT%H:%M:%SZ"
  if command -v nvidia-smi >/dev/null; then nvidia-smi; else echo "(nvidia-smi not found)"; fi
  { egpu_find_nvcc && "$NVCC" --version; } || echo "(nvcc not found)"
  compute-sanitizer --version 2>/dev/null | head -2 || echo "(compute-sanitizer not found)"
  [ -x "$build_dir/bench/egpu-bench" ] && echo "egpu-bench: $build_dir/bench/egpu-bench"
  return 0
}

require_build() {
  if [ ! -f "$build_dir/CTestTestfile.cmake" ]; then
    echo "device.sh: $build_dir is not a configured build folder (run 'scripts/device.sh build' on the development machine)" >&2
    return 1
  fi
}

section_tests() {
  require_build || return 1
  ctest --test-dir "$build_dir" -L "$label" --no-tests=error --output-on-failure
}

# The GPU tests as ctest would run them: names, commands, working folders,
# environments (from `ctest -N -V`), so that they run here without ctest.
test_names=() test_commands=() test_dirs=() test_envs=()
list_gpu_tests() {
  test_names=() test_commands=() test_dirs=() test_envs=()
  local line command="" dir="" envs="" in_env=0
  while IFS= read -r line; do
    if [[ $line =~ ^[0-9]+:\ Test\ command:\ (.*)$ ]]; then
      command=${BASH_REMATCH[1]} dir=$build_dir envs="" in_env=0
    elif [[ $line =~ ^[0-9]+:\ Working\ Directory:\ (.*)$ ]]; then
      dir=${BASH_REMATCH[1]}
    elif [[ $line =~ ^[0-9]+:\ Environment\ variables: ]]; then
      in_env=1
    elif ((in_env)) && [[ $line =~ ^[0-9]+:\ \ (.+)$ ]]; then
      envs+="${BASH_REMATCH[1]}"$'\n'
    elif [[ $line =~ ^\ *Test\ +#[0-9]+:\ (.*)$ ]]; then
      test_names+=("${BASH_REMATCH[1]}") test_commands+=("$command") test_dirs+=("$dir") test_envs+=("$envs")
      in_env=0
    fi
  done < <(ctest --test-dir "$build_dir" -N -V -L "$label" ${exclude:+-LE "$exclude"})
  if [ ${#test_names[@]} -eq 0 ]; then
    echo "device.sh: no tests labelled \"$label\" in $build_dir" >&2
    return 1
  fi
}

# sanitize_with <tool>: every GPU test under compute-sanitizer --tool <tool>.
sanitize_with() {
  local tool=$1 i status=0 log exclude=${EGPU_SANITIZE_EXCLUDE:-}
  if [ "$tool" = racecheck ]; then
    local skip=${EGPU_RACECHECK_EXCLUDE-pipeline|large}
    exclude=${exclude:+$exclude|}$skip
  fi
  list_gpu_tests || return 1
  command -v compute-sanitizer >/dev/null || { echo "device.sh: compute-sanitizer not found" >&2; return 1; }
  for i in "${!test_names[@]}"; do
    log="$out/sanitize-$tool-${test_names[$i]//[^A-Za-z0-9_.-]/_}.log"
    echo "== $tool: ${test_names[$i]}"
    (
      cd "${test_dirs[$i]}" || exit 1
      while IFS= read -r assignment; do [ -n "$assignment" ] && export "${assignment?}"; done <<<"${test_envs[$i]}"
      export EGPU_TEST_SCALE=${EGPU_TEST_SCALE:-0.05}
      eval "set -- ${test_commands[$i]}"
      timeout "${EGPU_SANITIZE_TIMEOUT:-300}" compute-sanitizer --tool "$tool" --error-exitcode 99 "$@"
    ) >"$log" 2>&1
    local rc=$?
    grep -E '^========= (ERROR SUMMARY|RACECHECK SUMMARY)' "$log" | sed 's/^/   /'
    if [ $rc -ne 0 ]; then
      status=1
      echo "   FAILED (exit $rc; 124: timed out, 99: sanitizer errors); last lines of $log:"
      tail -n 25 "$log" | sed 's/^/   | /'
    fi
  done
  return $status
}

# run_bench <subcommand> [options]: the build's egpu-bench, CSVs into $out.
run_bench() {
  local bench=$build_dir/bench/egpu-bench
  [ -x "$bench" ] || { echo "device.sh: $bench not built" >&2; return 1; }
  "$bench" "$1" --csv-dir "$out" "${@:2}"
}

section_bench() { run_bench product "${bench_args[@]}"; }
# shellcheck disable=SC2086 # EGPU_GEMM_ARGS and EGPU_OOC_ARGS are lists of words
section_gemm() { run_bench gemm ${EGPU_GEMM_ARGS:-}; }
# shellcheck disable=SC2086
section_ooc() { run_bench ooc ${EGPU_OOC_ARGS:-}; }

# ---- run ------------------------------------------------------------------

run_section() {  # run_section <name> <function> [args]: logs to $out/<name>.log
  local name=$1
  shift
  echo
  echo "==== $name"
  local start=$SECONDS
  "$@" 2>&1 | tee "$out/$name.log"
  local rc=${PIPESTATUS[0]}
  record "$name" "$rc" "$((SECONDS - start))"
}

for section in "${sections[@]}"; do
  case $section in
    build) run_section build section_build ;;
    info) run_section info section_info ;;
    tests) run_section tests section_tests ;;
    sanitize) run_section memcheck sanitize_with memcheck; run_section racecheck sanitize_with racecheck ;;
    memcheck | racecheck) run_section "$section" sanitize_with "$section" ;;
    bench) run_section bench section_bench ;;
    gemm) run_section gemm section_gemm ;;
    ooc) run_section ooc section_ooc ;;
  esac
done

echo
echo "==== device.sh summary (logs and CSVs in $out)"
printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"
exit $failed
