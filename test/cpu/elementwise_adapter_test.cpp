// The coefficient-wise adapter: what describe_elementwise() extracts from
// Eigen expressions (leaves, strides, broadcasting, constants, casts, the
// instruction list), the checks of validate(), and the described program run
// by the host interpreter (support/elementwise_reference.hpp) against Eigen's
// own coefficient loop: the interpreter calls the same scalar functors, so the
// results must agree bit for bit (NaN with NaN), on random data with NaN and
// Inf sprinkled in, odd shapes, 0xN, strided, row-major and transposed leaves.
// No GPU, no CUDA: links egpu_core.
#define BOOST_TEST_MODULE elementwise_adapter
#include <boost/test/unit_test.hpp>
#include <boost/mpl/list.hpp>

#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "egpu/adapter/elementwise_parts.hpp"
#include "egpu/error.hpp"
#include "support/elementwise_forms.hpp"
#include "support/elementwise_reference.hpp"
#include "support/test_support.hpp"

using namespace egpu_test;
namespace ed = egpu::detail;
using ed::EwOp;
using ed::ValueKind;

namespace {

struct Described {
  ed::ElementwiseProgram program;
  std::vector<std::shared_ptr<void>> temporaries;
};

template <class X> Described describe(const X& x) {
  Described d;
  d.program = ed::describe_elementwise(x, d.temporaries);
  ed::validate(d.program);
  return d;
}

std::vector<EwOp> ops_of(const ed::ElementwiseProgram& p) {
  std::vector<EwOp> ops;
  for (const auto& in : p.code) ops.push_back(in.op);
  return ops;
}

template <class T> bool same_value(T a, T b) {
  if constexpr (Eigen::NumTraits<T>::IsComplex) {
    return same_value(a.real(), b.real()) && same_value(a.imag(), b.imag());
  } else {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    return a == b;
  }
}

// The program of xpr, run by the interpreter, against xpr's own coefficients.
template <class X> void check_program(const X& xpr, const std::string& what) {
  using T = typename X::Scalar;
  const Described d = describe(xpr);
  BOOST_TEST_REQUIRE(d.program.rows == xpr.rows());
  BOOST_TEST_REQUIRE(d.program.cols == xpr.cols());
  long bad = 0;
  for (Index j = 0; j < xpr.cols(); ++j)
    for (Index i = 0; i < xpr.rows(); ++i) {
      const EwValue v = evaluate_at(d.program, i, j);
      BOOST_TEST_REQUIRE((v.kind == ed::value_kind_of<T>::value));
      if (!same_value(v.get<T>(), xpr.coeff(i, j)) && bad++ < 3)
        BOOST_TEST(false, what << " " << xpr.rows() << "x" << xpr.cols() << " at (" << i << ", " << j
                                << "): program " << v.get<T>() << ", Eigen " << xpr.coeff(i, j));
    }
  BOOST_TEST(bad == 0, what << ": " << bad << " coefficients differ");
}

}  // namespace

// ---------------------------------------------------------------------------
// What the adapter extracts.

BOOST_AUTO_TEST_CASE(fused_expression_is_one_instruction_per_node) {
  Eigen::ArrayXXd a = Eigen::ArrayXXd::Random(5, 7), b = Eigen::ArrayXXd::Random(5, 7);
  const Described d = describe(a * b + a.exp());
  const auto& p = d.program;
  BOOST_TEST(p.rows == 5);
  BOOST_TEST(p.cols == 7);
  const std::vector<EwOp> expected{EwOp::load, EwOp::load, EwOp::mul, EwOp::load, EwOp::exp, EwOp::add};
  BOOST_TEST((ops_of(p) == expected));
  // `a` read twice is one leaf: the pipeline moves it once.
  BOOST_REQUIRE_EQUAL(p.leaves.size(), 2u);
  BOOST_TEST(p.leaves[0].m.data == static_cast<void*>(a.data()));
  BOOST_TEST(p.leaves[1].m.data == static_cast<void*>(b.data()));
  BOOST_TEST(p.code[3].index == 0);
  for (const auto& leaf : p.leaves) {
    BOOST_TEST((leaf.scalar == ed::ScalarKind::f64));
    BOOST_TEST(leaf.m.row_stride == 1);
    BOOST_TEST(leaf.m.col_stride == 5);
  }
  BOOST_TEST(p.code[2].x == 0);
  BOOST_TEST(p.code[2].y == 1);
  BOOST_TEST(p.code[5].x == 2);
  BOOST_TEST(p.code[5].y == 4);
  BOOST_TEST(d.temporaries.empty());
}

BOOST_AUTO_TEST_CASE(constants_keep_their_value_and_type) {
  Eigen::ArrayXXf a = Eigen::ArrayXXf::Random(3, 4);
  const Described d = describe(2.5f * a.sin() - 0.125f);
  const auto& p = d.program;
  BOOST_REQUIRE_EQUAL(p.constants.size(), 2u);
  BOOST_TEST(p.constants[0] == std::complex<double>(2.5, 0));
  BOOST_TEST(p.constants[1] == std::complex<double>(0.125, 0));
  for (const auto& in : p.code) BOOST_TEST((in.type == ValueKind::f32));
  Eigen::ArrayXXcd c = Eigen::ArrayXXcd::Random(2, 2);
  const Described dc = describe(c * std::complex<double>(0.5, -3));
  BOOST_REQUIRE_EQUAL(dc.program.constants.size(), 1u);
  BOOST_TEST(dc.program.constants[0] == std::complex<double>(0.5, -3));
}

BOOST_AUTO_TEST_CASE(leaves_carry_layout_and_strides) {
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> r(6, 4);
  r.setRandom();
  Eigen::MatrixXd m = Eigen::MatrixXd::Random(9, 8);
  const auto block = m.block(1, 2, 6, 4);
  std::vector<double> buf(200, 1.0);
  Eigen::Map<Eigen::MatrixXd, 0, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>> map(
      buf.data() + 3, 6, 4, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>(20, 2));
  Eigen::MatrixXd t = Eigen::MatrixXd::Random(4, 6);
  const Described d = describe(r.array() + block.array() + map.array() + t.transpose().array());
  const auto& L = d.program.leaves;
  BOOST_REQUIRE_EQUAL(L.size(), 4u);
  BOOST_TEST(L[0].m.row_stride == 4);  // row-major
  BOOST_TEST(L[0].m.col_stride == 1);
  BOOST_TEST(L[1].m.data == static_cast<const void*>(&m(1, 2)));
  BOOST_TEST(L[1].m.row_stride == 1);
  BOOST_TEST(L[1].m.col_stride == 9);
  BOOST_TEST(L[2].m.row_stride == 2);  // inner stride
  BOOST_TEST(L[2].m.col_stride == 20);
  BOOST_TEST(L[3].m.rows == 6);  // the transpose of a 4x6 column-major matrix
  BOOST_TEST(L[3].m.cols == 4);
  BOOST_TEST(L[3].m.row_stride == 4);
  BOOST_TEST(L[3].m.col_stride == 1);
  // A transposed subexpression transposes each of its leaves.
  const Described ds = describe((t.array() * t.array().exp()).transpose());
  BOOST_REQUIRE_EQUAL(ds.program.leaves.size(), 1u);  // t, read twice
  for (const auto& leaf : ds.program.leaves) {
    BOOST_TEST(leaf.m.rows == 6);
    BOOST_TEST(leaf.m.cols == 4);
    BOOST_TEST(leaf.m.row_stride == 4);
    BOOST_TEST(leaf.m.col_stride == 1);
  }
}

BOOST_AUTO_TEST_CASE(broadcasting_is_a_zero_stride) {
  Eigen::MatrixXd a = Eigen::MatrixXd::Random(5, 3);
  Eigen::VectorXd v = Eigen::VectorXd::Random(5);
  Eigen::RowVectorXd r = Eigen::RowVectorXd::Random(3);
  const Described dc = describe(a.colwise() - v);
  BOOST_REQUIRE_EQUAL(dc.program.leaves.size(), 2u);
  BOOST_TEST(dc.program.leaves[1].m.data == static_cast<void*>(v.data()));
  BOOST_TEST(dc.program.leaves[1].m.rows == 5);
  BOOST_TEST(dc.program.leaves[1].m.cols == 3);
  BOOST_TEST(dc.program.leaves[1].m.row_stride == 1);
  BOOST_TEST(dc.program.leaves[1].m.col_stride == 0);
  const Described dr = describe(a.rowwise() + r);
  BOOST_TEST(dr.program.leaves[1].m.row_stride == 0);
  BOOST_TEST(dr.program.leaves[1].m.col_stride == 1);
  // A whole matrix replicated is evaluated into a temporary leaf.
  Eigen::MatrixXd s = Eigen::MatrixXd::Random(2, 3);
  const Described dt = describe(s.replicate(2, 1));
  BOOST_TEST(dt.temporaries.size() == 1u);
  BOOST_TEST(dt.program.leaves[0].m.rows == 4);
  check_program(s.replicate(2, 1), "replicate(2, 1)");
}

BOOST_AUTO_TEST_CASE(comparisons_select_and_casts) {
  Eigen::ArrayXXd a = sprinkled<Eigen::ArrayXXd>(7, 5);
  const Described d = describe((a > 0.0).select(a, 0.1 * a));
  BOOST_TEST((d.program.code.back().op == EwOp::select));
  BOOST_TEST((d.program.code[static_cast<std::size_t>(d.program.code.back().x)].type == ValueKind::boolean));
  const Described dc = describe(a.cast<float>());
  BOOST_TEST((dc.program.code.back().op == EwOp::cast));
  BOOST_TEST((dc.program.code.back().type == ValueKind::f32));
  const Described dz = describe(a.cast<std::complex<double>>() * std::complex<double>(0, 1));
  BOOST_TEST((dz.program.code.back().type == ValueKind::c64));
}

BOOST_AUTO_TEST_CASE(subexpressions_without_direct_access_become_temporaries) {
  Eigen::ArrayXXd a = Eigen::ArrayXXd::Random(4, 6), b = Eigen::ArrayXXd::Random(4, 6);
  const Described d = describe(a.reverse() + b);
  BOOST_TEST(d.temporaries.size() == 1u);
  check_program(a.reverse() + b, "reverse() + b");
}

// ---------------------------------------------------------------------------
// The described programs compute Eigen's result.

template <class S> void run_forms(Index rows, Index cols) {
  for_each_form<S>(rows, cols, [](const auto& xpr, const char* what) { check_program(xpr, what); });
}

using Scalars = boost::mpl::list<float, double, std::complex<float>, std::complex<double>>;

BOOST_AUTO_TEST_CASE_TEMPLATE(programs_compute_eigens_result, S, Scalars) {
  const Index shapes[][2] = {{0, 5}, {4, 0}, {1, 1}, {1, 17}, {13, 1}, {7, 9}, {33, 20}};
  for (const auto& shape : shapes) run_forms<S>(shape[0], shape[1]);
  for (int t = 0; t < scaled_count(6); ++t) run_forms<S>(uniform_index(1, 70), uniform_index(1, 70));
}

// ---------------------------------------------------------------------------
// validate()

namespace {
ed::ElementwiseProgram two_leaf_sum(double* a, double* b) {
  ed::ElementwiseProgram p;
  p.rows = 2;
  p.cols = 3;
  ed::MatrixDesc m;
  m.rows = 2;
  m.cols = 3;
  m.col_stride = 2;
  m.data = a;
  p.leaves.push_back({ed::ScalarKind::f64, m});
  m.data = b;
  p.leaves.push_back({ed::ScalarKind::f64, m});
  p.code = {{EwOp::load, ValueKind::f64, -1, -1, -1, 0},
            {EwOp::load, ValueKind::f64, -1, -1, -1, 1},
            {EwOp::add, ValueKind::f64, 0, 1, -1, -1}};
  return p;
}
}  // namespace

BOOST_AUTO_TEST_CASE(validate_rejects_bad_programs) {
  double a[6], b[6];
  BOOST_CHECK_NO_THROW(ed::validate(two_leaf_sum(a, b)));
  auto rejects = [](const ed::ElementwiseProgram& p, const char* why) {
    try {
      ed::validate(p);
      BOOST_TEST(false, "accepted: " << why);
    } catch (const egpu::error& e) {
      BOOST_TEST_MESSAGE(why << ": " << e.what());
    }
  };
  auto p = two_leaf_sum(a, b);
  p.code[2].y = 2;
  rejects(p, "operand is not earlier");
  p = two_leaf_sum(a, b);
  p.code[2].type = ValueKind::f32;
  rejects(p, "wrong result type");
  p = two_leaf_sum(a, b);
  p.leaves[1].m.cols = 4;
  rejects(p, "leaf shape");
  p = two_leaf_sum(a, b);
  p.code[1].index = 5;
  rejects(p, "no such leaf");
  p = two_leaf_sum(a, b);
  p.code[2].op = EwOp::lt;
  p.code[2].type = ValueKind::boolean;
  rejects(p, "boolean result");
  p = two_leaf_sum(a, b);
  p.leaves[1].scalar = ed::ScalarKind::c64;
  p.code[1].type = ValueKind::c64;
  p.code[2].op = EwOp::min;
  p.code[2].type = ValueKind::c64;
  rejects(p, "min of complex");
  p = two_leaf_sum(a, b);
  p.code[0].z = 1;
  rejects(p, "stray operand");
  p = two_leaf_sum(a, b);
  p.code.clear();
  rejects(p, "empty");
}
