// CUDA source to a loadable image with NVRTC. NVRTC is a host library: this
// needs no GPU, so it lives in egpu_core and is tested on any machine.
#pragma once

#include <string>
#include <vector>

namespace egpu::runtime {

// What every kernel is compiled with besides its architecture. No
// contraction of a multiply and an add into an FMA: each operation rounds
// on its own, as Eigen's CPU code does, and an element's value does not
// depend on which of a kernel's loops (packed or not) computed it. Part of
// a compiled image's identity (runtime_kernels' caches).
inline constexpr const char* kNvrtcOptions[] = {"--std=c++17", "--fmad=false"};

// The image of `source` for architecture `arch` (e.g. 90): a cubin for
// sm_<arch>, or PTX for compute_<arch> (NUL-terminated) when `cubin` is
// false. Throws egpu::error with the compiler's log if it does not compile.
std::vector<char> nvrtc_compile(const std::string& source, int arch, bool cubin);

// Throws egpu::error naming `what` when an NVRTC call failed.
void nvrtc_check(int status, const char* what);

}  // namespace egpu::runtime
