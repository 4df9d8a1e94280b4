#include "executor/gemm_executor.hpp"

#include <memory>
#include <utility>
#include <vector>

#include "backend/device_gemm.hpp"
#include "executor/host_matrix.hpp"
#include "executor/staging.hpp"
#include "planner/gemm_plan.hpp"
#include "runtime/context.hpp"
#include "runtime/cuda_check.hpp"
#include "runtime/device_buffer.hpp"
#include "egpu/error.hpp"

namespace egpu::executor {
namespace {

template <class T>
HostMatrix<T> host_matrix(const detail::MatrixDesc& d) {
  return {static_cast<T*>(d.data), d.rows, d.cols, d.row_stride, d.col_stride, d.conj};
}

template <class T>
T scalar_from(const std::complex<double>& z) {
  if constexpr (kernels::is_complex<T>::value)
    return T{static_cast<kernels::real_of_t<T>>(z.real()), static_cast<kernels::real_of_t<T>>(z.imag())};
  else
    return static_cast<T>(z.real());
}

// The product with C as the kernels want it, column-major: a row-major C
// is computed as C^T = B^T A^T, which swaps the operands and their strides.
template <class T>
struct Problem {
  HostMatrix<T> a, b, c;
  T alpha, beta;
  bool beta_is_zero;

  explicit Problem(const detail::GemmDesc& d)
      : a(host_matrix<T>(d.a)),
        b(host_matrix<T>(d.b)),
        c(host_matrix<T>(d.c)),
        alpha(scalar_from<T>(d.alpha)),
        beta(scalar_from<T>(d.beta)),
        beta_is_zero(d.beta_is_zero) {
    if (natural_layout(c) == Layout::row_major) {
      HostMatrix<T> at = a.transposed();
      a = b.transposed();
      b = at;
      c = c.transposed();
    }
  }
  std::int64_t m() const { return c.rows; }
  std::int64_t n() const { return c.cols; }
  std::int64_t k() const { return a.cols; }
};

// An operand tile on the device: its buffer (sized for the largest tile of
// the plan) and how the current tile is laid out in it.
template <class T>
struct OperandTile {
  runtime::DeviceBuffer buffer;
  DenseShape shape;
  bool conj = false;  // left for the kernel to apply

  void upload(const HostMatrix<T>& piece, Backend backend, runtime::Context& ctx) {
    shape = dense_shape<T>(piece.rows, piece.cols, natural_layout(piece));
    const bool kernel_conjugates =
        piece.conj && (shape.layout == Layout::row_major || backend::conjugates_col_major(backend));
    conj = kernel_conjugates;
    executor::upload(piece, shape, piece.conj && !kernel_conjugates, buffer.as<T>(), ctx);
  }
};

template <class T>
std::size_t tile_bytes(std::int64_t rows, std::int64_t cols) {
  // Either layout's padded size, whichever is larger.
  const std::int64_t col = padded_ld<T>(rows) * cols, row = padded_ld<T>(cols) * rows;
  return sizeof(T) * static_cast<std::size_t>(std::max(col, row));
}

// Copies between two host views of the same size (the held results of an
// accumulating out-of-core call into the user's C).
template <class T>
void copy_host(const HostMatrix<T>& from, const HostMatrix<T>& to) {
  for (std::int64_t j = 0; j < to.cols; ++j)
    for (std::int64_t i = 0; i < to.rows; ++i)
      to.data[i * to.row_stride + j * to.col_stride] = from.data[i * from.row_stride + j * from.col_stride];
}

template <class T>
void run(const detail::GemmDesc& desc, const Options& options) {
  const Problem<T> p(desc);
  runtime::Context& ctx = runtime::thread_context();
  // Tiles are padded to 16-byte lines; plan within a slightly smaller budget.
  const std::size_t budget = runtime::device_budget(options.device_memory_limit) / 16 * 15;
  const planner::GemmPlan plan = planner::plan_gemm(
      {p.m(), p.n(), p.k(), static_cast<std::int64_t>(sizeof(T)), !p.beta_is_zero}, static_cast<std::int64_t>(budget));

  OperandTile<T> a, b;
  a.buffer = runtime::DeviceBuffer(tile_bytes<T>(plan.mb, plan.kb), ctx.stream());
  b.buffer = runtime::DeviceBuffer(tile_bytes<T>(plan.kb, plan.nb), ctx.stream());
  runtime::DeviceBuffer c_buffer(tile_bytes<T>(plan.mb, plan.nb), ctx.stream());

  // An accumulating call over several C tiles keeps every finished tile on
  // the host until the last one is done, so that a failure part-way leaves
  // the user's C as it was. (With one C tile, nothing is written back
  // before the product has completed.)
  const bool hold_results = !p.beta_is_zero && !plan.single_c_tile();
  std::vector<T> held(hold_results ? static_cast<std::size_t>(p.m() * p.n()) : 0);
  const HostMatrix<T> out = hold_results ? HostMatrix<T>{held.data(), p.m(), p.n(), 1, p.m(), false} : p.c;
  const T one = scalar_from<T>(1.0);

  planner::for_each_step(plan, [&](const planner::GemmStep& s) {
    if (s.upload_a) a.upload(p.a.block(s.i0, s.p0, s.mi, s.kp), options.backend, ctx);
    if (s.upload_b) b.upload(p.b.block(s.p0, s.j0, s.kp, s.nj), options.backend, ctx);
    const DenseShape c_shape = dense_shape<T>(s.mi, s.nj, Layout::col_major);
    if (s.upload_c) upload(p.c.block(s.i0, s.j0, s.mi, s.nj), c_shape, false, c_buffer.as<T>(), ctx);

    kernels::GemmArgs<T> args;
    args.m = s.mi;
    args.n = s.nj;
    args.k = s.kp;
    args.a = a.buffer.template as<T>();
    args.lda = a.shape.ld;
    args.a_layout = a.shape.layout;
    args.conj_a = a.conj;
    args.b = b.buffer.template as<T>();
    args.ldb = b.shape.ld;
    args.b_layout = b.shape.layout;
    args.conj_b = b.conj;
    args.c = c_buffer.as<T>();
    args.ldc = c_shape.ld;
    args.alpha = p.alpha;
    args.beta = s.first_k ? p.beta : one;
    args.beta_is_zero = s.first_k && p.beta_is_zero;
    backend::device_gemm(options.backend, args, ctx);

    if (s.last_k) download(c_buffer.as<const T>(), c_shape, out.block(s.i0, s.j0, s.mi, s.nj), ctx);
  });
  runtime::cuda_check(cudaStreamSynchronize(ctx.stream()), "gemm");
  if (hold_results) copy_host(out, p.c);
}

}  // namespace

void run_gemm(const detail::GemmDesc& desc, const Options& options) {
  switch (desc.scalar) {
    case detail::ScalarKind::f32: return run<float>(desc, options);
    case detail::ScalarKind::f64: return run<double>(desc, options);
    case detail::ScalarKind::c32: return run<kernels::cfloat>(desc, options);
    case detail::ScalarKind::c64: return run<kernels::cdouble>(desc, options);
  }
  throw egpu::error("gemm: unknown scalar type");
}

}  // namespace egpu::executor
