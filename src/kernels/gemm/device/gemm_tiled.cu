// Host entry of the tiled GEMM family: picks a tile configuration by shape
// and launches it (device/gemm_tiled_launch.cuh). Explicit instantiations
// for float, double, cfloat, cdouble.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/gemm/device/gemm_tiled_launch.cuh"
#include "kernels/gemm/gemm_args.hpp"
#include "kernels/gemm/gemm_tile_config.hpp"
#include "runtime/cuda_check.hpp"

namespace egpu::kernels {
namespace {

int sm_count() {
  int dev = 0, sms = 0;
  runtime::cuda_check(cudaGetDevice(&dev), "cudaGetDevice");
  runtime::cuda_check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev),
                      "cudaDeviceGetAttribute(multiProcessorCount)");
  return sms;
}

}  // namespace

template <class T>
void gemm_tiled(const GemmArgs<T>& args, void* stream, GemmConfig config) {
  if (args.m <= 0 || args.n <= 0) return;  // nothing to write
  if (config == GemmConfig::automatic) {
    // The large tile when it alone gives every multiprocessor a block.
    using L = TileShape<T, LargeTag>;
    const std::int64_t tiles = device::ceil_div(args.m, L::bm) * device::ceil_div(args.n, L::bn);
    config = tiles >= sm_count() ? GemmConfig::large : GemmConfig::small;
  }
  const auto s = static_cast<cudaStream_t>(stream);
  if (config == GemmConfig::large)
    device::launch_tiled<T, LargeTag>(args, s);
  else
    device::launch_tiled<T, SmallTag>(args, s);
}

template void gemm_tiled<float>(const GemmArgs<float>&, void*, GemmConfig);
template void gemm_tiled<double>(const GemmArgs<double>&, void*, GemmConfig);
template void gemm_tiled<cfloat>(const GemmArgs<cfloat>&, void*, GemmConfig);
template void gemm_tiled<cdouble>(const GemmArgs<cdouble>&, void*, GemmConfig);

}  // namespace egpu::kernels
