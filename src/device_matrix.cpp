// DeviceMatrix's memory, and egpu::synchronize.
#include <cuda_runtime.h>

#include <cstdlib>
#include <new>
#include <string>

#include "egpu/detail/testing.hpp"
#include "egpu/device.hpp"
#include "egpu/device_matrix.hpp"
#include "egpu/error.hpp"
#include "runtime/context.hpp"
#include "runtime/cuda_check.hpp"
#include "runtime/recording.hpp"

namespace egpu {
namespace detail {

MatrixStorage allocate_matrix(std::size_t bytes) {
  MatrixStorage storage;
  if (bytes == 0) return storage;
  if (!has_device()) {
    storage.data = ::operator new(bytes, std::align_val_t(64));
    return storage;
  }
  runtime::Context& ctx = runtime::thread_context();
  // While the thread records, its stream(0) is captured: the memory comes
  // from a stream outside the recording, ready at once, so that it exists
  // for the recorded calls and for the matrix after the recording alike.
  const bool recording = runtime::recording() != nullptr;
  const cudaStream_t stream = ctx.stream(recording ? 1 : 0);
  cudaError_t status = cudaMallocAsync(&storage.data, bytes, stream);
  if (status == cudaSuccess && recording) status = cudaStreamSynchronize(stream);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();  // an allocation failure is not sticky
    std::size_t free_bytes = 0, total_bytes = 0;
    (void)cudaMemGetInfo(&free_bytes, &total_bytes);
    (void)cudaGetLastError();
    throw egpu::error("DeviceMatrix: cannot allocate " + std::to_string(bytes) + " bytes of device memory (" +
                      std::to_string(free_bytes) + " of " + std::to_string(total_bytes) + " bytes free): " +
                      cudaGetErrorName(status));
  }
  storage.on_device = true;
  return storage;
}

void release_matrix(const MatrixStorage& storage) noexcept {
  if (storage.data == nullptr) return;
  if (!storage.on_device) {
    ::operator delete(storage.data, std::align_val_t(64));
    return;
  }
  if (runtime::Recording* rec = runtime::recording()) {
    // The recorded calls may use it: the graph keeps it.
    try {
      rec->released.push_back(storage.data);
      return;
    } catch (...) {
      // (No host memory to note it in: freed in stream order, which fails the recording.)
    }
  }
  // Stream-ordered: the memory goes back to the pool after the work this
  // thread has queued (which may still read it). A failure cannot be
  // reported from a destructor; the next wait reports a broken stream.
  try {
    (void)cudaFreeAsync(storage.data, runtime::thread_context().stream(0));
  } catch (...) {
  }
}

void inject_queued_failure() { runtime::thread_context().queued().fail_next(); }

}  // namespace detail

void synchronize() {
  if (!has_device()) return;
  runtime::refuse_while_recording("egpu::synchronize");
  runtime::Context& ctx = runtime::thread_context();
  ctx.queued().wait(ctx.stream(0), {"egpu::synchronize"});
}

}  // namespace egpu
