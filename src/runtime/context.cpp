#include "runtime/context.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "egpu/error.hpp"
#include "runtime/cuda_check.hpp"
#include "runtime/device.hpp"

namespace egpu::runtime {

void cublas_check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw egpu::error(std::string(what) + " failed: " + cublasGetStatusName(status) + " (" +
                      cublasGetStatusString(status) + ")");
}

Context::Context(int device) : m_device(device) {
  cuda_check(cudaSetDevice(device), "cudaSetDevice");
  (void)stream(0);
}

Context::~Context() {
  // Teardown at thread or process exit: nothing can be reported, and the
  // CUDA runtime may already be shutting down.
  for (auto* slots : {&m_up, &m_down})
    for (StagingSlot& slot : *slots)
      if (slot.done != nullptr) (void)cudaEventDestroy(slot.done);
  if (m_cublas != nullptr) (void)cublasDestroy(m_cublas);
  for (cudaStream_t s : m_streams) (void)cudaStreamDestroy(s);
}

cudaStream_t Context::stream(int i) {
  while (static_cast<int>(m_streams.size()) <= i) {
    cudaStream_t s = nullptr;
    cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    m_streams.push_back(s);
  }
  return m_streams[static_cast<std::size_t>(i)];
}

cublasHandle_t Context::cublas() {
  if (m_cublas == nullptr) cublas_check(cublasCreate(&m_cublas), "cublasCreate");
  return m_cublas;
}

std::vector<StagingSlot>& Context::ring(std::vector<StagingSlot>& slots) {
  if (slots.empty()) {
    slots.resize(kRingSlots);
    for (StagingSlot& slot : slots) {
      slot.block = acquire_pinned(kSlotBytes);
      cuda_check(cudaEventCreateWithFlags(&slot.done, cudaEventDisableTiming), "cudaEventCreate");
    }
  }
  return slots;
}

Context& thread_context() {
  const DeviceInfo& info = selected_device();
  if (!info.usable) throw egpu::error("no usable GPU: " + info.why_not);
  thread_local std::unique_ptr<Context> context;
  if (!context) context = std::make_unique<Context>(info.index);
  // Another library in this thread may have made a different device current.
  cuda_check(cudaSetDevice(context->device()), "cudaSetDevice");
  return *context;
}

namespace {
std::atomic<std::size_t> g_budget_measurements{0};
}  // namespace

std::size_t budget_measurements() { return g_budget_measurements.load(); }

std::size_t pool_idle_bytes() {
  cudaMemPool_t pool = nullptr;
  cuda_check(cudaDeviceGetMemPool(&pool, thread_context().device()), "cudaDeviceGetMemPool");
  std::uint64_t reserved = 0, used = 0;
  cuda_check(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved),
             "cudaMemPoolGetAttribute(reserved)");
  cuda_check(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used), "cudaMemPoolGetAttribute(used)");
  return reserved > used ? static_cast<std::size_t>(reserved - used) : 0;
}

std::size_t device_budget(std::size_t limit, std::optional<std::size_t> pool_idle) {
  if (limit != 0) return limit;
  std::size_t free_bytes = 0, total_bytes = 0;
  cuda_check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  ++g_budget_measurements;
  // Memory the stream-ordered pool keeps from earlier calls counts as used
  // for the driver but is ours to hand out again.
  free_bytes += pool_idle ? *pool_idle : pool_idle_bytes();
  // Leave room for cuBLAS workspaces, other streams and fragmentation.
  const std::size_t reserve = std::max<std::size_t>(std::size_t(512) << 20, free_bytes / 20);
  const std::size_t budget = free_bytes > reserve ? free_bytes - reserve : 0;
  thread_context().set_measured_budget(budget);
  return budget;
}

}  // namespace egpu::runtime
