// The adapter against a recording fake backend (test/support/recording_backend.cpp):
// what egpu::gpu() extracts from Eigen expressions into GemmDesc, and the
// results of every assignment form, computed by the fake backend from the
// descriptor alone, against Eigen. No GPU, no CUDA: links egpu_core + Eigen.
#define BOOST_TEST_MODULE adapter_descriptor
#include <boost/test/unit_test.hpp>

#include <complex>
#include <cstdio>
#include <functional>
#include <vector>

#include "egpu/egpu.hpp"
#include "support/recording_backend.hpp"
#include "support/test_support.hpp"

using namespace egpu_test;
using egpu::detail::GemmDesc;
using egpu::detail::MatrixDesc;
using egpu::detail::ScalarKind;
using Eigen::Index;
namespace rec = egpu_test::recording;


namespace {

const GemmDesc& only_call() {
  BOOST_REQUIRE_EQUAL(rec::calls().size(), 1u);
  return rec::calls().front().desc;
}

template <class X> const void* ptr(const X& x) { return static_cast<const void*>(x.data()); }

void check_matrix_desc(const MatrixDesc& d, const void* data, Index rows, Index cols, Index rs, Index cs, bool conj) {
  BOOST_TEST(d.data == data);
  BOOST_TEST(d.rows == rows);
  BOOST_TEST(d.cols == cols);
  BOOST_TEST(d.row_stride == rs);
  BOOST_TEST(d.col_stride == cs);
  BOOST_TEST(d.conj == conj);
}

}  // namespace

// ---------------------------------------------------------------------------
// What the adapter extracts.

BOOST_AUTO_TEST_CASE(plain_column_major_product) {
  Eigen::MatrixXd a = random_matrix<Eigen::MatrixXd>(5, 7), b = random_matrix<Eigen::MatrixXd>(7, 3), c(5, 3);
  rec::clear();
  c.noalias() = egpu::gpu(a * b);
  const GemmDesc& d = only_call();
  BOOST_TEST((d.scalar == ScalarKind::f64));
  BOOST_TEST(d.m == 5);
  BOOST_TEST(d.n == 3);
  BOOST_TEST(d.k == 7);
  check_matrix_desc(d.a, ptr(a), 5, 7, 1, 5, false);
  check_matrix_desc(d.b, ptr(b), 7, 3, 1, 7, false);
  check_matrix_desc(d.c, ptr(c), 5, 3, 1, 5, false);
  BOOST_TEST(d.alpha == std::complex<double>(1, 0));
  BOOST_TEST(d.beta == std::complex<double>(0, 0));
  BOOST_TEST(d.beta_is_zero);
  BOOST_TEST(c.isApprox(a * b));
}

BOOST_AUTO_TEST_CASE(scalar_kinds) {
  {
    Eigen::MatrixXf a = Eigen::MatrixXf::Random(3, 3), c(3, 3);
    rec::clear();
    c.noalias() = egpu::gpu(a * a);
    BOOST_TEST((only_call().scalar == ScalarKind::f32));
  }
  {
    Eigen::MatrixXcf a = Eigen::MatrixXcf::Random(3, 3), c(3, 3);
    rec::clear();
    c.noalias() = egpu::gpu(a * a);
    BOOST_TEST((only_call().scalar == ScalarKind::c32));
  }
  {
    Eigen::MatrixXcd a = Eigen::MatrixXcd::Random(3, 3), c(3, 3);
    rec::clear();
    c.noalias() = egpu::gpu(a * a);
    BOOST_TEST((only_call().scalar == ScalarKind::c64));
  }
}

BOOST_AUTO_TEST_CASE(row_major_operands_and_destination) {
  using RM = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  RM a = random_matrix<RM>(4, 6), b = random_matrix<RM>(6, 5), c(4, 5);
  rec::clear();
  c.noalias() = egpu::gpu(a * b);
  const GemmDesc& d = only_call();
  check_matrix_desc(d.a, ptr(a), 4, 6, 6, 1, false);
  check_matrix_desc(d.b, ptr(b), 6, 5, 5, 1, false);
  check_matrix_desc(d.c, ptr(c), 4, 5, 5, 1, false);
  BOOST_TEST(c.isApprox(RM(a * b)));
}

BOOST_AUTO_TEST_CASE(transposes_swap_strides) {
  Eigen::MatrixXd a = random_matrix<Eigen::MatrixXd>(7, 5), b = random_matrix<Eigen::MatrixXd>(3, 7), c(5, 3);
  rec::clear();
  c.noalias() = egpu::gpu(a.transpose() * b.transpose());
  const GemmDesc& d = only_call();
  BOOST_TEST(d.m == 5);
  BOOST_TEST(d.n == 3);
  BOOST_TEST(d.k == 7);
  check_matrix_desc(d.a, ptr(a), 5, 7, 7, 1, false);
  check_matrix_desc(d.b, ptr(b), 7, 3, 3, 1, false);
  BOOST_TEST(c.isApprox(a.transpose() * b.transpose()));
}

BOOST_AUTO_TEST_CASE(transposed_destination) {
  Eigen::MatrixXd a = random_matrix<Eigen::MatrixXd>(4, 6), b = random_matrix<Eigen::MatrixXd>(6, 5), c(5, 4);
  rec::clear();
  c.transpose().noalias() = egpu::gpu(a * b);
  const GemmDesc& d = only_call();
  check_matrix_desc(d.c, ptr(c), 4, 5, 5, 1, false);
  BOOST_TEST(c.isApprox((a * b).transpose()));
}

BOOST_AUTO_TEST_CASE(adjoint_and_conjugate_set_conj_flags) {
  using M = Eigen::MatrixXcd;
  M a = random_matrix<M>(6, 4), b = random_matrix<M>(6, 3), c(4, 3);
  rec::clear();
  c.noalias() = egpu::gpu(a.adjoint() * b.conjugate());
  {
    const GemmDesc& d = rec::calls().at(0).desc;
    check_matrix_desc(d.a, ptr(a), 4, 6, 6, 1, true);
    check_matrix_desc(d.b, ptr(b), 6, 3, 1, 6, true);
  }
  BOOST_TEST(c.isApprox(a.adjoint() * b.conjugate()));

  M a2 = random_matrix<M>(4, 6), b2 = random_matrix<M>(3, 6);
  rec::clear();
  c.noalias() = egpu::gpu(a2.conjugate() * b2.adjoint());
  {
    const GemmDesc& d = only_call();
    check_matrix_desc(d.a, ptr(a2), 4, 6, 1, 4, true);
    check_matrix_desc(d.b, ptr(b2), 6, 3, 3, 1, true);
  }
  BOOST_TEST(c.isApprox(a2.conjugate() * b2.adjoint()));

  // Real adjoint is a plain transpose: no conj flag.
  Eigen::MatrixXd r = random_matrix<Eigen::MatrixXd>(6, 4), s = random_matrix<Eigen::MatrixXd>(6, 3), t(4, 3);
  rec::clear();
  t.noalias() = egpu::gpu(r.adjoint() * s);
  {
    const GemmDesc& d = only_call();
    check_matrix_desc(d.a, ptr(r), 4, 6, 6, 1, false);
    BOOST_TEST(!d.b.conj);
  }
}

BOOST_AUTO_TEST_CASE(scalar_factors_become_alpha) {
  Eigen::MatrixXd a = random_matrix<Eigen::MatrixXd>(4, 5), b = random_matrix<Eigen::MatrixXd>(5, 3), c(4, 3);
  auto alpha_of = [&](auto&& assign) {
    rec::clear();
    assign();
    return only_call().alpha;
  };
  BOOST_TEST(alpha_of([&] { c.noalias() = egpu::gpu(2.0 * a * b); }) == std::complex<double>(2, 0));
  BOOST_TEST(c.isApprox(2.0 * a * b));
  BOOST_TEST(alpha_of([&] { c.noalias() = egpu::gpu(a * b * 3.0); }) == std::complex<double>(3, 0));
  BOOST_TEST(c.isApprox(a * b * 3.0));
  BOOST_TEST(alpha_of([&] { c.noalias() = egpu::gpu(-(a * b)); }) == std::complex<double>(-1, 0));
  BOOST_TEST(c.isApprox(-(a * b)));
  BOOST_TEST(alpha_of([&] { c.noalias() = egpu::gpu(2.0 * (a * b)); }) == std::complex<double>(2, 0));
  BOOST_TEST(c.isApprox(2.0 * (a * b)));
  BOOST_TEST(alpha_of([&] { c.noalias() = egpu::gpu(-a * b); }) == std::complex<double>(-1, 0));
  BOOST_TEST(c.isApprox(-a * b));
  BOOST_TEST(alpha_of([&] { c.noalias() = egpu::gpu((a * 0.5) * (4.0 * b)); }) == std::complex<double>(2, 0));
  BOOST_TEST(c.isApprox((a * 0.5) * (4.0 * b)));
  BOOST_TEST(alpha_of([&] { c.noalias() = egpu::gpu(2.0 * a.transpose().transpose() * b * 1.5); }) ==
             std::complex<double>(3, 0));
  BOOST_TEST(c.isApprox(3.0 * a * b));
  BOOST_TEST(alpha_of([&] { c.noalias() = egpu::gpu(-(2.0 * (a * b)) * 0.25); }) == std::complex<double>(-0.5, 0));
  BOOST_TEST(c.isApprox(-0.5 * a * b));
  // The factor passes through unchanged to the descriptor: no direct write of
  // the unscaled product first.
  BOOST_TEST(rec::calls().size() == 1u);
  BOOST_TEST(rec::calls().front().desc.a.data == ptr(a));

  Eigen::MatrixXcd x = random_matrix<Eigen::MatrixXcd>(3, 4), y = random_matrix<Eigen::MatrixXcd>(4, 2), z(3, 2);
  const std::complex<double> s(1.5, -2.0);
  rec::clear();
  z.noalias() = egpu::gpu(s * x.adjoint().adjoint() * y);
  BOOST_TEST(only_call().alpha == s);
  BOOST_TEST(z.isApprox(s * x * y));
  rec::clear();
  z.noalias() = egpu::gpu(x * (y * s));
  BOOST_TEST(only_call().alpha == s);
  BOOST_TEST(z.isApprox(s * x * y));
}

BOOST_AUTO_TEST_CASE(assignment_forms_set_beta) {
  Eigen::MatrixXd a = random_matrix<Eigen::MatrixXd>(4, 5), b = random_matrix<Eigen::MatrixXd>(5, 3);
  Eigen::MatrixXd c0 = random_matrix<Eigen::MatrixXd>(4, 3), c = c0;
  struct Expect {
    double alpha, beta;
    bool beta_is_zero;
  };
  auto check = [&](const Expect& e) {
    const GemmDesc& d = only_call();
    BOOST_TEST(d.alpha == std::complex<double>(e.alpha, 0));
    BOOST_TEST(d.beta == std::complex<double>(e.beta, 0));
    BOOST_TEST(d.beta_is_zero == e.beta_is_zero);
    BOOST_TEST(d.c.data == ptr(c));
  };
  rec::clear();
  c = egpu::gpu(a * b);  // no aliasing: straight into c
  check({1, 0, true});
  BOOST_TEST(c.isApprox(a * b));
  rec::clear();
  c.noalias() = egpu::gpu(2.0 * a * b);
  check({2, 0, true});
  c = c0;
  rec::clear();
  c += egpu::gpu(a * b);
  check({1, 1, false});
  BOOST_TEST(c.isApprox(c0 + a * b));
  c = c0;
  rec::clear();
  c.noalias() += egpu::gpu(2.0 * a * b);
  check({2, 1, false});
  BOOST_TEST(c.isApprox(c0 + 2.0 * a * b));
  c = c0;
  rec::clear();
  c -= egpu::gpu(a * b);
  check({-1, 1, false});
  BOOST_TEST(c.isApprox(c0 - a * b));
  c = c0;
  rec::clear();
  c.noalias() -= egpu::gpu(-3.0 * a * b);
  check({3, 1, false});
  BOOST_TEST(c.isApprox(c0 + 3.0 * a * b));
}

BOOST_AUTO_TEST_CASE(strided_blocks_and_maps) {
  Eigen::MatrixXd big_a = random_matrix<Eigen::MatrixXd>(10, 12), big_b = random_matrix<Eigen::MatrixXd>(9, 8);
  Eigen::MatrixXd big_c = random_matrix<Eigen::MatrixXd>(11, 7);
  const Eigen::MatrixXd big_c0 = big_c;
  auto a = big_a.block(2, 3, 5, 6);
  auto b = big_b.block(1, 2, 6, 4);
  auto c = big_c.block(3, 1, 5, 4);
  rec::clear();
  c.noalias() = egpu::gpu(a * b);
  {
    const GemmDesc& d = only_call();
    check_matrix_desc(d.a, &big_a(2, 3), 5, 6, 1, 10, false);
    check_matrix_desc(d.b, &big_b(1, 2), 6, 4, 1, 9, false);
    check_matrix_desc(d.c, &big_c(3, 1), 5, 4, 1, 11, false);
  }
  Eigen::MatrixXd expect = big_c0;
  expect.block(3, 1, 5, 4) = big_a.block(2, 3, 5, 6) * big_b.block(1, 2, 6, 4);
  BOOST_TEST(big_c.isApprox(expect));

  // Map with inner and outer strides, row-major Map destination.
  std::vector<double> abuf(200), bbuf(200), cbuf(200, 0.0);
  for (auto& v : abuf) v = random_scalar<double>();
  for (auto& v : bbuf) v = random_scalar<double>();
  using Str = Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>;
  Eigen::Map<Eigen::MatrixXd, 0, Str> am(abuf.data() + 1, 4, 5, Str(9, 2));  // inner 2, outer 9
  Eigen::Map<Eigen::MatrixXd, 0, Eigen::OuterStride<>> bm(bbuf.data() + 3, 5, 3, Eigen::OuterStride<>(7));
  Eigen::Map<Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, 0, Str> cm(cbuf.data() + 2, 4, 3,
                                                                                                Str(8, 2));
  rec::clear();
  cm.noalias() = egpu::gpu(am * bm);
  {
    const GemmDesc& d = only_call();
    check_matrix_desc(d.a, abuf.data() + 1, 4, 5, 2, 9, false);
    check_matrix_desc(d.b, bbuf.data() + 3, 5, 3, 1, 7, false);
    check_matrix_desc(d.c, cbuf.data() + 2, 4, 3, 8, 2, false);
  }
  BOOST_TEST(Eigen::MatrixXd(cm).isApprox(Eigen::MatrixXd(am) * Eigen::MatrixXd(bm)));
  // The gaps of the strided destination are untouched.
  for (std::size_t t = 0; t < cbuf.size(); ++t) {
    const std::size_t rel = t - 2;
    const bool inside = t >= 2 && rel % 2 == 0 && (rel % 8) / 2 < 3 && rel / 8 < 4;
    if (!inside) BOOST_TEST(cbuf[t] == 0.0, "element " << t << " outside the destination was written");
  }
}

BOOST_AUTO_TEST_CASE(aliasing_goes_through_a_temporary) {
  Eigen::MatrixXd c = random_matrix<Eigen::MatrixXd>(5, 5), b = random_matrix<Eigen::MatrixXd>(5, 5);
  const Eigen::MatrixXd c0 = c;
  rec::clear();
  c = egpu::gpu(c * b);
  {
    const GemmDesc& d = only_call();
    BOOST_TEST(d.a.data == ptr(c));  // reads the user's C ...
    BOOST_TEST(d.c.data != ptr(c));  // ... and writes a temporary
    BOOST_TEST(d.beta_is_zero);
  }
  BOOST_TEST(c.isApprox(c0 * b));

  c = c0;
  rec::clear();
  c += egpu::gpu(c * b);
  BOOST_TEST(only_call().c.data != ptr(c));
  BOOST_TEST(c.isApprox(c0 + c0 * b));

  c = c0;
  rec::clear();
  c -= egpu::gpu(2.0 * c.transpose() * c);
  BOOST_TEST(only_call().c.data != ptr(c));
  BOOST_TEST(c.isApprox(c0 - 2.0 * c0.transpose() * c0));

  // B = A * B with resizing.
  Eigen::MatrixXd a = random_matrix<Eigen::MatrixXd>(3, 5), bb = random_matrix<Eigen::MatrixXd>(5, 4);
  const Eigen::MatrixXd bb0 = bb;
  bb = egpu::gpu(a * bb);
  BOOST_TEST(bb.rows() == 3);
  BOOST_TEST(bb.cols() == 4);
  BOOST_TEST(bb.isApprox(a * bb0));

  // Non-overlapping blocks of one matrix: no temporary needed, result right.
  Eigen::MatrixXd x = random_matrix<Eigen::MatrixXd>(6, 9);
  const Eigen::MatrixXd x0 = x;
  rec::clear();
  x.leftCols(3).noalias() = egpu::gpu(x.middleCols(3, 3) * x.rightCols(3).topRows(3));
  BOOST_TEST(only_call().c.data == ptr(x));
  Eigen::MatrixXd xe = x0;
  xe.leftCols(3) = x0.middleCols(3, 3) * x0.rightCols(3).topRows(3);
  BOOST_TEST(x.isApprox(xe));
}

// may_share_elements against the elements themselves: random blocks (and
// transposes) of one buffer seen with random strides; where the two views
// are blocks of one matrix it must be exact, elsewhere never say no where
// they share one.
BOOST_AUTO_TEST_CASE(blocks_share_elements_exactly) {
  using egpu::detail::may_share_elements;
  std::vector<double> buffer(4096);
  auto view = [&](Index offset, Index rows, Index cols, Index rs, Index cs) {
    MatrixDesc d;
    d.data = buffer.data() + offset;
    d.rows = rows;
    d.cols = cols;
    d.row_stride = rs;
    d.col_stride = cs;
    return d;
  };
  auto elements = [&](const MatrixDesc& d) {
    std::vector<char> at(buffer.size(), 0);
    for (Index j = 0; j < d.cols; ++j)
      for (Index i = 0; i < d.rows; ++i)
        at[static_cast<std::size_t>(static_cast<double*>(d.data) - buffer.data() + i * d.row_stride + j * d.col_stride)] = 1;
    return at;
  };
  int exact = 0, shared = 0;
  for (int t = 0; t < 20000; ++t) {
    const Index ld = uniform_index(1, 24);
    const bool row_major = coin();
    auto block = [&] {
      const Index inner = uniform_index(coin(0.1) ? 0 : 1, ld), outer = uniform_index(coin(0.1) ? 0 : 1, 12);
      const Index offset = uniform_index(0, 2000);
      return row_major ? view(offset, outer, inner, ld, 1) : view(offset, inner, outer, 1, ld);
    };
    MatrixDesc a = block(), b = block();
    if (coin(0.2)) std::swap(b.row_stride, b.col_stride), std::swap(b.rows, b.cols);  // a transposed view
    const std::vector<char> ea = elements(a), eb = elements(b);
    bool truth = false;
    for (std::size_t e = 0; e < buffer.size(); ++e) truth = truth || (ea[e] && eb[e]);
    const bool said = may_share_elements(a, b, sizeof(double));
    const bool same_lattice = a.row_stride == b.row_stride && a.col_stride == b.col_stride;
    if (truth) BOOST_REQUIRE_MESSAGE(said, "shared elements not seen, t=" << t);
    if (same_lattice) BOOST_REQUIRE_MESSAGE(said == truth, "blocks of one matrix judged wrongly, t=" << t);
    exact += same_lattice;
    shared += truth;
  }
  BOOST_TEST_MESSAGE(exact << " pairs of blocks of one matrix, " << shared << " sharing elements");
  BOOST_TEST(exact > 1000);
  BOOST_TEST(shared > 1000);
}

// The trailing update of a blocked LU, A22 -= A21 * A12 on blocks of one
// matrix: the blocks interleave in memory but share no element, so the
// product accumulates into A22 in place, without a temporary.
BOOST_AUTO_TEST_CASE(a_trailing_update_accumulates_in_place) {
  const Index n = 40, b = 8;
  Eigen::MatrixXd x = random_matrix<Eigen::MatrixXd>(n, n);
  const Eigen::MatrixXd x0 = x;
  rec::clear();
  x.bottomRightCorner(n - b, n - b).noalias() -= egpu::gpu(x.bottomLeftCorner(n - b, b) * x.topRightCorner(b, n - b));
  const GemmDesc& d = only_call();
  BOOST_TEST(d.c.data == static_cast<void*>(x.data() + b + b * n));
  BOOST_TEST(!d.beta_is_zero);
  Eigen::MatrixXd want = x0;
  want.bottomRightCorner(n - b, n - b) -= x0.bottomLeftCorner(n - b, b) * x0.topRightCorner(b, n - b);
  BOOST_TEST((x - want).norm() <= 1e-12 * want.norm());
  // Blocks that do share elements: through a temporary, as before.
  x = x0;
  rec::clear();
  x.block(1, 1, n - b, n - b).noalias() -= egpu::gpu(x.block(0, 0, n - b, b) * x.block(0, 0, b, n - b));
  BOOST_TEST(only_call().c.data != static_cast<void*>(x.data() + 1 + n));
  want = x0;
  want.block(1, 1, n - b, n - b) -= x0.block(0, 0, n - b, b) * x0.block(0, 0, b, n - b);
  BOOST_TEST((x - want).norm() <= 1e-12 * want.norm());
}

// The other judgements of aliasing ask may_share_elements too: the CPU
// side's (may_overlap, Eigen's rule for a product the dispatch keeps on
// the CPU) and a coefficient-wise expression's (aliases_otherwise). Blocks
// of one matrix are judged exactly; other views by their byte ranges.
BOOST_AUTO_TEST_CASE(every_aliasing_judgement_shares_one_rule) {
  using egpu::detail::aliases_otherwise;
  using egpu::detail::describe;
  using egpu::detail::may_overlap;
  using egpu::detail::may_overlap_operands;
  const Index n = 40, b = 8;
  Eigen::MatrixXd x = random_matrix<Eigen::MatrixXd>(n, n);
  auto a22 = x.bottomRightCorner(n - b, n - b);
  auto a21 = x.bottomLeftCorner(n - b, b);
  auto a12 = x.topRightCorner(b, n - b);
  BOOST_TEST(!may_overlap(a22, a21));
  BOOST_TEST(!may_overlap(a22, a12));
  BOOST_TEST(!may_overlap_operands(a22, a21 * a12));
  BOOST_TEST(!may_overlap(a22, 2.0 * a21.adjoint()));  // A21 under a factor and a transpose: its bytes lie before A22's
  BOOST_TEST(may_overlap(x.block(1, 1, n - b, n - b), x.block(0, 0, n - b, b)));
  BOOST_TEST(may_overlap_operands(x.block(1, 1, n - b, n - b), x.block(0, 0, n - b, b) * a12));
  // A transposed view: another lattice, judged by byte ranges.
  BOOST_TEST(may_overlap(a22, x.topLeftCorner(b, n - b).transpose()));
  BOOST_TEST(!may_overlap(a22, Eigen::MatrixXd(a21)));
  // Elements of another size over the same bytes: byte ranges.
  Eigen::Map<Eigen::MatrixXf> as_float(reinterpret_cast<float*>(x.data()), 2 * n, n);
  BOOST_TEST(may_overlap(as_float.bottomRightCorner(2, 2), a22));

  // The cheap range of an Eigen object is its description's range: blocks,
  // vectors, row-major, strided maps, empty ones.
  using egpu::detail::byte_range;
  using egpu::detail::object_byte_range;
  auto same_range = [](const auto& o) {
    const auto cheap = object_byte_range(o),
               exact = byte_range(describe(o), sizeof(typename std::decay_t<decltype(o)>::Scalar));
    return cheap.first == exact.first && cheap.last == exact.last;
  };
  Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> r = Eigen::MatrixXf::Random(9, 13);
  BOOST_TEST(same_range(x));
  BOOST_TEST(same_range(a22));
  BOOST_TEST(same_range(x.col(3).segment(2, 7)));
  BOOST_TEST(same_range(x.row(5)));
  BOOST_TEST(same_range(r.block(1, 2, 4, 6)));
  BOOST_TEST(same_range(r.col(4)));
  BOOST_TEST(same_range(Eigen::Map<Eigen::MatrixXd, 0, Eigen::Stride<Eigen::Dynamic, 3>>(x.data(), 5, 6,
                                                                                         Eigen::Stride<Eigen::Dynamic, 3>(40, 3))));
  BOOST_TEST(same_range(x.block(3, 3, 0, 5)));

  // Coefficient-wise: rows of the same columns above dst (interleaved in
  // memory) are no alias, nor is dst itself; a shifted or transposed view
  // of its elements is.
  auto aliases = [&](const auto& dst, const auto& xpr) {
    std::vector<std::shared_ptr<void>> none;
    const auto program = egpu::detail::describe_elementwise(xpr, none, true);
    return aliases_otherwise(program, describe(dst), ScalarKind::f64);
  };
  BOOST_TEST(!aliases(x.block(8, 8, 8, 32), x.block(0, 8, 8, 32) * 2.0));
  BOOST_TEST(aliases(x.block(8, 8, 8, 32), x.block(4, 8, 8, 32) * 2.0));
  BOOST_TEST(!aliases(x.col(0), x.col(0) * 2.0));  // dst itself, element for element
  BOOST_TEST(aliases(x.col(0).head(n - 1), x.col(0).tail(n - 1) * 2.0));
  BOOST_TEST(aliases(x.row(0), x.col(0).transpose() * 2.0));
  BOOST_TEST(aliases(a22, a22.transpose() * 2.0));
}

BOOST_AUTO_TEST_CASE(resizing_assignment) {
  Eigen::MatrixXd a = random_matrix<Eigen::MatrixXd>(4, 6), b = random_matrix<Eigen::MatrixXd>(6, 5), c(1, 1);
  c = egpu::gpu(a * b);
  BOOST_TEST(c.rows() == 4);
  BOOST_TEST(c.cols() == 5);
  BOOST_TEST(c.isApprox(a * b));
  Eigen::MatrixXd e;
  e.noalias() = egpu::gpu(a * b);
  BOOST_TEST(e.isApprox(a * b));
  // An empty product still sizes the destination, and zero k gives zeros.
  Eigen::MatrixXd z0(4, 0), z1(0, 5), z = random_matrix<Eigen::MatrixXd>(2, 2);
  rec::clear();
  z = egpu::gpu(z0 * z1);
  BOOST_TEST(rec::calls().empty());
  BOOST_TEST(z.rows() == 4);
  BOOST_TEST(z.cols() == 5);
  BOOST_TEST(z.isZero(0));
  Eigen::MatrixXd w = random_matrix<Eigen::MatrixXd>(4, 5);
  const Eigen::MatrixXd w0 = w;
  w += egpu::gpu(z0 * z1);
  BOOST_TEST((w == w0));
}

BOOST_AUTO_TEST_CASE(operands_without_direct_access_use_temporaries) {
  Eigen::MatrixXd a = random_matrix<Eigen::MatrixXd>(4, 5), a2 = random_matrix<Eigen::MatrixXd>(4, 5);
  Eigen::MatrixXd b = random_matrix<Eigen::MatrixXd>(5, 3), c(4, 3);
  rec::clear();
  c.noalias() = egpu::gpu((a + a2) * b);
  {
    const GemmDesc& d = only_call();
    BOOST_TEST(d.a.data != ptr(a));
    BOOST_TEST(d.a.data != ptr(a2));
    BOOST_TEST(d.b.data == ptr(b));
  }
  BOOST_TEST(c.isApprox((a + a2) * b));

  Eigen::MatrixXcd bc = random_matrix<Eigen::MatrixXcd>(5, 3), cc(4, 3);
  rec::clear();
  cc.noalias() = egpu::gpu(a * bc);
  {
    const GemmDesc& d = only_call();
    BOOST_TEST((d.scalar == ScalarKind::c64));
    BOOST_TEST(d.a.data != ptr(a));
  }
  BOOST_TEST(cc.isApprox(a.cast<std::complex<double>>() * bc));
}

BOOST_AUTO_TEST_CASE(gpu_inside_a_larger_expression) {
  Eigen::MatrixXd a = random_matrix<Eigen::MatrixXd>(4, 5), b = random_matrix<Eigen::MatrixXd>(5, 3);
  Eigen::MatrixXd e = random_matrix<Eigen::MatrixXd>(4, 3), d(4, 3);
  rec::clear();
  d = egpu::gpu(a * b) + e;
  BOOST_TEST(rec::calls().size() == 1u);
  BOOST_TEST(d.isApprox(a * b + e));
  const double s = egpu::gpu(a * b).sum();
  BOOST_TEST(std::abs(s - (a * b).sum()) < 1e-12 * (1 + std::abs(s)));
}

BOOST_AUTO_TEST_CASE(options_reach_the_library) {
  Eigen::MatrixXd a = random_matrix<Eigen::MatrixXd>(3, 3), c(3, 3);
  egpu::Options opt;
  opt.backend = egpu::Backend::cublas;
  rec::clear();
  c.noalias() = egpu::gpu(a * a, opt);
  BOOST_TEST((rec::calls().at(0).options.backend == egpu::Backend::cublas));
  rec::clear();
  c.noalias() = egpu::gpu(a * a);
  BOOST_TEST((rec::calls().at(0).options.backend == egpu::Backend::own));
}

BOOST_AUTO_TEST_CASE(array_destination_and_compound_array_ops) {
  Eigen::MatrixXd a = random_matrix<Eigen::MatrixXd>(3, 4), b = random_matrix<Eigen::MatrixXd>(4, 2);
  Eigen::ArrayXXd x = random_matrix<Eigen::MatrixXd>(3, 2).array();
  const Eigen::ArrayXXd x0 = x;
  x.matrix() += egpu::gpu(a * b);
  BOOST_TEST(x.matrix().isApprox(x0.matrix() + a * b));
}

// ---------------------------------------------------------------------------
// Size checks: egpu::error, also in release builds.

BOOST_AUTO_TEST_CASE(size_mismatches_throw) {
  Eigen::MatrixXd a = random_matrix<Eigen::MatrixXd>(4, 5), b = random_matrix<Eigen::MatrixXd>(5, 3);
  Eigen::MatrixXd c = random_matrix<Eigen::MatrixXd>(4, 4);
  const Eigen::MatrixXd c0 = c;
  BOOST_CHECK_THROW(c += egpu::gpu(a * b), egpu::error);
  BOOST_CHECK_THROW(c -= egpu::gpu(a * b), egpu::error);
  BOOST_CHECK_THROW(c.noalias() += egpu::gpu(a * b), egpu::error);
  BOOST_TEST((c == c0));
  Eigen::MatrixXd big = random_matrix<Eigen::MatrixXd>(6, 6);
  const Eigen::MatrixXd big0 = big;
  BOOST_CHECK_THROW((big.block<3, 3>(0, 0) = egpu::gpu(a * b)), egpu::error);
  BOOST_CHECK_THROW((big.block(0, 0, 4, 2).noalias() = egpu::gpu(a * b)), egpu::error);
  BOOST_TEST((big == big0));
  Eigen::Matrix<double, 4, 4> fixed;
  BOOST_CHECK_THROW(fixed = egpu::gpu(a * b), egpu::error);
  std::vector<double> buf(32);
  Eigen::Map<Eigen::MatrixXd> map(buf.data(), 4, 4);
  BOOST_CHECK_THROW(map = egpu::gpu(a * b), egpu::error);
  rec::clear();
  BOOST_CHECK_THROW(c += egpu::gpu(a * b), egpu::error);
  BOOST_TEST(rec::calls().empty());
}

BOOST_AUTO_TEST_CASE(a_failing_accumulate_leaves_the_destination_unchanged) {
  Eigen::MatrixXd a = random_matrix<Eigen::MatrixXd>(4, 5), b = random_matrix<Eigen::MatrixXd>(5, 3);
  Eigen::MatrixXd c = random_matrix<Eigen::MatrixXd>(4, 3);
  const Eigen::MatrixXd c0 = c;
  rec::fail_next_call();
  BOOST_CHECK_THROW(c += egpu::gpu(a * b), egpu::error);
  BOOST_TEST((c == c0));
  // Aliased accumulate (through a temporary) as well.
  Eigen::MatrixXd s = random_matrix<Eigen::MatrixXd>(4, 4);
  const Eigen::MatrixXd s0 = s;
  rec::fail_next_call();
  BOOST_CHECK_THROW(s += egpu::gpu(s * s), egpu::error);
  BOOST_TEST((s == s0));
}

// ---------------------------------------------------------------------------
// validate() rejects bad descriptors.

namespace {
struct ValidDesc {
  std::vector<double> a, b, c;
  GemmDesc d;
  ValidDesc(Index m, Index n, Index k) : a(m * k), b(k * n), c(m * n) {
    d.scalar = ScalarKind::f64;
    d.m = m;
    d.n = n;
    d.k = k;
    d.a = {a.data(), m, k, 1, m, false};
    d.b = {b.data(), k, n, 1, k, false};
    d.c = {c.data(), m, n, 1, m, false};
  }
};
}  // namespace

BOOST_AUTO_TEST_CASE(validate_accepts_good_descriptors) {
  ValidDesc v(4, 3, 5);
  BOOST_CHECK_NO_THROW(egpu::detail::validate(v.d));
  v.d.c.row_stride = 3;  // row-major C
  v.d.c.col_stride = 1;
  BOOST_CHECK_NO_THROW(egpu::detail::validate(v.d));
  v.d.a.row_stride = 5;  // transposed A
  v.d.a.col_stride = 1;
  BOOST_CHECK_NO_THROW(egpu::detail::validate(v.d));
  v.d.beta_is_zero = false;
  v.d.beta = 1.0;
  BOOST_CHECK_NO_THROW(egpu::detail::validate(v.d));
}

BOOST_AUTO_TEST_CASE(validate_rejects_bad_descriptors) {
  using egpu::detail::validate;
  {
    ValidDesc v(4, 3, 5);
    v.d.m = -1;
    v.d.a.rows = -1;
    v.d.c.rows = -1;
    BOOST_CHECK_THROW(validate(v.d), egpu::error);
  }
  {
    ValidDesc v(4, 3, 5);
    v.d.k = -5;
    BOOST_CHECK_THROW(validate(v.d), egpu::error);
  }
  {
    ValidDesc v(4, 3, 5);
    v.d.c.col_stride = 2;  // columns of 4 at distance 2: overlap
    BOOST_CHECK_THROW(validate(v.d), egpu::error);
  }
  {
    ValidDesc v(4, 3, 5);
    v.d.c.row_stride = 0;  // all rows on one element
    BOOST_CHECK_THROW(validate(v.d), egpu::error);
  }
  {
    ValidDesc v(4, 3, 5);
    v.d.c.row_stride = 1;
    v.d.c.col_stride = 1;
    BOOST_CHECK_THROW(validate(v.d), egpu::error);
  }
  {
    ValidDesc v(4, 3, 5);
    v.d.c.row_stride = 2;  // row-major-ish with rows 2 apart but 3 columns
    v.d.c.col_stride = 1;
    BOOST_CHECK_THROW(validate(v.d), egpu::error);
  }
  {
    ValidDesc v(4, 3, 5);
    v.d.c.data = nullptr;
    BOOST_CHECK_THROW(validate(v.d), egpu::error);
  }
  {
    ValidDesc v(4, 3, 5);
    v.d.a.data = nullptr;
    BOOST_CHECK_THROW(validate(v.d), egpu::error);
  }
  {
    ValidDesc v(4, 3, 5);
    v.d.b.data = nullptr;
    BOOST_CHECK_THROW(validate(v.d), egpu::error);
  }
  {
    ValidDesc v(4, 3, 5);
    v.d.a.cols = 4;  // inner sizes differ
    BOOST_CHECK_THROW(validate(v.d), egpu::error);
  }
  {
    ValidDesc v(4, 3, 5);
    v.d.b.cols = 2;
    BOOST_CHECK_THROW(validate(v.d), egpu::error);
  }
  {
    ValidDesc v(4, 3, 5);
    v.d.c.rows = 3;
    BOOST_CHECK_THROW(validate(v.d), egpu::error);
  }
  {
    ValidDesc v(4, 3, 5);
    v.d.n = 4;  // the descriptor's n disagrees with B and C
    BOOST_CHECK_THROW(validate(v.d), egpu::error);
  }
}

// alpha * A * B + beta * C with C the destination: one GEMM with beta, C in
// place, for =, += and -=, either order of the terms, + or -; otherwise (C
// another matrix, an operand overlapping the destination) the product goes
// to a temporary and a coefficient-wise call finishes it.
BOOST_AUTO_TEST_CASE(product_plus_the_destination_is_one_gemm_with_beta) {
  const Eigen::MatrixXd A = random_matrix<Eigen::MatrixXd>(6, 4), B = random_matrix<Eigen::MatrixXd>(4, 5);
  const Eigen::MatrixXd C0 = random_matrix<Eigen::MatrixXd>(6, 5);
  struct Case {
    const char* what;
    double alpha, beta;
  };
  auto one_gemm = [&](const Eigen::MatrixXd& got, const Eigen::MatrixXd& expected, const double* dst,
                      const Case& c) {
    BOOST_TEST_CONTEXT(c.what) {
      BOOST_REQUIRE_EQUAL(rec::calls().size(), 1u);
      BOOST_TEST(rec::elementwise_calls() == 0);
      const GemmDesc& d = rec::calls()[0].desc;
      BOOST_TEST(d.c.data == static_cast<const void*>(dst));
      BOOST_TEST(d.alpha.real() == c.alpha);
      BOOST_TEST(d.beta.real() == c.beta);
      BOOST_TEST(!d.beta_is_zero);
      BOOST_TEST((got - expected).norm() <= 1e-12 * (1 + expected.norm()));
    }
    rec::clear();
  };
  rec::clear();
  Eigen::MatrixXd C = C0;
  C = egpu::gpu(0.5 * A * B + 2.0 * C);
  one_gemm(C, 0.5 * A * B + 2.0 * C0, C.data(), {"= 0.5 A B + 2 C", 0.5, 2.0});
  C = C0;
  C = egpu::gpu(C - A * B);
  one_gemm(C, C0 - A * B, C.data(), {"= C - A B", -1.0, 1.0});
  C = C0;
  C += egpu::gpu(A * B * 3.0 - C);
  one_gemm(C, C0 + (3.0 * A * B - C0), C.data(), {"+= 3 A B - C", 3.0, 0.0});
  C = C0;
  C -= egpu::gpu(-C + A * B);
  one_gemm(C, C0 - (-C0 + A * B), C.data(), {"-= -C + A B", -1.0, 2.0});
  Eigen::Array<double, Eigen::Dynamic, Eigen::Dynamic> Ca = C0.array();
  Ca.matrix() = egpu::gpu(A * B + Ca.matrix() * 0.25);
  one_gemm(Ca.matrix(), A * B + 0.25 * C0, Ca.data(), {"matrix() view = A B + C 0.25", 1.0, 0.25});

  // C is not the destination: one GEMM whose epilogue adds 2 C.
  Eigen::MatrixXd D = random_matrix<Eigen::MatrixXd>(6, 5);
  D = egpu::gpu(A * B + 2.0 * C0);
  BOOST_REQUIRE_EQUAL(rec::calls().size(), 1u);
  BOOST_TEST(rec::calls()[0].desc.beta_is_zero);
  BOOST_TEST(rec::calls()[0].desc.epilogue != nullptr);
  BOOST_TEST(rec::elementwise_calls() == 0);
  BOOST_TEST((D - (A * B + 2.0 * C0)).norm() <= 1e-12 * (1 + D.norm()));
  rec::clear();

  // An operand overlapping the destination: the same, as Eigen evaluates the product first.
  Eigen::MatrixXd S = random_matrix<Eigen::MatrixXd>(5, 5);
  const Eigen::MatrixXd S0 = S, T = random_matrix<Eigen::MatrixXd>(5, 5);
  S = egpu::gpu(S * T + S);
  BOOST_TEST(rec::elementwise_calls() == 1);
  BOOST_TEST((S - (S0 * T + S0)).norm() <= 1e-12 * (1 + S.norm()));
  rec::clear();
}

// f(A * B, D, ...) with f coefficient-wise and one product: one GEMM whose
// epilogue is f, written straight into the destination, the other operands
// leaves of the epilogue (the destination too, for += and -= or when the
// expression reads it element for element). Any other shape of expression (a
// transposed product, a destination the product reads, an operand
// overlapping the destination otherwise, a value of another scalar) computes
// the product first and runs f as its own pass.
BOOST_AUTO_TEST_CASE(a_function_of_a_product_is_one_gemm_with_an_epilogue) {
  const Eigen::MatrixXd A = random_matrix<Eigen::MatrixXd>(6, 4), B = random_matrix<Eigen::MatrixXd>(4, 5);
  const Eigen::MatrixXd D = random_matrix<Eigen::MatrixXd>(6, 5);
  auto close = [](const auto& got, const auto& expected) {
    return (got - expected).norm() <= 1e-12 * (1 + expected.norm());
  };
  rec::clear();
  Eigen::MatrixXd C(2, 2);  // resized by =
  C = egpu::gpu((A * B).array().tanh().matrix());
  BOOST_REQUIRE_EQUAL(rec::calls().size(), 1u);
  BOOST_TEST(rec::elementwise_calls() == 0);
  BOOST_TEST(rec::calls()[0].desc.epilogue != nullptr);
  BOOST_TEST(rec::calls()[0].desc.c.data == static_cast<const void*>(C.data()));
  BOOST_TEST(!rec::calls()[0].desc.epilogue_reads_c);
  BOOST_TEST(close(C, (A * B).array().tanh().matrix().eval()));
  rec::clear();

  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> R(6, 5);
  R = egpu::gpu(((2.0 * A * B).array() * 0.5 + 1.0).exp().matrix());
  BOOST_REQUIRE_EQUAL(rec::calls().size(), 1u);
  BOOST_TEST(rec::calls()[0].desc.epilogue != nullptr);
  BOOST_TEST(rec::calls()[0].desc.alpha.real() == 2.0);
  BOOST_TEST(close(R, ((2.0 * A * B).array() * 0.5 + 1.0).exp().matrix().eval()));
  rec::clear();

  struct Form {
    const char* what;
    std::function<void()> run;
    std::function<bool()> right;
    bool reads_c = false;  // the destination is one of the epilogue's leaves
    std::size_t leaves = 2;
  };
  Eigen::MatrixXd E = D, S = random_matrix<Eigen::MatrixXd>(6, 6), W = random_matrix<Eigen::MatrixXd>(8, 8);
  const Eigen::MatrixXd S0 = S, W0 = W;
  const Eigen::VectorXd v = random_matrix<Eigen::VectorXd>(6, 1);
  const Eigen::MatrixXf Df = random_matrix<Eigen::MatrixXf>(6, 5);
  Eigen::MatrixXd T(5, 6);
  Eigen::MatrixXf F(6, 5);
  const std::vector<Form> fused = {
      {"another leaf", [&] { E = egpu::gpu(((A * B).array() * D.array()).matrix()); },
       [&] { return close(E, (A * B).cwiseProduct(D)); }},
      {"+=", [&] { E = D; E += egpu::gpu((A * B).array().tanh().matrix()); },
       [&] { return close(E, D + (A * B).array().tanh().matrix()); }, true},
      {"-= with another leaf", [&] { E = D; E -= egpu::gpu(((A * B).array() - 2.0 * D.array()).matrix()); },
       [&] { return close(E, D - ((A * B).array() - 2.0 * D.array()).matrix()); }, true},
      {"the destination read element for element",
       [&] { E = D; E = egpu::gpu(((A * B).array().sin() + E.array().square()).matrix()); },
       [&] { return close(E, ((A * B).array().sin() + D.array().square()).matrix().eval()); }, true},
      {"a broadcast column", [&] { E = egpu::gpu((A * B).colwise() + v); },
       [&] { return close(E, ((A * B).colwise() + v).eval()); }},
      {"a leaf of another scalar", [&] { E = egpu::gpu(A * B + Df.cast<double>()); },
       [&] { return close(E, A * B + Df.cast<double>()); }},
  };
  for (const Form& f : fused) {
    f.run();
    BOOST_TEST_CONTEXT(f.what) {
      BOOST_REQUIRE_EQUAL(rec::calls().size(), 1u);
      BOOST_TEST(rec::elementwise_calls() == 0);
      BOOST_REQUIRE(rec::calls()[0].desc.epilogue != nullptr);
      BOOST_TEST(rec::calls()[0].desc.epilogue_reads_c == f.reads_c);
      BOOST_TEST(f.right());
    }
    rec::clear();
  }

  // An operand overlapping the destination otherwise: the result goes into
  // a temporary first (there with the epilogue), then into the destination.
  W.topLeftCorner(6, 5) = egpu::gpu(A * B + W.block(1, 1, 6, 5));
  BOOST_REQUIRE_EQUAL(rec::calls().size(), 1u);
  BOOST_TEST(rec::calls()[0].desc.c.data != static_cast<const void*>(W.data()));
  BOOST_TEST(close(W.topLeftCorner(6, 5), A * B + W0.block(1, 1, 6, 5)));
  rec::clear();

  using Other = Form;
  const std::vector<Other> others = {
      {"transposed", [&] { T = egpu::gpu((A * B).transpose().array().sin().matrix()); },
       [&] { return close(T, (A * B).transpose().array().sin().matrix().eval()); }},
      {"the product reads the destination", [&] { S = egpu::gpu((S * S).array().cos().matrix()); },
       [&] { return close(S, (S0 * S0).array().cos().matrix().eval()); }},
      {"another scalar", [&] { F = egpu::gpu((A * B).cast<float>()); },
       [&] { return (F.cast<double>() - A * B).norm() <= 1e-6 * (1 + (A * B).norm()); }},
  };
  for (const Other& o : others) {
    o.run();
    BOOST_TEST_CONTEXT(o.what) {
      BOOST_REQUIRE_EQUAL(rec::calls().size(), 1u);
      BOOST_TEST(rec::calls()[0].desc.epilogue == nullptr);
      BOOST_TEST(rec::elementwise_calls() == 1);
      BOOST_TEST(o.right());
    }
    rec::clear();
  }
}
