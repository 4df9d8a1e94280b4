#include "executor/transfer.hpp"

#include <algorithm>
#include <cstring>

#include "executor/host_copy.hpp"
#include "executor/thread_pool.hpp"
#include "runtime/cuda_check.hpp"
#include "runtime/pinning.hpp"

namespace egpu::executor {
namespace {

template <class T> T conj_value(const T& x) { return x; }
template <class R> kernels::Complex<R> conj_value(const kernels::Complex<R>& x) { return {x.re, -x.im}; }

// Each staging thread copies at least this much of a chunk: handing a
// range to a spinning worker costs about a microsecond, copying 32 KiB a
// few.
constexpr std::size_t kGrainBytes = std::size_t(32) << 10;

// A transfer goes in chunks: the DMA of one chunk runs while the next is
// packed (or unpacked), so the first DMA starts after a small pack. Each
// chunk pays a DMA call, an event and a hand-over to the staging threads,
// so large transfers take large chunks: a quarter of the transfer, from 2
// up to 8 MiB (a slot), and at most half of a small one (not under 512 KiB).
// Measured on a lent H200 host (16 cores): 1024 x 512 double pieces (4 MiB)
// went up at 38-40 GB/s in chunks of 2 MiB against 35 in 1 MiB and 33-35
// in one; 2048 x 1024 pieces at 45 GB/s in chunks of 2 and 4 MiB, 36-38 in
// 1 MiB; a 16384 double product (pieces of 256 MiB) took 196 ms with
// chunks of 8 MiB against 203-205 ms with 2 MiB.
template <class T>
std::int64_t chunk_elements(const DenseShape& shape) {
  const std::size_t bytes = sizeof(T) * static_cast<std::size_t>(shape.lines * shape.line_length);
  const std::size_t chunk = std::min(std::clamp(bytes / 4, std::size_t(2) << 20, runtime::Context::kSlotBytes),
                                     std::max(bytes / 2, std::size_t(512) << 10));
  return static_cast<std::int64_t>(chunk / sizeof(T));
}

class Chunker {
 public:
  Chunker(const DenseShape& shape, std::int64_t chunk_elems) : m_shape(shape), m_chunk(chunk_elems) {}
  bool next(Chunk& c) {
    if (m_line >= m_shape.lines || m_shape.line_length == 0) return false;
    const std::int64_t length = m_shape.line_length;
    if (length <= m_chunk) {
      c = {m_line, std::min(m_chunk / length, m_shape.lines - m_line), 0, length};
      m_line += c.lines;
    } else {
      c = {m_line, 1, m_pos, std::min(m_chunk, length - m_pos)};
      m_pos += c.count;
      if (m_pos == length) {
        m_pos = 0;
        ++m_line;
      }
    }
    return true;
  }

 private:
  DenseShape m_shape;
  std::int64_t m_chunk;
  std::int64_t m_line = 0, m_pos = 0;
};

// The user's elements seen line by line for a dense layout.
template <class T>
struct LineView {
  T* base;
  std::int64_t line_stride, pos_stride;
  LineView(const HostMatrix<T>& m, Layout layout)
      : base(m.data),
        line_stride(layout == Layout::col_major ? m.col_stride : m.row_stride),
        pos_stride(layout == Layout::col_major ? m.row_stride : m.col_stride) {}
  T* at(std::int64_t line, std::int64_t pos) const { return base + line * line_stride + pos * pos_stride; }
};

// Copies the chunk's elements between the user's memory and a dense slot
// (line-major, c.count per line), over the staging threads. to_slot: pack.
template <class T>
void copy_chunk_host(const LineView<T>& view, const Chunk& c, T* slot, bool to_slot, bool conjugate, int threads) {
  parallel_for(c.lines * c.count, threads, static_cast<std::int64_t>(kGrainBytes / sizeof(T)), [&](std::int64_t q0, std::int64_t q1) {
    while (q0 < q1) {
      const std::int64_t line = q0 / c.count, pos = q0 % c.count;
      const std::int64_t run = std::min(c.count - pos, q1 - q0);
      T* user = view.at(c.line0 + line, c.pos0 + pos);
      T* dense = slot + q0;
      if (view.pos_stride == 1 && !conjugate) {
        if (to_slot)
          stream_copy(dense, user, sizeof(T) * run);
        else
          stream_copy(user, dense, sizeof(T) * run);
      } else if (to_slot) {
        for (std::int64_t p = 0; p < run; ++p) dense[p] = conjugate ? conj_value(user[p * view.pos_stride]) : user[p * view.pos_stride];
      } else {
        for (std::int64_t p = 0; p < run; ++p) user[p * view.pos_stride] = dense[p];
      }
      q0 += run;
    }
    fence_stream_copies();  // before this range counts as done
  });
}

// DMA of one chunk between a device tile and host memory whose lines are
// host_pitch elements apart.
template <class T>
void copy_chunk_device(const Chunk& c, const DenseShape& shape, T* device, T* host, std::int64_t host_pitch,
                       cudaMemcpyKind kind, cudaStream_t stream) {
  T* dev = device + c.line0 * shape.ld + c.pos0;
  const std::size_t e = sizeof(T);
  const bool up = kind == cudaMemcpyHostToDevice;
  cudaError_t status;
  if (c.lines == 1)
    status = up ? cudaMemcpyAsync(dev, host, c.count * e, kind, stream)
                : cudaMemcpyAsync(host, dev, c.count * e, kind, stream);
  else
    status = up ? cudaMemcpy2DAsync(dev, shape.ld * e, host, host_pitch * e, c.count * e, c.lines, kind, stream)
                : cudaMemcpy2DAsync(host, host_pitch * e, dev, shape.ld * e, c.count * e, c.lines, kind, stream);
  runtime::cuda_check(status, up ? "host-to-device copy" : "device-to-host copy");
}

// DMA reaches the user's memory directly when it is pinned and each line is
// a contiguous run, lines at least a line apart.
template <class T>
bool direct(const HostMatrix<T>& m, const DenseShape& shape, bool pinned) {
  if (!pinned) return false;
  const LineView<T> view(m, shape.layout);
  return view.pos_stride == 1 && (shape.lines == 1 || view.line_stride >= shape.line_length);
}

}  // namespace

template <class T>
bool is_pinned(const HostMatrix<T>& m) {
  if (m.rows == 0 || m.cols == 0) return false;
  return runtime::is_pinned_range(m.data, m.data + (m.rows - 1) * m.row_stride + (m.cols - 1) * m.col_stride);
}

template <class T>
bool downloads_direct(const HostMatrix<T>& m, bool pinned) {
  return direct(m, dense_shape<T>(m.rows, m.cols, Layout::col_major), pinned);
}

template <class T>
void upload(const HostMatrix<T>& src, bool src_pinned, const DenseShape& shape, bool conjugate, T* dst,
            StagingRing& ring, cudaStream_t stream, int threads) {
  const LineView<T> view(src, shape.layout);
  if (!conjugate && direct(src, shape, src_pinned)) {
    const Chunk all{0, shape.lines, 0, shape.line_length};
    copy_chunk_device(all, shape, dst, view.base, shape.lines == 1 ? shape.line_length : view.line_stride,
                      cudaMemcpyHostToDevice, stream);
    return;
  }
  Chunker chunker(shape, chunk_elements<T>(shape));
  Chunk c;
  while (chunker.next(c)) {
    runtime::StagingSlot& slot = ring.take();
    // The slot's previous copy must have left it before it is refilled.
    runtime::cuda_check(cudaEventSynchronize(slot.done), "waiting for a staging slot");
    T* buffer = static_cast<T*>(slot.block.get());
    copy_chunk_host(view, c, buffer, true, conjugate, threads);
    copy_chunk_device(c, shape, dst, buffer, c.count, cudaMemcpyHostToDevice, stream);
    runtime::cuda_check(cudaEventRecord(slot.done, stream), "cudaEventRecord");
  }
}

template <class T>
void download(const T* src, const DenseShape& shape, const HostMatrix<T>& dst, bool dst_pinned, StagingRing& ring,
              cudaStream_t stream, int threads) {
  ChunkedDownloads<T> downloads(ring, stream, threads);
  downloads.queue(src, shape, dst, dst_pinned);
  while (downloads.unpack_one()) {
  }
}

template <class T>
void ChunkedDownloads<T>::queue(const T* src, const DenseShape& shape, const HostMatrix<T>& dst, bool dst_pinned) {
  if (direct(dst, shape, dst_pinned)) {
    const LineView<T> view(dst, shape.layout);
    const Chunk all{0, shape.lines, 0, shape.line_length};
    copy_chunk_device(all, shape, const_cast<T*>(src), view.base, shape.lines == 1 ? shape.line_length : view.line_stride,
                      cudaMemcpyDeviceToHost, m_stream);
    return;
  }
  Chunker chunker(shape, chunk_elements<T>(shape));
  Chunk c;
  while (chunker.next(c)) {
    if (m_queued.size() == m_ring.slots->size()) unpack_one();  // the next slot is the oldest chunk's
    runtime::StagingSlot& slot = m_ring.take();
    copy_chunk_device(c, shape, const_cast<T*>(src), static_cast<T*>(slot.block.get()), c.count,
                      cudaMemcpyDeviceToHost, m_stream);
    runtime::cuda_check(cudaEventRecord(slot.done, m_stream), "cudaEventRecord");
    m_queued.push_back({c, dst, shape.layout, &slot});
  }
}

template <class T>
bool ChunkedDownloads<T>::unpack_one() {
  if (m_queued.empty()) return false;
  const Queued q = m_queued.front();
  m_queued.pop_front();
  runtime::cuda_check(cudaEventSynchronize(q.slot->done), "device-to-host copy");
  copy_chunk_host(LineView<T>(q.dst, q.layout), q.chunk, static_cast<T*>(q.slot->block.get()), false, false, m_threads);
  return true;
}

#define EGPU_INSTANTIATE_TRANSFER(T)                                                                        \
  template bool is_pinned<T>(const HostMatrix<T>&);                                                       \
  template bool downloads_direct<T>(const HostMatrix<T>&, bool);                                          \
  template void upload<T>(const HostMatrix<T>&, bool, const DenseShape&, bool, T*, StagingRing&, cudaStream_t, int); \
  template void download<T>(const T*, const DenseShape&, const HostMatrix<T>&, bool, StagingRing&, cudaStream_t, int); \
  template class ChunkedDownloads<T>;
EGPU_INSTANTIATE_TRANSFER(float)
EGPU_INSTANTIATE_TRANSFER(double)
EGPU_INSTANTIATE_TRANSFER(kernels::cfloat)
EGPU_INSTANTIATE_TRANSFER(kernels::cdouble)
#undef EGPU_INSTANTIATE_TRANSFER

}  // namespace egpu::executor
