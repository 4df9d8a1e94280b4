// Kernels compiled while the program runs: CUDA source compiled by NVRTC
// for the device in use, loaded once and kept for the life of the process.
// A compiled image is also kept on disk when EGPU_CACHE_DIR names a folder,
// so a later process skips the compiler. A source is a fixed prelude (the
// device code every kernel of a family shares, kept by the caller for the
// life of the process) and the kernel's own text; the same pair asked for
// again is found, not compiled again.
#pragma once

#include <cuda_runtime.h>

#include <initializer_list>
#include <string>
#include <vector>

namespace egpu::runtime {

// The kernel `name` of prelude + text, compiled for `device` (the current
// one). Throws egpu::error with the compiler's log if it does not compile.
cudaKernel_t runtime_kernel(const char* prelude, const std::string& text, const char* name, int device);

// The kernels of a family (a prelude) found by `signature`, a short key that
// determines the kernel text (the caller's promise): null when they are not
// loaded yet. A kernel used again costs neither generating its text nor
// more than a hash lookup (no allocation).
const std::vector<cudaKernel_t>* known_kernels(const char* prelude, const std::string& signature, int device);

// Compiles (or reads from disk) prelude + text and keeps its kernels `names`
// under `signature` for known_kernels. A family asks for the same names
// with every signature.
const std::vector<cudaKernel_t>& add_kernels(const char* prelude, const std::string& signature, const std::string& text,
                                             std::initializer_list<const char*> names, int device);

// The kernels `names` of prelude + make_text(), make_text called only when
// `signature` is not known yet.
template <class MakeText>
const std::vector<cudaKernel_t>& runtime_kernels(const char* prelude, const std::string& signature,
                                                 MakeText&& make_text, std::initializer_list<const char*> names,
                                                 int device) {
  if (const std::vector<cudaKernel_t>* known = known_kernels(prelude, signature, device)) return *known;
  return add_kernels(prelude, signature, make_text(), names, device);
}

// Counts since the process started, for benches and tests.
struct RuntimeKernelStats {
  long compiled = 0;      // by NVRTC in this process
  long from_disk = 0;     // loaded from EGPU_CACHE_DIR
  long from_memory = 0;   // found already loaded
  double compile_seconds = 0;
};
RuntimeKernelStats runtime_kernel_stats();

}  // namespace egpu::runtime
