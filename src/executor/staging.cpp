#include "executor/staging.hpp"

#include <algorithm>
#include <cstring>

#include "runtime/cuda_check.hpp"

namespace egpu::executor {
namespace {

template <class T> T conj_value(const T& x) { return x; }
template <class R> kernels::Complex<R> conj_value(const kernels::Complex<R>& x) { return {x.re, -x.im}; }

// A piece of a transfer: whole lines [line0, line0 + lines), or part of
// one line, [pos0, pos0 + count), when a line is larger than a slot.
struct Chunk {
  std::int64_t line0 = 0, lines = 0, pos0 = 0, count = 0;
};

class Chunker {
 public:
  Chunker(const DenseShape& shape, std::int64_t slot_elems) : m_shape(shape), m_slot(slot_elems) {}
  bool next(Chunk& c) {
    if (m_line >= m_shape.lines || m_shape.line_length == 0) return false;
    const std::int64_t length = m_shape.line_length;
    if (length <= m_slot) {
      c = {m_line, std::min(m_slot / length, m_shape.lines - m_line), 0, length};
      m_line += c.lines;
    } else {
      c = {m_line, 1, m_pos, std::min(m_slot, length - m_pos)};
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
  std::int64_t m_slot;
  std::int64_t m_line = 0, m_pos = 0;
};

// The user's elements of one line, seen along the line.
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

template <class T>
void pack(const LineView<T>& view, const Chunk& c, bool conjugate, T* slot) {
  for (std::int64_t l = 0; l < c.lines; ++l) {
    const T* src = view.at(c.line0 + l, c.pos0);
    T* dst = slot + l * c.count;
    if (view.pos_stride == 1 && !conjugate) {
      std::memcpy(dst, src, sizeof(T) * c.count);
    } else {
      for (std::int64_t p = 0; p < c.count; ++p) {
        const T& x = src[p * view.pos_stride];
        dst[p] = conjugate ? conj_value(x) : x;
      }
    }
  }
}

template <class T>
void unpack(const T* slot, const Chunk& c, const LineView<T>& view) {
  for (std::int64_t l = 0; l < c.lines; ++l) {
    const T* src = slot + l * c.count;
    T* dst = view.at(c.line0 + l, c.pos0);
    if (view.pos_stride == 1) {
      std::memcpy(dst, src, sizeof(T) * c.count);
    } else {
      for (std::int64_t p = 0; p < c.count; ++p) dst[p * view.pos_stride] = src[p];
    }
  }
}

// Device <-> slot copy of one chunk on `stream`.
template <class T>
void copy_chunk(const Chunk& c, const DenseShape& shape, T* device, T* slot, cudaMemcpyKind kind,
                cudaStream_t stream) {
  T* dev = device + c.line0 * shape.ld + c.pos0;
  const std::size_t e = sizeof(T);
  const bool up = kind == cudaMemcpyHostToDevice;
  cudaError_t status;
  if (c.lines == 1) {
    status = up ? cudaMemcpyAsync(dev, slot, c.count * e, kind, stream)
                : cudaMemcpyAsync(slot, dev, c.count * e, kind, stream);
  } else {
    status = up ? cudaMemcpy2DAsync(dev, shape.ld * e, slot, c.count * e, c.count * e, c.lines, kind, stream)
                : cudaMemcpy2DAsync(slot, c.count * e, dev, shape.ld * e, c.count * e, c.lines, kind, stream);
  }
  runtime::cuda_check(status, up ? "host-to-device copy" : "device-to-host copy");
}

}  // namespace

template <class T>
void upload(const HostMatrix<T>& src, const DenseShape& shape, bool conjugate, T* dst, runtime::Context& ctx) {
  auto& slots = ctx.staging();
  const std::int64_t slot_elems = static_cast<std::int64_t>(runtime::Context::kSlotBytes / sizeof(T));
  const LineView<T> view(src, shape.layout);
  Chunker chunker(shape, slot_elems);
  Chunk c;
  for (std::size_t s = 0; chunker.next(c); s ^= 1) {
    runtime::StagingSlot& slot = slots[s];
    // The slot's previous copy must have left it before it is refilled.
    runtime::cuda_check(cudaEventSynchronize(slot.done), "waiting for a staging slot");
    T* buffer = static_cast<T*>(slot.block.get());
    pack(view, c, conjugate, buffer);
    copy_chunk(c, shape, dst, buffer, cudaMemcpyHostToDevice, ctx.stream());
    runtime::cuda_check(cudaEventRecord(slot.done, ctx.stream()), "cudaEventRecord");
  }
}

template <class T>
void download(const T* src, const DenseShape& shape, const HostMatrix<T>& dst, runtime::Context& ctx) {
  auto& slots = ctx.staging();
  const std::int64_t slot_elems = static_cast<std::int64_t>(runtime::Context::kSlotBytes / sizeof(T));
  const LineView<T> view(dst, shape.layout);
  Chunker chunker(shape, slot_elems);
  Chunk pending[2];
  bool have[2] = {false, false};
  T* device = const_cast<T*>(src);
  auto start = [&](std::size_t s) {
    have[s] = chunker.next(pending[s]);
    if (!have[s]) return;
    copy_chunk(pending[s], shape, device, static_cast<T*>(slots[s].block.get()), cudaMemcpyDeviceToHost,
               ctx.stream());
    runtime::cuda_check(cudaEventRecord(slots[s].done, ctx.stream()), "cudaEventRecord");
  };
  // Two copies in flight: the host unpacks one slot while the other fills.
  start(0);
  start(1);
  for (std::size_t s = 0; have[s]; s ^= 1) {
    runtime::cuda_check(cudaEventSynchronize(slots[s].done), "device-to-host copy");
    unpack(static_cast<const T*>(slots[s].block.get()), pending[s], view);
    start(s);
  }
}

#define EGPU_INSTANTIATE_STAGING(T)                                                                      \
  template void upload<T>(const HostMatrix<T>&, const DenseShape&, bool, T*, runtime::Context&); \
  template void download<T>(const T*, const DenseShape&, const HostMatrix<T>&, runtime::Context&);
EGPU_INSTANTIATE_STAGING(float)
EGPU_INSTANTIATE_STAGING(double)
EGPU_INSTANTIATE_STAGING(kernels::cfloat)
EGPU_INSTANTIATE_STAGING(kernels::cdouble)
#undef EGPU_INSTANTIATE_STAGING

}  // namespace egpu::executor
