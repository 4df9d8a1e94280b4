// Hooks for egpu's own tests: not part of the public interface.
#pragma once

#include <cstddef>

namespace egpu::detail {

// Makes the calling thread's next product fail with egpu::error after it
// has issued `operations` pipeline operations (uploads, multiplies,
// downloads), as a CUDA error there would; -1 disarms it. It applies to the
// next product only, failing or not. Used to check that
// a failed accumulating call leaves its destination unchanged.
void inject_failure_after(int operations);

// Makes the next operation the calling thread queues on DeviceMatrix data
// fail once it has run, as an asynchronous CUDA failure would: egpu::error
// at the next wait, naming it.
void inject_queued_failure();

// Device memory the library holds in use (allocated from the device pool
// and not yet returned), and pinned host memory its pool holds; both go
// back to their earlier values after a call, failed or not.
std::size_t device_bytes_in_use();
std::size_t pinned_bytes_held();

// Products the library has run on the GPU in this process (every
// detail::gemm call that got past its checks, from any thread).
std::size_t products_run_on_gpu();

// How often the library has measured the device's free memory for a
// call's budget (cudaMemGetInfo) in this process, from any thread.
std::size_t budget_measurements();

// Host-resident calls whose downloads the calling thread queued itself,
// without the writer thread (every download straight into page-locked
// memory, or one download), in this process, from any thread.
std::size_t calls_queueing_downloads_inline();

}  // namespace egpu::detail
