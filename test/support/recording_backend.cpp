#include "support/recording_backend.hpp"

#include <complex>
#include <string>
#include <type_traits>

#include "egpu/detail/elementwise_program.hpp"
#include "egpu/device.hpp"
#include "egpu/error.hpp"
#include "support/elementwise_reference.hpp"

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
}  // namespace

std::vector<Call>& calls() {
  static std::vector<Call> c;
  return c;
}
int& elementwise_calls() {
  static int n = 0;
  return n;
}
void clear() {
  calls().clear();
  elementwise_calls() = 0;
}
void fail_next_call() { g_fail_next = true; }

}  // namespace egpu_test::recording

namespace egpu {

bool has_device() { return true; }
std::string device_name() { return "recording test backend"; }

namespace detail {

void gemm(const GemmDesc& desc, const Options& options) {
  validate(desc);
  egpu_test::recording::calls().push_back({desc, options});
  if (egpu_test::recording::g_fail_next) {
    egpu_test::recording::g_fail_next = false;
    throw egpu::error("recording backend: failing this call on request");
  }
  switch (desc.scalar) {
    case ScalarKind::f32: egpu_test::recording::naive<float>(desc); break;
    case ScalarKind::f64: egpu_test::recording::naive<double>(desc); break;
    case ScalarKind::c32: egpu_test::recording::naive<std::complex<float>>(desc); break;
    case ScalarKind::c64: egpu_test::recording::naive<std::complex<double>>(desc); break;
  }
}

void elementwise(const ElementwiseProgram& program, const MatrixDesc& out, ScalarKind out_scalar, bool,
                 const Options&) {
  validate(program);
  ++egpu_test::recording::elementwise_calls();
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

}  // namespace detail
}  // namespace egpu
