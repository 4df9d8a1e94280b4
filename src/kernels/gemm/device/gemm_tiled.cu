// Host entry of the tiled GEMM family: picks a tile configuration by shape
// and launches it (device/gemm_tiled_launch.cuh). Explicit instantiations
// for float, double, cfloat, cdouble.
#include <cuda_runtime.h>

#include <cstdint>

#include <type_traits>

#include "kernels/gemm/device/gemm_complex_as_real.hpp"
#include "kernels/gemm/device/gemm_mma.hpp"
#include "kernels/gemm/device/gemm_tiled_launch.cuh"
#include "kernels/gemm/gemm_args.hpp"
#include "kernels/gemm/gemm_tile_config.hpp"
#include "runtime/cuda_check.hpp"
#include "runtime/current_device.hpp"

namespace egpu::kernels {
const char* config_name(GemmConfig config) {
  switch (config) {
    case GemmConfig::automatic: return "automatic";
    case GemmConfig::large: return "large";
    case GemmConfig::medium: return "medium";
    case GemmConfig::small: return "small";
    case GemmConfig::tensor_large: return "tensor_large";
    case GemmConfig::tensor_small: return "tensor_small";
    case GemmConfig::split_k: return "split_k";
  }
  return "unknown";
}

// Whether T under `math` runs on the tensor-core configurations of the
// current device: double and complex<double> on sm_90 and later (the fp64
// m16n8 mma shapes), float in the tf32 / tf32x3 modes (TF32 mma, sm_80, the
// oldest architecture built). Otherwise the FFMA configurations run.
template <class T>
bool uses_tensor_cores(MathMode math) {
  if constexpr (std::is_same_v<T, double> || std::is_same_v<T, cdouble>) return runtime::current_compute_major() >= 9;
  if constexpr (std::is_same_v<T, float>) return math != MathMode::exact;
  return false;
}

template <class T>
std::vector<GemmConfig> selectable_configs(MathMode math) {
  if (uses_tensor_cores<T>(math))
    return {GemmConfig::tensor_large, GemmConfig::tensor_small, GemmConfig::split_k};
  if constexpr (device::has_medium_tile<T>)
    return {GemmConfig::large, GemmConfig::medium, GemmConfig::small, GemmConfig::split_k};
  return {GemmConfig::large, GemmConfig::small, GemmConfig::split_k};
}

template <class T>
void gemm_tiled(const GemmArgs<T>& args, void* stream, GemmConfig config) {
  if (args.m <= 0 || args.n <= 0) return;  // nothing to write
  const int sms = runtime::current_multiprocessors();
  if constexpr (!std::is_same_v<T, cfloat>) {  // complex<float> has no tensor-core configurations
    if (uses_tensor_cores<T>(args.math)) {
      if constexpr (std::is_same_v<T, cdouble>)
        if (config == GemmConfig::automatic && device::runs_complex_as_real(args) &&
            device::gemm_complex_as_real(args, static_cast<cudaStream_t>(stream)))
          return;
      if (config == GemmConfig::automatic) config = device::choose_mma_config(args, sms);
      // split_k of a tensor-core scalar and mode cuts gemm_mma's split tile.
      if (config == GemmConfig::tensor_large || config == GemmConfig::tensor_small || config == GemmConfig::split_k) {
        device::gemm_mma<T>(args, static_cast<cudaStream_t>(stream), config, sms);
        return;
      }
    }
  }
  // Without tensor cores for T and math: the FFMA configurations of the same shapes.
  if (config == GemmConfig::tensor_large) config = GemmConfig::large;
  if (config == GemmConfig::tensor_small) config = GemmConfig::small;
  if (config == GemmConfig::automatic) config = device::choose_tiled_config(args, sms);
  const auto s = static_cast<cudaStream_t>(stream);
  if (config == GemmConfig::split_k) {
    if constexpr (device::has_medium_tile<T>)
      if (device::splits_on_medium_tile(args)) {
        device::launch_tiled_split_k<T, typename MediumTileTag<T>::type>(args, s, sms);
        return;
      }
    device::launch_tiled_split_k(args, s, sms);
    return;
  }
  if (config == GemmConfig::large)
    device::launch_tiled_product<T, LargeTag>(args, s);
  else if (config == GemmConfig::medium)
    device::launch_tiled_product<T, typename MediumTileTag<T>::type>(args, s);
  else
    device::launch_tiled_product<T, SmallTag>(args, s);
}

template std::vector<GemmConfig> selectable_configs<float>(MathMode);
template std::vector<GemmConfig> selectable_configs<double>(MathMode);
template std::vector<GemmConfig> selectable_configs<cfloat>(MathMode);
template std::vector<GemmConfig> selectable_configs<cdouble>(MathMode);

template void gemm_tiled<float>(const GemmArgs<float>&, void*, GemmConfig);
template void gemm_tiled<double>(const GemmArgs<double>&, void*, GemmConfig);
template void gemm_tiled<cfloat>(const GemmArgs<cfloat>&, void*, GemmConfig);
template void gemm_tiled<cdouble>(const GemmArgs<cdouble>&, void*, GemmConfig);

}  // namespace egpu::kernels
