// Per-call options of egpu::gpu(expr, options).
#pragma once

#include <cstddef>

namespace egpu {

// Which GEMM implementation runs a product on the GPU.
enum class Backend {
  own,     // the library's own tiled kernel family (default)
  cublas,  // cuBLAS, for reference and comparison
};

struct Options {
  Backend backend = Backend::own;
  // Device memory one call may use, in bytes; 0 takes what the device has
  // free. A product larger than this is tiled through it (out-of-core).
  std::size_t device_memory_limit = 0;
};

}  // namespace egpu
