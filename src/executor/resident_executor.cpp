#include "executor/resident_executor.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "backend/device_elementwise.hpp"
#include "backend/device_gemm.hpp"
#include "backend/device_reduce.hpp"
#include "executor/pipeline_parts.hpp"
#include "executor/transfer.hpp"
#include "kernels/elementwise/elementwise_source.hpp"
#include "runtime/context.hpp"
#include "runtime/device_buffer.hpp"
#include "runtime/recording.hpp"

namespace egpu::executor {
namespace {

using detail::MatrixDesc;
using detail::ScalarKind;

// How device memory is laid out for a transfer or GemmArgs: column- or
// row-major with its leading dimension (ok false: neither).
struct OperandLayout {
  bool ok = false;
  Layout layout = Layout::col_major;
  std::int64_t ld = 0;
};
OperandLayout operand_layout(const MatrixDesc& d) {
  if (d.row_stride == 1 && d.col_stride >= std::max<std::int64_t>(d.rows, 1)) return {true, Layout::col_major, d.col_stride};
  if (d.col_stride == 1 && d.row_stride >= std::max<std::int64_t>(d.cols, 1)) return {true, Layout::row_major, d.row_stride};
  return {};
}


// One call's device side, on the calling thread's stream: host operands
// brought up into device temporaries, a host destination computed in one
// and brought down by finish(), the temporaries returned to the pool in
// stream order when the call ends.
class ResidentCall {
 public:
  // `what` names the call in errors: a format and up to three sizes.
  ResidentCall(const Options& options, const char* what, std::int64_t x, std::int64_t y, std::int64_t z = 0)
      : m_ctx(runtime::thread_context()), m_stream(m_ctx.stream(0)), m_threads(staging_threads(options)),
        m_what{what, x, y, z} {
    maybe_fail();  // an injected failure: before anything is queued
  }

  runtime::Context& ctx() { return m_ctx; }
  cudaStream_t stream() const { return m_stream; }

  // The operand in device memory: itself, or a device copy of a host one
  // (each distinct host view goes up once; a broadcast vector as a vector,
  // keeping its stride of 0).
  MatrixDesc up(const MatrixDesc& d, ScalarKind scalar) {
    if (d.on_device || d.data == nullptr || d.rows == 0 || d.cols == 0) return d;
    runtime::refuse_while_recording("a call reading host memory");
    for (const Copy& c : m_copies)
      if (c.scalar == scalar && detail::same_view(c.host, d)) {
        MatrixDesc device = c.device;
        device.conj = d.conj;
        return device;
      }
    return copy_of(d, scalar, true);
  }

  // The destination in device memory: itself, or a device temporary that
  // finish() brings down into it, holding its values first when `read`
  // (the same temporary as a leaf that is the destination).
  MatrixDesc target(const MatrixDesc& out, ScalarKind scalar, bool read) {
    if (out.on_device) return out;
    runtime::refuse_while_recording("a call writing host memory");
    m_host_out = true;
    m_out = out;
    m_out_scalar = scalar;
    m_out_device = read ? up(out, scalar) : copy_of(out, scalar, false);
    return m_out_device;
  }

  // A copy between a host matrix and device memory laid out column- or
  // row-major (an upload or download of a DeviceMatrix or a block of one):
  // straight into place, no kernel. False (nothing done) for another layout.
  bool copy_straight(const MatrixDesc& from, const MatrixDesc& to, ScalarKind scalar) {
    runtime::refuse_while_recording("a copy between host memory and a DeviceMatrix");
    const MatrixDesc& dev = from.on_device ? from : to;
    const MatrixDesc& host = from.on_device ? to : from;
    const OperandLayout l = operand_layout(dev);
    if (!l.ok) return false;
    const bool col_major = l.layout == Layout::col_major;
    const DenseShape shape{l.layout, col_major ? dev.cols : dev.rows, col_major ? dev.rows : dev.cols, l.ld};
    with_element_type(scalar, [&](auto t) {
      using T = decltype(t);
      const HostMatrix<T> h = host_matrix<T>(host);
      const bool pinned = is_pinned(h);
      if (from.on_device) {
        StagingRing ring{&m_ctx.down_ring()};
        download(static_cast<const T*>(dev.data), shape, h, pinned, ring, m_stream, m_threads);
        m_waits = true;
      } else {
        m_reads_user_memory = m_reads_user_memory || pinned;
        StagingRing ring{&m_ctx.up_ring()};
        upload(h, pinned, shape, false, static_cast<T*>(dev.data), ring, m_stream, m_threads);
      }
    });
    return true;
  }

  // A dense column-major temporary of rows x cols on the device.
  MatrixDesc temporary(std::int64_t rows, std::int64_t cols, ScalarKind scalar) {
    m_buffers.emplace_back(static_cast<std::size_t>(detail::scalar_size(scalar) * rows * cols), m_stream);
    MatrixDesc d;
    d.data = m_buffers.back().get();
    d.rows = rows;
    d.cols = cols;
    d.row_stride = 1;
    d.col_stride = std::max<std::int64_t>(rows, 1);
    d.on_device = true;
    return d;
  }

  // The end of the call's queueing: a host destination comes down (the
  // call waits for it); otherwise the call returns with its work queued,
  // once page-locked host operands (read in place by DMA) have been read.
  void finish() {
    if (runtime::Recording* rec = runtime::recording()) {
      ++rec->operations;  // recorded, not queued: nothing to name or wait for
      return;
    }
    m_ctx.queued().queued(m_what, m_stream);
    if (m_host_out) with_element_type(m_out_scalar, [&](auto t) { bring_down<decltype(t)>(); });
    if (m_host_out || m_waits) {
      m_ctx.queued().wait(m_stream, m_what);
    } else if (m_reads_user_memory) {
      Events events;
      const cudaEvent_t read = events.make();
      record(read, m_stream);
      const cudaError_t status = cudaEventSynchronize(read);
      if (status != cudaSuccess) runtime::throw_cuda(status, m_what.text().c_str());
    }
  }

 private:
  struct Copy {
    MatrixDesc host, device;
    ScalarKind scalar;
    DenseShape shape;
  };

  MatrixDesc copy_of(const MatrixDesc& d, ScalarKind scalar, bool with_values) {
    Copy c;
    with_element_type(scalar, [&](auto t) { c = make_copy<decltype(t)>(d, with_values); });
    c.scalar = scalar;
    m_copies.push_back(c);
    return c.device;
  }

  template <class T>
  Copy make_copy(const MatrixDesc& d, bool with_values) {
    const std::int64_t rows = d.row_stride == 0 ? 1 : d.rows, cols = d.col_stride == 0 ? 1 : d.cols;
    const HostMatrix<T> src{static_cast<T*>(d.data), rows, cols, d.row_stride == 0 ? 1 : d.row_stride,
                            d.col_stride == 0 ? 1 : d.col_stride, false};
    Copy c;
    c.host = d;
    c.shape = dense_shape<T>(rows, cols, natural_layout(src), false);
    m_buffers.emplace_back(sizeof(T) * static_cast<std::size_t>(rows * cols), m_stream);
    T* device = m_buffers.back().as<T>();
    if (with_values) {
      const bool pinned = is_pinned(src);
      m_reads_user_memory = m_reads_user_memory || pinned;
      StagingRing ring{&m_ctx.up_ring()};
      upload(src, pinned, c.shape, false, device, ring, m_stream, m_threads);
    }
    const bool col_major = c.shape.layout == Layout::col_major;
    c.device = d;
    c.device.data = device;
    c.device.on_device = true;
    c.device.row_stride = d.row_stride == 0 ? 0 : col_major ? 1 : c.shape.ld;
    c.device.col_stride = d.col_stride == 0 ? 0 : col_major ? c.shape.ld : 1;
    return c;
  }

  template <class T>
  void bring_down() {
    const auto found = std::find_if(m_copies.begin(), m_copies.end(),
                                    [&](const Copy& c) { return c.device.data == m_out_device.data; });
    const HostMatrix<T> dst = host_matrix<T>(m_out);
    StagingRing ring{&m_ctx.down_ring()};
    download(static_cast<const T*>(found->device.data), found->shape, dst, is_pinned(dst), ring, m_stream, m_threads);
  }

  runtime::Context& m_ctx;
  cudaStream_t m_stream;
  int m_threads;
  runtime::OperationName m_what;
  std::vector<runtime::DeviceBuffer> m_buffers;  // moved as it grows: the device addresses stay
  std::vector<Copy> m_copies;
  bool m_reads_user_memory = false;
  bool m_host_out = false, m_waits = false;
  MatrixDesc m_out, m_out_device;
  ScalarKind m_out_scalar = ScalarKind::f64;
};

// ---- products --------------------------------------------------------------------

// A dense copy of a device operand the backend cannot read as it is (a
// layout neither column- nor row-major, or conjugation cuBLAS cannot do on
// a column-major operand), conjugated on the way when asked.
MatrixDesc dense_copy(ResidentCall& call, const MatrixDesc& d, ScalarKind scalar) {
  detail::ElementwiseProgram copy;
  copy.rows = d.rows;
  copy.cols = d.cols;
  MatrixDesc leaf = d;
  leaf.conj = false;
  copy.leaves.push_back({scalar, leaf});
  const int load = detail::emit(copy, detail::EwOp::load, detail::value_kind(scalar), -1, -1, -1, 0);
  if (d.conj) detail::emit(copy, detail::EwOp::conj, detail::value_kind(scalar), load);
  const MatrixDesc out = call.temporary(d.rows, d.cols, scalar);
  backend::device_elementwise(std::move(copy), out, scalar, call.ctx(), call.stream());
  return out;
}

template <class T>
void set_operand(ResidentCall& call, MatrixDesc d, ScalarKind scalar, Backend backend, const T*& ptr,
                 std::int64_t& ld, Layout& layout, bool& conj) {
  OperandLayout l = operand_layout(d);
  if (!l.ok || (d.conj && l.layout == Layout::col_major && !backend::conjugates_col_major(backend))) {
    d = dense_copy(call, d, scalar);
    l = operand_layout(d);
  }
  ptr = static_cast<const T*>(d.data);
  ld = l.ld;
  layout = l.layout;
  conj = d.conj;
}

// C = alpha A B + beta C, all three in device memory.
template <class T>
void gemm_on_device(ResidentCall& call, MatrixDesc a, MatrixDesc b, MatrixDesc c, const detail::GemmDesc& desc,
                    const Options& options) {
  if (!(c.row_stride == 1 && c.col_stride >= c.rows) && c.col_stride == 1) {
    // A row-major C: C^T = B^T A^T, column-major.
    const MatrixDesc at = kernels::transposed(a);
    a = kernels::transposed(b);
    b = at;
    c = kernels::transposed(c);
  }
  kernels::GemmArgs<T> args;
  args.m = c.rows;
  args.n = c.cols;
  args.k = a.cols;
  set_operand<T>(call, a, desc.scalar, options.backend, args.a, args.lda, args.a_layout, args.conj_a);
  set_operand<T>(call, b, desc.scalar, options.backend, args.b, args.ldb, args.b_layout, args.conj_b);
  const OperandLayout cl = operand_layout(c);
  if (!cl.ok || cl.layout != Layout::col_major)
    throw egpu::error("egpu::gpu: a product's destination in device memory is neither column- nor row-major");
  args.c = static_cast<T*>(c.data);
  args.ldc = cl.ld;
  args.alpha = scalar_from<T>(desc.alpha);
  args.beta = scalar_from<T>(desc.beta);
  args.beta_is_zero = desc.beta_is_zero;
  args.math = math_mode<T>(options.precision);
  backend::device_gemm(options.backend, args, call.ctx(), call.stream());
}

// The program's leaves in device memory. Before the call's target(): a
// destination that is also a leaf is then the same device copy, read and
// written element for element.
void up_leaves(ResidentCall& call, detail::ElementwiseProgram& program) {
  for (detail::EwLeaf& leaf : program.leaves) leaf.m = call.up(leaf.m, leaf.scalar);
}

template <class T>
void run_gemm(const detail::GemmDesc& desc, const Options& options) {
  ResidentCall call(options, "product %lldx%lldx%lld", desc.m, desc.n, desc.k);
  if (desc.k == 0) {
    // The product is zero: C = beta C, or zeros.
    detail::ElementwiseProgram scale;
    scale.rows = desc.m;
    scale.cols = desc.n;
    scale.constants = {desc.beta_is_zero ? std::complex<double>(0.0) : desc.beta};
    const detail::ValueKind v = detail::value_kind(desc.scalar);
    const int beta = detail::emit(scale, detail::EwOp::constant, v, -1, -1, -1, 0);
    if (!desc.beta_is_zero) {
      scale.leaves.push_back({desc.scalar, desc.c});
      const int c = detail::emit(scale, detail::EwOp::load, v, -1, -1, -1, 0);
      detail::emit(scale, detail::EwOp::mul, v, beta, c);
    }
    up_leaves(call, scale);
    const MatrixDesc out = call.target(desc.c, desc.scalar, !desc.beta_is_zero);
    backend::device_elementwise(std::move(scale), out, desc.scalar, call.ctx(), call.stream());
    call.finish();
    return;
  }
  const MatrixDesc a = call.up(desc.a, desc.scalar), b = call.up(desc.b, desc.scalar);
  if (desc.epilogue == nullptr) {
    const MatrixDesc c = call.target(desc.c, desc.scalar, !desc.beta_is_zero);
    gemm_on_device<T>(call, a, b, c, desc, options);
  } else {
    // The product into a temporary, then the rest of the expression over it
    // (the destination read element for element, when it is a leaf).
    const MatrixDesc product = call.temporary(desc.m, desc.n, desc.scalar);
    gemm_on_device<T>(call, a, b, product, desc, options);
    detail::ElementwiseProgram program = *desc.epilogue;
    program.leaves[static_cast<std::size_t>(desc.epilogue_product)].m = product;  // device memory: up() keeps it
    up_leaves(call, program);
    const MatrixDesc out = call.target(desc.c, desc.scalar, desc.epilogue_reads_c);
    backend::device_elementwise(std::move(program), out, desc.scalar, call.ctx(), call.stream());
  }
  call.finish();
}

}  // namespace

bool touches_device(const detail::GemmDesc& desc) {
  if (desc.a.on_device || desc.b.on_device || desc.c.on_device) return true;
  return desc.epilogue != nullptr && touches_device(*desc.epilogue, nullptr);
}

bool touches_device(const detail::ElementwiseProgram& program, const MatrixDesc* out) {
  if (out != nullptr && out->on_device) return true;
  return std::any_of(program.leaves.begin(), program.leaves.end(),
                     [](const detail::EwLeaf& leaf) { return leaf.m.on_device; });
}

void run_resident_gemm(const detail::GemmDesc& desc, const Options& options) {
  const FailureScope failure_scope;
  with_element_type(desc.scalar, [&](auto t) { run_gemm<decltype(t)>(desc, options); });
}

void run_resident_elementwise(const detail::ElementwiseProgram& program, const MatrixDesc& out,
                              ScalarKind out_scalar, bool accumulates, const Options& options) {
  const FailureScope failure_scope;
  ResidentCall call(options, "coefficient-wise expression %lldx%lld", program.rows, program.cols);
  const detail::EwLeaf& first = program.leaves.empty() ? detail::EwLeaf{} : program.leaves[0];
  const bool plain_copy = program.code.size() == 1 && program.code[0].op == detail::EwOp::load &&
                          program.leaves.size() == 1 && first.scalar == out_scalar && !first.m.conj &&
                          first.m.row_stride != 0 && first.m.col_stride != 0 && first.m.on_device != out.on_device;
  if (plain_copy && call.copy_straight(first.m, out, out_scalar)) return call.finish();
  detail::ElementwiseProgram on_device = program;
  up_leaves(call, on_device);
  const MatrixDesc target = call.target(out, out_scalar, accumulates);
  backend::device_elementwise(std::move(on_device), target, out_scalar, call.ctx(), call.stream());
  call.finish();
}

void run_resident_reduction(const detail::ElementwiseProgram& program, const detail::Reduction& reduction,
                            void* result, const Options& options, bool result_on_device) {
  const FailureScope failure_scope;
  ResidentCall call(options, "reduction of %lldx%lld", program.rows, program.cols);
  detail::ElementwiseProgram on_device = program;
  up_leaves(call, on_device);
  // The values come down as a vector of the result type (as a host
  // destination of that many elements).
  const std::int64_t count = detail::reduced_count(program, reduction);
  ScalarKind kind = ScalarKind::f64;  // 8 bytes: std::int64_t for count
  if (reduction.op != detail::ReduceOp::count) {
    switch (program.code.back().type) {
      case detail::ValueKind::f32: kind = ScalarKind::f32; break;
      case detail::ValueKind::c32: kind = ScalarKind::c32; break;
      case detail::ValueKind::c64: kind = ScalarKind::c64; break;
      default: kind = ScalarKind::f64; break;
    }
  }
  MatrixDesc out;
  out.data = result;
  out.rows = count;
  out.cols = 1;
  out.col_stride = count;
  out.on_device = result_on_device;
  const MatrixDesc target = call.target(out, kind, false);
  backend::device_reduce(std::move(on_device), reduction, target.data, call.ctx(), call.stream());
  call.finish();
}

}  // namespace egpu::executor
