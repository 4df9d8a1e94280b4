// What NVRTC says of a generated kernel, for the CPU tests of the kernel
// sources (NVRTC is a host library: no GPU needed).
#pragma once

#include <string>

#include "egpu/error.hpp"
#include "runtime/nvrtc_compile.hpp"

namespace egpu_test {

// The compiler's errors for `source` (a prelude and a kernel) built for
// sm_90; empty when it compiled. By default only to PTX: the front end and
// the optimiser, where a generated source can be wrong. ptxas, three
// quarters of the time for these kernels, turns valid PTX into machine code
// and is exercised by `cubin` on a few kernels here and on every kernel the
// GPU tests launch.
inline std::string nvrtc_errors(const std::string& source, bool cubin = false) {
  try {
    (void)egpu::runtime::nvrtc_compile(source, 90, cubin);
    return {};
  } catch (const egpu::error& e) {
    return e.what();
  }
}

}  // namespace egpu_test
