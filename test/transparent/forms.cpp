// Transparent mode on ordinary Eigen code: every dense product form Eigen
// has (plain, transposed, adjoint, conjugate, scalar factors on either side,
// blocks, Maps with outer and inner strides, row-major, fixed-size small,
// 1 x N and N x 1, aliasing A = A * B, +=, -=, products nested in
// expressions and in one another, matrix-vector), NaN and Inf, and the
// decompositions whose blocked updates are products (PartialPivLU) and rank
// updates (LLT), rank updates of either triangle, for the four scalars, at
// sizes above and below Eigen's coefficient-based threshold.
//
// The same file is built three ways: without EGPU_TRANSPARENT (the
// reference: plain CPU Eigen, which writes every result and the seed of its
// data to $EGPU_FORMS_FILE), and with egpu::transparent, without OpenMP for
// two scalars and with it for the other two, which read that file, run the
// same code on the same data and compare. On a GPU (EGPU_DISPATCH=gpu in the test), the products must
// have reached it, one library call per product even where OpenMP splits
// Eigen's own.
#define BOOST_TEST_MODULE transparent_forms
#include <boost/test/unit_test.hpp>

#include <Eigen/Dense>

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#ifdef EGPU_TRANSPARENT
#include "egpu/detail/testing.hpp"
#include "egpu/device.hpp"
#endif

namespace {

using Eigen::Index;
template <class S> using Mat = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic>;
template <class S> using RowMat = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class S> using Real = typename Eigen::NumTraits<S>::Real;

template <class S> std::string scalar_tag() {
  if constexpr (std::is_same_v<S, float>) return "float";
  else if constexpr (std::is_same_v<S, double>) return "double";
  else if constexpr (std::is_same_v<S, std::complex<float>>) return "complex<float>";
  else return "complex<double>";
}

// The results of the reference run, by name: size and the elements as
// complex<double>.
struct Stored {
  Index rows = 0, cols = 0;
  std::vector<std::complex<double>> values;
};

struct Forms {
  bool writing = false;
  std::uint64_t seed = 0;
  std::map<std::string, Stored> stored;
  std::ofstream out;

  Forms() {
    const char* path = std::getenv("EGPU_FORMS_FILE");
    BOOST_TEST_REQUIRE(path != nullptr, "EGPU_FORMS_FILE names the reference results' file");
#ifdef EGPU_TRANSPARENT
    std::ifstream in(path, std::ios::binary);
    BOOST_TEST_REQUIRE(bool(in), "the reference run wrote " << path);
    in.read(reinterpret_cast<char*>(&seed), sizeof seed);
    std::uint64_t length = 0;
    while (in.read(reinterpret_cast<char*>(&length), sizeof length)) {
      std::string name(length, '\0');
      Stored s;
      in.read(name.data(), static_cast<std::streamsize>(length));
      in.read(reinterpret_cast<char*>(&s.rows), sizeof s.rows);
      in.read(reinterpret_cast<char*>(&s.cols), sizeof s.cols);
      s.values.resize(static_cast<std::size_t>(s.rows * s.cols));
      in.read(reinterpret_cast<char*>(s.values.data()), static_cast<std::streamsize>(s.values.size() * 16));
      stored[name] = std::move(s);
    }
#else
    writing = true;
    seed = std::random_device()();
    out.open(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(&seed), sizeof seed);
#endif
    BOOST_TEST_MESSAGE("data seed " << seed);
  }
};
Forms& forms() {
  static Forms f;
  return f;
}

// Each scalar's cases draw from their own stream, seeded from the run's seed
// and the scalar, so that a build running some of them sees the same data.
std::mt19937_64& rng() {
  static std::mt19937_64 g(forms().seed);
  return g;
}
template <class S> void seed_for() {
  const std::uint64_t k = std::is_same_v<S, float> ? 1 : std::is_same_v<S, double> ? 2
                          : std::is_same_v<S, std::complex<float>> ? 3 : 4;
  rng().seed(forms().seed * 4 + k);
}

template <class S> S random_scalar() {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  if constexpr (Eigen::NumTraits<S>::IsComplex)
    return S(Real<S>(u(rng())), Real<S>(u(rng())));
  else
    return S(u(rng()));
}
template <class S> Mat<S> random(Index rows, Index cols) {
  Mat<S> m(rows, cols);
  for (Index j = 0; j < cols; ++j)
    for (Index i = 0; i < rows; ++i) m(i, j) = random_scalar<S>();
  return m;
}

// Writes the result (reference) or compares it with the reference's:
// NaN and Inf where the reference has them, elsewhere within
// 20 k eps of the reference's norm (k: the product's inner size).
template <class Derived>
void result(const std::string& name, const Eigen::MatrixBase<Derived>& value, Index k) {
  using S = typename Derived::Scalar;
  Forms& f = forms();
  if (f.writing) {
    const std::uint64_t length = name.size();
    const Index rows = value.rows(), cols = value.cols();
    f.out.write(reinterpret_cast<const char*>(&length), sizeof length);
    f.out.write(name.data(), static_cast<std::streamsize>(length));
    f.out.write(reinterpret_cast<const char*>(&rows), sizeof rows);
    f.out.write(reinterpret_cast<const char*>(&cols), sizeof cols);
    for (Index j = 0; j < cols; ++j)
      for (Index i = 0; i < rows; ++i) {
        const std::complex<double> z(value(i, j));
        f.out.write(reinterpret_cast<const char*>(&z), sizeof z);
      }
    return;
  }
  const auto found = f.stored.find(name);
  BOOST_TEST_REQUIRE((found != f.stored.end()), "the reference has " << name);
  const Stored& ref = found->second;
  BOOST_TEST_REQUIRE((ref.rows == value.rows() && ref.cols == value.cols()), name << ": size");
  double norm = 0, err = 0;
  bool same_specials = true;
  for (Index j = 0; j < ref.cols; ++j)
    for (Index i = 0; i < ref.rows; ++i) {
      const std::complex<double> want = ref.values[static_cast<std::size_t>(i + j * ref.rows)];
      const std::complex<double> got(value(i, j));
      const bool want_finite = std::isfinite(want.real()) && std::isfinite(want.imag());
      if (!want_finite) {
        same_specials = same_specials && (std::isnan(want.real()) == std::isnan(got.real())) &&
                        (std::isinf(want.real()) == std::isinf(got.real()));
        continue;
      }
      norm += std::norm(want);
      err += std::norm(got - want);  // NaN where got is not finite
    }
  const double eps = static_cast<double>(std::numeric_limits<Real<S>>::epsilon());
  const double bound = 20.0 * static_cast<double>(std::max<Index>(k, 1)) * eps * (std::sqrt(norm) + 1e-30);
  BOOST_TEST(same_specials, name << ": NaN and Inf where the reference has them");
  BOOST_TEST(std::sqrt(err) <= bound, name << ": error " << std::sqrt(err) << " bound " << bound);
}

// Counts the library's GPU products across a scope (transparent builds on a
// GPU): at least `least`, or exactly `exactly` when that is not -1.
struct GpuCalls {
  std::size_t before = 0;
  GpuCalls() {
#ifdef EGPU_TRANSPARENT
    before = egpu::detail::products_run_on_gpu();
#endif
  }
  void expect(const std::string& what, long exactly, long least = 0) const {
#ifdef EGPU_TRANSPARENT
    if (!egpu::has_device() || std::getenv("EGPU_DISPATCH") == nullptr ||
        std::string(std::getenv("EGPU_DISPATCH")) != "gpu")
      return;
    const long calls = static_cast<long>(egpu::detail::products_run_on_gpu() - before);
    if (exactly >= 0)
      BOOST_TEST(calls == exactly, what << ": " << calls << " GPU products");
    else
      BOOST_TEST(calls >= least, what << ": " << calls << " GPU products");
#else
    (void)what, (void)exactly, (void)least;
#endif
  }
};

template <class S>
void product_forms(const std::string& tag, Index m, Index n, Index k) {
  const Mat<S> A = random<S>(m, k), B = random<S>(k, n), C0 = random<S>(m, n);
  const Mat<S> At = random<S>(k, m), Bt = random<S>(n, k);
  const S s = random_scalar<S>(), t = random_scalar<S>();
  {
    // One call, whatever the size (EGPU_DISPATCH=gpu sends small ones too).
    GpuCalls calls;
    Mat<S> C = A * B;
    calls.expect(tag + " C = A * B", 1);
    result(tag + " C = A * B", C, k);
  }
  {
    GpuCalls calls;
    Mat<S> C = C0;
    C.noalias() += s * At.adjoint() * B;
    calls.expect(tag + " += s A^H B", 1);
    result(tag + " C.noalias() += s * At.adjoint() * B", C, k);
  }
  {
    Mat<S> C = C0;
    C.noalias() -= A * Bt.transpose() * s;
    result(tag + " C.noalias() -= A * Bt^T * s", C, k);
  }
  {
    Mat<S> C = At.transpose() * Bt.transpose();
    result(tag + " At^T * Bt^T", C, k);
    C = A.conjugate() * B;
    result(tag + " conj(A) * B", C, k);
    C = (s * A) * (B * t);
    result(tag + " (s A) (B t)", C, k);
    C = -(A * B);
    result(tag + " -(A B)", C, k);
  }
  {
    const RowMat<S> Ar = A, Br = B;
    RowMat<S> C = Ar * Br;
    result(tag + " row-major", C, k);
    Mat<S> D = Ar * B;
    result(tag + " row-major times column-major", D, k);
    RowMat<S> E(m, n);
    E.noalias() = A * Br;
    result(tag + " into row-major", E, k);
  }
  {
    const Mat<S> big = random<S>(m + 5, k + 7);
    Mat<S> C = random<S>(m + 2, n + 3);
    C.block(1, 2, m, n).noalias() = big.block(3, 4, m, k) * B;
    result(tag + " blocks", C, k);
    C.block(1, 2, m, n) += big.block(3, 4, m, k) * B;
    result(tag + " blocks +=", C, k);
  }
  {
    std::vector<S> a((m + 3) * k), b(2 * k * n + 1);
    for (S& x : a) x = random_scalar<S>();
    for (S& x : b) x = random_scalar<S>();
    const Eigen::Map<const Mat<S>, 0, Eigen::OuterStride<>> Am(a.data(), m, k, Eigen::OuterStride<>(m + 3));
    const Eigen::Map<const Mat<S>, 0, Eigen::Stride<Eigen::Dynamic, 2>> Bm(b.data(), k, n,
                                                                           Eigen::Stride<Eigen::Dynamic, 2>(2 * k, 2));
    Mat<S> C = Am * Bm;
    result(tag + " Maps with strides", C, k);
  }
  {
    Mat<S> X = random<S>(m, m);
    const Mat<S> Y = random<S>(m, m);
    X = X * Y;
    result(tag + " aliasing X = X * Y", X, m);
  }
  {
    Mat<S> D = A * B + C0;
    result(tag + " A * B + C0", D, k);
    D = s * (A * B) - C0 * t;
    result(tag + " s (A B) - C0 t", D, k);
    D = (A * B).cwiseAbs2().template cast<S>();
    result(tag + " |A B|^2", D, k * 2);
    const Mat<S> E = A * B * random<S>(n, 5);
    result(tag + " (A B) E", E, k * n);
  }
  {
    Mat<S> r = A.topRows(1) * B, c = A * B.leftCols(1);
    result(tag + " 1 x N", r, k);
    result(tag + " N x 1", c, k);
    const Eigen::Matrix<S, Eigen::Dynamic, 1> v = A * random<S>(k, 1).col(0);
    result(tag + " matrix-vector", v, k);
  }
  {
    // NaN (row 0 of the result) and, for real scalars, Inf (row 1): complex
    // products may form Inf - Inf from an Inf operand in one order and not
    // in another.
    Mat<S> An = A;
    An(0, 0) = std::numeric_limits<Real<S>>::quiet_NaN();
    if (m > 1 && !Eigen::NumTraits<S>::IsComplex) An(1, 0) = std::numeric_limits<Real<S>>::infinity();
    const Mat<S> C = An * B;
    result(tag + " NaN and Inf", C, k);
  }
}

template <class S>
void fixed_forms() {
  const Eigen::Matrix<S, 4, 4> A = random<S>(4, 4), B = random<S>(4, 4);
  const Eigen::Matrix<S, 4, 4> C = A * B;
  result("fixed 4x4 " + scalar_tag<S>(), C, 4);
  const Eigen::Matrix<S, 3, 2> D = random<S>(3, 5) * random<S>(5, 2);
  result("fixed 3x2 " + scalar_tag<S>(), D, 5);
}

template <class S>
void decompositions(Index n) {
  const std::string tag = scalar_tag<S>() + " n=" + std::to_string(n);
  const Mat<S> A = random<S>(n, n) + Mat<S>::Identity(n, n) * S(Real<S>(n));
  const Mat<S> b = random<S>(n, 3);
  {
    GpuCalls calls;
    const Mat<S> x = A.partialPivLu().solve(b);
    calls.expect(tag + " PartialPivLU", -1, n >= 256 ? 1 : 0);
    result(tag + " PartialPivLU solve", x, n);
  }
  {
    // LLT: its blocked update is a rank update of the lower triangle.
    const Mat<S> H = (A + A.adjoint()) * S(Real<S>(0.5));  // self-adjoint, diagonally dominant
    GpuCalls calls;
    const Mat<S> x = H.llt().solve(b);
    calls.expect(tag + " LLT", -1, n >= 300 ? 1 : 0);
    result(tag + " LLT solve", x, n);
  }
  {
    // Rank updates of either triangle, column- and row-major: the other
    // triangle keeps its values (the whole matrix is compared).
    const Mat<S> U = random<S>(n, 70), C0 = random<S>(n, n);
    const Real<S> alpha(-0.5);
    GpuCalls calls;
    Mat<S> lower = C0, upper = C0;
    RowMat<S> row_lower = C0;
    lower.template selfadjointView<Eigen::Lower>().rankUpdate(U, alpha);
    upper.template selfadjointView<Eigen::Upper>().rankUpdate(U, alpha);
    row_lower.template selfadjointView<Eigen::Lower>().rankUpdate(U, alpha);
    calls.expect(tag + " rankUpdate", -1, n >= 300 ? 3 : 0);
    result(tag + " rankUpdate lower", lower, 70);
    result(tag + " rankUpdate upper", upper, 70);
    result(tag + " rankUpdate row-major lower", row_lower, 70);
  }
}

template <class S>
void all_forms(const char* name) {
  seed_for<S>();
  product_forms<S>(std::string(name) + " 97x131x113", 97, 131, 113);
  product_forms<S>(std::string(name) + " 300x40x257", 300, 40, 257);
  product_forms<S>(std::string(name) + " 5x3x7", 5, 3, 7);
  product_forms<S>(std::string(name) + " 2x2x2", 2, 2, 2);
  fixed_forms<S>();
  decompositions<S>(300);
}

}  // namespace

// EGPU_FORMS_SCALARS: 1 float and complex<double> (the build without
// OpenMP), 2 double and complex<float> (the OpenMP build); unset, all four
// (the reference, which every other build reads).
#if !defined(EGPU_FORMS_SCALARS) || EGPU_FORMS_SCALARS == 1
BOOST_AUTO_TEST_CASE(float_forms) { all_forms<float>("float"); }
BOOST_AUTO_TEST_CASE(complex_double_forms) { all_forms<std::complex<double>>("complex<double>"); }
#endif
#if !defined(EGPU_FORMS_SCALARS) || EGPU_FORMS_SCALARS == 2
BOOST_AUTO_TEST_CASE(double_forms) { all_forms<double>("double"); }
BOOST_AUTO_TEST_CASE(complex_float_forms) { all_forms<std::complex<float>>("complex<float>"); }
#endif
