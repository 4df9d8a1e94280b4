// Reductions through egpu::gpu against the recording backend
// (support/recording_backend.hpp), whose reduce() runs the described program
// with the host interpreter and combines its values in long double: a wrong
// description (leaves, strides, the abs2 of squaredNorm, the axis, the
// finish, the divisor) gives a wrong answer. Each result is judged against
// the long double reduction of the coefficients Eigen computes for the same
// expression (one at a time, with the scalar functors the interpreter
// calls), with the bounds of support/reduction_reference.hpp (8u sum|x|
// for sums; the backend's own error is one rounding to the scalar).
//  - every member of gpu(x) (sum, mean, prod, minCoeff, maxCoeff,
//    squaredNorm, norm, count, all, any) and every partial reduction
//    (colwise()/rowwise() sum, mean, prod, minCoeff, maxCoeff, squaredNorm,
//    norm), for the four scalars (minCoeff, maxCoeff and count of real
//    values), over column- and row-major matrices, blocks, Maps with outer
//    and inner strides, transposes and a coefficient-wise expression, shapes
//    0xN, Nx0, 1xN, Nx1 and odd;
//  - the programs and reductions described (abs2 appended for squaredNorm,
//    each_column with cols values, the divisor of mean, the options);
//  - +=, -= into destinations of every kind, one of them the operand itself;
//    a failed call leaves the destination bit-identical; a wrong destination
//    size throws egpu::error without a call; empty mean/minCoeff/maxCoeff
//    throw; a partial reduction inside a larger expression.
// Links egpu_recording_backend (and egpu_core); no GPU.
#define BOOST_TEST_MODULE reduce_adapter
#include <boost/mpl/list.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "egpu/egpu.hpp"
#include "support/elementwise_forms.hpp"
#include "support/recording_backend.hpp"
#include "support/reduction_reference.hpp"
#include "support/test_support.hpp"

using namespace egpu_test;
namespace ed = egpu::detail;
namespace rec = egpu_test::recording;
using ed::ReduceAxis;
using ed::ReduceFinish;
using ed::ReduceOp;
using Eigen::Dynamic;

namespace {

// Whether Eigen asserts (a build without NDEBUG): x.colwise().minCoeff()
// of a matrix without rows then aborts while it is built, before egpu sees it.
#ifdef EIGEN_NO_DEBUG
constexpr bool kEigenAsserts = false;
#else
constexpr bool kEigenAsserts = true;
#endif

template <class T> using Mat = Eigen::Matrix<T, Dynamic, Dynamic>;
template <class T> using RowMat = Eigen::Matrix<T, Dynamic, Dynamic, Eigen::RowMajor>;


// Values 1 + d, |d| <= min(1/4, 32/n): the product of any of n of them
// stays far from overflow and underflow, so prod is judged at every size.
template <class M> M near_one(Index rows, Index cols) {
  using S = typename M::Scalar;
  using R = real_t<S>;
  const double spread = std::min(0.25, 32.0 / double(std::max<Index>(1, rows * cols)));
  std::uniform_real_distribution<double> d(-spread, spread);
  M m(rows, cols);
  for (Index j = 0; j < cols; ++j)
    for (Index i = 0; i < rows; ++i) {
      if constexpr (is_complex_v<S>) m(i, j) = S(R(1 + d(rng())), R(d(rng())));
      else m(i, j) = R(1 + d(rng()));
    }
  return m;
}

// x's coefficients one at a time, as Eigen's coeff() computes them: with
// the scalar functors the backend's interpreter calls too (Eigen's
// vectorized loop may differ from them by an ulp).
template <class X> Mat<typename X::Scalar> coefficients(const X& x) {
  Mat<typename X::Scalar> v(x.rows(), x.cols());
  for (Index j = 0; j < x.cols(); ++j)
    for (Index i = 0; i < x.rows(); ++i) v(i, j) = x.coeff(i, j);
  return v;
}

// The expected reduction of a plain matrix's coefficients (their abs2 when
// `squared`).
template <class P> std::vector<Expected> expected_of(const P& v, const ed::Reduction& r, bool squared) {
  using S = typename P::Scalar;
  const LD u = unit_roundoff<real_t<S>>();
  return expected_reduction(v.rows(), v.cols(), r, is_complex_v<S>, [&](std::int64_t i, std::int64_t j) {
    const Sample s = exact_sample(v(i, j));
    return squared ? abs2_sample(s, u) : s;
  });
}

// Judges results got[0 .. n) (n = expected.size()); a stretch's result is
// judged unless its value depends on the order of the products.
template <class T> void check_results(const std::vector<Expected>& expected, const ed::Reduction& r, const T* got,
                                      const std::string& what) {
  ReductionOutcome o;
  judge_all(expected, r, got, what, o);
  BOOST_TEST(o.bad == 0, what << ": " << o.bad << " of " << expected.size() << " values out of bounds\n"
                              << o.report.str());
}
template <class T> void check_result(const Expected& expected, const ed::Reduction& r, const T& got,
                                     const std::string& what) {
  check_results(std::vector<Expected>{expected}, r, &got, what);
}

// gpu(x).member() against the reference of x's coefficients; the members
// that throw for an empty x throw.
template <class X> void check_full_members(const X& x, const std::string& what) {
  using S = typename X::Scalar;
  using R = real_t<S>;
  const auto v = coefficients(x);
  const Index n = v.size();
  const auto all = [](ReduceOp op, ReduceFinish f = ReduceFinish::none, double d = 1) {
    return reduction(op, ReduceAxis::all, f, d);
  };
  check_result(expected_of(v, all(ReduceOp::sum), false)[0], all(ReduceOp::sum), egpu::gpu(x).sum(), what + " sum()");
  check_result(expected_of(v, all(ReduceOp::sum), true)[0], all(ReduceOp::sum), egpu::gpu(x).squaredNorm(),
               what + " squaredNorm()");
  const auto root = all(ReduceOp::sum, ReduceFinish::sqrt);
  check_result(expected_of(v, root, true)[0], root, egpu::gpu(x).norm(), what + " norm()");
  if (n == 0) {
    BOOST_CHECK_THROW(egpu::gpu(x).mean(), egpu::error);
    BOOST_TEST(egpu::gpu(x).prod() == S(1), what << " prod() of nothing");
  } else {
    const auto mean = all(ReduceOp::sum, ReduceFinish::divide, double(n));
    check_result(expected_of(v, mean, false)[0], mean, egpu::gpu(x).mean(), what + " mean()");
  }
  if constexpr (!is_complex_v<S>) {
    if (n == 0) {
      BOOST_CHECK_THROW(egpu::gpu(x).minCoeff(), egpu::error);
      BOOST_CHECK_THROW(egpu::gpu(x).maxCoeff(), egpu::error);
    } else {
      check_result(expected_of(v, all(ReduceOp::min), false)[0], all(ReduceOp::min), egpu::gpu(x).minCoeff(),
                   what + " minCoeff()");
      check_result(expected_of(v, all(ReduceOp::max), false)[0], all(ReduceOp::max), egpu::gpu(x).maxCoeff(),
                   what + " maxCoeff()");
      BOOST_TEST(egpu::gpu(x).minCoeff() == v.template minCoeff<Eigen::PropagateNaN>(), what << " minCoeff()");
    }
    BOOST_TEST(egpu::gpu(x).count() == v.count(), what << " count()");
  }
  const auto positive = x.array().real() > R(0);
  const auto positive_v = v.array().real() > R(0);
  BOOST_TEST(egpu::gpu(positive).count() == positive_v.count(), what << " (re > 0).count()");
  BOOST_TEST(egpu::gpu(positive).all() == positive_v.all(), what << " (re > 0).all()");
  BOOST_TEST(egpu::gpu(positive).any() == positive_v.any(), what << " (re > 0).any()");
}

// typename P::PlainObject r = gpu(p): a partial reduction as its value.
template <class P> typename P::PlainObject run_partial(const P& p) {
  typename P::PlainObject r = egpu::gpu(p);
  return r;
}

// dst = gpu(partial) against `expected`: values, or egpu::error where a
// stretch is empty and the reduction has no value for it.
template <class P> void check_partial(const P& partial, const std::vector<Expected>& expected, const ed::Reduction& r,
                                      const std::string& what) {
  const bool throws = std::any_of(expected.begin(), expected.end(), [](const Expected& e) { return e.empty_throws; });
  if (throws) {
    BOOST_CHECK_THROW(run_partial(partial), egpu::error);
    return;
  }
  const auto got = run_partial(partial);
  BOOST_TEST_REQUIRE(static_cast<std::size_t>(got.size()) == expected.size(), what << ": size " << got.size());
  check_results(expected, r, got.data(), what);
}

// Every partial reduction of x down its columns or across its rows.
template <class X> void check_partial_members(const X& x, ReduceAxis axis, const std::string& base) {
  using S = typename X::Scalar;
  const auto v = coefficients(x);
  const bool down = axis == ReduceAxis::each_column;
  const double length = double(down ? x.rows() : x.cols());
  const std::string what = base + (down ? " colwise()." : " rowwise().");
  auto check = [&](const auto& partial, ReduceOp op, ReduceFinish f, bool squared, const char* name) {
    const ed::Reduction r = reduction(op, axis, f, length);
    check_partial(partial, expected_of(v, r, squared), r, what + name);
  };
  const bool extremes = length > 0 || !kEigenAsserts;
  if (down) {
    check(x.colwise().sum(), ReduceOp::sum, ReduceFinish::none, false, "sum()");
    check(x.colwise().mean(), ReduceOp::sum, ReduceFinish::divide, false, "mean()");
    check(x.colwise().squaredNorm(), ReduceOp::sum, ReduceFinish::none, true, "squaredNorm()");
    check(x.colwise().norm(), ReduceOp::sum, ReduceFinish::sqrt, true, "norm()");
    if constexpr (!is_complex_v<S>) {
      if (extremes) check(x.colwise().minCoeff(), ReduceOp::min, ReduceFinish::none, false, "minCoeff()");
      if (extremes) check(x.colwise().maxCoeff(), ReduceOp::max, ReduceFinish::none, false, "maxCoeff()");
    }
  } else {
    check(x.rowwise().sum(), ReduceOp::sum, ReduceFinish::none, false, "sum()");
    check(x.rowwise().mean(), ReduceOp::sum, ReduceFinish::divide, false, "mean()");
    check(x.rowwise().squaredNorm(), ReduceOp::sum, ReduceFinish::none, true, "squaredNorm()");
    check(x.rowwise().norm(), ReduceOp::sum, ReduceFinish::sqrt, true, "norm()");
    if constexpr (!is_complex_v<S>) {
      if (extremes) check(x.rowwise().minCoeff(), ReduceOp::min, ReduceFinish::none, false, "minCoeff()");
      if (extremes) check(x.rowwise().maxCoeff(), ReduceOp::max, ReduceFinish::none, false, "maxCoeff()");
    }
  }
}

// prod, full and partial, on values near 1 (judged at every size).
template <class X> void check_products(const X& x, const std::string& what) {
  const auto v = coefficients(x);
  const ed::Reduction all = reduction(ReduceOp::prod, ReduceAxis::all);
  const ed::Reduction cols = reduction(ReduceOp::prod, ReduceAxis::each_column);
  const ed::Reduction rows = reduction(ReduceOp::prod, ReduceAxis::each_row);
  check_result(expected_of(v, all, false)[0], all, egpu::gpu(x).prod(), what + " prod()");
  check_partial(x.colwise().prod(), expected_of(v, cols, false), cols, what + " colwise().prod()");
  check_partial(x.rowwise().prod(), expected_of(v, rows, false), rows, what + " rowwise().prod()");
}

template <class X> void check_all_members(const X& x, const std::string& what) {
  check_full_members(x, what);
  check_partial_members(x, ReduceAxis::each_column, what);
  check_partial_members(x, ReduceAxis::each_row, what);
}

// The full members and two partial reductions: for operand kinds whose
// description differs from another's only in the strides.
template <class X> void check_members_and_sums(const X& x, const std::string& what) {
  check_full_members(x, what);
  const auto v = coefficients(x);
  const ed::Reduction sums = reduction(ReduceOp::sum, ReduceAxis::each_column);
  check_partial(x.colwise().sum(), expected_of(v, sums, false), sums, what + " colwise().sum()");
  const ed::Reduction means = reduction(ReduceOp::sum, ReduceAxis::each_row, ReduceFinish::divide, double(x.cols()));
  check_partial(x.rowwise().mean(), expected_of(v, means, false), means, what + " rowwise().mean()");
}

// Every operand kind for double and complex<float>; a matrix and an
// expression for the other two (the adapter's code is the same for all
// scalars: fewer instantiations).
template <class S> constexpr bool every_kind_v = std::is_same_v<S, double> || std::is_same_v<S, std::complex<float>>;

// The operand kinds, each over random values (and near-1 values for prod).
template <class S> void check_operand_kinds(Index rows, Index cols) {
  using M = Mat<S>;
  using A = Eigen::Array<S, Dynamic, Dynamic>;
  const std::string base = std::string(scalar_name<S>()) + " " + shape_text(rows, cols);
  const M m = random_matrix<M>(rows, cols);
  check_all_members(m, base + " matrix");
  check_products(near_one<M>(rows, cols), base + " matrix");
  const A a = random_matrix<A>(rows, cols), b = random_matrix<A>(rows, cols);
  check_all_members(a * b + a.exp(), base + " a*b+exp(a)");
  if constexpr (every_kind_v<S>) {
    const RowMat<S> r = random_matrix<RowMat<S>>(rows, cols);
    check_members_and_sums(r, base + " row-major");

    const M big = random_matrix<M>(rows + 3, cols + 2);
    check_members_and_sums(big.block(2, 1, rows, cols), base + " block");

    // A Map with an outer stride, and one with inner and outer strides, over
    // near-1 values (their prod judged too).
    using Strides = Eigen::Stride<Dynamic, Dynamic>;
    const M buffer = near_one<M>(2 * rows + 3, cols + 1);
    const Eigen::Map<const M, 0, Eigen::OuterStride<>> outer(buffer.data() + 1, rows, cols,
                                                              Eigen::OuterStride<>(2 * rows + 3));
    check_members_and_sums(outer, base + " Map, outer stride");
    const Eigen::Map<const M, 0, Strides> strided(buffer.data(), rows, cols, Strides(2 * rows + 3, 2));
    check_all_members(strided, base + " Map, inner stride 2");
    check_products(strided, base + " Map, inner stride 2");

    const M t = near_one<M>(cols, rows);
    check_all_members(t.transpose(), base + " transpose");
    check_products(t.transpose(), base + " transpose");
  }
}

template <class T> bool same_bits(const T& x, const T& y) {
  return x.rows() == y.rows() && x.cols() == y.cols() &&
         (x.size() == 0 || std::memcmp(x.data(), y.data(), sizeof(typename T::Scalar) * std::size_t(x.size())) == 0);
}

// got == c0 + sign * (the reduction), each value: the sum's bound widened
// by the two roundings of the update (2u (|c0| + |got|)).
template <class T> void check_updated(const std::vector<Expected>& expected, const ed::Reduction& r,
                                      const std::vector<T>& got, const std::vector<T>& c0, int sign,
                                      const std::string& what) {
  BOOST_TEST_REQUIRE(got.size() == expected.size(), what << ": size " << got.size());
  const LD u = unit_roundoff<real_t<T>>();
  ReductionOutcome o;
  for (std::size_t k = 0; k < got.size(); ++k) {
    Expected widened = expected[k];
    widened.allowance += 2 * u * (std::abs(exact_sample(c0[k]).value) + std::abs(exact_sample(got[k]).value));
    const T change = T(real_t<T>(sign)) * (got[k] - c0[k]);
    judge_all(std::vector<Expected>{widened}, r, &change, what + ", value " + std::to_string(k), o);
  }
  BOOST_TEST(o.bad == 0, what << ": " << o.bad << " values out of bounds\n" << o.report.str());
}

template <class V> std::vector<typename V::Scalar> values_of(const V& v) {
  std::vector<typename V::Scalar> out;
  for (Index k = 0; k < v.size(); ++k) out.push_back(v(k));
  return out;
}

}  // namespace

using Scalars = boost::mpl::list<float, double, std::complex<float>, std::complex<double>>;

BOOST_AUTO_TEST_CASE_TEMPLATE(every_member_and_operand_kind, S, Scalars) {
  const Index shapes[][2] = {{0, 0}, {0, 5}, {4, 0}, {1, 1}, {1, 37}, {41, 1}, {37, 53}, {uniform_index(2, 90), uniform_index(2, 90)}};
  for (const auto& shape : shapes) check_operand_kinds<S>(shape[0], shape[1]);
}

BOOST_AUTO_TEST_CASE(the_programs_described) {
  using M = Eigen::MatrixXd;
  const M a = random_matrix<M>(7, 5);
  auto last = [] { return rec::reductions().back(); };
  auto check = [&](const char* what, ReduceOp op, ReduceAxis axis, ReduceFinish finish, std::int64_t reduced,
                   ed::ValueKind value) {
    BOOST_TEST_REQUIRE(rec::reduce_calls() == 1, what << ": " << rec::reduce_calls() << " reduce() calls");
    const rec::ReduceCall c = last();
    BOOST_TEST((c.reduction.op == op), what << ": op");
    BOOST_TEST((c.reduction.axis == axis), what << ": axis");
    BOOST_TEST((c.reduction.finish == finish), what << ": finish");
    BOOST_TEST(ed::reduced_count(c.program, c.reduction) == reduced, what << ": reduced count");
    BOOST_TEST((c.program.code.back().type == value), what << ": value type");
    BOOST_TEST(c.program.rows == 7);
    BOOST_TEST(c.program.cols == 5);
    BOOST_TEST(c.program.leaves.size() == 1u, what << ": leaves");
    rec::clear();
  };
  rec::clear();
  (void)egpu::gpu(a).sum();
  check("sum()", ReduceOp::sum, ReduceAxis::all, ReduceFinish::none, 1, ed::ValueKind::f64);
  (void)egpu::gpu(a).mean();  // divided on the host
  check("mean()", ReduceOp::sum, ReduceAxis::all, ReduceFinish::none, 1, ed::ValueKind::f64);
  (void)egpu::gpu(a).prod();
  check("prod()", ReduceOp::prod, ReduceAxis::all, ReduceFinish::none, 1, ed::ValueKind::f64);
  (void)egpu::gpu(a).minCoeff();
  check("minCoeff()", ReduceOp::min, ReduceAxis::all, ReduceFinish::none, 1, ed::ValueKind::f64);
  (void)egpu::gpu(a).maxCoeff();
  check("maxCoeff()", ReduceOp::max, ReduceAxis::all, ReduceFinish::none, 1, ed::ValueKind::f64);
  (void)egpu::gpu(a.array() > 0.0).count();
  check("(a > 0).count()", ReduceOp::count, ReduceAxis::all, ReduceFinish::none, 1, ed::ValueKind::boolean);

  // squaredNorm appends abs2, of the real type.
  const Eigen::MatrixXcf z = random_matrix<Eigen::MatrixXcf>(7, 5);
  (void)egpu::gpu(z).squaredNorm();
  BOOST_TEST((rec::reductions().back().program.code.back().op == ed::EwOp::abs2));
  check("complex squaredNorm()", ReduceOp::sum, ReduceAxis::all, ReduceFinish::none, 1, ed::ValueKind::f32);
  (void)egpu::gpu(z).norm();
  check("complex norm()", ReduceOp::sum, ReduceAxis::all, ReduceFinish::none, 1, ed::ValueKind::f32);

  Eigen::RowVectorXd cs = egpu::gpu(a.colwise().sum());
  check("colwise().sum()", ReduceOp::sum, ReduceAxis::each_column, ReduceFinish::none, 5, ed::ValueKind::f64);
  Eigen::VectorXd rs = egpu::gpu(a.rowwise().sum());
  check("rowwise().sum()", ReduceOp::sum, ReduceAxis::each_row, ReduceFinish::none, 7, ed::ValueKind::f64);
  cs = egpu::gpu(a.colwise().mean());
  BOOST_TEST(rec::reductions().back().reduction.divisor == std::complex<double>(7));
  check("colwise().mean()", ReduceOp::sum, ReduceAxis::each_column, ReduceFinish::divide, 5, ed::ValueKind::f64);
  rs = egpu::gpu(a.rowwise().mean());
  BOOST_TEST(rec::reductions().back().reduction.divisor == std::complex<double>(5));
  check("rowwise().mean()", ReduceOp::sum, ReduceAxis::each_row, ReduceFinish::divide, 7, ed::ValueKind::f64);
  Eigen::RowVectorXf zn = egpu::gpu(z.colwise().norm());
  BOOST_TEST((rec::reductions().back().program.code.back().op == ed::EwOp::abs2));
  check("complex colwise().norm()", ReduceOp::sum, ReduceAxis::each_column, ReduceFinish::sqrt, 5, ed::ValueKind::f32);
  Eigen::VectorXf zq = egpu::gpu(z.rowwise().squaredNorm());
  check("complex rowwise().squaredNorm()", ReduceOp::sum, ReduceAxis::each_row, ReduceFinish::none, 7,
        ed::ValueKind::f32);
  rs = egpu::gpu(a.rowwise().prod());
  check("rowwise().prod()", ReduceOp::prod, ReduceAxis::each_row, ReduceFinish::none, 7, ed::ValueKind::f64);
  cs = egpu::gpu(a.colwise().minCoeff());
  check("colwise().minCoeff()", ReduceOp::min, ReduceAxis::each_column, ReduceFinish::none, 5, ed::ValueKind::f64);
  rs = egpu::gpu(a.rowwise().maxCoeff());
  check("rowwise().maxCoeff()", ReduceOp::max, ReduceAxis::each_row, ReduceFinish::none, 7, ed::ValueKind::f64);

  // The options reach the library.
  egpu::Options opt;
  opt.chunk_bytes = 12345;
  opt.device_memory_limit = 1 << 20;
  (void)egpu::gpu(a, opt).sum();
  BOOST_TEST(last().options.chunk_bytes == 12345);
  BOOST_TEST(last().options.device_memory_limit == std::size_t(1) << 20);
  rec::clear();
  cs = egpu::gpu(a.colwise().sum(), opt);
  BOOST_TEST(last().options.chunk_bytes == 12345);
  rec::clear();

  // The leaves are the operand's memory: no copy on the host.
  const Eigen::MatrixXd big = random_matrix<Eigen::MatrixXd>(10, 9);
  (void)egpu::gpu(big.block(2, 3, 7, 5)).sum();
  const ed::MatrixDesc leaf = last().program.leaves.at(0).m;
  BOOST_TEST(leaf.data == static_cast<const void*>(&big(2, 3)));
  BOOST_TEST(leaf.row_stride == 1);
  BOOST_TEST(leaf.col_stride == 10);
  rec::clear();
  (void)egpu::gpu(big.transpose()).sum();
  BOOST_TEST(last().program.rows == 9);
  BOOST_TEST(last().program.leaves.at(0).m.row_stride == 10);
  BOOST_TEST(last().program.leaves.at(0).m.col_stride == 1);
  rec::clear();
}

// A partial reduction inside a larger expression is reduced first, into a
// temporary leaf; a product inside a reduced expression runs first too.
BOOST_AUTO_TEST_CASE(nested_partial_reductions_and_products) {
  const Eigen::MatrixXd a = random_matrix<Eigen::MatrixXd>(9, 6), b = random_matrix<Eigen::MatrixXd>(6, 4);
  rec::clear();
  const Eigen::RowVectorXd twice = egpu::gpu((a.colwise().sum().array() * 2.0).matrix());
  BOOST_TEST(rec::reduce_calls() == 1);
  BOOST_TEST(rec::elementwise_calls() == 1);
  const ed::Reduction r = reduction(ReduceOp::sum, ReduceAxis::each_column);
  std::vector<Expected> expected = expected_of(a, r, false);
  for (Expected& e : expected) {
    e.value *= 2;  // doubling is exact
    e.abs_re *= 2;
  }
  check_results(expected, r, twice.data(), "gpu((a.colwise().sum().array() * 2).matrix())");

  rec::clear();
  const Eigen::RowVectorXd of_product = egpu::gpu((a * b).colwise().sum());
  BOOST_TEST(rec::calls().size() == 1u);
  BOOST_TEST(rec::reduce_calls() == 1);
  const Eigen::MatrixXd ab = a * b;
  // The product's own rounding (k = 6 terms of size 1) widens each value.
  const LD allowance = 8 * unit_roundoff<double>() * 6;
  const std::vector<Expected> product_sums = expected_reduction(
      ab.rows(), ab.cols(), reduction(ReduceOp::sum, ReduceAxis::each_column), false,
      [&](std::int64_t i, std::int64_t j) { return Sample{CLD(ab(i, j), 0), allowance}; });
  check_results(product_sums, reduction(ReduceOp::sum, ReduceAxis::each_column), of_product.data(),
                "gpu((a * b).colwise().sum())");
  rec::clear();
}

// dst op= gpu(partial) for destinations of every kind; += and -= judged as
// c0 +- the reduction.
BOOST_AUTO_TEST_CASE(destinations_and_updates) {
  using M = Eigen::MatrixXd;
  const Index rows = 13, cols = 7;
  const M a = random_matrix<M>(rows, cols);
  const ed::Reduction sums = reduction(ReduceOp::sum, ReduceAxis::each_column);
  const std::vector<Expected> expected = expected_of(a, sums, false);
  const Eigen::RowVectorXd c0 = random_matrix<Eigen::RowVectorXd>(1, cols);

  Eigen::RowVectorXd d = c0;
  d += egpu::gpu(a.colwise().sum());
  check_updated(expected, sums, values_of(d), values_of(c0), 1, "RowVectorXd +=");
  d = c0;
  d -= egpu::gpu(a.colwise().sum());
  check_updated(expected, sums, values_of(d), values_of(c0), -1, "RowVectorXd -=");

  M big = random_matrix<M>(rows + 2, cols + 3);
  const M big0 = big;
  big.row(1).segment(2, cols) += egpu::gpu(a.colwise().sum());
  check_updated(expected, sums, values_of(big.row(1).segment(2, cols)), values_of(big0.row(1).segment(2, cols)), 1,
                "a segment of a row of a matrix +=");
  M rest = big, rest0 = big0;
  rest.row(1).segment(2, cols).setZero();
  rest0.row(1).segment(2, cols).setZero();
  BOOST_TEST(same_bits(rest, rest0), "elements outside the destination changed");

  // A column vector takes a row of values (Eigen transposes the destination).
  Eigen::VectorXd column(3);
  column = egpu::gpu(a.colwise().sum());
  BOOST_TEST_REQUIRE(column.size() == cols);
  check_results(expected, sums, column.data(), "VectorXd = colwise().sum()");

  std::vector<double> buffer(3 * cols, 5.0);
  Eigen::Map<Eigen::RowVectorXd, 0, Eigen::InnerStride<>> strided(buffer.data(), cols, Eigen::InnerStride<>(3));
  strided -= egpu::gpu(a.colwise().sum());
  std::vector<double> fives(static_cast<std::size_t>(cols), 5.0);
  check_updated(expected, sums, values_of(strided), fives, -1, "Map with inner stride 3 -=");
  for (std::size_t k = 0; k < buffer.size(); ++k)
    if (k % 3 != 0) BOOST_TEST(buffer[k] == 5.0, "element " << k << " outside the Map changed");

  // rowwise into a column of a row-major matrix, complex.
  using C = std::complex<float>;
  const Mat<C> z = random_matrix<Mat<C>>(rows, cols);
  RowMat<C> target = random_matrix<RowMat<C>>(rows, 4);
  const RowMat<C> target0 = target;
  target.col(2) += egpu::gpu(z.rowwise().sum());
  const ed::Reduction row_sums = reduction(ReduceOp::sum, ReduceAxis::each_row);
  check_updated(expected_of(z, row_sums, false), row_sums, values_of(target.col(2)), values_of(target0.col(2)), 1,
                "complex<float> column of a row-major matrix +=");
}

// The destination is (part of) the operand: the reduction reads the
// operand as it was before the call.
BOOST_AUTO_TEST_CASE(updating_the_operand_itself) {
  using M = Eigen::MatrixXd;
  const ed::Reduction sums = reduction(ReduceOp::sum, ReduceAxis::each_column);
  {
    M a = random_matrix<M>(11, 6);
    const M a0 = a;
    a.row(0) += egpu::gpu(a.colwise().sum());
    check_updated(expected_of(a0, sums, false), sums, values_of(a.row(0)), values_of(a0.row(0)), 1,
                  "a.row(0) += gpu(a.colwise().sum())");
    BOOST_TEST(same_bits(M(a.bottomRows(10)), M(a0.bottomRows(10))));
  }
  {
    // Element j of the destination is a(j, 0), read by column 0's sum: every
    // sum must see a as it was.
    M a = random_matrix<M>(8, 8);
    const M a0 = a;
    a.col(0).transpose() += egpu::gpu(a.colwise().sum());
    check_updated(expected_of(a0, sums, false), sums, values_of(a.col(0)), values_of(a0.col(0)), 1,
                  "a.col(0).transpose() += gpu(a.colwise().sum())");
  }
  {
    // v is a Map over row 2 of a column-major a.
    M a = random_matrix<M>(9, 5);
    const M a0 = a;
    Eigen::Map<Eigen::VectorXd, 0, Eigen::InnerStride<>> v(&a(2, 0), 5, Eigen::InnerStride<>(9));
    v.transpose() -= egpu::gpu(a.colwise().sum());
    check_updated(expected_of(a0, sums, false), sums, values_of(a.row(2)), values_of(a0.row(2)), -1,
                  "v.transpose() -= gpu(a.colwise().sum()), v a row of a");
  }
  {
    M a = random_matrix<M>(6, 6);
    const M a0 = a;
    const ed::Reduction norms = reduction(ReduceOp::sum, ReduceAxis::each_row);
    a.col(5) += egpu::gpu(a.rowwise().squaredNorm());
    check_updated(expected_of(a0, norms, true), norms, values_of(a.col(5)), values_of(a0.col(5)), 1,
                  "a.col(5) += gpu(a.rowwise().squaredNorm())");
  }
}

BOOST_AUTO_TEST_CASE(a_failed_call_leaves_the_destination) {
  using M = Eigen::MatrixXcd;
  const M a = random_matrix<M>(12, 7);
  Eigen::RowVectorXcd d = random_matrix<Eigen::RowVectorXcd>(1, 7);
  const Eigen::RowVectorXcd d0 = d;
  rec::clear();
  rec::fail_next_call();
  BOOST_CHECK_THROW(d += egpu::gpu(a.colwise().sum()), egpu::error);
  BOOST_TEST(same_bits(d, d0), "a failed += changed the destination");
  rec::fail_next_call();
  BOOST_CHECK_THROW(d = egpu::gpu(a.colwise().mean()), egpu::error);
  BOOST_TEST(same_bits(d, d0), "a failed = changed the destination");
  BOOST_TEST(rec::reduce_calls() == 2);
  rec::fail_next_call();
  BOOST_CHECK_THROW((void)egpu::gpu(a).sum(), egpu::error);
  // The next call runs.
  d += egpu::gpu(a.colwise().sum());
  BOOST_TEST(!same_bits(d, d0));
  rec::clear();
}

BOOST_AUTO_TEST_CASE(wrong_destination_sizes_throw) {
  using M = Eigen::MatrixXd;
  const M a = random_matrix<M>(6, 4);
  rec::clear();
  Eigen::RowVectorXd longer = random_matrix<Eigen::RowVectorXd>(1, 5);
  const Eigen::RowVectorXd longer0 = longer;
  BOOST_CHECK_THROW(longer += egpu::gpu(a.colwise().sum()), egpu::error);
  BOOST_CHECK_THROW(longer -= egpu::gpu(a.colwise().norm()), egpu::error);
  BOOST_TEST(same_bits(longer, longer0));
  Eigen::Matrix<double, 1, 3> fixed = Eigen::Matrix<double, 1, 3>::Ones();
  BOOST_CHECK_THROW(fixed = egpu::gpu(a.colwise().sum()), egpu::error);
  BOOST_TEST((fixed.array() == 1.0).all());
  M big = random_matrix<M>(8, 8);
  const M big0 = big;
  BOOST_CHECK_THROW(big.col(0) = egpu::gpu(a.rowwise().sum()), egpu::error);
  BOOST_CHECK_THROW(big.row(0).head(3) = egpu::gpu(a.colwise().maxCoeff()), egpu::error);
  BOOST_CHECK_THROW(big.col(1).head(7) += egpu::gpu(a.rowwise().mean()), egpu::error);
  BOOST_TEST(same_bits(big, big0));
  BOOST_TEST(rec::reduce_calls() == 0, "a size check came after the call");
  // `=` resizes a resizable destination.
  Eigen::RowVectorXd resized(2);
  resized = egpu::gpu(a.colwise().sum());
  BOOST_TEST(resized.size() == 4);
  rec::clear();
}

BOOST_AUTO_TEST_CASE(empty_operands) {
  const Eigen::MatrixXd none(0, 3), flat(4, 0);
  BOOST_TEST(egpu::gpu(none).sum() == 0.0);
  BOOST_TEST(egpu::gpu(none).prod() == 1.0);
  BOOST_TEST(egpu::gpu(none).squaredNorm() == 0.0);
  BOOST_TEST(egpu::gpu(none).count() == 0);
  BOOST_TEST(egpu::gpu(none.array() > 0.0).all());
  BOOST_TEST(!egpu::gpu(none.array() > 0.0).any());
  BOOST_CHECK_THROW(egpu::gpu(none).mean(), egpu::error);
  BOOST_CHECK_THROW(egpu::gpu(none).minCoeff(), egpu::error);
  BOOST_CHECK_THROW(egpu::gpu(flat).maxCoeff(), egpu::error);
  const Eigen::RowVectorXd zeros = egpu::gpu(none.colwise().sum());
  BOOST_TEST(zeros.size() == 3);
  BOOST_TEST((zeros.array() == 0.0).all());
  const Eigen::RowVectorXd ones = egpu::gpu(none.colwise().prod());
  BOOST_TEST((ones.array() == 1.0).all());
  const Eigen::VectorXd nothing = egpu::gpu(none.rowwise().maxCoeff());
  BOOST_TEST(nothing.size() == 0);
  if (!kEigenAsserts) BOOST_CHECK_THROW(Eigen::RowVectorXd m = egpu::gpu(none.colwise().minCoeff()), egpu::error);
  BOOST_CHECK_THROW(Eigen::VectorXd m = egpu::gpu(flat.rowwise().mean()), egpu::error);
  const Eigen::RowVectorXd no_columns = egpu::gpu(flat.colwise().maxCoeff());
  BOOST_TEST(no_columns.size() == 0);
}

// NaN and infinities through the adapter: min and max propagate NaN, and
// sums follow IEEE (the backend's long double arithmetic).
BOOST_AUTO_TEST_CASE(nan_and_infinities) {
  Eigen::MatrixXd a = random_matrix<Eigen::MatrixXd>(5, 4);
  a(3, 2) = std::numeric_limits<double>::quiet_NaN();
  BOOST_TEST(std::isnan(egpu::gpu(a).minCoeff()));
  BOOST_TEST(std::isnan(egpu::gpu(a).maxCoeff()));
  BOOST_TEST(std::isnan(egpu::gpu(a).sum()));
  const Eigen::RowVectorXd mins = egpu::gpu(a.colwise().minCoeff());
  for (Index j = 0; j < 4; ++j) BOOST_TEST(std::isnan(mins(j)) == (j == 2), "column " << j);
  a(3, 2) = std::numeric_limits<double>::infinity();
  BOOST_TEST(egpu::gpu(a).sum() == std::numeric_limits<double>::infinity());
  BOOST_TEST(egpu::gpu(a).maxCoeff() == std::numeric_limits<double>::infinity());
  a(0, 2) = -std::numeric_limits<double>::infinity();
  BOOST_TEST(std::isnan(egpu::gpu(a).sum()));
  BOOST_TEST(egpu::gpu(a).minCoeff() == -std::numeric_limits<double>::infinity());
  const Eigen::RowVectorXd sums = egpu::gpu(a.colwise().sum());
  BOOST_TEST(std::isnan(sums(2)));
  BOOST_TEST(std::isfinite(sums(1)));
}
