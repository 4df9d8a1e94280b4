// Reductions on a GPU, against long double references of the values the
// host computes (support/reduction_reference.hpp gives the bounds and their
// reasons: 8u sum|x| for sums, (n + 2) u |prod| for products, exact min,
// max and count, with the allowance of each value the GPU computes other
// than the host):
//  - random programs (support/random_programs.hpp: depth 1 to 6, every
//    operation and scalar type, leaves of every layout and broadcast, NaN,
//    Inf and zeros sprinkled in, or finite leaves) reduced by
//    egpu::detail::reduce, every op, axis and finish, against the host
//    interpreter's values. Each value may differ from the host's as much as
//    elementwise_device_test lets it (tol * max(|c|, 1) + 3 * spread, tol
//    2^-13 for programs computing in float and 2^-40 otherwise, spread the
//    change of the value when the inputs move by 16 eps); a value where that
//    test exempts the coefficient, or whose finiteness the perturbation
//    changes, leaves its stretch unjudged (counted). Every result must be
//    written and nothing past the last; three runs give the same bits; every
//    third case also runs out of core;
//  - every member of gpu(x) and every partial reduction, for the four
//    scalars (minCoeff, maxCoeff, count of real values), shapes 0x0 to
//    600x600 with 1xN and Nx1, operands column-major, row-major (the layout
//    of a transpose), padded and with an inner stride (the padding holds
//    NaN: a read outside the operand shows), over random values, values
//    with NaN and Inf, values near 1 (prod), and a*b+exp(a) (each value
//    within 16u (|a||b| + |exp(a)|): a GPU function is within 2 ulp, a
//    complex one within about 13u);
//  - NaN and infinities at the first, last and middle position of large
//    operands: sum, mean and norm NaN or the infinity, +Inf and -Inf a NaN,
//    minCoeff and maxCoeff NaN, only in the stretch that holds them;
//  - the same bits from run to run, and for pinned and pageable operands;
//    out of core (a small device memory limit, 64 KiB chunks) within the
//    same bounds;
//  - a failure injected after n operations (n from 0 until a call gets
//    through) leaves a += / -= destination bit-identical and the device and
//    pinned memory in use as before;
//  - two host threads at once; empty operands and wrong destination sizes;
//  - 2^28 floats (1 GiB): sum, column sums, row sums.
// EGPU_TEST_SCALE shrinks shapes and counts. Skipped without a usable GPU.
#define BOOST_TEST_MODULE reduce
#include <boost/test/unit_test.hpp>
#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "backend/device_reduce.hpp"
#include "egpu/adapter/elementwise_parts.hpp"
#include "egpu/detail/reduction.hpp"
#include "egpu/detail/testing.hpp"
#include "egpu/egpu.hpp"
#include "runtime/context.hpp"
#include "support/elementwise_forms.hpp"
#include "support/elementwise_reference.hpp"
#include "support/random_programs.hpp"
#include "support/reduction_reference.hpp"
#include "support/test_support.hpp"

using namespace egpu_test;
namespace ed = egpu::detail;
using ed::ReduceAxis;
using ed::ReduceFinish;
using ed::ReduceOp;
using Eigen::Dynamic;

namespace {

template <class T> using Mat = Eigen::Matrix<T, Dynamic, Dynamic>;

// Whether Eigen asserts (a build without NDEBUG): x.colwise().minCoeff()
// of a matrix without rows then aborts while it is built, before egpu sees it.
#ifdef EIGEN_NO_DEBUG
constexpr bool kEigenAsserts = false;
#else
constexpr bool kEigenAsserts = true;
#endif


template <class F> void for_each_scalar(F&& f) {
  f(float());
  f(double());
  f(std::complex<float>());
  f(std::complex<double>());
}

void report(const ReductionOutcome& o, const std::string& what) {
  BOOST_TEST(o.bad == 0, what << ": " << o.bad << " results wrong\n" << o.report.str());
  BOOST_TEST_MESSAGE(what << ": " << o.judged << " results judged, " << o.unjudged << " not judged");
}

// The bytes of every result of a run, for bit-for-bit comparisons of runs.
struct Fingerprint {
  std::vector<unsigned char> bytes;
  template <class T> void add(const T* values, std::size_t count) {
    const auto* b = reinterpret_cast<const unsigned char*>(values);
    bytes.insert(bytes.end(), b, b + count * sizeof(T));
  }
  bool operator==(const Fingerprint& o) const { return bytes == o.bytes; }
};

// ---- random programs through egpu::detail::reduce ---------------------------------

// Overwrites every element the leaves read with a finite nonzero value.
void make_leaves_finite(RandomProgram& r) {
  for (const auto& leaf : r.program.leaves) {
    auto fill = [&](auto* zero) {
      using S = std::remove_pointer_t<decltype(zero)>;
      S* data = static_cast<S*>(leaf.m.data);
      for (std::int64_t j = 0; j < leaf.m.cols; ++j)
        for (std::int64_t i = 0; i < leaf.m.rows; ++i)
          data[i * leaf.m.row_stride + j * leaf.m.col_stride] = S(2) * random_scalar<S>();
    };
    switch (leaf.scalar) {
      case ed::ScalarKind::f32: fill(static_cast<float*>(nullptr)); break;
      case ed::ScalarKind::f64: fill(static_cast<double*>(nullptr)); break;
      case ed::ScalarKind::c32: fill(static_cast<std::complex<float>*>(nullptr)); break;
      case ed::ScalarKind::c64: fill(static_cast<std::complex<double>*>(nullptr)); break;
    }
  }
}

bool computes_in_float(const ed::ElementwiseProgram& p) {
  for (const auto& in : p.code)
    if (in.type == ValueKind::f32 || in.type == ValueKind::c32) return true;
  return false;
}

// Whether two values are the same kind of number: per part NaN, the same
// infinity, or finite.
bool same_class(LD a, LD b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (std::isinf(a) || std::isinf(b)) return a == b;
  return true;
}

// A random program's value at one coefficient on the host: as it is, and
// with the inputs and each operation's result perturbed both ways
// (elementwise_device_test's judge_random); whether the elementwise tests
// exempt it.
struct HostValue {
  CLD value[3];
  bool exempt = false;
};

struct ProgramValues {
  std::int64_t rows = 0, cols = 0;
  double tol = 0;
  std::vector<HostValue> at;  // column-major
};

ProgramValues host_values(const RandomProgram& r) {
  const auto& p = r.program;
  const bool in_float = computes_in_float(p);
  const double eps = in_float ? double(std::numeric_limits<float>::epsilon()) : 0.0;
  const RandomProgram up = perturbed(r, 16, eps), down = perturbed(r, -16, eps);
  ProgramValues v;
  v.rows = p.rows;
  v.cols = p.cols;
  v.tol = in_float ? std::ldexp(1.0, -13) : std::ldexp(1.0, -40);
  v.at.resize(static_cast<std::size_t>(p.rows * p.cols));
  for (std::int64_t j = 0; j < p.cols; ++j)
    for (std::int64_t i = 0; i < p.rows; ++i) {
      HostValue& h = v.at[static_cast<std::size_t>(i + j * p.rows)];
      h.value[0] = exact_sample(evaluate_at(p, i, j)).value;
      h.value[1] = exact_sample(evaluate_at(up.program, i, j, 16)).value;
      h.value[2] = exact_sample(evaluate_at(down.program, i, j, -16)).value;
      h.exempt = exempt(p, i, j);
    }
  return v;
}

// The sample of one coefficient: the host's value, within tol * max(|c|, 1)
// + 3 * spread of which the GPU's lies (elementwise_device_test accepts the
// GPU's value within tol * max(|c|, 1) + 2 * spread of one of the three);
// uncertain where that test exempts it, where the perturbation changes the
// value's kind, for a complex value with a non-finite part (the GPU's parts
// may be other non-finite values), and for count where the value may be
// zero or not.
Sample program_sample(const ProgramValues& v, std::int64_t i, std::int64_t j, bool counting) {
  const HostValue& h = v.at[static_cast<std::size_t>(i + j * v.rows)];
  Sample s{h.value[0]};
  bool same = true;
  for (const CLD& w : h.value) same = same && same_class(w.real(), s.value.real()) && same_class(w.imag(), s.value.imag());
  const bool complex_non_finite = s.value.imag() != 0 && !finite_parts(s.value);
  s.uncertain = h.exempt || !same || complex_non_finite;
  if (s.uncertain || !finite_parts(s.value)) return s;
  LD spread = 0, largest = 0;
  for (const CLD& a : h.value) {
    largest = std::max(largest, std::abs(a));
    for (const CLD& b : h.value) spread = std::max(spread, std::abs(a - b));
  }
  s.allowance = static_cast<LD>(v.tol) * std::max<LD>(1, largest) + 3 * spread;
  if (counting) {
    bool zero = false, nonzero = false;
    for (const CLD& w : h.value) (w == CLD(0, 0) ? zero : nonzero) = true;
    s.uncertain = (zero && nonzero) || (nonzero && std::abs(s.value) <= s.allowance);
  }
  return s;
}

// reduced_count values of type T from reduce(), into a poisoned buffer with
// guard bytes after it: `written` is false where a value still holds the
// poison or a guard byte changed.
template <class T>
std::vector<T> run_reduce(const ed::ElementwiseProgram& p, const ed::Reduction& r, const egpu::Options& o,
                          bool& written) {
  const auto count = static_cast<std::size_t>(ed::reduced_count(p, r));
  constexpr std::size_t guard = 64;
  std::vector<unsigned char> bytes(count * sizeof(T) + guard, 0xa5);
  if constexpr (!std::is_same_v<T, std::int64_t>) fill_poison(reinterpret_cast<T*>(bytes.data()), count);
  ed::reduce(p, r, bytes.data(), o);
  std::vector<T> out(count);
  if (count > 0) std::memcpy(out.data(), bytes.data(), count * sizeof(T));
  written = std::all_of(bytes.end() - guard, bytes.end(), [](unsigned char b) { return b == 0xa5; });
  if constexpr (!std::is_same_v<T, std::int64_t>)
    for (const T& v : out) written = written && !is_poison(v);
  return out;
}

template <class T> bool same_bits(const std::vector<T>& x, const std::vector<T>& y) {
  return x.size() == y.size() && (x.empty() || std::memcmp(x.data(), y.data(), x.size() * sizeof(T)) == 0);
}

// Options that move even a small program through many chunks.
egpu::Options tiny_chunks() {
  egpu::Options o;
  o.chunk_bytes = 1024;
  o.device_memory_limit = std::size_t(1) << 20;
  o.streams = 2;
  o.staging_threads = 1;
  return o;
}

// One reduction of a random program: judged, three runs bit for bit, and
// (out_of_core) judged again through tiny chunks.
template <class T>
void random_case(const RandomProgram& rp, const ProgramValues& values, const ed::Reduction& r, bool out_of_core,
                 const std::string& what, ReductionOutcome& o) {
  const auto& p = rp.program;
  const bool counting = r.op == ReduceOp::count;
  const std::vector<Expected> expected =
      expected_reduction(p.rows, p.cols, r, ed::is_complex(p.code.back().type),
                         [&](std::int64_t i, std::int64_t j) { return program_sample(values, i, j, counting); });
  bool written = true;
  if (std::any_of(expected.begin(), expected.end(), [](const Expected& e) { return e.empty_throws; })) {
    BOOST_CHECK_THROW(run_reduce<T>(p, r, egpu::Options(), written), egpu::error);
    return;
  }
  const std::vector<T> first = run_reduce<T>(p, r, egpu::Options(), written);
  BOOST_TEST(written, what << ": a result not written, or written past the last");
  judge_all(expected, r, first.data(), what, o);
  for (int run = 1; run < 3; ++run)
    BOOST_TEST(same_bits(run_reduce<T>(p, r, egpu::Options(), written), first), what << ": run " << run << " differs");
  if (out_of_core) {
    const std::vector<T> chunked = run_reduce<T>(p, r, tiny_chunks(), written);
    BOOST_TEST(written, what << " out of core: a result not written, or written past the last");
    judge_all(expected, r, chunked.data(), what + " out of core", o);
  }
}

// A reduction valid for a program whose value has kind k.
ed::Reduction random_reduction(ValueKind k) {
  const auto axis = static_cast<ReduceAxis>(uniform_index(0, 2));
  if (k == ValueKind::boolean) return reduction(ReduceOp::count, axis);
  const bool complex = ed::is_complex(k);
  const double magnitude = 0.5 + 7.5 * std::uniform_real_distribution<double>(0, 1)(rng());
  const std::complex<double> divisor = complex && coin() ? std::complex<double>(magnitude, -1.25) : magnitude * (coin() ? 1 : -1);
  switch (uniform_index(0, complex ? 4 : 6)) {
    case 0: return reduction(ReduceOp::sum, axis);
    case 1: return reduction(ReduceOp::sum, axis, ReduceFinish::divide, divisor);
    case 2: return reduction(ReduceOp::prod, axis);
    case 3: return reduction(ReduceOp::count, axis);
    case 4: return reduction(ReduceOp::sum, axis);
    case 5: return reduction(ReduceOp::min, axis);
    default: return reduction(ReduceOp::max, axis);
  }
}

// A random program of about `size` coefficients at most, within the
// kernels' limits on leaves and constants (64 each).
RandomProgram random_program_for_test(ValueKind result) {
  const Index rows = coin(0.1) ? 1 : uniform_index(0, 600);
  const Index cols = coin(0.1) ? 1 : uniform_index(0, std::min<Index>(600, 2500 / std::max<Index>(rows, 1)));
  RandomProgram r;
  do {
    r = random_program(rows, cols, result, static_cast<int>(uniform_index(1, 6)));
  } while (r.program.leaves.size() > 48 || r.program.constants.size() > 48);
  return r;
}

// ---- operands and expressions through egpu::gpu ----------------------------------

template <class S> using View = Eigen::Map<const Mat<S>, Eigen::Unaligned, Eigen::Stride<Dynamic, Dynamic>>;

enum class Layout { column_major, row_major, padded, strided };
const char* name(Layout l) {
  switch (l) {
    case Layout::column_major: return "column-major";
    case Layout::row_major: return "row-major";
    case Layout::padded: return "padded";
    default: return "inner stride 2";
  }
}
enum class Fill { random, sprinkled, near_one };
const char* name(Fill f) { return f == Fill::random ? "random" : f == Fill::sprinkled ? "NaN/Inf sprinkled" : "near 1"; }

// An operand in its own storage (pinnable), seen through a Map with the
// layout's strides; the storage outside the operand holds NaN.
template <class S> struct Operand {
  Eigen::Matrix<S, Dynamic, 1> storage;
  Index rows = 0, cols = 0, offset = 0, outer = 0, inner = 1;
  View<S> view() const {
    return View<S>(storage.data() + offset, rows, cols, Eigen::Stride<Dynamic, Dynamic>(outer, inner));
  }
  S& at(Index i, Index j) { return storage(offset + i * inner + j * outer); }
};

template <class S> S fill_value(Fill fill, Index size) {
  using R = real_t<S>;
  if (fill == Fill::random) return random_scalar<S>();
  if (fill == Fill::sprinkled) return sprinkled<S>();
  // 1 + d, |d| <= min(1/4, 32/size): no product of them overflows or underflows.
  std::uniform_real_distribution<double> d(-1, 1);
  const double spread = std::min(0.25, 32.0 / double(std::max<Index>(size, 1)));
  if constexpr (is_complex_v<S>) return S(R(1 + spread * d(rng())), R(spread * d(rng())));
  else return R(1 + spread * d(rng()));
}

template <class S> Operand<S> make_operand(Index rows, Index cols, Layout layout, Fill fill) {
  Operand<S> a;
  a.rows = rows;
  a.cols = cols;
  Index extent = rows * cols;
  switch (layout) {
    case Layout::column_major: a.outer = rows, a.inner = 1; break;
    case Layout::row_major: a.outer = 1, a.inner = cols; break;
    case Layout::padded: a.offset = 1, a.outer = rows + 3, a.inner = 1, extent = 1 + (rows + 3) * cols + 2; break;
    case Layout::strided: a.outer = 2 * rows + 1, a.inner = 2, extent = (2 * rows + 1) * cols + 1; break;
  }
  a.storage.resize(extent);
  for (Index k = 0; k < extent; ++k) a.storage(k) = nan_value<S>();
  for (Index j = 0; j < cols; ++j)
    for (Index i = 0; i < rows; ++i) a.at(i, j) = fill_value<S>(fill, rows * cols);
  return a;
}

// An expression's coefficients as the host computes them (CPU Eigen), and
// how far the GPU's may lie from each (none: 0, the coefficients of a leaf).
template <class S> struct HostCoefficients {
  Mat<S> value;
  Mat<LD> allowance;
  LD allowance_at(Index i, Index j) const { return allowance.size() == 0 ? 0 : allowance(i, j); }
  Sample at(Index i, Index j) const {
    Sample s = exact_sample(value(i, j));
    if (finite_parts(s.value)) s.allowance = allowance_at(i, j);
    return s;
  }
  Sample squared(Index i, Index j) const { return abs2_sample(at(i, j), unit_roundoff<real_t<S>>()); }
  // For count: uncertain where the GPU's value may be zero or not.
  Sample nonzero(Index i, Index j) const {
    Sample s = at(i, j);
    s.uncertain = s.allowance > 0 && std::abs(s.value) <= s.allowance;
    return s;
  }
  // Whether the real part is positive, uncertain where the GPU's may not be.
  Sample positive(Index i, Index j) const {
    const Sample s = at(i, j);
    return Sample{CLD(s.value.real() > 0 ? 1 : 0, 0), 0, s.allowance > 0 && std::abs(s.value.real()) <= s.allowance};
  }
};

// Records f()'s failure to throw egpu::error (no Boost.Test macro: host
// threads call the checks).
template <class F> void expect_error(F&& f, const std::string& what, ReductionOutcome& o) {
  try {
    f();
  } catch (const egpu::error&) {
    return;
  } catch (const std::exception& e) {
    o.note(what + ": threw something other than egpu::error: " + e.what());
    return;
  }
  o.note(what + ": did not throw egpu::error");
}

// Every member of gpu(x, opt), judged into `o`, its results appended to fp.
template <class S, class X>
void full_members(const X& x, const HostCoefficients<S>& h, bool products, const egpu::Options& opt,
                  const std::string& what, ReductionOutcome& o, Fingerprint& fp) {
  using R = real_t<S>;
  constexpr bool complex = is_complex_v<S>;
  const Index rows = x.rows(), cols = x.cols(), n = rows * cols;
  const auto plain = [&](std::int64_t i, std::int64_t j) { return h.at(i, j); };
  const auto squared = [&](std::int64_t i, std::int64_t j) { return h.squared(i, j); };
  const auto all = [](ReduceOp op, ReduceFinish f = ReduceFinish::none, double d = 1) {
    return reduction(op, ReduceAxis::all, f, d);
  };
  auto judge = [&](const ed::Reduction& r, auto got, bool complex_values, auto&& sample, const char* member) {
    fp.add(&got, 1);
    judge_all(expected_reduction(rows, cols, r, complex_values, sample), r, &got, what + " " + member, o);
  };
  judge(all(ReduceOp::sum), egpu::gpu(x, opt).sum(), complex, plain, "sum()");
  judge(all(ReduceOp::sum), egpu::gpu(x, opt).squaredNorm(), false, squared, "squaredNorm()");
  judge(all(ReduceOp::sum, ReduceFinish::sqrt), egpu::gpu(x, opt).norm(), false, squared, "norm()");
  if (products) judge(all(ReduceOp::prod), egpu::gpu(x, opt).prod(), complex, plain, "prod()");
  if (n == 0) {
    expect_error([&] { (void)egpu::gpu(x, opt).mean(); }, what + " mean() of nothing", o);
  } else {
    judge(all(ReduceOp::sum, ReduceFinish::divide, double(n)), egpu::gpu(x, opt).mean(), complex, plain, "mean()");
  }
  if constexpr (!complex) {
    if (n == 0) {
      expect_error([&] { (void)egpu::gpu(x, opt).minCoeff(); }, what + " minCoeff() of nothing", o);
      expect_error([&] { (void)egpu::gpu(x, opt).maxCoeff(); }, what + " maxCoeff() of nothing", o);
    } else {
      judge(all(ReduceOp::min), egpu::gpu(x, opt).minCoeff(), false, plain, "minCoeff()");
      judge(all(ReduceOp::max), egpu::gpu(x, opt).maxCoeff(), false, plain, "maxCoeff()");
    }
    const auto nonzero = [&](std::int64_t i, std::int64_t j) { return h.nonzero(i, j); };
    judge(all(ReduceOp::count), static_cast<std::int64_t>(egpu::gpu(x, opt).count()), false, nonzero, "count()");
  }
  const auto positive = x.array().real() > R(0);
  const auto is_positive = [&](std::int64_t i, std::int64_t j) { return h.positive(i, j); };
  const std::int64_t count = egpu::gpu(positive, opt).count();
  judge(all(ReduceOp::count), count, false, is_positive, "(re > 0).count()");
  const Expected e = expected_reduction(rows, cols, all(ReduceOp::count), false, is_positive)[0];
  if (e.uncertain == 0) {
    if (egpu::gpu(positive, opt).all() != (e.count == n)) o.note(what + " (re > 0).all(): wrong");
    if (egpu::gpu(positive, opt).any() != (e.count > 0)) o.note(what + " (re > 0).any(): wrong");
  }
}

// dst = gpu(partial, opt) judged against the reduction r of samples, or
// egpu::error where r has no value for an empty stretch.
template <class P, class SampleAt>
void one_partial(const P& partial, const ed::Reduction& r, bool complex_values, Index rows, Index cols,
                 SampleAt&& sample, const egpu::Options& opt, const std::string& what, ReductionOutcome& o,
                 Fingerprint& fp) {
  const std::vector<Expected> e = expected_reduction(rows, cols, r, complex_values, sample);
  if (std::any_of(e.begin(), e.end(), [](const Expected& x) { return x.empty_throws; })) {
    expect_error([&] { typename P::PlainObject got = egpu::gpu(partial, opt); }, what, o);
    return;
  }
  const typename P::PlainObject got = egpu::gpu(partial, opt);
  if (static_cast<std::size_t>(got.size()) != e.size()) {
    o.note(what + ": " + std::to_string(got.size()) + " values");
    return;
  }
  fp.add(got.data(), e.size());
  judge_all(e, r, got.data(), what, o);
}

// Every partial reduction of x (prod when `products`), both directions.
template <class S, class X>
void partial_members(const X& x, const HostCoefficients<S>& h, bool products, const egpu::Options& opt,
                     const std::string& what, ReductionOutcome& o, Fingerprint& fp) {
  constexpr bool complex = is_complex_v<S>;
  const Index rows = x.rows(), cols = x.cols();
  const auto plain = [&](std::int64_t i, std::int64_t j) { return h.at(i, j); };
  const auto squared = [&](std::int64_t i, std::int64_t j) { return h.squared(i, j); };
  auto each = [&](const auto& direction, ReduceAxis axis, double length, const std::string& base) {
    auto partial = [&](const auto& p, ReduceOp op, ReduceFinish f, bool complex_values, const auto& sample,
                       const char* member) {
      one_partial(p, reduction(op, axis, f, length), complex_values, rows, cols, sample, opt, base + member, o, fp);
    };
    partial(direction.sum(), ReduceOp::sum, ReduceFinish::none, complex, plain, "sum()");
    partial(direction.mean(), ReduceOp::sum, ReduceFinish::divide, complex, plain, "mean()");
    partial(direction.squaredNorm(), ReduceOp::sum, ReduceFinish::none, false, squared, "squaredNorm()");
    partial(direction.norm(), ReduceOp::sum, ReduceFinish::sqrt, false, squared, "norm()");
    if (products) partial(direction.prod(), ReduceOp::prod, ReduceFinish::none, complex, plain, "prod()");
    if constexpr (!complex) {
      if (length > 0 || !kEigenAsserts) {
        partial(direction.minCoeff(), ReduceOp::min, ReduceFinish::none, false, plain, "minCoeff()");
        partial(direction.maxCoeff(), ReduceOp::max, ReduceFinish::none, false, plain, "maxCoeff()");
      }
    }
  };
  each(x.colwise(), ReduceAxis::each_column, double(rows), what + " colwise().");
  each(x.rowwise(), ReduceAxis::each_row, double(cols), what + " rowwise().");
}

template <class S> HostCoefficients<S> coefficients_of(const View<S>& v) { return HostCoefficients<S>{Mat<S>(v), {}}; }

// Every member and partial reduction of one operand.
template <class S>
void operand_case(const Operand<S>& a, Fill fill, const egpu::Options& opt, const std::string& what,
                  ReductionOutcome& o, Fingerprint& fp) {
  const HostCoefficients<S> h = coefficients_of(a.view());
  const bool products = fill != Fill::random;  // values near 1, or NaN and Inf (judged where order-free)
  full_members(a.view(), h, products, opt, what, o, fp);
  partial_members(a.view(), h, products, opt, what, o, fp);
}

// a*b+exp(a): each value within 16u (|a||b| + |exp(a)|) of the host's.
template <class S>
void expression_case(const Operand<S>& a, const Operand<S>& b, const egpu::Options& opt, const std::string& what,
                     ReductionOutcome& o, Fingerprint& fp) {
  const View<S> va = a.view(), vb = b.view();
  const auto x = va.array() * vb.array() + va.array().exp();
  HostCoefficients<S> h{x.matrix(), Mat<LD>(x.rows(), x.cols())};
  const LD u = unit_roundoff<real_t<S>>();
  for (Index j = 0; j < x.cols(); ++j)
    for (Index i = 0; i < x.rows(); ++i) {
      const CLD p = exact_sample(va(i, j)).value, q = exact_sample(vb(i, j)).value;
      h.allowance(i, j) = 16 * u * (std::abs(p) * std::abs(q) + std::exp(p.real()));
    }
  full_members(x, h, false, opt, what, o, fp);
  const Index rows = x.rows(), cols = x.cols();
  constexpr bool complex = is_complex_v<S>;
  one_partial(x.colwise().sum(), reduction(ReduceOp::sum, ReduceAxis::each_column), complex, rows, cols,
              [&](std::int64_t i, std::int64_t j) { return h.at(i, j); }, opt, what + " colwise().sum()", o, fp);
  one_partial(x.rowwise().norm(), reduction(ReduceOp::sum, ReduceAxis::each_row, ReduceFinish::sqrt), false, rows,
              cols, [&](std::int64_t i, std::int64_t j) { return h.squared(i, j); }, opt, what + " rowwise().norm()",
              o, fp);
}

// One shape: each fill over a layout (rotating with `turn`), and the
// expression over two operands of other layouts.
template <class S>
void shape_case(Index rows, Index cols, int& turn, const egpu::Options& opt, const std::string& tag, Fingerprint& fp) {
  const std::string base = std::string(scalar_name<S>()) + " " + shape_text(rows, cols) + tag;
  ReductionOutcome o;
  for (Fill fill : {Fill::random, Fill::sprinkled, Fill::near_one}) {
    const auto layout = static_cast<Layout>(turn++ % 4);
    const Operand<S> a = make_operand<S>(rows, cols, layout, fill);
    operand_case(a, fill, opt, base + " " + name(layout) + " " + name(fill), o, fp);
  }
  const auto la = static_cast<Layout>(turn++ % 4), lb = static_cast<Layout>((turn + 1) % 4);
  const Operand<S> a = make_operand<S>(rows, cols, la, Fill::random), b = make_operand<S>(rows, cols, lb, Fill::random);
  expression_case(a, b, opt, base + " a*b+exp(a) (" + name(la) + ", " + name(lb) + ")", o, fp);
  report(o, base);
}

// The first n operations of a call pass, the next throws egpu::error, for n
// from 0 until a call gets through: each failed call leaves state() as
// before it and the memory in use as before; the call that gets through, and
// one after, give the warm-up's state.
template <class Run, class State, class Reset>
void failures(const std::string& what, Run&& run, State&& state, Reset&& reset) {
  reset();
  run();
  const auto good = state();
  reset();
  const auto start = state();
  bool through = false;
  int attempts = 0;
  for (int n = 0; n < (1 << 22) && !through; n += 1 + n / 4, ++attempts) {
    const std::size_t device_before = ed::device_bytes_in_use(), pinned_before = ed::pinned_bytes_held();
    const Attempt at = attempt(n, run);
    const std::string here = what + ", failure after " + std::to_string(n) + " operations";
    BOOST_TEST(!at.other_exception, here << ": threw something other than egpu::error: " << at.message);
    BOOST_TEST(ed::device_bytes_in_use() == device_before, here << ": device memory in use changed");
    BOOST_TEST(ed::pinned_bytes_held() == pinned_before, here << ": pinned memory held changed");
    if (n == 0) BOOST_TEST(at.threw, here << ": did not throw");
    if (at.threw) BOOST_TEST((state() == start), here << ": the failed call changed the destination");
    else through = !at.other_exception;
    if (through) BOOST_TEST((state() == good), here << ": got through with another result");
    reset();
  }
  BOOST_TEST(through, what << ": no call got through");
  BOOST_TEST_MESSAGE(what << ": " << attempts << " attempts");
  run();
  BOOST_TEST((state() == good), what << ": the call after the failures differs");
}

template <class V> std::vector<unsigned char> bytes_of(const V& v) {
  std::vector<unsigned char> b(static_cast<std::size_t>(v.size()) * sizeof(typename V::Scalar));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(reduce, *boost::unit_test::precondition(gpu_available))

// Random programs reduced by egpu::detail::reduce: every op, axis and finish.
BOOST_AUTO_TEST_CASE(random_programs) {
  const int programs = scaled_count(100);
  ReductionOutcome total;
  long cases = 0, failed_programs = 0;
  for (int t = 0; t < programs; ++t) {
    const ValueKind kind =
        coin(0.15) ? ValueKind::boolean : static_cast<ValueKind>(uniform_index(0, 3));
    RandomProgram r = random_program_for_test(kind);
    if (kind != ValueKind::boolean && coin(0.25)) ed::append_abs2(r.program);  // squaredNorm, norm
    const ValueKind value = r.program.code.back().type;
    const bool finite = coin();
    if (finite) make_leaves_finite(r);
    const ProgramValues values = host_values(r);
    ReductionOutcome o;
    for (int k = 0; k < 2; ++k, ++cases) {
      ed::Reduction red = random_reduction(value);
      if (value != kind && coin()) red = reduction(ReduceOp::sum, red.axis, ReduceFinish::sqrt);
      ed::validate(r.program, red);  // the generator's programs are valid
      const std::string what = "program " + std::to_string(t) + " " + shape_text(r.program.rows, r.program.cols) +
                               (finite ? " finite leaves, " : " NaN/Inf leaves, ") + reduction_text(red);
      with_result_type(value, red, [&](auto zero) {
        random_case<decltype(zero)>(r, values, red, cases % 3 == 0, what, o);
      });
    }
    if (o.bad > 0) ++failed_programs;
    BOOST_TEST(o.bad == 0, "program " << t << ": " << o.bad << " results wrong\n"
                                      << o.report.str() << " program:" << program_text(r.program));
    total.judged += o.judged;
    total.unjudged += o.unjudged;
  }
  BOOST_TEST_MESSAGE(cases << " reductions of " << programs << " random programs, " << failed_programs
                           << " programs with failures; " << total.judged << " results judged, " << total.unjudged
                           << " not judged (uncertain values, products that depend on their order)");
  BOOST_TEST(total.judged > cases);
}

// Every member and partial reduction through egpu::gpu, four scalars.
BOOST_AUTO_TEST_CASE(every_member_through_egpu_gpu) {
  const Index shapes[][2] = {{0, 0}, {0, 5}, {5, 0},    {1, 1},     {1, scaled_dim(600, 1)}, {scaled_dim(600, 1), 1},
                             {37, 53}, {scaled_dim(257, 2), scaled_dim(130, 2)}, {scaled_dim(600, 2), scaled_dim(600, 2)}};
  for_each_scalar([&](auto zero) {
    using S = decltype(zero);
    int turn = 0;
    Fingerprint fp;
    for (const auto& shape : shapes) shape_case<S>(shape[0], shape[1], turn, egpu::Options(), "", fp);
    for (int k = 0; k < scaled_count(3); ++k)
      shape_case<S>(uniform_index(1, scaled_dim(600, 2)), uniform_index(1, scaled_dim(600, 2)), turn, egpu::Options(),
                    " (random shape)", fp);
  });
}

// A NaN or an infinity at a few places of a large operand.
BOOST_AUTO_TEST_CASE(nan_and_infinities_in_every_position) {
  const Index rows = scaled_dim(700, 2), cols = scaled_dim(300, 2);
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const Index places[][2] = {{0, 0}, {rows - 1, cols - 1}, {rows / 2, cols / 3}, {rows - 1, 0}};
  for (const auto& at : places) {
    const std::string where = " at (" + std::to_string(at[0]) + ", " + std::to_string(at[1]) + ")";
    Operand<double> a = make_operand<double>(rows, cols, Layout::padded, Fill::random);
    a.at(at[0], at[1]) = nan;
    const View<double> v = a.view();
    BOOST_TEST(std::isnan(egpu::gpu(v).sum()), "sum() with a NaN" << where);
    BOOST_TEST(std::isnan(egpu::gpu(v).mean()), "mean() with a NaN" << where);
    BOOST_TEST(std::isnan(egpu::gpu(v).norm()), "norm() with a NaN" << where);
    BOOST_TEST(std::isnan(egpu::gpu(v).minCoeff()), "minCoeff() with a NaN" << where);
    BOOST_TEST(std::isnan(egpu::gpu(v).maxCoeff()), "maxCoeff() with a NaN" << where);
    const Eigen::RowVectorXd col_min = egpu::gpu(v.colwise().minCoeff());
    const Eigen::VectorXd row_max = egpu::gpu(v.rowwise().maxCoeff());
    const Eigen::RowVectorXd col_sum = egpu::gpu(v.colwise().sum());
    for (Index j = 0; j < cols; ++j) {
      BOOST_TEST(std::isnan(col_min(j)) == (j == at[1]), "colwise().minCoeff() column " << j << where);
      BOOST_TEST(std::isnan(col_sum(j)) == (j == at[1]), "colwise().sum() column " << j << where);
    }
    for (Index i = 0; i < rows; ++i) BOOST_TEST(std::isnan(row_max(i)) == (i == at[0]), "rowwise().maxCoeff() row " << i << where);

    a.at(at[0], at[1]) = inf;
    BOOST_TEST(egpu::gpu(v).sum() == inf, "sum() with +Inf" << where);
    BOOST_TEST(egpu::gpu(v).maxCoeff() == inf, "maxCoeff() with +Inf" << where);
    BOOST_TEST(egpu::gpu(v).squaredNorm() == inf, "squaredNorm() with +Inf" << where);
    a.at((at[0] + 1) % rows, at[1]) = -inf;
    BOOST_TEST(std::isnan(egpu::gpu(v).sum()), "sum() with +Inf and -Inf" << where);
    BOOST_TEST(egpu::gpu(v).minCoeff() == -inf, "minCoeff() with -Inf" << where);
    const Eigen::RowVectorXd sums = egpu::gpu(v.colwise().sum());
    for (Index j = 0; j < cols; ++j) BOOST_TEST(std::isnan(sums(j)) == (j == at[1]), "+Inf and -Inf: column " << j << where);

    // float, and complex<float> per part.
    Operand<float> f = make_operand<float>(rows, cols, Layout::row_major, Fill::random);
    f.at(at[0], at[1]) = std::numeric_limits<float>::infinity();
    BOOST_TEST(egpu::gpu(f.view()).sum() == std::numeric_limits<float>::infinity(), "float sum() with +Inf" << where);
    f.at(at[0], at[1]) = std::numeric_limits<float>::quiet_NaN();
    BOOST_TEST(std::isnan(egpu::gpu(f.view()).minCoeff()), "float minCoeff() with a NaN" << where);
    Operand<std::complex<float>> z = make_operand<std::complex<float>>(rows, cols, Layout::strided, Fill::random);
    z.at(at[0], at[1]) = std::complex<float>(std::numeric_limits<float>::infinity(), 0.5f);
    const std::complex<float> zs = egpu::gpu(z.view()).sum();
    BOOST_TEST((zs.real() == std::numeric_limits<float>::infinity() && std::isfinite(zs.imag())),
               "complex<float> sum() with (+Inf, 0.5)" << where << ": " << zs);
  }
}

// Three runs of every reduction give the same bits, in core and out of core.
BOOST_AUTO_TEST_CASE(the_same_bits_every_run) {
  const Index rows = scaled_dim(700, 2), cols = scaled_dim(555, 2);
  egpu::Options ooc;
  ooc.device_memory_limit = std::size_t(2) << 20;
  ooc.chunk_bytes = 64 << 10;
  for (const egpu::Options& opt : {egpu::Options(), ooc}) {
    const Operand<double> a = make_operand<double>(rows, cols, Layout::column_major, Fill::sprinkled);
    const Operand<std::complex<float>> z =
        make_operand<std::complex<float>>(cols, rows, Layout::row_major, Fill::random);
    Fingerprint runs[3];
    for (Fingerprint& fp : runs) {
      ReductionOutcome o;
      operand_case(a, Fill::sprinkled, opt, "double", o, fp);
      operand_case(z, Fill::random, opt, "complex<float>", o, fp);
      BOOST_TEST(o.bad == 0, o.report.str());
    }
    BOOST_TEST((runs[1] == runs[0]), "the second run differs from the first");
    BOOST_TEST((runs[2] == runs[0]), "the third run differs from the first");
  }
}

// Device memory read at every alignment: the first pass reads whole packs
// of 16 bytes where a stretch is aligned for them and value by value where
// it is not, adding in the same order, so the same values one to three
// elements further along give the same bits (sums of all values, of each
// column and of each row; 1001 rows, so every other column starts off a
// pack even at offset 0).
BOOST_AUTO_TEST_CASE(the_same_bits_at_every_alignment) {
  for_each_scalar([&](auto zero) {
    using S = decltype(zero);
    const Index rows = 1001, cols = scaled_dim(203, 1) | 1;
    const Operand<S> a = make_operand<S>(rows, cols, Layout::column_major, Fill::random);
    const std::size_t n = std::size_t(rows * cols);
    S* device = nullptr;
    S* results = nullptr;
    BOOST_REQUIRE(cudaMalloc(reinterpret_cast<void**>(&device), (n + 3) * sizeof(S)) == cudaSuccess);
    BOOST_REQUIRE(cudaMalloc(reinterpret_cast<void**>(&results), std::size_t(rows + cols) * sizeof(S)) == cudaSuccess);
    egpu::runtime::Context& ctx = egpu::runtime::thread_context();
    const View<S> v = a.view();
    auto sample = [&](std::int64_t i, std::int64_t j) { return exact_sample(v(i, j)); };
    const std::string base = std::string("device memory, ") + scalar_name<S>() + " " + shape_text(rows, cols);
    ReductionOutcome o;
    std::vector<std::vector<S>> first;
    for (Index offset = 0; offset < 4; ++offset) {
      BOOST_REQUIRE(cudaMemcpy(device + offset, a.storage.data(), n * sizeof(S), cudaMemcpyHostToDevice) == cudaSuccess);
      // A copy from pageable memory may return before it lands, and the
      // library's stream does not wait for the legacy one.
      BOOST_REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
      std::vector<std::shared_ptr<void>> keep;
      const ed::ElementwiseProgram program =
          ed::describe_elementwise(Eigen::Map<const Eigen::Array<S, Dynamic, Dynamic>>(device + offset, rows, cols), keep);
      int turn = 0;
      for (const ReduceAxis axis : {ReduceAxis::all, ReduceAxis::each_column, ReduceAxis::each_row}) {
        const ed::Reduction r = reduction(ReduceOp::sum, axis);
        const std::int64_t count = ed::reduced_count(program, r);
        std::vector<S> got(static_cast<std::size_t>(count));
        egpu::backend::device_reduce(program, r, results, ctx, ctx.stream(0));
        BOOST_REQUIRE(cudaStreamSynchronize(ctx.stream(0)) == cudaSuccess);
        BOOST_REQUIRE(cudaMemcpy(got.data(), results, got.size() * sizeof(S), cudaMemcpyDeviceToHost) == cudaSuccess);
        const char* axis_text = axis == ReduceAxis::all ? "sum()" : axis == ReduceAxis::each_column ? "colwise().sum()"
                                                                                                 : "rowwise().sum()";
        const std::string what = base + " " + axis_text + " at offset " + std::to_string(offset);
        if (offset == 0) {
          judge_all(expected_reduction(rows, cols, r, is_complex_v<S>, sample), r, got.data(), what, o);
          first.push_back(got);
        } else {
          BOOST_TEST(same_bits(got, first[static_cast<std::size_t>(turn)]), what << ": other bits than at offset 0");
        }
        ++turn;
      }
    }
    cudaFree(device);
    cudaFree(results);
    report(o, base);
  });
}

// Out of core (a device memory limit of a quarter of the operand, at least
// 1 MiB, and 64 KiB chunks): within the same bounds (the bits may differ from
// in core: the chunks change the order of combination).
BOOST_AUTO_TEST_CASE(out_of_core_within_the_bounds) {
  for_each_scalar([&](auto zero) {
    using S = decltype(zero);
    const double count = 4e6 / double(sizeof(S)) * test_scale();
    const Index rows = std::max<Index>(3, static_cast<Index>(std::sqrt(count))) | 1;
    const Index cols = std::max<Index>(2, static_cast<Index>(count / double(rows)));
    egpu::Options ooc;
    ooc.device_memory_limit = std::max<std::size_t>(std::size_t(1) << 20, std::size_t(rows * cols) * sizeof(S) / 4);
    ooc.chunk_bytes = 64 << 10;
    ooc.streams = 3;
    ooc.staging_threads = 2;
    int turn = 0;
    Fingerprint fp;
    shape_case<S>(rows, cols, turn, ooc, " out of core", fp);
  });
}

// Pinned operands give the pageable results bit for bit.
BOOST_AUTO_TEST_CASE(pinned_and_pageable_operands) {
  const Index rows = scaled_dim(500, 2), cols = scaled_dim(311, 2);
  egpu::Options ooc;
  ooc.device_memory_limit = std::size_t(1) << 20;
  ooc.chunk_bytes = 64 << 10;
  for (const egpu::Options& opt : {egpu::Options(), ooc}) {
    Operand<double> a = make_operand<double>(rows, cols, Layout::padded, Fill::random);
    Operand<std::complex<float>> z = make_operand<std::complex<float>>(rows, cols, Layout::strided, Fill::sprinkled);
    Fingerprint pageable;
    ReductionOutcome o;
    operand_case(a, Fill::random, opt, "double pageable", o, pageable);
    operand_case(z, Fill::sprinkled, opt, "complex<float> pageable", o, pageable);
    for (int mask = 1; mask < 4; ++mask) {
      const PinnedSubset pinned = pin_subset(mask, {"double operand", "complex<float> operand"}, a.storage, z.storage);
      Fingerprint fp;
      operand_case(a, Fill::random, opt, "double", o, fp);
      operand_case(z, Fill::sprinkled, opt, "complex<float>", o, fp);
      BOOST_TEST((fp == pageable), "pinned" << pinned.names << ": other bits than pageable");
    }
    report(o, "pinned and pageable");
  }
}

// A failing += / -= leaves its destination bit-identical.
BOOST_AUTO_TEST_CASE(injected_failures_leave_the_destination) {
  const Index rows = scaled_dim(700, 2), cols = scaled_dim(555, 2);
  egpu::Options ooc;
  ooc.device_memory_limit = std::size_t(1) << 20;
  ooc.chunk_bytes = 64 << 10;
  ooc.streams = 2;
  ooc.staging_threads = 1;
  {
    const Operand<double> a = make_operand<double>(rows, cols, Layout::column_major, Fill::random);
    const Eigen::RowVectorXd start = random_matrix<Eigen::RowVectorXd>(1, cols);
    Eigen::RowVectorXd d = start;
    for (const egpu::Options& opt : {egpu::Options(), ooc})
      failures(
          "double colwise().sum() +=", [&] { d += egpu::gpu(a.view().colwise().sum(), opt); },
          [&] { return bytes_of(d); }, [&] { d = start; });
  }
  {
    Operand<std::complex<float>> z = make_operand<std::complex<float>>(rows, cols, Layout::row_major, Fill::random);
    const auto guard = egpu::pin(z.storage);
    Eigen::MatrixXf big = random_matrix<Eigen::MatrixXf>(rows + 2, 3);
    const Eigen::MatrixXf start = big;
    failures(
        "complex<float> rowwise().norm() -= into a block, pinned operand, out of core",
        [&] { big.col(1).segment(1, rows) -= egpu::gpu(z.view().rowwise().norm(), ooc); },
        [&] { return bytes_of(big); }, [&] { big = start; });
  }
  {
    const Operand<double> a = make_operand<double>(rows, cols, Layout::strided, Fill::random);
    double s = 0;
    failures(
        "double sum()", [&] { s = egpu::gpu(a.view(), ooc).sum(); }, [&] { return s; }, [&] { s = 0; });
  }
}

// Two host threads, each repeating its reductions with its own options.
BOOST_AUTO_TEST_CASE(two_host_threads) {
  const Operand<double> a = make_operand<double>(scaled_dim(900, 2), scaled_dim(700, 2), Layout::column_major, Fill::random);
  const Operand<std::complex<float>> z =
      make_operand<std::complex<float>>(scaled_dim(611, 2), scaled_dim(500, 2), Layout::padded, Fill::random);
  egpu::Options opt1;
  opt1.device_memory_limit = std::size_t(1) << 20;
  opt1.chunk_bytes = 64 << 10;
  opt1.streams = 4;
  opt1.staging_threads = 3;
  auto work0 = [&](Fingerprint& fp) {
    const double s = egpu::gpu(a.view()).sum();
    fp.add(&s, 1);
    const Eigen::RowVectorXd n = egpu::gpu(a.view().colwise().norm());
    fp.add(n.data(), std::size_t(n.size()));
  };
  auto work1 = [&](Fingerprint& fp) {
    const Eigen::VectorXcf m = egpu::gpu(z.view().rowwise().mean(), opt1);
    fp.add(m.data(), std::size_t(m.size()));
    const float q = egpu::gpu(z.view(), opt1).squaredNorm();
    fp.add(&q, 1);
  };
  Fingerprint expected[2];
  work0(expected[0]);
  work1(expected[1]);
  const int rounds = scaled_count(6);
  const auto faults = run_on_threads(2, [&](int id, const auto& fault) {
    for (int k = 0; k < rounds; ++k) {
      Fingerprint fp;
      if (id == 0) work0(fp);
      else work1(fp);
      if (!(fp == expected[id])) fault("thread " + std::to_string(id) + ", round " + std::to_string(k) + ": other bits");
    }
  });
  for (const auto& f : faults) BOOST_TEST(false, f);
  BOOST_TEST(faults.empty());
}

BOOST_AUTO_TEST_CASE(wrong_destination_sizes_throw) {
  const Operand<double> a = make_operand<double>(6, 4, Layout::column_major, Fill::random);
  Eigen::RowVectorXd longer = random_matrix<Eigen::RowVectorXd>(1, 5);
  const Eigen::RowVectorXd longer0 = longer;
  BOOST_CHECK_THROW(longer += egpu::gpu(a.view().colwise().sum()), egpu::error);
  BOOST_CHECK_THROW(longer -= egpu::gpu(a.view().colwise().norm()), egpu::error);
  BOOST_TEST((longer == longer0));
  Eigen::MatrixXd big = random_matrix<Eigen::MatrixXd>(8, 8);
  const Eigen::MatrixXd big0 = big;
  BOOST_CHECK_THROW(big.col(0) = egpu::gpu(a.view().rowwise().sum()), egpu::error);
  BOOST_CHECK_THROW(big.row(0).head(3) = egpu::gpu(a.view().colwise().maxCoeff()), egpu::error);
  BOOST_TEST((big == big0));
}

// 2^28 floats (1 GiB), values in [-1/2, 1]: the sum, column sums and row
// sums against long double sums, within 8u sum|x|.
BOOST_AUTO_TEST_CASE(two_to_the_28_floats) {
  const Index rows = scaled_dim(Index(1) << 14, 2), cols = scaled_dim(Index(1) << 14, 2);
  Operand<float> a;
  a.rows = rows;
  a.cols = cols;
  a.outer = rows;
  a.storage.resize(rows * cols);
  std::uint64_t state = rng()();
  for (Index k = 0; k < a.storage.size(); ++k) {  // splitmix64: fast enough for 2^28 values
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    a.storage(k) = float(double(z >> 40) / double(1ull << 24) * 1.5 - 0.5);
  }
  const View<float> v = a.view();
  auto sample = [&](std::int64_t i, std::int64_t j) { return exact_sample(v(i, j)); };
  const std::string base = "2^28 floats " + shape_text(rows, cols);
  ReductionOutcome o;
  const ed::Reduction all = reduction(ReduceOp::sum, ReduceAxis::all);
  const float s = egpu::gpu(v).sum();
  judge_all(expected_reduction(rows, cols, all, false, sample), all, &s, base + " sum()", o);
  const ed::Reduction down = reduction(ReduceOp::sum, ReduceAxis::each_column);
  const Eigen::RowVectorXf col_sums = egpu::gpu(v.colwise().sum());
  judge_all(expected_reduction(rows, cols, down, false, sample), down, col_sums.data(), base + " colwise().sum()", o);
  const ed::Reduction across = reduction(ReduceOp::sum, ReduceAxis::each_row);
  const Eigen::VectorXf row_sums = egpu::gpu(v.rowwise().sum());
  judge_all(expected_reduction(rows, cols, across, false, sample), across, row_sums.data(), base + " rowwise().sum()", o);
  BOOST_TEST(egpu::gpu(v).sum() == s, base << ": a second sum() differs");
  report(o, base);
}

// Indices past 2^31: a vector of 2^31 + 5 floats (8 GiB) summed and
// counted through the pipeline, and a coefficient-wise expression over it
// whose last elements are checked. Runs where the host has room for the
// two arrays three times over (otherwise reported as skipped).
boost::test_tools::assertion_result room_for_two_to_the_31(boost::unit_test::test_unit_id) {
  const double bytes = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE));
  boost::test_tools::assertion_result enough(bytes >= 3.0 * 2 * 4 * double(std::int64_t(1) << 31));
  enough.message() << "the host has less than 48 GiB";
  return enough;
}

BOOST_AUTO_TEST_CASE(more_than_two_to_the_31_elements, *boost::unit_test::precondition(room_for_two_to_the_31)) {
  const Index n = (Index(1) << 31) + 5;
  Eigen::VectorXf a(n);
  // Values k % 7 - 3: their exact sum and count are known in closed form.
  for (Index k = 0; k < n; ++k) a(k) = float(k % 7) - 3.0f;
  double exact_sum = 0;  // whole periods of seven sum to 0
  for (Index r = 0; r < n % 7; ++r) exact_sum += double(r - 3);
  BOOST_TEST(double(egpu::gpu(a).sum()) == exact_sum);
  const Index positives = (n / 7) * 3 + std::max<Index>(0, n % 7 - 4);
  BOOST_TEST(egpu::gpu(a.array() > 0.0f).count() == positives);
  BOOST_TEST(egpu::gpu(a).maxCoeff() == 3.0f);
  Eigen::VectorXf b(n);
  b.setConstant(std::numeric_limits<float>::quiet_NaN());
  b = egpu::gpu((a.array() * 2.0f + 1.0f).matrix());
  for (Index k : {Index(0), Index(1) << 31, (Index(1) << 31) + 1, n - 1})
    BOOST_TEST(b(k) == a(k) * 2.0f + 1.0f, "element " << k);
  BOOST_TEST(!b.hasNaN());
}

BOOST_AUTO_TEST_SUITE_END()
