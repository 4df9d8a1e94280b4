// Per-call options of egpu::gpu(expr, options).
#pragma once

#include <cstddef>
#include <cstdint>

namespace egpu {

// Which GEMM implementation runs a product on the GPU.
enum class Backend {
  own,     // the library's own tiled kernel family (default)
  cublas,  // cuBLAS, for reference and comparison
};

// Arithmetic of float products (other scalars always run exact).
enum class Precision {
  exact,   // fp32 multiply-adds, Eigen's arithmetic (default)
  tf32,    // tensor cores, TF32 inputs: fastest, about 1e-3 relative error
  tf32x3,  // three TF32 tensor-core products of split operands: fp32-level error
};

// Where a call runs.
enum class Where {
  automatic,  // the faster of CPU Eigen and the GPU, by a cost model of the call (default)
  gpu,        // the GPU whenever there is one
  cpu,        // CPU Eigen
};

struct Options {
  // `automatic` follows EGPU_DISPATCH=auto|gpu|cpu when it is set.
  // Calls that read or write DeviceMatrix data run on the GPU either way.
  Where where = Where::automatic;
  Backend backend = Backend::own;
  Precision precision = Precision::exact;
  // Device memory one call may use, in bytes; 0 takes what the device has
  // free. A product larger than this is tiled through it (out-of-core).
  std::size_t device_memory_limit = 0;
  // Streams of the pipeline: 1 runs copies and kernels in order on one
  // stream; 2 puts copies on one and kernels on the other; 3 or more give
  // uploads, downloads and kernels streams of their own (kernels of
  // different C tiles alternate over the rest). 0 chooses from the device's
  // copy engines.
  int streams = 0;
  // Edge of the C tiles and depth of the k pieces the pipeline moves, at
  // most (a tile is rounded up to a multiple of 128 unless the dimension is
  // smaller, and shrunk to fit the device budget); 0 chooses from the shape.
  // With both 0, real float from 8192 up also cuts its first k piece in
  // two (a quarter of it, then the rest), so that the kernels start early.
  std::int64_t panel = 0;
  std::int64_t k_panel = 0;
  // When A, B and C all stay on the device: how many leading k pieces every
  // C tile gets, round by round over the tiles, before the tiles are
  // finished one by one; a negative value chooses (half of the pieces for
  // products of 1024 flops or more per byte of A and B, one more where the
  // first piece is cut in two, else none).
  std::int64_t k_rounds = -1;
  // Coefficient-wise expressions move through the pipeline in chunks of
  // about this many bytes of their widest operand; 0 chooses (8 MiB).
  std::int64_t chunk_bytes = 0;
  // Host threads that copy between the user's pageable memory and pinned
  // staging buffers; 0 uses every hardware thread.
  int staging_threads = 0;
};

}  // namespace egpu
