// Copies between strided host memory (the user's Eigen objects) and dense
// device tiles. Page-locked user memory goes by DMA straight from or into
// place; pageable memory is packed into pinned slots by the staging threads
// while the previous slot's DMA runs.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

#include "executor/host_matrix.hpp"
#include "runtime/context.hpp"

namespace egpu::executor {

// Whether the whole of m is page-locked host memory (cudaHostAlloc,
// cudaHostRegister, egpu::pin), so that DMA can reach it directly.
template <class T>
bool is_pinned(const HostMatrix<T>& m);

// A ring of pinned slots used in turn.
struct StagingRing {
  std::vector<runtime::StagingSlot>* slots = nullptr;
  std::size_t next = 0;
  runtime::StagingSlot& take() {
    runtime::StagingSlot& s = (*slots)[next];
    next = (next + 1) % slots->size();
    return s;
  }
};

// Queues the copy of src into the dense device tile dst (laid out as
// `shape`) on `stream`, conjugating on the way when asked. Returns once
// every element is in a pinned slot or on its way by DMA.
template <class T>
void upload(const HostMatrix<T>& src, bool src_pinned, const DenseShape& shape, bool conjugate, T* dst,
            StagingRing& ring, cudaStream_t stream, int threads);

// Copies the dense device tile src into dst once the work queued before on
// `stream` is done. Pinned dst: queued by DMA straight into place (the
// caller synchronizes). Pageable dst: returns when dst holds the data.
template <class T>
void download(const T* src, const DenseShape& shape, const HostMatrix<T>& dst, bool dst_pinned, StagingRing& ring,
              cudaStream_t stream, int threads);

}  // namespace egpu::executor
