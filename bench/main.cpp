// egpu-bench <subcommand> [options]: dispatches to one subcommand.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <stdexcept>

#include "subcommands.hpp"

namespace {

struct Subcommand {
  const char* name;
  int (*run)(int argc, char** argv);
  const char* summary;
};

constexpr Subcommand kSubcommands[] = {
    {"product", egpu_bench::run_product,
     "square host-resident products C.noalias() = A * B: CPU Eigen, cuBLASXt, egpu (own kernel, cuBLAS);\n"
     "                   pageable and pinned memory; each against its backend's floor"},
    {"ooc", egpu_bench::run_ooc,
     "egpu's out-of-core path (device_memory_limit = working set / 4) against in-core, both backends"},
    {"gemm", egpu_bench::run_gemm,
     "device-resident own kernel (gemm_tiled) against cuBLAS: TFLOP/s and errors vs fp64,\n"
     "                   per scalar, shape, ops and float math mode (exact, tf32, tf32x3)"},
    {"elementwise", egpu_bench::run_elementwise,
     "device-resident fused coefficient-wise expressions: egpu's generated kernel against a\n"
     "                   hand-written nvcc kernel and the device-to-device copy rate; first-call compile time"},
    {"elementwise-host", egpu_bench::run_elementwise_host,
     "host-resident fused coefficient-wise expressions, pageable and pinned: egpu against the\n"
     "                   PCIe and host-copy floor and CPU Eigen (one core; OpenMP over column blocks)"},
    {"reduce", egpu_bench::run_reduce,
     "reductions: device-resident sum, squaredNorm, maxCoeff, (a*b).sum, colwise/rowwise sums\n"
     "                   against CUB, Eigen Tensor on GpuDevice and the copy rate, bit-identical repeats\n"
     "                   checked; host-resident egpu::gpu(a).sum() against the PCIe floor and CPU Eigen"},
    {"resident", egpu_bench::run_resident,
     "egpu::DeviceMatrix: products against the backend's kernel, uploads/downloads against\n"
     "                   cudaMemcpy, a chain of small calls, an iterative kernel against host matrices and CPU Eigen"},
    {"calibrate", egpu_bench::run_calibrate,
     "measures this machine's rates for egpu's CPU/GPU dispatch and writes them where egpu reads them"},
    {"dispatch", egpu_bench::run_dispatch,
     "the automatic CPU/GPU choice against CPU Eigen and the GPU forced: products N=2..16384,\n"
     "                   coefficient-wise 1..2^27 elements, pageable and pinned"},
    {"small-calls", egpu_bench::run_small_calls,
     "what egpu::gpu adds to the smallest calls (kept on the CPU): 2x2 and 8x8 products and arrays,\n"
     "                   CPU Eigen against egpu::gpu, the fastest of several rounds"},
    {"transparent", egpu_bench::run_transparent,
     "one Eigen program (products, PartialPivLU, LLT) built as plain CPU Eigen, Eigen + NVBLAS and\n"
     "                   Eigen + egpu's transparent mode, timed in one run"},
};

void usage(std::FILE* out) {
  std::fprintf(out, "usage: egpu-bench <subcommand> [options]   (egpu-bench <subcommand> --help)\n\nsubcommands:\n");
  for (const Subcommand& s : kSubcommands) std::fprintf(out, "  %-16s %s\n", s.name, s.summary);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  for (const Subcommand& s : kSubcommands) {
    if (std::strcmp(argv[1], s.name) != 0) continue;
    // The subcommands that measure egpu's GPU path send every call there;
    // calibrate and dispatch measure the choice itself.
    const bool measures_dispatch = !std::strcmp(s.name, "calibrate") || !std::strcmp(s.name, "dispatch") ||
                                   !std::strcmp(s.name, "transparent") || !std::strcmp(s.name, "small-calls");
    if (!measures_dispatch) setenv("EGPU_DISPATCH", "gpu", 0);
#ifdef EGPU_BENCH_LEAN
    std::fprintf(stderr, "egpu-bench: this build is the test build's compile check (-O0, EGPU_BENCH_LEAN): "
                         "its times are not the bench's; use scripts/bench.sh's build\n");
#endif
    try {
      return s.run(argc - 1, argv + 1);
    } catch (const std::invalid_argument& e) {
      std::fprintf(stderr, "egpu-bench %s: %s\n", s.name, e.what());
      return 2;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "egpu-bench %s: %s\n", s.name, e.what());
      return 1;
    }
  }
  std::fprintf(stderr, "egpu-bench: unknown subcommand \"%s\"\n\n", argv[1]);
  usage(stderr);
  return 2;
}
