// Copies between strided host memory (the user's Eigen objects) and dense
// device tiles. Page-locked user memory goes by DMA straight from or into
// place; pageable memory is packed into pinned slots by the staging threads
// while the previous slot's DMA runs.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "executor/host_matrix.hpp"
#include "runtime/context.hpp"

namespace egpu::executor {

// Whether the whole of m is page-locked host memory (cudaHostAlloc,
// cudaHostRegister, egpu::pin), so that DMA can reach it directly.
template <class T>
bool is_pinned(const HostMatrix<T>& m);

// Whether every column-major tile of m goes down by DMA straight into
// place (ChunkedDownloads::queue): true when the whole of m does, as a
// tile's columns are no longer than m's and lie as far apart.
template <class T>
bool downloads_direct(const HostMatrix<T>& m, bool pinned);

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

// A piece of a transfer: whole lines [line0, line0 + lines), or part of
// one line, [pos0, pos0 + count), when a line is larger than a chunk.
struct Chunk {
  std::int64_t line0 = 0, lines = 0, pos0 = 0, count = 0;
};

// Downloads of dense device tiles into pageable host memory, in chunks
// through the ring's pinned slots, across tiles: the DMA of later chunks,
// of this tile or of tiles queued after it, runs while the host unpacks
// earlier ones. (One tile after another, each DMA waiting for the
// unpacking before it, the host and the link would take turns.) The ring
// is this object's alone while it has chunks queued.
template <class T>
class ChunkedDownloads {
 public:
  ChunkedDownloads(StagingRing& ring, cudaStream_t stream, int threads)
      : m_ring(ring), m_stream(stream), m_threads(threads) {}
  // Queues on `stream` the copy of src (laid out as `shape`) into dst: by
  // DMA straight into place where dst is pinned and dense enough, else
  // chunk by chunk into the slots (while every slot holds a chunk not yet
  // unpacked, unpacking the oldest first). Returns once all of it is queued.
  void queue(const T* src, const DenseShape& shape, const HostMatrix<T>& dst, bool dst_pinned);
  // Waits for the oldest queued chunk to arrive and unpacks it into its
  // destination; false when none is queued.
  bool unpack_one();
  bool pending() const { return !m_queued.empty(); }

 private:
  struct Queued {
    Chunk chunk;
    HostMatrix<T> dst;
    Layout layout;
    runtime::StagingSlot* slot;
  };
  StagingRing& m_ring;
  cudaStream_t m_stream;
  int m_threads;
  std::deque<Queued> m_queued;
};

}  // namespace egpu::executor
