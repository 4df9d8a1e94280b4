#!/usr/bin/env bash
# Installs what egpu's build needs from Debian when it is missing (as root;
# otherwise prints the apt-get command and fails) and checks for the CUDA
# Toolkit, which is not a Debian package here: install it from NVIDIA.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# package -> how to tell it is there (a command, or a header)
missing=()
have_package() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
need() {  # need <package> <command or file that shows it is installed>
  local package=$1 probe=$2
  if [[ $probe == /* ]]; then [ -e "$probe" ] && return 0; else command -v "$probe" >/dev/null 2>&1 && return 0; fi
  have_package "$package" && return 0
  missing+=("$package")
}
need libeigen3-dev /usr/include/eigen3/Eigen/Dense
need libboost-test-dev /usr/include/boost/test/unit_test.hpp
need cmake cmake
need ninja-build ninja
need g++ g++
# The CPU BLAS behind NVBLAS in `egpu-bench transparent` (Eigen + NVBLAS).
need libopenblas-dev /usr/lib/x86_64-linux-gnu/libopenblas.so

if [ ${#missing[@]} -gt 0 ]; then
  cmd="apt-get update && apt-get install -y --no-install-recommends ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup.sh: missing: ${missing[*]}. Install them as root:" >&2
    echo "  sudo sh -c '$cmd'" >&2
    exit 1
  fi
  echo "setup.sh: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update
  apt-get install -y --no-install-recommends "${missing[@]}"
fi

cmake_version=$(cmake --version | sed -n '1s/^cmake version //p')
if [ "$(printf '%s\n3.24\n' "$cmake_version" | sort -V | head -1)" != 3.24 ]; then
  echo "setup.sh: CMake $cmake_version is older than 3.24, which egpu needs (Debian 12's cmake is 3.25)" >&2
  exit 1
fi

if ! egpu_find_nvcc; then
  echo "setup.sh: the CUDA Toolkit (nvcc, 12 or newer) was not found: not on PATH, not in /usr/local/cuda/bin," >&2
  echo "  and CUDACXX is not set. Install it from https://developer.nvidia.com/cuda-downloads and run again." >&2
  exit 1
fi
echo "setup.sh: ok ($("$NVCC" --version | sed -n 's/^Cuda compilation tools, //p'), $(cmake --version | head -1))"
