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

