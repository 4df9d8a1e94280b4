// The multi-stream pinned pipeline for host-resident products, on a GPU,
// against CPU Eigen (a wider-precision reference of the same fresh random
// data, the norm-relative bound of test_support.hpp, outputs of `=`
// poisoned with NaN):
//  - in core and out of core (device_memory_limit at ~1/4 and ~1/10 of the
//    working set; small panel / k_panel for many C tiles and k pieces; in
//    core with k pieces in rounds over the tiles, Options::k_rounds),
//    rectangular and odd shapes, sizes 1; all four scalars, both backends;
//    `=`, `noalias() =`, `+=`, `-=`; row-major and strided Block
//    destinations; transposed / adjoint operands and a scalar factor;
//  - pageable against pinned (egpu::pin) operands and destinations;
//  - streams 1..4 and staging_threads 1 / 3: the same results (bit for bit
//    with the own kernel);
//  - downloads queued by the calling thread (page-locked destinations
//    reached by DMA directly, calls of one tile) and by the writer thread;
//  - the device's free memory measured once for repeated in-core calls;
//  - injected failures (egpu::detail::inject_failure_after): a failing
//    `+=` / `-=` throws egpu::error and leaves C bit-identical, device
//    memory in use returns to its level, pinned memory held does not grow;
//    a call past the last operation succeeds; the library works afterwards;
//  - two host threads running out-of-core products with different options;
//  - f(A * B, D, ...) (the GEMM with an epilogue that reads other operands):
//    element by element against CPU Eigen, every destination form, in core
//    and out of core, and its injected failures;
//  - EGPU_TRACE on many-tile calls (the writer thread traces beside the
//    calling thread): right results, a timeline with every kind of span.
// EGPU_TEST_SCALE (0.05 under compute-sanitizer) shrinks shapes and counts.
// Skipped (reported as such by CTest) without a usable GPU.
#define BOOST_TEST_MODULE pipeline
#include <boost/test/unit_test.hpp>
#include <boost/mpl/list.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "egpu/detail/testing.hpp"
#include "egpu/egpu.hpp"
#include "support/test_support.hpp"

using namespace egpu_test;

namespace {

template <class S> using Mat = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic>;
template <class S> using RowMat = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

const char* backend_name(egpu::Backend b) { return b == egpu::Backend::own ? "own" : "cublas"; }
constexpr egpu::Backend kBackends[] = {egpu::Backend::own, egpu::Backend::cublas};

// A dimension shrunk with EGPU_TEST_SCALE (volume ~ scale).
Index dim(Index d) { return scaled_dim(d, 3); }

// How a call's pipeline is set up.
struct Config {
  std::string name;
  double limit_fraction = 0;  // device_memory_limit as a fraction of the working set; 0: none (in core)
  std::int64_t panel = 0, k_panel = 0;
  int streams = 0, staging_threads = 0;
  std::int64_t k_rounds = -1;
};

// In core; through 1/4 of the working set; through 1/10 with small tiles
// (many C tiles and k pieces); in core with small tiles whose first two k
// pieces go round all tiles before each tile is finished.
std::vector<Config> tilings() {
  return {{"in core", 0, 0, 0},
          {"limit 1/4", 0.25, 0, 0},
          {"limit 1/10 panel 256 k_panel 128", 0.1, 256, 128},
          {"limit 1/4 panel 128 k_panel 64, 2 streams, 1 staging thread", 0.25, 128, 64, 2, 1},
          {"in core panel 128 k_panel 64, 2 k rounds", 0, 128, 64, 0, 0, 2}};
}

// A product's data: A (m x k), B (k x n), their adjoint / transpose copies
// for the op variants, and the reference A * B in wider precision.
template <class S> struct Problem {
  using W = wider_t<S>;
  Index m, n, k;
  Mat<S> a, b, ah, bt;
  Mat<W> ab;
  double na, nb;

  Problem(Index m_, Index n_, Index k_) : m(dim(m_)), n(dim(n_)), k(dim(k_)) {
    a = random_matrix<Mat<S>>(m, k);
    b = random_matrix<Mat<S>>(k, n);
    ah = a.adjoint();
    bt = b.transpose();
    ab.noalias() = a.template cast<W>() * b.template cast<W>();
    na = frob(a);
    nb = frob(b);
  }
  std::size_t working_set() const { return static_cast<std::size_t>(m * k + k * n + m * n) * sizeof(S); }
  egpu::Options options(const Config& c, egpu::Backend backend) const {
    egpu::Options o;
    o.backend = backend;
    // At least 4 KiB: below a few elements' worth no plan exists, and the
    // call would (rightly) throw.
    if (c.limit_fraction > 0)
      o.device_memory_limit =
          std::max<std::size_t>(4096, static_cast<std::size_t>(c.limit_fraction * double(working_set())));
    o.panel = c.panel;
    o.k_panel = c.k_panel;
    o.streams = c.streams;
    o.staging_threads = c.staging_threads;
    o.k_rounds = c.k_rounds;
    return o;
  }
  std::string text() const {
    std::ostringstream s;
    s << scalar_name<S>() << " " << m << "x" << n << "x" << k;
    return s.str();
  }
};

enum class Form { assign, noalias_assign, add, sub };
const char* form_name(Form f) {
  switch (f) {
    case Form::assign: return "=";
    case Form::noalias_assign: return "noalias() =";
    case Form::add: return "+=";
    default: return "-=";
  }
}
constexpr Form kForms[] = {Form::assign, Form::noalias_assign, Form::add, Form::sub};
bool accumulates(Form f) { return f == Form::add || f == Form::sub; }

template <class Dst, class Src> void apply(Form f, Dst&& dst, const Src& src) {
  switch (f) {
    case Form::assign: dst = src; break;
    case Form::noalias_assign: dst.noalias() = src; break;
    case Form::add: dst += src; break;
    case Form::sub: dst -= src; break;
  }
}

// Prepares a destination for the form: NaN for `=`, random for += / -=.
template <class Dst> void prepare(Form f, Dst&& c) {
  if (accumulates(f)) fill_random(c);
  else poison(c);
}

// Checks c == c0 +- alpha * A * B (c0 only when accumulating) against the
// bound; returns the error ratio (BOOST_TEST reports a failure).
template <class S, class Dst, class C0>
double check(const Problem<S>& p, const Dst& c, Form f, S alpha, const C0& c0, const std::string& what) {
  using W = wider_t<S>;
  BOOST_TEST_REQUIRE((c.rows() == p.m && c.cols() == p.n), what << ": destination has the wrong size");
  Mat<W> expected = W(f == Form::sub ? S(-alpha) : alpha) * p.ab;
  double nc0 = 0;
  if (accumulates(f)) {
    expected += c0.template cast<W>();
    nc0 = frob(c0);
  }
  const double err = diff_norm(c, expected);
  const double bound =
      error_bound<S>(p.k, std::abs(alpha), p.na, p.nb, accumulates(f) ? 1.0 : 0.0, nc0);
  const double ratio = error_ratio(err, bound);
  BOOST_TEST(ratio <= kRatioLimit, what << ": error ratio " << ratio << " (error " << err << ", bound " << bound
                                        << ")");
  return ratio;
}

template <class M> bool bit_identical(const M& x, const M& y) {
  return x.rows() == y.rows() && x.cols() == y.cols() &&
         std::memcmp(x.data(), y.data(), static_cast<std::size_t>(x.size()) * sizeof(typename M::Scalar)) == 0;
}

// Everything of `big` outside the block (r0, c0, rows, cols) equals `before`.
template <class M> bool outside_unchanged(const M& big, const M& before, Index r0, Index c0, Index rows, Index cols) {
  for (Index j = 0; j < big.cols(); ++j)
    for (Index i = 0; i < big.rows(); ++i) {
      const bool inside = i >= r0 && i < r0 + rows && j >= c0 && j < c0 + cols;
      if (!inside && std::memcmp(&big(i, j), &before(i, j), sizeof(typename M::Scalar)) != 0) return false;
    }
  return true;
}

// All assignment forms of gpu(A * B) into a plain matrix; for double and
// complex<float> also row-major and strided Block destinations, A given
// as an adjoint with a scalar factor, and B as a transpose. The variants
// rotate through the forms with `turn`.
template <class S> double products(const Problem<S>& p, const egpu::Options& opt, const std::string& what, int turn) {
  double worst = 0;
  auto keep = [&](double r) { worst = std::max(worst, r != r ? 1e300 : r); };
  for (Form f : kForms) {
    Mat<S> c(p.m, p.n);
    prepare(f, c);
    const Mat<S> c0 = c;
    apply(f, c, egpu::gpu(p.a * p.b, opt));
    keep(check(p, c, f, S(1), c0, what + " C " + form_name(f) + " gpu(A * B)"));
  }
  constexpr bool all_variants = std::is_same_v<S, double> || std::is_same_v<S, std::complex<float>>;
  if constexpr (all_variants) {
    {  // row-major destination
      const Form f = kForms[turn % 4];
      RowMat<S> c(p.m, p.n);
      prepare(f, c);
      const RowMat<S> c0 = c;
      apply(f, c, egpu::gpu(p.a * p.b, opt));
      keep(check(p, c, f, S(1), c0, what + " row-major C " + form_name(f) + " gpu(A * B)"));
    }
    {  // strided block of a larger matrix
      const Form f = kForms[(turn + 1) % 4];
      Mat<S> big = random_matrix<Mat<S>>(p.m + 7, p.n + 3);
      auto blk = big.block(5, 2, p.m, p.n);
      prepare(f, blk);
      const Mat<S> before = big;
      const Mat<S> c0 = blk;
      apply(f, blk, egpu::gpu(p.a * p.b, opt));
      keep(check(p, big.block(5, 2, p.m, p.n), f, S(1), c0, what + " Block C " + form_name(f) + " gpu(A * B)"));
      BOOST_TEST(outside_unchanged(big, before, 5, 2, p.m, p.n), what << ": wrote outside the Block destination");
    }
    {  // alpha * adjoint(A) stored as its adjoint
      const Form f = kForms[(turn + 2) % 4];
      const S alpha = random_scalar<S>();
      Mat<S> c(p.m, p.n);
      prepare(f, c);
      const Mat<S> c0 = c;
      apply(f, c, egpu::gpu(alpha * p.ah.adjoint() * p.b, opt));
      keep(check(p, c, f, alpha, c0, what + " C " + form_name(f) + " gpu(alpha * AH.adjoint() * B)"));
    }
    {  // B stored as its transpose
      const Form f = kForms[(turn + 3) % 4];
      Mat<S> c(p.m, p.n);
      prepare(f, c);
      const Mat<S> c0 = c;
      apply(f, c, egpu::gpu(p.a * p.bt.transpose(), opt));
      keep(check(p, c, f, S(1), c0, what + " C " + form_name(f) + " gpu(A * BT.transpose())"));
    }
  }
  return worst;
}

template <class S> void shapes_and_tilings(std::vector<std::array<Index, 3>> shapes) {
  int turn = 0;
  for (const auto& [m, n, k] : shapes) {
    const Problem<S> p(m, n, k);
    for (const Config& config : tilings()) {
      for (egpu::Backend backend : kBackends) {
        const std::string what = p.text() + " " + backend_name(backend) + " " + config.name;
        const double worst = products(p, p.options(config, backend), what, turn++);
        BOOST_TEST_MESSAGE(what << ": worst error ratio " << worst);
      }
    }
  }
}

using Scalars = boost::mpl::list<float, double, std::complex<float>, std::complex<double>>;

// Results of one configuration with pageable or pinned (egpu::pin)
// operands and destination: right, and bit for bit those of the pageable
// call where the tiling is given (by default a product whose operands are
// all page-locked may be cut into smaller C tiles, whose kernels sum in
// another order).
template <class S> void pinned_against_pageable(Index m, Index n, Index k) {
  Problem<S> p(m, n, k);
  const Config in_core_given{"in core panel 512", 0, 512, 0};
  for (const Config& config : {tilings()[0], in_core_given, tilings()[2], tilings()[4]}) {
    for (egpu::Backend backend : kBackends) {
      const egpu::Options opt = p.options(config, backend);
      const std::string base = p.text() + " " + backend_name(backend) + " " + config.name;
      const Mat<S> c_start = random_matrix<Mat<S>>(p.m, p.n);
      // Pageable first: the result every pinned combination must give.
      Mat<S> pageable = c_start;
      pageable.noalias() += egpu::gpu(p.a * p.b, opt);
      check(p, pageable, Form::add, S(1), c_start, base + " pageable +=");
      for (int mask = 1; mask < 8; ++mask) {  // which of A, B, C are pinned
        Mat<S> a = p.a, b = p.b, c = c_start;
        const PinnedSubset pinned = pin_subset(mask, {"A", "B", "C"}, a, b, c);
        const std::string what = base + " pinned" + pinned.names;
        c.noalias() += egpu::gpu(a * b, opt);
        check(p, c, Form::add, S(1), c_start, what + " +=");
        if (backend == egpu::Backend::own && config.panel > 0)
          BOOST_TEST(bit_identical(c, pageable), what << ": differs from the pageable result");
        // `=` into the pinned destination, poisoned.
        poison(c);
        c.noalias() = egpu::gpu(a * b, opt);
        check(p, c, Form::noalias_assign, S(1), c_start, what + " noalias() =");
      }
      // A pinned matrix whose strided block is the destination.
      Mat<S> big = random_matrix<Mat<S>>(p.m + 4, p.n + 1);
      auto guard = egpu::pin(big);
      const Mat<S> before = big;
      const Mat<S> c0 = big.block(3, 1, p.m, p.n);
      big.block(3, 1, p.m, p.n) -= egpu::gpu(p.a * p.b, opt);
      check(p, big.block(3, 1, p.m, p.n), Form::sub, S(1), c0, base + " pinned Block C -=");
      BOOST_TEST(outside_unchanged(big, before, 3, 1, p.m, p.n), base << ": wrote outside the pinned Block");
    }
  }
}

// streams 0..4 x staging threads 1, 3: the same results as streams = 1,
// staging = 1 (bit for bit with the own kernel; the plan does not depend
// on them).
template <class S> void streams_and_staging(Index m, Index n, Index k, const Config& tiling) {
  Problem<S> p(m, n, k);
  for (egpu::Backend backend : kBackends) {
    const Mat<S> c_start = random_matrix<Mat<S>>(p.m, p.n);
    Mat<S> first_assign, first_add;
    for (int streams : {1, 2, 3, 4, 0}) {
      for (int staging : {1, 3}) {
        Config config = tiling;
        config.streams = streams;
        config.staging_threads = staging;
        const egpu::Options opt = p.options(config, backend);
        std::ostringstream s;
        s << p.text() << " " << backend_name(backend) << " " << tiling.name << " streams " << streams
          << " staging_threads " << staging;
        const std::string what = s.str();
        Mat<S> c(p.m, p.n);
        poison(c);
        c.noalias() = egpu::gpu(p.a * p.b, opt);
        check(p, c, Form::noalias_assign, S(1), c_start, what + " noalias() =");
        Mat<S> d = c_start;
        d -= egpu::gpu(p.a * p.b, opt);
        check(p, d, Form::sub, S(1), c_start, what + " -=");
        if (first_assign.size() == 0) {
          first_assign = c;
          first_add = d;
        } else if (backend == egpu::Backend::own) {
          BOOST_TEST(bit_identical(c, first_assign), what << ": `=` differs from streams 1, staging 1");
          BOOST_TEST(bit_identical(d, first_add), what << ": `-=` differs from streams 1, staging 1");
        }
      }
    }
  }
}


// Injected failures in `C += / -= gpu(A * B)`: each attempt either succeeds
// with the right result or throws egpu::error leaving C bit-identical;
// device memory in use comes back to its level before the call; pinned
// memory held does not grow over repeated failures. The failure points:
// 0, 1, 2, a few in the middle, the last one that fails and the first that
// succeeds (found by search), and far past the end.
// With `with_leaf`, the call is C +=/-= gpu(A * B + D): the GEMM with an
// epilogue that reads D and C.
template <class S, class CMat>
void failures(Index m, Index n, Index k, const Config& config, egpu::Backend backend, bool pin_c, Form f,
              bool with_leaf = false) {
  Problem<S> p(m, n, k);
  const egpu::Options opt = p.options(config, backend);
  const std::string base = p.text() + " " + backend_name(backend) + " " + config.name + (pin_c ? " pinned C " : " C ") +
                           (std::is_same_v<CMat, RowMat<S>> ? "row-major " : "") + form_name(f) +
                           (with_leaf ? " gpu(A * B + D)" : " gpu(A * B)");
  const CMat c_start = random_matrix<CMat>(p.m, p.n);
  const Mat<S> leaf = random_matrix<Mat<S>>(p.m, p.n);
  // What C +-= A * B is checked against: C +-= D first.
  const CMat c_expect = !with_leaf ? c_start : f == Form::add ? CMat(c_start + leaf) : CMat(c_start - leaf);
  CMat c = c_start;
  egpu::PinGuard guard;
  if (pin_c) guard = egpu::pin(c);
  auto run = [&](CMat& dst) {
    if (with_leaf) {
      if (f == Form::add) dst += egpu::gpu(p.a * p.b + leaf, opt);
      else dst -= egpu::gpu(p.a * p.b + leaf, opt);
    } else if (f == Form::add) {
      dst += egpu::gpu(p.a * p.b, opt);
    } else {
      dst -= egpu::gpu(p.a * p.b, opt);
    }
  };
  // Warm-up: pools and handles are set up by a call that succeeds.
  run(c);
  check(p, c, f, S(1), c_expect, base + " (warm-up)");
  c = c_start;

  std::size_t pinned_after_first_failure = 0;
  int failed = 0, succeeded = 0;
  auto try_at = [&](int at) {
    const std::size_t device_before = egpu::detail::device_bytes_in_use();
    const std::size_t pinned_before = egpu::detail::pinned_bytes_held();
    const Attempt r = attempt(at, [&] { run(c); });
    const std::string what = base + " failure after " + std::to_string(at) + " operations";
    BOOST_TEST(!r.other_exception, what << ": threw something other than egpu::error: " << r.message);
    const std::size_t device_after = egpu::detail::device_bytes_in_use();
    const std::size_t pinned_after = egpu::detail::pinned_bytes_held();
    BOOST_TEST(device_after == device_before,
               what << ": device memory in use " << device_before << " -> " << device_after << " bytes");
    if (r.threw) {
      ++failed;
      BOOST_TEST(bit_identical(c, c_start), what << ": the failed call changed C (" << r.message << ")");
      if (failed == 1) pinned_after_first_failure = pinned_after;
      BOOST_TEST(pinned_after <= std::max(pinned_after_first_failure, pinned_before),
                 what << ": pinned memory held grew to " << pinned_after << " bytes (" << pinned_before
                      << " before, " << pinned_after_first_failure << " after the first failure)");
    } else if (!r.other_exception) {
      ++succeeded;
      check(p, c, f, S(1), c_expect, what + " (the call succeeded)");
    }
    c = c_start;
    return r.threw;
  };

  BOOST_TEST(try_at(0), base << ": a failure injected before the first operation did not throw");
  int lo = 0;  // the largest failure point known to fail
  if (try_at(1)) lo = 1;
  if (lo == 1 && try_at(2)) lo = 2;
  // The first failure point that lets the call succeed: doubling, then bisection.
  int hi = 2 * lo + 2;
  while (try_at(hi)) {
    lo = hi;
    hi *= 2;
    BOOST_TEST_REQUIRE(hi < (1 << 24), base << ": the call never succeeds");
  }
  int steps = 0;
  while (hi - lo > 1 && steps < 20) {
    const int mid = lo + (hi - lo) / 2;
    if (try_at(mid)) lo = mid;
    else hi = mid;
    ++steps;
  }
  // hi: the first that succeeds; hi - 1 the last that fails.
  const int end = hi;
  BOOST_TEST(try_at(end - 1), base << ": injecting at " << end - 1 << " did not fail though " << end - 2
                                   << " ... fail");
  BOOST_TEST(!try_at(end), base << ": injecting at " << end << " failed");
  for (int i = 1; i <= scaled_count(4); ++i) try_at(static_cast<int>(std::int64_t(end) * i / 5));
  BOOST_TEST(!try_at(end + 1), base << ": one past the end failed");
  BOOST_TEST(!try_at(1 << 28), base << ": far past the end failed");
  // Repeated failures at the same point: nothing accumulates.
  for (int r = 0; r < scaled_count(5); ++r) try_at(end / 2);
  BOOST_TEST_MESSAGE(base << ": " << end << " failure points, " << failed << " failed and " << succeeded
                          << " succeeded attempts; pinned held " << egpu::detail::pinned_bytes_held()
                          << " bytes, device in use " << egpu::detail::device_bytes_in_use());
  // Disarmed, the library still works: a fresh product with other options too.
  c = c_start;
  run(c);
  check(p, c, f, S(1), c_expect, base + " after the failures");
  Mat<S> d(p.m, p.n);
  poison(d);
  d.noalias() = egpu::gpu(p.a * p.b);
  check(p, d, Form::noalias_assign, S(1), c_start, base + " then a default call");
}

// ---- f(A * B, D, ...): one GEMM whose tiles go through f on the device ----

// Element by element against the expression on CPU Eigen over the product
// in wider precision: |got - expected| <= kRatioLimit * eps * allowance,
// where allowance = sensitivity * k (|A| |B|) + the other terms' magnitudes
// + |expected| (the product's classical bound, scaled by how much f
// amplifies it there, plus one rounding per operation of f).
template <class S> struct Fused {
  using W = wider_t<S>;
  using R = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic>;
  const Problem<S>& p;
  R abs_ab;  // k (|A| |B|)
  Mat<S> d, e;
  RowMat<S> d_row;
  Mat<S> dt;  // D^T, read transposed
  Mat<float> df;
  Eigen::Matrix<S, Eigen::Dynamic, 1> v;
  Mat<S> big;  // E is its strided block (2, 3)

  explicit Fused(const Problem<S>& problem) : p(problem) {
    abs_ab = double(p.k) * (p.a.cwiseAbs().template cast<double>() * p.b.cwiseAbs().template cast<double>());
    d = random_matrix<Mat<S>>(p.m, p.n);
    d_row = d;
    dt = random_matrix<Mat<S>>(p.n, p.m);
    df = random_matrix<Mat<float>>(p.m, p.n);
    v = random_matrix<Eigen::Matrix<S, Eigen::Dynamic, 1>>(p.m, 1);
    big = random_matrix<Mat<S>>(p.m + 5, p.n + 4);
  }
  auto block() const { return big.block(2, 3, p.m, p.n); }
  Mat<W> ab() const { return p.ab; }
  static R mag(const Mat<W>& x) { return x.cwiseAbs().template cast<double>(); }
  template <class X> static R mag_of(const X& x) { return x.template cast<W>().cwiseAbs().template cast<double>(); }
};

// A destination form, one per expression (each form a compile-time choice,
// so that the test instantiates one assignment per expression): `=` into a
// poisoned matrix, +=, -= into a row-major one, `=` into a strided block.
enum class FusedDst { assign, add, sub_row_major, block };
const char* fused_dst_name(FusedDst d) {
  switch (d) {
    case FusedDst::assign: return "C =";
    case FusedDst::add: return "C +=";
    case FusedDst::sub_row_major: return "row-major C -=";
    default: return "Block C =";
  }
}

// Counts the elements outside the bound (NaN and poison count); returns the
// worst ratio.
template <class Got, class W>
double check_elements(const Got& got, const Mat<W>& expected, const Eigen::MatrixXd& allowance, double eps,
                      const std::string& what) {
  double worst = 0;
  Index bad = 0;
  for (Index j = 0; j < expected.cols(); ++j)
    for (Index i = 0; i < expected.rows(); ++i) {
      const double err = std::abs(std::complex<double>(got(i, j)) - std::complex<double>(expected(i, j)));
      const double ratio = err / (eps * (allowance(i, j) + std::abs(std::complex<double>(expected(i, j)))) +
                                  std::numeric_limits<double>::min());
      if (!(ratio <= kRatioLimit)) ++bad;
      worst = std::max(worst, ratio != ratio ? 1e300 : ratio);
    }
  BOOST_TEST(bad == 0, what << ": " << bad << " elements outside the bound, worst ratio " << worst);
  return worst;
}

// Runs `gpu_value` (the GPU result of the expression, assigned through
// `dst_form`) and checks it against `expected` of the expression alone.
template <FusedDst Form, class S, class Run>
double fused_case(const Fused<S>& x, const Mat<wider_t<S>>& value, const Eigen::MatrixXd& allowance, const Run& run,
                  const std::string& what) {
  using W = wider_t<S>;
  const double eps = static_cast<double>(std::numeric_limits<real_t<S>>::epsilon()) * eps_scale();
  const std::string name = what + " " + fused_dst_name(Form);
  if constexpr (Form == FusedDst::assign) {
    Mat<S> c(x.p.m, x.p.n);
    poison(c);
    run([&](const auto& g) { c = g; });
    return check_elements(c, value, allowance, eps, name);
  } else if constexpr (Form == FusedDst::add) {
    Mat<S> c = random_matrix<Mat<S>>(x.p.m, x.p.n);
    const Mat<W> expected = c.template cast<W>() + value;
    run([&](const auto& g) { c += g; });
    return check_elements(c, expected, allowance + Fused<S>::mag(c.template cast<W>()), eps, name);
  } else if constexpr (Form == FusedDst::sub_row_major) {
    RowMat<S> c = random_matrix<RowMat<S>>(x.p.m, x.p.n);
    const Mat<W> expected = c.template cast<W>() - value;
    run([&](const auto& g) { c -= g; });
    return check_elements(c, expected, allowance + Fused<S>::mag(Mat<W>(c.template cast<W>())), eps, name);
  } else {
    Mat<S> big = random_matrix<Mat<S>>(x.p.m + 4, x.p.n + 6);
    poison(big.block(3, 1, x.p.m, x.p.n));
    const Mat<S> before = big;
    run([&](const auto& g) { big.block(3, 1, x.p.m, x.p.n) = g; });
    BOOST_TEST(outside_unchanged(big, before, 3, 1, x.p.m, x.p.n), name << ": wrote outside the Block destination");
    return check_elements(big.block(3, 1, x.p.m, x.p.n), value, allowance, eps, name);
  }
}

// The expressions, each through its destination form, and C read by its
// own expression.
template <class S> double fused_expressions(const Fused<S>& x, const egpu::Options& opt, const std::string& what) {
  using W = wider_t<S>;
  using F = Fused<S>;
  const auto& a = x.p.a;
  const auto& b = x.p.b;
  const Mat<W> ab = x.ab();
  double worst = 0;
  auto keep = [&](double r) { worst = std::max(worst, r); };

  if constexpr (!is_complex_v<S>) {  // tanh(A * B): |tanh'| <= 1
    keep(fused_case<FusedDst::assign>(x, Mat<W>(ab.array().tanh().matrix()), x.abs_ab,
                    [&](auto assign) { assign(egpu::gpu((a * b).array().tanh().matrix(), opt)); }, what + " tanh(A*B)"));
  } else {  // conj(A * B) * 0.5 + 1
    const Mat<W> value = (ab.conjugate().array() * W(0.5) + W(1)).matrix();
    keep(fused_case<FusedDst::assign>(x, value, Eigen::MatrixXd(x.abs_ab.array() + 1.0),
                    [&](auto assign) { assign(egpu::gpu(((a * b).conjugate().array() * S(0.5) + S(1)).matrix(), opt)); },
                    what + " conj(A*B)*0.5+1"));
  }
  {  // (A * B) .* D (row-major) + E (a strided block)
    const Mat<W> dw = x.d.template cast<W>(), ew = x.block().template cast<W>();
    const Mat<W> value = (ab.array() * dw.array() + ew.array()).matrix();
    const Eigen::MatrixXd allowance = x.abs_ab.cwiseProduct(F::mag(dw)) + F::mag(ab).cwiseProduct(F::mag(dw)) + F::mag(ew);
    keep(fused_case<FusedDst::add>(x, value, allowance,
                    [&](auto assign) { assign(egpu::gpu(((a * b).array() * x.d_row.array() + x.block().array()).matrix(), opt)); },
                    what + " (A*B).*D_rowmajor+E_block"));
  }
  {  // A * B broadcast-added to a column
    const Mat<W> value = ab.colwise() + x.v.template cast<W>();
    const Eigen::MatrixXd allowance = x.abs_ab + F::mag(value);
    keep(fused_case<FusedDst::sub_row_major>(x, value, allowance, [&](auto assign) { assign(egpu::gpu((a * b).colwise() + x.v, opt)); },
                    what + " (A*B).colwise()+v"));
  }
  {  // A * B - DT.transpose() + float D cast
    const Mat<W> value = ab - x.dt.transpose().template cast<W>() + x.df.template cast<S>().template cast<W>();
    const Eigen::MatrixXd allowance = x.abs_ab + F::mag_of(x.dt.transpose()) + F::mag_of(x.df);
    keep(fused_case<FusedDst::block>(x, value, allowance,
                    [&](auto assign) { assign(egpu::gpu(a * b - x.dt.transpose() + x.df.template cast<S>(), opt)); },
                    what + " A*B-DT.transpose()+Df.cast"));
  }
  {  // C = (A * B) - 2 C: the destination read element for element
    Mat<S> c = random_matrix<Mat<S>>(x.p.m, x.p.n);
    const Mat<W> c0 = c.template cast<W>();
    const Mat<W> value = (ab.array() - W(2) * c0.array()).matrix();
    c = egpu::gpu(((a * b).array() - S(2) * c.array()).matrix(), opt);
    keep(check_elements(c, value, Eigen::MatrixXd(x.abs_ab + 2.0 * F::mag(c0)),
                        static_cast<double>(std::numeric_limits<real_t<S>>::epsilon()) * eps_scale(),
                        what + " C = (A*B)-2C"));
  }
  return worst;
}

template <class S> void fused_shapes(std::vector<std::array<Index, 3>> shapes) {
  int turn = 0;
  for (const auto& [m, n, k] : shapes) {
    const Problem<S> p(m, n, k);
    const Fused<S> x(p);
    for (const Config& config : {tilings()[0], tilings()[1], tilings()[2], tilings()[4]}) {
      const egpu::Backend backend = kBackends[turn % 2];
      const std::string what = p.text() + " " + backend_name(backend) + " " + config.name;
      const double worst = fused_expressions(x, p.options(config, backend), what);
      ++turn;
      BOOST_TEST_MESSAGE(what << ": worst error ratio " << worst);
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(pipeline, *boost::unit_test::precondition(gpu_available))

BOOST_AUTO_TEST_CASE_TEMPLATE(shapes_tilings_and_forms, S, Scalars) {
  if constexpr (std::is_same_v<S, double>)
    shapes_and_tilings<S>({{1000, 777, 1500}, {3001, 129, 2047}, {1, 513, 1025}, {257, 1, 3}});
  else if constexpr (std::is_same_v<S, float>)
    shapes_and_tilings<S>({{3001, 129, 2047}, {1200, 600, 1100}, {129, 2047, 1}, {1, 1, 1}});
  else
    shapes_and_tilings<S>({{600, 477, 901}, {1501, 65, 1023}, {1, 1, 1}, {255, 3, 517}});
}

BOOST_AUTO_TEST_CASE(pinned_operands_and_destinations) {
  pinned_against_pageable<double>(1000, 777, 1500);
  pinned_against_pageable<std::complex<float>>(513, 700, 389);
  // All three page-locked, in core: A (8.5 MiB) goes up in two parts of k
  // for the first of three narrow panels.
  pinned_against_pageable<float>(1600, 600, 1400);
}

// The calling thread queues a call's downloads itself where each goes by
// DMA straight into a page-locked destination, or where the call has one
// tile; otherwise the writer thread does. Each way, into poisoned
// destinations, with the elements between a strided Map's untouched:
// - page-locked, columns contiguous, many tiles (the caller);
// - page-locked Map with an inner stride of 2, many tiles (the writer
//   thread, through the staging ring) and one tile (the caller, through
//   the ring);
// - pageable, one tile larger than the staging ring (8 x 8 MiB): the
//   caller queues its chunks and unpacks the oldest when the ring is full,
//   then the rest at the end;
// - pageable, many tiles (the writer thread).
template <class S>
void downloads_each_way(Index m, Index n, Index k, std::int64_t panel, bool pinned, bool strided, bool by_caller) {
  Problem<S> p(m, n, k);
  for (egpu::Backend backend : kBackends) {
    Config config{"panel " + std::to_string(panel), 0, panel, 0};
    const egpu::Options opt = p.options(config, backend);
    const std::string what = p.text() + " " + backend_name(backend) + " " + config.name +
                             (pinned ? " page-locked" : " pageable") + (strided ? " inner stride 2" : "");
    Mat<S> store(strided ? 2 * p.m : p.m, p.n);
    fill_random(store);
    egpu::PinGuard guard;
    if (pinned) guard = egpu::pin(store);
    using Strided = Eigen::Map<Mat<S>, 0, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>>;
    Strided c(store.data(), p.m, p.n, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>(store.rows(), strided ? 2 : 1));
    poison(c);
    const Mat<S> before = store;
    const std::size_t inline_before = egpu::detail::calls_queueing_downloads_inline();
    c.noalias() = egpu::gpu(p.a * p.b, opt);
    check(p, c, Form::noalias_assign, S(1), Mat<S>(), what + " noalias() =");
    const std::size_t inline_calls = egpu::detail::calls_queueing_downloads_inline() - inline_before;
    BOOST_TEST(inline_calls == (by_caller ? 1u : 0u),
               what << ": downloads queued by " << (inline_calls ? "the calling thread" : "the writer thread"));
    bool untouched = true;
    for (Index j = 0; strided && j < p.n; ++j)
      for (Index i = 1; i < store.rows(); i += 2)
        untouched = untouched && std::memcmp(&store(i, j), &before(i, j), sizeof(S)) == 0;
    BOOST_TEST(untouched, what << ": wrote between the strided destination's elements");
  }
}

BOOST_AUTO_TEST_CASE(downloads_queued_by_the_caller_or_the_writer_thread) {
  downloads_each_way<float>(700, 650, 300, 256, true, false, true);
  downloads_each_way<double>(600, 500, 200, 256, true, true, false);
  downloads_each_way<std::complex<float>>(300, 200, 100, 0, true, true, true);
  downloads_each_way<double>(3000, 3000, 4, 3000, false, false, true);
  downloads_each_way<float>(900, 700, 300, 256, false, false, false);
}

// A call measures the device's free memory for its budget (cudaMemGetInfo,
// about 8 us) only when its thread has no measurement yet, or when the last
// one might not hold its plan: the repeated in-core call plans within the
// budget measured before, its buffers back in the device's pool. A call
// with a memory limit plans within the limit. Run on a thread of its own,
// whose context starts without a measurement.
BOOST_AUTO_TEST_CASE(the_budget_is_measured_once_for_repeated_calls) {
  // Inputs made here (the generator is not thread safe); the thread's
  // results checked here after it ends.
  Problem<float> p(500, 400, 300);
  const egpu::Options opt = p.options(tilings()[0], egpu::Backend::own);
  const egpu::Options limited = p.options(tilings()[2], egpu::Backend::own);
  std::vector<Mat<float>> results(4, Mat<float>(p.m, p.n));
  std::vector<std::size_t> measured(4, 0);
  std::string failure;
  std::thread([&] {
    try {
      const std::size_t before = egpu::detail::budget_measurements();
      for (std::size_t call = 0; call < results.size(); ++call) {
        poison(results[call]);
        results[call].noalias() = egpu::gpu(p.a * p.b, call < 3 ? opt : limited);
        measured[call] = egpu::detail::budget_measurements() - before;
      }
    } catch (const std::exception& e) {
      failure = e.what();
    }
  }).join();
  BOOST_TEST_REQUIRE(failure.empty(), "the thread's calls threw: " << failure);
  for (std::size_t call = 0; call < results.size(); ++call) {
    const std::string what = call < 3 ? "in core, call " + std::to_string(call) : std::string("with a memory limit");
    check(p, results[call], Form::noalias_assign, 1.0f, Mat<float>(), what);
    BOOST_TEST(measured[call] == 1u, what << ": the budget measured " << measured[call] << " times by then, not once");
  }
}

BOOST_AUTO_TEST_CASE(streams_and_staging_threads_give_the_same_results) {
  streams_and_staging<double>(1000, 777, 1500, tilings()[2]);
  streams_and_staging<float>(3001, 129, 2047, tilings()[1]);
  streams_and_staging<std::complex<double>>(400, 300, 700, tilings()[2]);
  streams_and_staging<double>(700, 500, 600, tilings()[0]);
}

BOOST_AUTO_TEST_CASE(injected_failures_leave_c_unchanged) {
  const Config in_core = tilings()[0];
  const Config out_of_core{"limit 1/10 panel 256 k_panel 128", 0.1, 256, 128};
  const Config out_of_core_threads{"limit 1/4 panel 128 k_panel 128, 3 streams, 3 staging threads", 0.25, 128, 128, 3,
                                   3};
  failures<double, Mat<double>>(700, 555, 901, in_core, egpu::Backend::own, false, Form::add);
  failures<double, Mat<double>>(700, 555, 901, out_of_core, egpu::Backend::own, false, Form::sub);
  failures<double, Mat<double>>(700, 555, 901, out_of_core, egpu::Backend::cublas, true, Form::add);
  failures<double, Mat<double>>(700, 555, 901, in_core, egpu::Backend::cublas, true, Form::sub);
  failures<double, RowMat<double>>(421, 333, 517, out_of_core_threads, egpu::Backend::own, false, Form::add);
  failures<std::complex<float>, Mat<std::complex<float>>>(301, 410, 333, out_of_core_threads, egpu::Backend::own, true,
                                                          Form::sub);
  failures<std::complex<float>, Mat<std::complex<float>>>(301, 410, 333, in_core, egpu::Backend::cublas, false,
                                                          Form::add);
  failures<double, Mat<double>>(700, 555, 901, in_core, egpu::Backend::own, false, Form::add, true);
  failures<double, RowMat<double>>(421, 333, 517, out_of_core_threads, egpu::Backend::cublas, true, Form::sub, true);
  failures<float, Mat<float>>(700, 555, 901, out_of_core, egpu::Backend::own, false, Form::sub, true);
}

// f(A * B, D, ...) with other operands (row-major, strided, transposed,
// broadcast, cast; the destination read as an operand), every destination
// form, in core and out of core.
BOOST_AUTO_TEST_CASE_TEMPLATE(functions_of_a_product_with_other_operands, S, Scalars) {
  if constexpr (std::is_same_v<S, double>)
    fused_shapes<S>({{1000, 777, 1500}, {257, 1, 3}, {1, 513, 1025}});
  else if constexpr (std::is_same_v<S, float>)
    fused_shapes<S>({{1201, 129, 2047}, {1200, 600, 1100}, {1, 1, 1}});
  else
    fused_shapes<S>({{600, 477, 901}, {255, 3, 517}});
}

// Two host threads, each running several out-of-core products with
// options of its own; each checks its results (BOOST_TEST is not thread
// safe: failures are collected and reported here).
BOOST_AUTO_TEST_CASE(two_threads_out_of_core) {
  // Thread 0: double, C += gpu(A * B); thread 1: complex<float>,
  // C = gpu(AH.adjoint() * B). Inputs made here (the generator is not
  // thread safe), references computed in the threads.
  struct Job {
    egpu::Options opt;
    std::string what;
    Mat<double> a, b, c0;
    Mat<std::complex<float>> ah, cb;
  };
  const int per_thread = scaled_count(6);
  std::vector<Job> jobs[2];
  for (int id = 0; id < 2; ++id) {
    for (int t = 0; t < per_thread; ++t) {
      Job job;
      const double fraction = t % 2 == 0 ? 0.1 : 0.3;
      job.opt.backend = (t + id) % 2 == 0 ? egpu::Backend::own : egpu::Backend::cublas;
      job.opt.panel = id == 0 ? 256 : 128;
      job.opt.k_panel = id == 0 ? 128 : 256;
      job.opt.streams = 1 + (t + id) % 4;
      job.opt.staging_threads = id == 0 ? 1 : 3;
      std::size_t ws;
      if (id == 0) {
        const Index m = dim(611 + 20 * t), n = dim(477), k = dim(903);
        job.a = random_matrix<Mat<double>>(m, k);
        job.b = random_matrix<Mat<double>>(k, n);
        job.c0 = random_matrix<Mat<double>>(m, n);
        ws = static_cast<std::size_t>(m * k + k * n + m * n) * sizeof(double);
      } else {
        const Index m = dim(389), n = dim(512 + 31 * t), k = dim(777);
        job.ah = random_matrix<Mat<std::complex<float>>>(k, m);
        job.cb = random_matrix<Mat<std::complex<float>>>(k, n);
        ws = static_cast<std::size_t>(m * k + k * n + m * n) * sizeof(std::complex<float>);
      }
      job.opt.device_memory_limit = static_cast<std::size_t>(fraction * double(ws));
      std::ostringstream what;
      what << "thread " << id << " product " << t << " " << backend_name(job.opt.backend) << " limit " << fraction
           << " of the working set, streams " << job.opt.streams << ", staging threads " << job.opt.staging_threads;
      job.what = what.str();
      jobs[id].push_back(std::move(job));
    }
  }
  std::atomic<int> done{0};
  const auto failed = run_on_threads(2, [&](int id, const auto& fail) {
    for (const Job& job : jobs[id]) {
      if (id == 0) {
        Mat<double> c = job.c0;
        c.noalias() += egpu::gpu(job.a * job.b, job.opt);
        const Mat<double> ref = job.c0 + job.a * job.b;
        const double err = diff_norm(c, ref);
        const double bound =
            error_bound<double>(job.a.cols(), 1, frob(job.a), frob(job.b), 1, frob(job.c0));
        if (!(err / bound <= kRatioLimit)) fail(job.what + ": error ratio " + std::to_string(err / bound));
      } else {
        using C = std::complex<float>;
        using CD = std::complex<double>;
        Mat<C> c(job.ah.cols(), job.cb.cols());
        poison(c);
        c.noalias() = egpu::gpu(job.ah.adjoint() * job.cb, job.opt);
        const Mat<CD> ref = job.ah.cast<CD>().adjoint() * job.cb.cast<CD>();
        const double err = diff_norm(c, ref);
        const double bound = error_bound<C>(job.ah.rows(), 1, frob(job.ah), frob(job.cb), 0, 0);
        if (!(err / bound <= kRatioLimit)) fail(job.what + ": error ratio " + std::to_string(err / bound));
      }
      ++done;
    }
  });
  for (const auto& f : failed) BOOST_TEST(false, f);
  BOOST_TEST(done.load() == 2 * per_thread);
}

// EGPU_TRACE while the pipeline's writer thread traces downloads beside the
// calling thread's uploads and multiplies: many small tiles, pageable and
// pinned, repeated; the results stay right and the timeline holds every
// kind of span.
BOOST_AUTO_TEST_CASE(traced_calls) {
  const std::string path = "egpu_trace_" + std::to_string(static_cast<long long>(rng()() % 1000000)) + ".json";
  BOOST_REQUIRE(::setenv("EGPU_TRACE", path.c_str(), 1) == 0);
  egpu::Options opt;
  opt.panel = 128;
  opt.k_panel = 128;
  const Index m = dim(700), n = dim(650), k = dim(300);
  const Mat<double> a = random_matrix<Mat<double>>(m, k), b = random_matrix<Mat<double>>(k, n);
  const Mat<double> ref = a * b;
  const double bound = error_bound<double>(k, 1, frob(a), frob(b), 0, 0);
  Mat<double> c(m, n);
  for (int r = 0; r < scaled_count(12); ++r) {
    std::vector<egpu::PinGuard> guards;
    if (r % 2 == 1) guards.push_back(egpu::pin(c));
    poison(c);
    c.noalias() = egpu::gpu(a * b, opt);
    BOOST_TEST(diff_norm(c, ref) / bound <= kRatioLimit, "call " << r);
  }
  ::unsetenv("EGPU_TRACE");
  std::FILE* f = std::fopen(path.c_str(), "r");
  BOOST_REQUIRE(f != nullptr);
  std::string text;
  char buffer[4096];
  for (std::size_t got; (got = std::fread(buffer, 1, sizeof buffer, f)) > 0;) text.append(buffer, got);
  std::fclose(f);
  std::remove(path.c_str());
  BOOST_TEST(text.rfind("{\"traceEvents\":[", 0) == 0u);
  for (const char* kind : {"upload A", "upload B", "multiply", "download C", "\"tid\":\"host\"", "\"call\":"})
    BOOST_TEST(text.find(kind) != std::string::npos, kind);
}

BOOST_AUTO_TEST_SUITE_END()
