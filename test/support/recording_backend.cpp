#include "support/recording_backend.hpp"

#include <complex>
#include <string>
#include <type_traits>

#include "egpu/detail/dispatch.hpp"
#include "egpu/detail/elementwise_program.hpp"
#include "egpu/detail/reduction.hpp"
#include "egpu/device.hpp"
#include "egpu/error.hpp"
#include "support/elementwise_reference.hpp"
#include "support/reduction_reference.hpp"

namespace egpu_test::recording {
namespace {
bool g_fail_next = false;

template <class T>
T load(const egpu::detail::MatrixDesc& d, std::int64_t i, std::int64_t j) {
  const T v = static_cast<const T*>(d.data)[i * d.row_stride + j * d.col_stride];
  if constexpr (std::is_floating_point_v<T>)
    return v;
  else
    return d.conj ? std::conj(v) : v;
}

template <class T>
void naive(const egpu::detail::GemmDesc& g) {
  // Accumulate in the widest type: the reference's rounding stays far below
  // the tested bounds.
  using Acc = std::conditional_t<std::is_floating_point_v<T>, long double, std::complex<long double>>;
  auto cvt = [](const std::complex<double>& z) {
    if constexpr (std::is_floating_point_v<T>)
      return static_cast<long double>(z.real());
    else
      return std::complex<long double>(z.real(), z.imag());
  };
  const Acc alpha = cvt(g.alpha), beta = cvt(g.beta);
  T* c = static_cast<T*>(g.c.data);
  for (std::int64_t j = 0; j < g.n; ++j)
    for (std::int64_t i = 0; i < g.m; ++i) {
      Acc sum = 0;
      for (std::int64_t p = 0; p < g.k; ++p)
        sum += static_cast<Acc>(load<T>(g.a, i, p)) * static_cast<Acc>(load<T>(g.b, p, j));
      T& out = c[i * g.c.row_stride + j * g.c.col_stride];
      Acc r = alpha * sum;
      if (!g.beta_is_zero) r += beta * static_cast<Acc>(out);
      if constexpr (std::is_floating_point_v<T>)
        out = static_cast<T>(r);
      else
        out = T(static_cast<typename T::value_type>(r.real()), static_cast<typename T::value_type>(r.imag()));
    }
}

// Throws egpu::error, once, after fail_next_call().
void fail_if_asked() {
  if (!g_fail_next) return;
  g_fail_next = false;
  throw egpu::error("recording backend: failing this call on request");
}

// The reference values of a reduction (support/reduction_reference.hpp),
// stored as T: the interpreter's values combined in long double.
template <class T>
void store_reduced(const std::vector<egpu_test::Expected>& expected, void* result) {
  T* out = static_cast<T*>(result);
  for (std::size_t k = 0; k < expected.size(); ++k) {
    const egpu_test::Expected& e = expected[k];
    if constexpr (std::is_same_v<T, std::int64_t>)
      out[k] = e.count;
    else if constexpr (std::is_floating_point_v<T>)
      out[k] = static_cast<T>(e.value.real());
    else
      out[k] = T(static_cast<typename T::value_type>(e.value.real()), static_cast<typename T::value_type>(e.value.imag()));
  }
}
}  // namespace

std::vector<Call>& calls() {
  static std::vector<Call> c;
  return c;
}
int& elementwise_calls() {
  static int n = 0;
  return n;
}
std::vector<ReduceCall>& reductions() {
  static std::vector<ReduceCall> r;
  return r;
}
void clear() {
  calls().clear();
  elementwise_calls() = 0;
  reductions().clear();
}
void fail_next_call() { g_fail_next = true; }

}  // namespace egpu_test::recording

namespace egpu {

bool has_device() { return true; }
std::string device_name() { return "recording test backend"; }

namespace detail {

namespace {
void interpret(const ElementwiseProgram& program, const MatrixDesc& out, ScalarKind out_scalar);
}  // namespace

void gemm(const GemmDesc& desc, const Options& options) {
  validate(desc);
  egpu_test::recording::calls().push_back({desc, options});
  egpu_test::recording::fail_if_asked();
  // With an epilogue, the product goes into a column-major temporary that
  // the epilogue reads as its product leaf (C may be another of its leaves).
  std::vector<std::complex<double>> product;  // wide enough for every scalar
  GemmDesc g = desc;
  if (desc.epilogue != nullptr) {
    product.resize(static_cast<std::size_t>(desc.m * desc.n));
    g.c = MatrixDesc{product.data(), desc.m, desc.n, 1, desc.m, false};
  }
  switch (desc.scalar) {
    case ScalarKind::f32: egpu_test::recording::naive<float>(g); break;
    case ScalarKind::f64: egpu_test::recording::naive<double>(g); break;
    case ScalarKind::c32: egpu_test::recording::naive<std::complex<float>>(g); break;
    case ScalarKind::c64: egpu_test::recording::naive<std::complex<double>>(g); break;
  }
  if (desc.epilogue != nullptr) {
    ElementwiseProgram f = *desc.epilogue;
    f.leaves[static_cast<std::size_t>(desc.epilogue_product)].m = g.c;
    interpret(f, desc.c, desc.scalar);
  }
}

namespace {
// out = program, by the host interpreter.
void interpret(const ElementwiseProgram& program, const MatrixDesc& out, ScalarKind out_scalar) {
  // Every value first: out may be one of the leaves.
  std::vector<egpu_test::EwValue> values;
  for (std::int64_t j = 0; j < program.cols; ++j)
    for (std::int64_t i = 0; i < program.rows; ++i) values.push_back(egpu_test::evaluate_at(program, i, j));
  auto store = [&](auto zero) {
    using T = decltype(zero);
    std::size_t k = 0;
    for (std::int64_t j = 0; j < program.cols; ++j)
      for (std::int64_t i = 0; i < program.rows; ++i)
        static_cast<T*>(out.data)[i * out.row_stride + j * out.col_stride] = values[k++].template get<T>();
  };
  switch (out_scalar) {
    case ScalarKind::f32: return store(float());
    case ScalarKind::f64: return store(double());
    case ScalarKind::c32: return store(std::complex<float>());
    case ScalarKind::c64: return store(std::complex<double>());
  }
}
}  // namespace

void elementwise(const ElementwiseProgram& program, const MatrixDesc& out, ScalarKind out_scalar, bool,
                 const Options&) {
  validate(program);
  ++egpu_test::recording::elementwise_calls();
  interpret(program, out, out_scalar);
}

void reduce(const ElementwiseProgram& program, const Reduction& reduction, void* result, const Options& options,
            bool result_on_device) {
  validate(program, reduction);
  if (result_on_device) throw egpu::error("recording backend: a result in device memory (there is no device)");
  egpu_test::recording::reductions().push_back({program, reduction, options});
  egpu_test::recording::fail_if_asked();
  const ValueKind kind = program.code.back().type;
  const std::vector<egpu_test::Expected> expected = egpu_test::expected_reduction(
      program.rows, program.cols, reduction, is_complex(kind),
      [&](std::int64_t i, std::int64_t j) { return egpu_test::exact_sample(egpu_test::evaluate_at(program, i, j)); });
  // The library's rule (Eigen asserts): no min, max or mean of nothing.
  for (const egpu_test::Expected& e : expected)
    if (e.empty_throws) throw egpu::error("recording backend: min, max or mean of an empty stretch");
  egpu_test::with_result_type(kind, reduction, [&](auto zero) {
    egpu_test::recording::store_reduced<decltype(zero)>(expected, result);
  });
}

// The dispatch sends every call to the recording backend, unless a call's
// options say where = cpu.
const DispatchState& dispatch_state() {
  static const DispatchState s = [] {
    DispatchState d;
    d.device = true;
    d.where = Where::gpu;
    return d;
  }();
  return s;
}
Decision decide_product(const GemmDesc&, const Options& options, int) {
  Decision d;
  d.gpu = options.where != Where::cpu;
  return d;
}
Decision decide_elementwise(const ElementwiseProgram&, const MatrixDesc&, ScalarKind, bool, const Options& options) {
  Decision d;
  d.gpu = options.where != Where::cpu;
  return d;
}
void log_call(const Decision&, double) {}

}  // namespace detail
}  // namespace egpu
