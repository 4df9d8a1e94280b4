// Coefficient-wise expressions on host data through egpu::gpu(xpr, options),
// on a GPU: the chunked multi-stream pipeline against the host interpreter of
// the expression's program (support/elementwise_reference.hpp), with the
// bounds of elementwise_device_test (the same generated kernels on device
// memory): |gpu - ref| <= tol * max(|ref|, 1), tol = 2^-13 for float and
// complex<float>, 2^-40 for double and complex<double>; a real NaN or
// infinity must be matched exactly, a complex non-finite value by a
// non-finite one; that test's three exemptions (a complex value with a
// non-finite part inside the program, arg of a real NaN, a complex zero part
// at a branch cut) are counted and printed. For dst op= gpu(xpr) with op
// +=, -= or *= the reference is c0 op ref (c0: dst before), within
// tol * (max(|ref|, 1) * max(|c0|, 1) + |c0 op ref|).
//  - every form of support/elementwise_forms.hpp (NaN, Inf, zeros in the
//    data) for the four scalars, shapes 0x0 ... 1000x700, into a
//    column-major destination, `=` / `noalias() =` and `+=` / `-=` in turn;
//    the destination of `=` holds poison first: every coefficient must
//    be written;
//  - out of core: every form with ~13 MB operands through a device memory
//    limit of a third of one operand, streams 1, 2, 4 x staging threads 1
//    and 0 (and in core on one stream): the in-core result bit for bit,
//    but for which NaN a NaN is (same_value);
//  - destinations: column- and row-major, blocks of larger column- and
//    row-major matrices, a Map with inner and outer strides, a Ref to a
//    block, a transposed matrix; the memory around them poisoned, which
//    must keep its bits; in core and out of core, bit for bit but for
//    NaNs (same_value);
//  - pinned operands and destinations (egpu::pin, cudaHostAlloc) give the
//    pageable results bit for bit;
//  - aliasing: the destination read at the same element (Eigen's result),
//    or overlapping it otherwise (transposed, a shifted block, a broadcast
//    column of it, its bytes under another layout): the result of
//    dst = xpr.eval();
//  - injected failures (egpu::detail::inject_failure_after) from the first
//    operation to past the last: a failing += / -= throws egpu::error and
//    leaves the destination bit-identical, a call that gets through gives
//    the normal result bit for bit; device memory in use and pinned memory
//    held come back to their values; the library works afterwards;
//  - two host threads with different expressions and options at once;
//  - size mismatches throw egpu::error and write nothing; `=` resizes;
//    construction from gpu(...); array *=;
//  - repeated assignments and reductions on a fresh thread measure the
//    device's free memory once; a call with a memory limit never does;
//  - 2^25 floats (128 MiB per operand) at the default limits.
// EGPU_TEST_SCALE shrinks shapes and counts. Skipped without a usable GPU.
#define BOOST_TEST_MODULE elementwise_assign
#include <boost/mpl/list.hpp>
#include <boost/test/unit_test.hpp>

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "egpu/adapter/elementwise_parts.hpp"
#include "egpu/detail/testing.hpp"
#include "egpu/egpu.hpp"
#include "support/elementwise_forms.hpp"
#include "support/elementwise_reference.hpp"
#include "support/random_programs.hpp"
#include "support/test_support.hpp"

using namespace egpu_test;
namespace ed = egpu::detail;
using Eigen::Dynamic;

namespace {

template <class T> using Mat = Eigen::Matrix<T, Dynamic, Dynamic>;

template <class X> constexpr bool is_array_v = std::is_base_of_v<Eigen::ArrayBase<X>, X>;

// What a destination of x is: an Array for an array expression, else a Matrix.
template <class X, int Layout = Eigen::ColMajor>
using plain_t = std::conditional_t<is_array_v<X>, Eigen::Array<typename X::Scalar, Dynamic, Dynamic, Layout>,
                                   Eigen::Matrix<typename X::Scalar, Dynamic, Dynamic, Layout>>;

// A side shrunk with EGPU_TEST_SCALE (area ~ scale).
Index dim(Index d) { return scaled_dim(d, 2); }

std::string shape_text(Index rows, Index cols) { return std::to_string(rows) + "x" + std::to_string(cols); }

enum class Op { assign, noalias_assign, add, sub, mul };
const char* text(Op op) {
  switch (op) {
    case Op::assign: return "=";
    case Op::noalias_assign: return "noalias() =";
    case Op::add: return "+=";
    case Op::sub: return "-=";
    default: return "*=";
  }
}
bool reads_destination(Op op) { return op == Op::add || op == Op::sub || op == Op::mul; }
constexpr Op kRotation[] = {Op::assign, Op::add, Op::noalias_assign, Op::sub};

// Arrays have no noalias() (nor matrices a coefficient-wise *=).
template <class Dst> Op usable(Op op) {
  return op == Op::noalias_assign && is_array_v<std::decay_t<Dst>> ? Op::assign : op;
}

template <class Dst, class Src> void apply(Op op, Dst&& dst, const Src& src) {
  using D = std::decay_t<Dst>;
  switch (op) {
    case Op::assign: dst = src; break;
    case Op::noalias_assign:
      if constexpr (is_array_v<D>) throw std::logic_error("test: noalias() of an array");
      else dst.noalias() = src;
      break;
    case Op::add: dst += src; break;
    case Op::sub: dst -= src; break;
    case Op::mul:
      if constexpr (is_array_v<D>) dst *= src;
      else throw std::logic_error("test: *= of a matrix is a product");
      break;
  }
}

// Poison (support/test_support.hpp): a coefficient still holding it was not written.
template <class P> void poison_bytes(P& m) {
  if (m.size() > 0) fill_poison(m.data(), static_cast<std::size_t>(m.size()));
}
template <class P> std::vector<typename P::Scalar> elements(const P& m) {
  return std::vector<typename P::Scalar>(m.data(), m.data() + m.size());
}
template <class T> bool same_bits(const std::vector<T>& x, const std::vector<T>& y) {
  return x.size() == y.size() && (x.empty() || std::memcmp(x.data(), y.data(), x.size() * sizeof(T)) == 0);
}
// Whether two results of one expression agree: the same bits, but any NaN
// alike (the poison, a NaN too, only as itself: a coefficient left unwritten
// still shows). Out of core the chunks are cut differently, and where both
// operands of an operation are NaN, which one the result carries is
// unspecified (IEEE 754 leaves a NaN result's sign and payload open): runs
// were seen to differ in exactly that (one element of 1.6 million, NaN
// against -NaN).
template <class R> bool same_or_both_nan(R x, R y) {
  return std::memcmp(&x, &y, sizeof(R)) == 0 ||
         (std::isnan(x) && std::isnan(y) && !is_poison(x) && !is_poison(y));
}
template <class T> bool same_value(const T& x, const T& y) {
  if constexpr (is_complex_v<T>) return same_or_both_nan(x.real(), y.real()) && same_or_both_nan(x.imag(), y.imag());
  else return same_or_both_nan(x, y);
}
// "" where x and y agree (same_value); else where they first differ, both
// values there with their bits, and how many elements differ.
template <class T> std::string value_difference(const std::vector<T>& x, const std::vector<T>& y) {
  if (x.size() != y.size()) return "sizes " + std::to_string(x.size()) + " and " + std::to_string(y.size());
  std::size_t first = x.size(), count = 0;
  for (std::size_t k = 0; k < x.size(); ++k)
    if (!same_value(x[k], y[k]) && count++ == 0) first = k;
  if (count == 0) return "";
  auto bits = [](const T& v) {
    std::ostringstream o;
    o << std::hex;
    const auto* b = reinterpret_cast<const unsigned char*>(&v);
    for (std::size_t i = sizeof(T); i-- > 0;) o << (b[i] < 16 ? "0" : "") << int(b[i]);
    return o.str();
  };
  std::ostringstream o;
  o.precision(17);
  o << "element " << first << ": " << x[first] << " (" << bits(x[first]) << ") against " << y[first] << " ("
    << bits(y[first]) << "); " << count << " of " << x.size() << " differ";
  return o.str();
}
template <class P> bool bit_identical(const P& x, const P& y) {
  return x.rows() == y.rows() && x.cols() == y.cols() && same_bits(elements(x), elements(y));
}
template <class View> Mat<typename std::decay_t<View>::Scalar> snapshot(const View& v) {
  Mat<typename std::decay_t<View>::Scalar> s(v.rows(), v.cols());
  for (Index j = 0; j < v.cols(); ++j)
    for (Index i = 0; i < v.rows(); ++i) s(i, j) = v.coeff(i, j);
  return s;
}

template <class T> double tolerance() {
  return std::is_same_v<real_t<T>, float> ? std::ldexp(1.0, -13) : std::ldexp(1.0, -40);
}
template <class T> bool finite_value(T v) {
  if constexpr (is_complex_v<T>) return std::isfinite(v.real()) && std::isfinite(v.imag());
  else return std::isfinite(v);
}
template <class T> double magnitude(T v) { return static_cast<double>(std::abs(v)); }

template <class T> bool close(T got, T want, double scale) {
  if constexpr (is_complex_v<T>) {
    if (!finite_value(want) || !finite_value(got)) return finite_value(want) == finite_value(got);
    return std::abs(std::complex<double>(got) - std::complex<double>(want)) <= tolerance<T>() * scale;
  } else {
    if (std::isnan(want)) return std::isnan(got);
    if (std::isinf(want)) return got == want;
    return std::abs(double(got) - double(want)) <= tolerance<T>() * scale;
  }
}

// Runs work(j) for every column, on every hardware thread when there is
// enough work; rethrows the first exception.
template <class F> void for_columns(Index rows, Index cols, F&& work) {
  const Index hw = std::max<Index>(1, static_cast<Index>(std::thread::hardware_concurrency()));
  const Index workers = rows * cols < (Index(1) << 16) ? 1 : std::min(hw, cols);
  if (workers <= 1) {
    for (Index j = 0; j < cols; ++j) work(j);
    return;
  }
  std::atomic<Index> next{0};
  std::mutex mutex;
  std::exception_ptr failure;
  std::vector<std::thread> pool;
  for (Index w = 0; w < workers; ++w)
    pool.emplace_back([&] {
      try {
        for (Index j = next++; j < cols; j = next++) work(j);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!failure) failure = std::current_exception();
      }
    });
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

// The interpreter's value of every coefficient of an expression, its leaves
// read where they lie (they must outlive the Reference).
template <class T> struct Reference {
  std::vector<std::shared_ptr<void>> temporaries;
  ed::ElementwiseProgram program;
  std::vector<T> values;  // column-major

  template <class X> explicit Reference(const X& xpr) : program(ed::describe_elementwise(xpr, temporaries)) {
    const Index rows = program.rows, cols = program.cols;
    values.resize(static_cast<std::size_t>(rows * cols));
    for_columns(rows, cols, [&](Index j) {
      for (Index i = 0; i < rows; ++i)
        values[static_cast<std::size_t>(i + j * rows)] = evaluate_at(program, i, j).template get<T>();
    });
  }
  T at(Index i, Index j) const { return values[static_cast<std::size_t>(i + j * program.rows)]; }
};

// What a run found, and the first few of its faults.
struct Outcome {
  long bad = 0, exempt = 0;
  std::ostringstream report;
  void note(const std::string& line) {
    if (bad++ < 3) report << "  " << line << "\n";
  }
};

long& exempt_count() {
  static long n = 0;
  return n;
}
void report(const Outcome& o, const std::string& what) {
  BOOST_TEST(o.bad == 0, what << ": " << o.bad << " wrong, unwritten or stray coefficients\n" << o.report.str());
  exempt_count() += o.exempt;
}
void print_exemptions(const char* test) {
  BOOST_TEST_MESSAGE(test << ": " << exempt_count()
                          << " coefficients exempt (complex non-finite inside, NaN sign, zero sign at a cut or of a part taken)");
  exempt_count() = 0;
}

// Judges `view` (inside `backing`) after `view op= gpu(xpr)`: every
// coefficient against the reference (against c0 op ref where op reads the
// destination, c0 its values before); one whose element held poison
// before must have been written; every element of the backing outside the
// view must keep its bits from `before`.
template <class T, class Backing, class View>
void judge_in(const Reference<T>& ref, const Backing& backing, const std::vector<T>& before, View& view, Op op,
              const std::common_type_t<Mat<T>>* c0, const std::string& where, Outcome& o) {
  if (view.rows() != ref.program.rows || view.cols() != ref.program.cols) {
    o.note(where + ": destination is " + shape_text(view.rows(), view.cols()));
    return;
  }
  const T* base = backing.data();
  std::vector<char> inside(before.size(), 0);
  for (Index j = 0; j < view.cols(); ++j)
    for (Index i = 0; i < view.rows(); ++i) {
      const auto at = static_cast<std::size_t>(&view.coeffRef(i, j) - base);
      inside[at] = 1;
      const T got = view.coeff(i, j);
      const std::string here = where + " at (" + std::to_string(i) + ", " + std::to_string(j) + ")";
      if (is_poison(before[at]) && is_poison(got)) {
        o.note(here + ": not written");
        continue;
      }
      const T r = ref.at(i, j);
      T want = r;
      double scale = std::max(1.0, magnitude(r));
      if (c0 != nullptr) {
        const T s = (*c0)(i, j);
        want = op == Op::add ? T(s + r) : op == Op::sub ? T(s - r) : T(s * r);
        scale = scale * std::max(1.0, magnitude(s)) + magnitude(want);
      }
      if (close(got, want, scale)) continue;
      if (exempt(ref.program, i, j)) {
        ++o.exempt;
        continue;
      }
      std::ostringstream line;
      line.precision(17);
      line << here << ": gpu " << got << ", reference " << want;
      o.note(line.str());
    }
  for (std::size_t k = 0; k < before.size(); ++k)
    if (!inside[k] && std::memcmp(&base[k], &before[k], sizeof(T)) != 0)
      o.note(where + ": element " + std::to_string(k) + " outside the destination changed");
}

// `view op= gpu(xpr, options)` with view = make_view(backing): the backing
// poisoned first, the view holding `start` where op reads
// it; judged when `judge`. Returns the backing's elements after the call.
template <class X, class Backing, class MakeView>
std::vector<typename X::Scalar> run_into(const X& xpr, const Reference<typename X::Scalar>& ref, Backing& backing,
                                         MakeView&& make_view, Op op, const egpu::Options& options,
                                         const Mat<typename X::Scalar>& start, const std::string& what,
                                         bool judge = true) {
  poison_bytes(backing);
  decltype(auto) view = make_view(backing);
  if (reads_destination(op))
    for (Index j = 0; j < view.cols(); ++j)
      for (Index i = 0; i < view.rows(); ++i) view.coeffRef(i, j) = start(i, j);
  const auto before = judge ? elements(backing) : std::vector<typename X::Scalar>();
  apply(op, view, egpu::gpu(xpr, options));
  if (judge) {
    Outcome o;
    const std::string where = what + " " + text(op);
    judge_in(ref, backing, before, view, op, reads_destination(op) ? &start : nullptr, where, o);
    report(o, where);
  }
  return elements(backing);
}

const auto self = [](auto& m) -> auto& { return m; };

struct Variant {
  std::string name;
  egpu::Options options;
};

// In core on one stream and one staging thread; through `limit` bytes of
// device memory with streams 1, 2, 4 and staging threads 1, 0 (every
// hardware thread).
std::vector<Variant> out_of_core_variants(std::size_t limit) {
  std::vector<Variant> v;
  egpu::Options one;
  one.streams = 1;
  one.staging_threads = 1;
  v.push_back({"in core, 1 stream, 1 staging thread", one});
  for (int streams : {1, 2, 4})
    for (int staging : {1, 0}) {
      egpu::Options o;
      o.device_memory_limit = limit;
      o.streams = streams;
      o.staging_threads = staging;
      v.push_back({"limit " + std::to_string(limit) + " B, " + std::to_string(streams) + " streams, " +
                       std::to_string(staging) + " staging threads",
                   o});
    }
  return v;
}

// One form into a column-major destination: `=` or noalias() =, and += or
// -=, judged; then under each variant, the same values (same_value).
template <class X>
void check_form(const X& xpr, const std::string& what, Op set_op, Op acc, const std::vector<Variant>& variants) {
  using T = typename X::Scalar;
  using P = plain_t<X>;
  const Reference<T> ref(xpr);
  const Mat<T> start = random_matrix<Mat<T>>(xpr.rows(), xpr.cols());
  const Op set = usable<P>(set_op);
  P out(xpr.rows(), xpr.cols());
  const auto set_bits = run_into(xpr, ref, out, self, set, egpu::Options(), start, what);
  const auto acc_bits = run_into(xpr, ref, out, self, acc, egpu::Options(), start, what);
  for (const Variant& v : variants) {
    const std::string set_diff = value_difference(run_into(xpr, ref, out, self, set, v.options, start, what, false), set_bits);
    BOOST_TEST(set_diff.empty(), what << " " << text(set) << ", " << v.name << ": differs from in core, " << set_diff);
    const std::string acc_diff = value_difference(run_into(xpr, ref, out, self, acc, v.options, start, what, false), acc_bits);
    BOOST_TEST(acc_diff.empty(), what << " " << text(acc) << ", " << v.name << ": differs from in core, " << acc_diff);
  }
}

// Every form: `=` and noalias() = alternate with the shape; each form keeps
// one of += and -= (half the forms each), so that a form's kernels are
// compiled once for all shapes.
template <class S> void run_forms(Index rows, Index cols, int shape_index, const std::vector<Variant>& variants) {
  const std::string shape = std::string(scalar_name<S>()) + " " + shape_text(rows, cols) + " ";
  int k = 0;
  for_each_form<S>(rows, cols, [&](const auto& xpr, const char* what) {
    const Op set = (shape_index + k) % 2 == 0 ? Op::assign : Op::noalias_assign;
    const Op acc = k % 2 == 0 ? Op::add : Op::sub;
    ++k;
    check_form(xpr, shape + what, set, acc, variants);
  });
}

// xpr into each kind of destination (the op rotating with `turn`), in core
// and out of core: judged, and the same values both ways (same_value).
template <class X> void into_each_destination(const X& xpr, const std::string& what, int& turn) {
  using T = typename X::Scalar;
  using P = plain_t<X>;
  using RowP = plain_t<X, Eigen::RowMajor>;
  using Strides = Eigen::Stride<Dynamic, Dynamic>;
  using MapP = Eigen::Map<P, Eigen::Unaligned, Strides>;
  using RefP = Eigen::Ref<P, 0, Eigen::OuterStride<>>;
  const Index rows = xpr.rows(), cols = xpr.cols();
  const Reference<T> ref(xpr);
  const Mat<T> start = random_matrix<Mat<T>>(rows, cols);
  egpu::Options ooc;
  ooc.device_memory_limit = std::max<std::size_t>(64 << 10, static_cast<std::size_t>(rows * cols) * sizeof(T) / 4);
  ooc.streams = 3;
  ooc.staging_threads = 2;
  auto each = [&](const char* kind, auto& backing, auto&& make_view) {
    const Op op = usable<P>(kRotation[turn++ % 4]);
    const std::string where = what + " " + shape_text(rows, cols) + " into " + kind;
    const auto in_core = run_into(xpr, ref, backing, make_view, op, egpu::Options(), start, where);
    const auto out_of_core = run_into(xpr, ref, backing, make_view, op, ooc, start, where + " out of core");
    const std::string diff = value_difference(out_of_core, in_core);
    BOOST_TEST(diff.empty(), where << " " << text(op) << ": out of core differs from in core, " << diff);
  };
  {
    P d(rows, cols);
    each("column-major", d, self);
  }
  {
    RowP d(rows, cols);
    each("row-major", d, self);
  }
  {
    P big(rows + 5, cols + 3);
    each("block of a column-major matrix", big, [&](P& m) { return m.block(3, 2, rows, cols); });
  }
  {
    RowP big(rows + 2, cols + 4);
    each("block of a row-major matrix", big, [&](RowP& m) { return m.block(1, 3, rows, cols); });
  }
  {
    const Index outer = 2 * rows + 3;
    Eigen::Matrix<T, Dynamic, 1> buffer(1 + outer * cols);
    each("Map with inner stride 2", buffer, [&](Eigen::Matrix<T, Dynamic, 1>& m) {
      return MapP(m.data() + 1, rows, cols, Strides(outer, 2));
    });
  }
  {
    P big(rows + 1, cols + 2);
    each("Ref to a block", big, [&](P& m) { return RefP(m.block(1, 1, rows, cols)); });
  }
  {
    P t(cols, rows);
    each("transposed matrix", t, [](P& m) { return m.transpose(); });
  }
}

template <class S> void destinations(Index rows, Index cols, int& turn) {
  using A = Eigen::Array<S, Dynamic, Dynamic>;
  using M = Eigen::Matrix<S, Dynamic, Dynamic>;
  const A a = sprinkled<A>(rows, cols), b = sprinkled<A>(rows, cols);
  const M mt = sprinkled<M>(cols, rows), mb = sprinkled<M>(rows, cols);
  const Eigen::Matrix<S, Dynamic, 1> v = sprinkled<Eigen::Matrix<S, Dynamic, 1>>(rows, 1);
  const std::string s = scalar_name<S>();
  into_each_destination(a * b + a.exp(), s + " a*b+exp(a)", turn);
  into_each_destination(mt.transpose().cwiseProduct(mb).colwise() - v, s + " transposed leaf, broadcast", turn);
}

template <class S> void pinned_against_pageable(Index rows, Index cols) {
  using R = real_t<S>;
  using A = Eigen::Array<S, Dynamic, Dynamic>;
  using RowA = Eigen::Array<S, Dynamic, Dynamic, Eigen::RowMajor>;
  A a = sprinkled<A>(rows, cols), b = sprinkled<A>(rows, cols);
  const auto expr = [](const A& x, const A& y) { return R(2) * x.sin() - y / (R(1) + x.abs()); };
  const Reference<S> ref(expr(a, b));
  const Mat<S> start = random_matrix<Mat<S>>(rows, cols);
  egpu::Options ooc;
  ooc.device_memory_limit = static_cast<std::size_t>(rows * cols) * sizeof(S) / 4;
  ooc.streams = 3;
  ooc.staging_threads = 2;
  for (const Variant& variant : {Variant{"in core", egpu::Options()}, Variant{"out of core", ooc}}) {
    const egpu::Options& opt = variant.options;
    const std::string base = std::string(scalar_name<S>()) + " " + shape_text(rows, cols) + " " + variant.name;
    A page(rows, cols);
    const auto set = run_into(expr(a, b), ref, page, self, Op::assign, opt, start, base + " pageable");
    const auto add = run_into(expr(a, b), ref, page, self, Op::add, opt, start, base + " pageable");
    for (int mask = 1; mask < 8; ++mask) {  // which of a, b, the destination are pinned
      A pa = a, pb = b, pc(rows, cols);
      const PinnedSubset pinned = pin_subset(mask, {"a", "b", "destination"}, pa, pb, pc);
      const std::string what = base + " pinned" + pinned.names;
      BOOST_TEST(same_bits(run_into(expr(pa, pb), ref, pc, self, Op::assign, opt, start, what, false), set),
                 what << ": `=` differs from pageable");
      BOOST_TEST(same_bits(run_into(expr(pa, pb), ref, pc, self, Op::add, opt, start, what, false), add),
                 what << ": `+=` differs from pageable");
    }
    {
      RowA r(rows, cols);
      auto guard = egpu::pin(r);
      run_into(expr(a, b), ref, r, self, Op::sub, opt, start, base + " pinned row-major destination");
    }
    {  // page-locked by cudaHostAlloc, seen through a Map
      void* host = nullptr;
      const std::size_t bytes = static_cast<std::size_t>(rows * cols) * sizeof(S);
      BOOST_TEST_REQUIRE(cudaHostAlloc(&host, std::max<std::size_t>(bytes, 1), cudaHostAllocPortable) == cudaSuccess);
      const std::unique_ptr<void, void (*)(void*)> owner(host, [](void* p) { (void)cudaFreeHost(p); });
      Eigen::Map<A> m(static_cast<S*>(host), rows, cols);
      BOOST_TEST(same_bits(run_into(expr(a, b), ref, m, self, Op::add, opt, start, base + " cudaHostAlloc Map"), add),
                 base << ": `+=` into cudaHostAlloc memory differs from pageable");
    }
  }
}

// The destination read at the same element, and overlapping it otherwise,
// in core and out of core, against the reference of the same expression
// over a copy of the destination taken before the call.
template <class S> void aliasing(const Variant& variant) {
  using A = Eigen::Array<S, Dynamic, Dynamic>;
  using M = Eigen::Matrix<S, Dynamic, Dynamic>;
  using RowM = Eigen::Matrix<S, Dynamic, Dynamic, Eigen::RowMajor>;
  const Index n = dim(301), m = dim(257);
  const egpu::Options& opt = variant.options;
  const std::string base = std::string(scalar_name<S>()) + " " + variant.name + ": ";
  // judge_in over the whole of `dst` (before: its elements before the call).
  auto check = [&](const auto& ref, auto& dst, const auto& before, Op op, const std::string& what) {
    using T = typename std::decay_t<decltype(dst)>::Scalar;
    const Mat<T> c0 = snapshot(before);
    Outcome o;
    judge_in(ref, dst, elements(before), dst, op, reads_destination(op) ? &c0 : nullptr, base + what, o);
    report(o, base + what);
  };
  {
    A c = sprinkled<A>(n, m);
    const A b = sprinkled<A>(n, m), c0 = c;
    c = egpu::gpu(c * S(2) + b, opt);
    check(Reference<S>(c0 * S(2) + b), c, c0, Op::assign, "c = gpu(c * 2 + b)");
    c = c0;
    c += egpu::gpu(c.square() - b, opt);
    check(Reference<S>(c0.square() - b), c, c0, Op::add, "c += gpu(c.square() - b)");
  }
  {
    A s = sprinkled<A>(n, n);
    const A b = sprinkled<A>(n, n), s0 = s;
    s = egpu::gpu(s.transpose() + b, opt);
    check(Reference<S>(s0.transpose() + b), s, s0, Op::assign, "s = gpu(s.transpose() + b)");
    s = s0;
    s -= egpu::gpu(s.transpose() * S(0.5), opt);
    check(Reference<S>(s0.transpose() * S(0.5)), s, s0, Op::sub, "s -= gpu(s.transpose() * 0.5)");
  }
  {  // a block of a matrix from the block one row above it
    M big = sprinkled<M>(n + 1, m);
    const M x = sprinkled<M>(n, m), big0 = big;
    auto dst = big.block(1, 0, n, m);
    dst = egpu::gpu(big.block(0, 0, n, m) * S(3) - x, opt);
    Outcome o;
    judge_in(Reference<S>(big0.block(0, 0, n, m) * S(3) - x), big, elements(big0), dst, Op::assign,
             nullptr, base + "shifted block", o);
    report(o, base + "big.block(1, 0, n, m) = gpu(big.block(0, 0, n, m) * 3 - x)");
  }
  {  // a broadcast column of the destination
    M d = sprinkled<M>(n, m);
    const M d0 = d;
    d = egpu::gpu(d.colwise() - d.col(0), opt);
    check(Reference<S>(d0.colwise() - d0.col(0)), d, d0, Op::assign, "d = gpu(d.colwise() - d.col(0))");
  }
  {  // the destination's bytes read under the other layout
    RowM r = sprinkled<RowM>(n, n);
    const M b = sprinkled<M>(n, n);
    const RowM r0 = r;
    const Eigen::Map<const M> as_column_major(r.data(), n, n), as_column_major0(r0.data(), n, n);
    r = egpu::gpu(as_column_major + b, opt);
    check(Reference<S>(as_column_major0 + b), r, r0, Op::assign, "row-major r = gpu(column-major Map of r + b)");
  }
}


// `view op= gpu(xpr, options)` failing after n operations, for n from 0 up
// past the last operation (rising steps to the first n that gets through,
// then bisection to the exact boundary). Each attempt throws egpu::error
// with the destination as before (op += / -=) or gives the warm-up's result
// bit for bit; device memory in use and pinned memory held come back to
// their values before it.
template <class X, class Backing, class MakeView>
void failures(const std::string& base, const X& xpr, Backing& backing, MakeView&& make_view, Op op,
              const egpu::Options& options) {
  using T = typename X::Scalar;
  const Reference<T> ref(xpr);
  fill_random(backing);
  const Backing start = backing;
  const Mat<T> c0 = snapshot(make_view(backing));
  auto run = [&](const egpu::Options& o) {
    decltype(auto) view = make_view(backing);
    apply(op, view, egpu::gpu(xpr, o));
  };
  // Warm-up: pools and handles are set up by a call that succeeds.
  run(options);
  {
    decltype(auto) view = make_view(backing);
    Outcome o;
    judge_in(ref, backing, elements(start), view, op, reads_destination(op) ? &c0 : nullptr, base, o);
    report(o, base + " (warm-up)");
  }
  const Backing good = backing;
  backing = start;

  int failed = 0, succeeded = 0;
  auto try_at = [&](int n) {
    const std::size_t device_before = ed::device_bytes_in_use(), pinned_before = ed::pinned_bytes_held();
    const Attempt r = attempt(n, [&] { run(options); });
    const std::size_t device_after = ed::device_bytes_in_use(), pinned_after = ed::pinned_bytes_held();
    const std::string what = base + ", failure after " + std::to_string(n) + " operations";
    BOOST_TEST(!r.other_exception, what << ": threw something other than egpu::error: " << r.message);
    BOOST_TEST(device_after == device_before,
               what << ": device memory in use " << device_before << " -> " << device_after << " bytes");
    BOOST_TEST(pinned_after == pinned_before,
               what << ": pinned memory held " << pinned_before << " -> " << pinned_after << " bytes");
    if (r.threw) {
      ++failed;
      if (reads_destination(op))
        BOOST_TEST(bit_identical(backing, start), what << ": the failed call changed the destination (" << r.message
                                                       << ")");
    } else if (!r.other_exception) {
      ++succeeded;
      BOOST_TEST(bit_identical(backing, good), what << ": got through with another result than the warm-up's");
    }
    backing = start;
    return r.threw;
  };

  const bool at_zero = try_at(0);
  BOOST_TEST(at_zero, base << ": a failure injected before the first operation did not throw");
  int lo = at_zero ? 0 : -1, hi = at_zero ? 1 : 0;  // the largest known to fail, the first known to get through
  if (at_zero)
    while (try_at(hi)) {
      lo = hi;
      hi += 1 + hi / 8;
      BOOST_TEST_REQUIRE(hi < (1 << 22), base << ": the call never gets through");
    }
  while (hi - lo > 1) {
    const int mid = lo + (hi - lo) / 2;
    if (try_at(mid)) lo = mid;
    else hi = mid;
  }
  if (hi > 0) BOOST_TEST(try_at(hi - 1), base << ": injecting at " << hi - 1 << " did not fail");
  BOOST_TEST(!try_at(hi), base << ": injecting at " << hi << " failed");
  BOOST_TEST(!try_at(hi + 1), base << ": one past the end failed");
  BOOST_TEST(!try_at(1 << 28), base << ": far past the end failed");
  for (int r = 0; r < 3; ++r) try_at(hi / 2);  // repeated failures at one point
  BOOST_TEST_MESSAGE(base << ": " << hi << " operations; " << failed << " attempts failed, " << succeeded
                          << " got through");
  // Disarmed, the library still works, with other options too.
  run(egpu::Options());
  BOOST_TEST(bit_identical(backing, good), base << ": the call after the failures differs from the warm-up's");
}

}  // namespace

using Scalars = boost::mpl::list<float, double, std::complex<float>, std::complex<double>>;
using TwoScalars = boost::mpl::list<double, std::complex<float>>;

BOOST_AUTO_TEST_SUITE(elementwise_assign, *boost::unit_test::precondition(gpu_available))

BOOST_AUTO_TEST_CASE_TEMPLATE(every_form_into_a_plain_destination, S, Scalars) {
  const Index shapes[][2] = {{0, 0}, {0, 5}, {4, 0}, {1, 1}, {1, 37}, {41, 1}, {37, 53}, {dim(1000), dim(700)}};
  int index = 0;
  for (const auto& shape : shapes) run_forms<S>(shape[0], shape[1], index++, {});
  print_exemptions("every form");
}

BOOST_AUTO_TEST_CASE_TEMPLATE(out_of_core_gives_the_in_core_values, S, Scalars) {
  // ~13 MB per operand; a form moves 2 to 4 of them and its result (~50 MB)
  // through a third of one.
  const double count = 13e6 / double(sizeof(S)) * test_scale();
  const Index rows = std::max<Index>(3, static_cast<Index>(std::sqrt(count * 1.2))) | 1;
  const Index cols = std::max<Index>(2, static_cast<Index>(count / double(rows)));
  const std::size_t limit = std::max<std::size_t>(64 << 10, static_cast<std::size_t>(rows * cols) * sizeof(S) / 3);
  run_forms<S>(rows, cols, 0, out_of_core_variants(limit));
  print_exemptions("out of core");
}

BOOST_AUTO_TEST_CASE_TEMPLATE(destination_kinds, S, TwoScalars) {
  const Index shapes[][2] = {{37, 53}, {1, 41}, {43, 1}, {dim(300), dim(257)}};
  int turn = 0;
  for (const auto& shape : shapes) destinations<S>(shape[0], shape[1], turn);
  print_exemptions("destinations");
}

BOOST_AUTO_TEST_CASE(pinned_operands_and_destinations) {
  pinned_against_pageable<double>(dim(1200), dim(901));
  pinned_against_pageable<std::complex<float>>(dim(700), dim(513));
  print_exemptions("pinned");
}

BOOST_AUTO_TEST_CASE_TEMPLATE(aliasing_as_eigen, S, TwoScalars) {
  const Index n = dim(301);
  egpu::Options ooc;
  ooc.device_memory_limit = static_cast<std::size_t>(n * n) * sizeof(S) / 6;
  ooc.streams = 2;
  ooc.staging_threads = 1;
  aliasing<S>(Variant{"in core", egpu::Options()});
  aliasing<S>(Variant{"out of core", ooc});
  print_exemptions("aliasing");
}

BOOST_AUTO_TEST_CASE(injected_failures_leave_the_destination_unchanged) {
  const Index rows = dim(700), cols = dim(555);
  auto ooc = [&](std::size_t elem, int streams, int staging) {
    egpu::Options o;
    o.device_memory_limit = static_cast<std::size_t>(rows * cols) * elem / 8;
    o.streams = streams;
    o.staging_threads = staging;
    return o;
  };
  {
    using A = Eigen::ArrayXXd;
    const A a = sprinkled<A>(rows, cols), b = sprinkled<A>(rows, cols);
    A d(rows, cols);
    failures("double in core +=", a * b + a.exp(), d, self, Op::add, egpu::Options());
    A p(rows, cols);
    const auto guard = egpu::pin(p);
    failures("double out of core, pinned destination, -=", 2.0 * a.sin() - b / (1.0 + a.abs()), p, self, Op::sub,
             ooc(sizeof(double), 2, 1));
  }
  {
    using M = Eigen::MatrixXcf;
    const M m = sprinkled<M>(rows, cols);
    const Eigen::VectorXcf v = sprinkled<Eigen::VectorXcf>(rows, 1);
    Eigen::Matrix<std::complex<float>, Dynamic, Dynamic, Eigen::RowMajor> d(rows, cols);
    failures("complex<float> out of core, row-major destination, +=", m.colwise() - v, d, self, Op::add,
             ooc(sizeof(std::complex<float>), 4, 0));
  }
  {
    using A = Eigen::ArrayXXf;
    const A a = sprinkled<A>(rows, cols), b = sprinkled<A>(rows, cols);
    A big(rows + 3, cols + 2);
    const auto guard = egpu::pin(big);
    failures("float out of core, block of a pinned matrix, -=", (a > 0.0f).select(a, 0.1f * b), big,
             [&](A& m) { return m.block(2, 1, rows, cols); }, Op::sub, ooc(sizeof(float), 1, 1));
  }
  {
    using A = Eigen::ArrayXXcd;
    const A a = sprinkled<A>(rows, cols), b = sprinkled<A>(rows, cols);
    A d(rows, cols);
    failures("complex<double> out of core =", a * b.conjugate(), d, self, Op::assign,
             ooc(sizeof(std::complex<double>), 3, 2));
  }
  print_exemptions("injected failures");
}

// Two host threads, each repeating its own expression with its own options
// and comparing the bits with a result made here first (the generator and
// Boost.Test are not thread safe: failures are collected and reported here).
BOOST_AUTO_TEST_CASE(two_host_threads) {
  using CF = std::complex<float>;
  using RowCF = Eigen::Matrix<CF, Dynamic, Dynamic, Eigen::RowMajor>;
  const Index r0 = dim(900), c0 = dim(701), r1 = dim(611), c1 = dim(500);
  const Eigen::ArrayXXd a = sprinkled<Eigen::ArrayXXd>(r0, c0), b = sprinkled<Eigen::ArrayXXd>(r0, c0);
  const Mat<double> start0 = random_matrix<Mat<double>>(r0, c0);
  const auto x0 = a * b + a.exp();
  egpu::Options opt0;
  opt0.device_memory_limit = static_cast<std::size_t>(r0 * c0) * sizeof(double) / 5;
  opt0.streams = 2;
  opt0.staging_threads = 1;
  Eigen::ArrayXXd d0(r0, c0);
  const auto expected0 = run_into(x0, Reference<double>(x0), d0, self, Op::add, opt0, start0, "thread 0's call");

  const Eigen::MatrixXcf m = sprinkled<Eigen::MatrixXcf>(r1, c1), m2 = sprinkled<Eigen::MatrixXcf>(r1, c1);
  const Eigen::VectorXcf v = sprinkled<Eigen::VectorXcf>(r1, 1);
  const auto x1 = (m.colwise() - v).cwiseProduct(m2.conjugate());
  egpu::Options opt1;
  opt1.streams = 4;
  opt1.staging_threads = 3;
  RowCF d1(r1, c1);
  const auto expected1 =
      run_into(x1, Reference<CF>(x1), d1, self, Op::assign, opt1, random_matrix<Mat<CF>>(r1, c1), "thread 1's call");

  const int rounds = scaled_count(6);
  std::atomic<int> done{0};
  const auto faults = run_on_threads(2, [&](int id, const auto& fault) {
    for (int k = 0; k < rounds; ++k) {
      if (id == 0) {
        Eigen::ArrayXXd d = start0.array();
        d += egpu::gpu(x0, opt0);
        if (!same_bits(elements(d), expected0)) fault("thread 0, round " + std::to_string(k) + ": other bits");
      } else {
        RowCF d(r1, c1);
        d = egpu::gpu(x1, opt1);
        if (!same_bits(elements(d), expected1)) fault("thread 1, round " + std::to_string(k) + ": other bits");
      }
      ++done;
    }
  });
  for (const auto& f : faults) BOOST_TEST(false, f);
  BOOST_TEST(done.load() == 2 * rounds);
  print_exemptions("two threads");
}

BOOST_AUTO_TEST_CASE(sizes_resizing_and_other_assignments) {
  using A = Eigen::ArrayXXd;
  const A a = sprinkled<A>(4, 4), b = sprinkled<A>(4, 4);
  A big = random_matrix<A>(6, 6);
  const A big0 = big;
  BOOST_CHECK_THROW((big.block(0, 0, 3, 4) = egpu::gpu(a + b)), egpu::error);
  BOOST_CHECK_THROW((big.block(0, 0, 4, 5) += egpu::gpu(a + b)), egpu::error);
  BOOST_CHECK_THROW((big.block(1, 1, 4, 3) -= egpu::gpu(a * b)), egpu::error);
  BOOST_TEST(bit_identical(big, big0), "a failed size check wrote into the matrix");
  Eigen::Array<double, 3, 3> fixed = Eigen::Array<double, 3, 3>::Ones();
  BOOST_CHECK_THROW(fixed = egpu::gpu(a + b), egpu::error);
  BOOST_TEST((fixed == 1.0).all());
  A c = random_matrix<A>(4, 5);
  const A c0 = c;
  BOOST_CHECK_THROW(c += egpu::gpu(a + b), egpu::error);  // += does not resize
  BOOST_CHECK_THROW(c -= egpu::gpu(a + b), egpu::error);
  BOOST_TEST(bit_identical(c, c0));
  std::vector<double> buffer(12, 7.0);
  Eigen::Map<A> map(buffer.data(), 4, 3);
  BOOST_CHECK_THROW(map = egpu::gpu(a + b), egpu::error);
  BOOST_TEST(std::all_of(buffer.begin(), buffer.end(), [](double x) { return x == 7.0; }));

  // `=` resizes a resizable destination, to empty shapes too.
  const Index rows = dim(301), cols = dim(203);
  const A x = sprinkled<A>(rows, cols), y = sprinkled<A>(rows, cols);
  A d(2, 7);
  d = egpu::gpu(x * y + x.exp());
  BOOST_TEST_REQUIRE((d.rows() == rows && d.cols() == cols), "= gave " << shape_text(d.rows(), d.cols()));
  {
    Outcome o;
    judge_in(Reference<double>(x * y + x.exp()), d, elements(d), d, Op::assign, nullptr, "resized by =", o);
    report(o, "resized by =");
  }
  const A empty(0, 5);
  A e(3, 3);
  e = egpu::gpu(empty * 2.0);
  BOOST_TEST((e.rows() == 0 && e.cols() == 5));

  // Constructed from gpu(...), with a cast.
  Eigen::ArrayXXf f = egpu::gpu(x.cast<float>());
  {
    Outcome o;
    judge_in(Reference<float>(x.cast<float>()), f, elements(f), f, Op::assign, nullptr,
             "Eigen::ArrayXXf f = gpu(x.cast<float>())", o);
    report(o, "Eigen::ArrayXXf f = gpu(x.cast<float>())");
  }

  // array *= (through a temporary).
  const Mat<double> start = random_matrix<Mat<double>>(rows, cols);
  A g(rows, cols);
  run_into(x - y.abs2(), Reference<double>(x - y.abs2()), g, self, Op::mul, egpu::Options(), start, "g");
  print_exemptions("sizes");
}

// A call measures the device's free memory (cudaMemGetInfo, about 8 us)
// only when its thread has no measurement yet, or when the last one might
// not hold its plan: a repeated call whose plan the budget did not shape
// plans within the figure measured before, its buffers back in the
// device's pool. Coefficient-wise assignments and reductions alike; a call
// with a memory limit plans within the limit. Run on a thread of its own,
// whose context starts without a measurement.
BOOST_AUTO_TEST_CASE(the_budget_is_measured_once_for_repeated_calls) {
  using A = Eigen::ArrayXXd;
  const Index rows = dim(611), cols = dim(403);
  const A x = sprinkled<A>(rows, cols), y = sprinkled<A>(rows, cols);
  const A u = random_matrix<A>(rows, cols), v = random_matrix<A>(rows, cols);
  egpu::Options limited;
  limited.device_memory_limit = static_cast<std::size_t>(rows * cols) * sizeof(double);
  std::vector<A> results(4, A(rows, cols));
  for (A& r : results) poison_bytes(r);  // an element a call leaves unwritten shows
  std::vector<double> sums(3, 0.0);
  std::vector<std::size_t> measured(7, 0);
  std::string failure;
  std::thread([&] {
    try {
      const std::size_t before = egpu::detail::budget_measurements();
      for (std::size_t call = 0; call < 7; ++call) {
        if (call < 3) results[call] = egpu::gpu(x * y + x.exp());
        else if (call < 6) sums[call - 3] = egpu::gpu(u * v).sum();
        else results[3] = egpu::gpu(x * y + x.exp(), limited);
        measured[call] = egpu::detail::budget_measurements() - before;
      }
    } catch (const std::exception& e) {
      failure = e.what();
    }
  }).join();
  BOOST_TEST_REQUIRE(failure.empty(), "the thread's calls threw: " << failure);
  const Reference<double> ref(x * y + x.exp());
  for (std::size_t call = 0; call < results.size(); ++call) {
    const std::string what = "assignment " + std::to_string(call) + (call == 3 ? " with a memory limit" : "");
    Outcome o;
    judge_in(ref, results[call], elements(results[call]), results[call], Op::assign, nullptr, what, o);
    report(o, what);
  }
  const double expected = (u * v).sum(), scale = (u * v).abs().sum();
  const double bound = static_cast<double>(rows * cols) * std::numeric_limits<double>::epsilon() * scale;
  for (const double sum : sums) BOOST_TEST(std::abs(sum - expected) <= bound, sum << " against " << expected);
  BOOST_TEST(measured[0] == 1u, "the first assignment measured " << measured[0] << " times");
  BOOST_TEST(measured[2] == measured[0], "three assignments measured " << measured[2] << " times");
  // The first reduction's buffers may be missing from the pool.
  BOOST_TEST(measured[3] - measured[2] <= 1u, "the first reduction measured " << measured[3] - measured[2] << " times");
  BOOST_TEST(measured[5] == measured[3], "two more reductions measured " << measured[5] - measured[3] << " times");
  BOOST_TEST(measured[6] == measured[5], "the call with a memory limit measured");
  print_exemptions("the budget measured once");
}

// 2^25 floats (128 MiB per operand) at the default limits: many chunks.
BOOST_AUTO_TEST_CASE(two_to_the_25_floats) {
  const Index rows = dim(8192), cols = dim(4096);
  Eigen::ArrayXXf a = 2.0f * Eigen::ArrayXXf::Random(rows, cols), b = 2.0f * Eigen::ArrayXXf::Random(rows, cols);
  for (int k = 0; k < 4096; ++k) {  // NaN, Inf and zeros at random places
    a(uniform_index(0, rows - 1), uniform_index(0, cols - 1)) = sprinkled<float>();
    b(uniform_index(0, rows - 1), uniform_index(0, cols - 1)) = sprinkled<float>();
  }
  const auto x = a * b + a.exp();
  const Reference<float> ref(x);
  const Mat<float> start = Mat<float>::Random(rows, cols);
  Eigen::ArrayXXf c(rows, cols);
  const std::string what = "2^25 floats " + shape_text(rows, cols);
  run_into(x, ref, c, self, Op::assign, egpu::Options(), start, what);
  run_into(x, ref, c, self, Op::add, egpu::Options(), start, what);
  print_exemptions("2^25 floats");
}

BOOST_AUTO_TEST_SUITE_END()
