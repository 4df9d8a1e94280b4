#include "runtime/device.hpp"

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "egpu/device.hpp"
#include "egpu/error.hpp"
#include "runtime/cuda_check.hpp"
#include "runtime/device_select.hpp"

namespace egpu::runtime {
namespace {

DeviceInfo probe() {
  DeviceInfo info;
  const DeviceRequest request = parse_device_request(std::getenv("EGPU_DEVICE"));
  if (request.cpu_only) {
    info.why_not = "EGPU_DEVICE=cpu";
    return info;
  }
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    (void)cudaGetLastError();  // the query's failure is an answer, not an error to keep
    info.why_not = status == cudaSuccess ? "no CUDA device" : std::string(cudaGetErrorString(status));
    return info;
  }
  if (request.index >= count)
    throw egpu::error("EGPU_DEVICE=" + std::to_string(request.index) + " but only " + std::to_string(count) +
                      " CUDA device(s) are present");
  cudaDeviceProp prop{};
  cuda_check(cudaGetDeviceProperties(&prop, request.index), "cudaGetDeviceProperties");
  if (prop.major < 8) {
    info.why_not = std::string(prop.name) + " is compute capability " + std::to_string(prop.major) + "." +
                   std::to_string(prop.minor) + "; egpu needs 8.0 or newer";
    return info;
  }
  info.usable = true;
  info.index = request.index;
  info.name = prop.name;
  info.copy_engines = prop.asyncEngineCount;

  // Keep freed device memory in the stream-ordered pool instead of handing
  // it back to the driver after every call: the pool is the device cache.
  cudaMemPool_t pool = nullptr;
  cuda_check(cudaDeviceGetDefaultMemPool(&pool, info.index), "cudaDeviceGetDefaultMemPool");
  std::uint64_t threshold = UINT64_MAX;
  cuda_check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold),
             "cudaMemPoolSetAttribute(release threshold)");
  return info;
}

void notice_cpu_fallback(const DeviceInfo& info) {
  if (quiet_requested(std::getenv("EGPU_QUIET"))) return;
  std::fprintf(stderr, "egpu: no usable GPU (%s); products run on CPU Eigen. EGPU_QUIET=1 silences this.\n",
               info.why_not.c_str());
}

}  // namespace

const DeviceInfo& selected_device() {
  static const DeviceInfo info = [] {
    DeviceInfo probed = probe();
    if (!probed.usable) notice_cpu_fallback(probed);
    return probed;
  }();
  return info;
}

}  // namespace egpu::runtime

namespace egpu {

bool has_device() { return runtime::selected_device().usable; }

std::string device_name() { return runtime::selected_device().name; }

}  // namespace egpu
