// The generated coefficient-wise kernels, without a GPU: how each operand is
// read (linear, broadcast column or row, strided; complex split where
// misaligned), when 16-byte packs are used, the row-major destination turned
// into column order, the source independent of pointers and constant values,
// and every expression form of every scalar type compiled by NVRTC for
// sm_90, to PTX and a few to machine code (NVRTC is a host library: it
// needs no device).
#define BOOST_TEST_MODULE elementwise_source
#include <boost/mpl/list.hpp>
#include <boost/test/unit_test.hpp>

#include <complex>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "egpu/adapter/elementwise_parts.hpp"
#include "egpu/error.hpp"
#include "kernels/elementwise/elementwise_source.hpp"
#include "kernels/reduction/reduction_source.hpp"
#include "kernels/elementwise/ew_params.h"
#include "support/elementwise_forms.hpp"
#include "support/nvrtc_errors.hpp"
#include "support/random_programs.hpp"

using namespace egpu_test;
namespace ed = egpu::detail;
namespace ek = egpu::kernels;
using ek::EwAccess;

namespace {

template <class X> ed::ElementwiseProgram program_of(const X& x, std::vector<std::shared_ptr<void>>& keep) {
  ed::ElementwiseProgram p = ed::describe_elementwise(x, keep);
  ed::validate(p);
  return p;
}

template <class Dst> ed::MatrixDesc out_of(Dst& dst) { return ed::describe(dst); }

// NVRTC's errors for one generated kernel (support/nvrtc_errors.hpp).
std::string kernel_errors(const std::string& kernel, bool cubin = false) {
  return nvrtc_errors(std::string(ek::elementwise_prelude()) + "\n" + kernel, cubin);
}

}  // namespace

BOOST_AUTO_TEST_CASE(operands_are_read_by_their_cheapest_index) {
  Eigen::MatrixXd a = Eigen::MatrixXd::Random(6, 5), big = Eigen::MatrixXd::Random(9, 8);
  Eigen::VectorXd v = Eigen::VectorXd::Random(6);
  Eigen::RowVectorXd r = Eigen::RowVectorXd::Random(5);
  Eigen::MatrixXd out(6, 5);
  std::vector<std::shared_ptr<void>> keep;
  auto p = program_of((a.colwise() + v) + (a.rowwise() - r) + big.block(1, 1, 6, 5), keep);
  ed::MatrixDesc o = out_of(out);
  ek::to_destination_order(p, o);
  const ek::EwKernelShape s = ek::choose_kernel_shape(p, o, ed::ScalarKind::f64);
  BOOST_REQUIRE_EQUAL(s.leaves.size(), 4u);  // a, read twice, is one leaf
  BOOST_TEST((s.leaves[0].access == EwAccess::linear));
  BOOST_TEST((s.leaves[1].access == EwAccess::column));
  BOOST_TEST((s.leaves[2].access == EwAccess::row));
  BOOST_TEST((s.leaves[3].access == EwAccess::strided));
  BOOST_TEST((s.out.access == EwAccess::linear));
  // Eigen's allocations are 16-byte aligned: doubles go two at a time.
  BOOST_TEST(s.packed);
  BOOST_TEST(s.pack == 2);
}

BOOST_AUTO_TEST_CASE(a_row_major_destination_is_written_in_its_own_order) {
  using RowM = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  RowM a = RowM::Random(4, 7), out(4, 7);
  Eigen::MatrixXf c = Eigen::MatrixXf::Random(4, 7);
  std::vector<std::shared_ptr<void>> keep;
  auto p = program_of(a.array() * c.array(), keep);
  ed::MatrixDesc o = out_of(out);
  ek::to_destination_order(p, o);
  BOOST_TEST(p.rows == 7);
  BOOST_TEST(p.cols == 4);
  BOOST_TEST(o.row_stride == 1);
  BOOST_TEST(o.col_stride == 7);
  const ek::EwKernelShape s = ek::choose_kernel_shape(p, o, ed::ScalarKind::f32);
  BOOST_TEST((s.leaves[0].access == EwAccess::linear));   // the row-major operand
  BOOST_TEST((s.leaves[1].access == EwAccess::strided));  // the column-major one
  BOOST_TEST(s.packed);
  BOOST_TEST(s.pack == 4);
}

BOOST_AUTO_TEST_CASE(misaligned_operands_lose_the_pack_and_complex_splits) {
  std::vector<std::complex<float>> buf(64);
  Eigen::Map<Eigen::ArrayXXcf> a(buf.data() + 1, 5, 6);  // 8-byte aligned, not 16
  Eigen::ArrayXXcf out(5, 6);
  std::vector<std::shared_ptr<void>> keep;
  auto p = program_of(a * a, keep);
  ed::MatrixDesc o = out_of(out);
  ek::EwKernelShape s = ek::choose_kernel_shape(p, o, ed::ScalarKind::c32);
  BOOST_TEST(!s.packed);
  BOOST_TEST(!s.leaves[0].split_complex);
  // A complex<float> at an address that is not a multiple of 8.
  auto* raw = reinterpret_cast<std::complex<float>*>(reinterpret_cast<char*>(buf.data()) + 4);
  Eigen::Map<Eigen::ArrayXXcf> m(raw, 5, 6);
  auto q = program_of(m * m, keep);
  s = ek::choose_kernel_shape(q, o, ed::ScalarKind::c32);
  BOOST_TEST(s.leaves[0].split_complex);
  BOOST_TEST(ek::elementwise_kernel_source(q, ed::ScalarKind::c32, s).find("ew::load_parts<ew::c32>") !=
             std::string::npos);
}

BOOST_AUTO_TEST_CASE(the_source_depends_on_the_expression_not_its_data) {
  Eigen::ArrayXXd a = Eigen::ArrayXXd::Random(8, 3), b = Eigen::ArrayXXd::Random(8, 3), out(8, 3);
  Eigen::ArrayXXd c = Eigen::ArrayXXd::Random(8, 3), d = Eigen::ArrayXXd::Random(8, 3);
  std::vector<std::shared_ptr<void>> keep;
  auto source = [&](const auto& x) {
    auto p = program_of(x, keep);
    ed::MatrixDesc o = out_of(out);
    ek::to_destination_order(p, o);
    return ek::elementwise_kernel_source(p, ed::ScalarKind::f64, ek::choose_kernel_shape(p, o, ed::ScalarKind::f64));
  };
  BOOST_TEST(source(2.0 * a + b.exp()) == source(-3.5 * c + d.exp()));
  BOOST_TEST(source(2.0 * a + b.exp()) != source(2.0 * a + b.log()));
}

BOOST_AUTO_TEST_CASE(limits_and_type_mismatch_are_errors) {
  Eigen::ArrayXXd a = Eigen::ArrayXXd::Random(3, 3);
  Eigen::ArrayXXf out(3, 3);
  std::vector<std::shared_ptr<void>> keep;
  auto p = program_of(a + a, keep);
  ed::MatrixDesc o = out_of(out);
  const auto s = ek::choose_kernel_shape(p, o, ed::ScalarKind::f32);
  BOOST_CHECK_THROW(ek::elementwise_kernel_source(p, ed::ScalarKind::f32, s), egpu::error);
  for (int k = 0; k < 70; ++k) p.leaves.push_back(p.leaves[0]);
  BOOST_CHECK_THROW(ek::choose_kernel_shape(p, o, ed::ScalarKind::f64), egpu::error);
}

using Scalars = boost::mpl::list<float, double, std::complex<float>, std::complex<double>>;

// Every form of every scalar type, packed and not, compiles (the first
// form of each type to machine code, the rest to PTX).
BOOST_AUTO_TEST_CASE_TEMPLATE(every_form_compiles, S, Scalars) {
  long compiled = 0;
  for_each_form<S>(7, 5, [&](const auto& xpr, const char* what) {
    using X = std::decay_t<decltype(xpr)>;
    Eigen::Array<typename X::Scalar, Eigen::Dynamic, Eigen::Dynamic> out(xpr.rows(), xpr.cols());
    std::vector<std::shared_ptr<void>> keep;
    auto p = program_of(xpr, keep);
    ed::MatrixDesc o = out_of(out);
    ek::to_destination_order(p, o);
    ek::EwKernelShape shape = ek::choose_kernel_shape(p, o, ed::scalar_kind_of<typename X::Scalar>::value);
    BOOST_TEST(shape.packed, what);
    for (bool packed : {true, false}) {
      shape.packed = packed;
      const std::string errors = kernel_errors(
          ek::elementwise_kernel_source(p, ed::scalar_kind_of<typename X::Scalar>::value, shape), compiled < 2);
      BOOST_TEST(errors.empty(), what << (packed ? " (packed): " : " (not packed): ") << errors.substr(0, 3000));
      ++compiled;
    }
  });
  BOOST_TEST(compiled >= 24);
}

// The random programs the GPU test runs are programs Eigen could describe
// (validate() accepts them), and their kernels compile.
BOOST_AUTO_TEST_CASE(random_programs_validate_and_compile) {
  int compiled = 0;
  for (int t = 0; t < scaled_count(400); ++t) {
    const auto result = static_cast<ed::ValueKind>(uniform_index(0, 3));
    const RandomProgram r = random_program(uniform_index(0, 9), uniform_index(0, 9), result,
                                           static_cast<int>(uniform_index(1, 6)));
    BOOST_CHECK_NO_THROW(ed::validate(r.program));
    if (t % 20 != 0 || r.program.leaves.size() > EGPU_EW_MAX_LEAVES ||
        r.program.constants.size() > EGPU_EW_MAX_CONSTANTS)
      continue;
    ed::MatrixDesc o;
    o.rows = r.program.rows;
    o.cols = r.program.cols;
    o.col_stride = o.rows;
    std::vector<std::complex<double>> out(static_cast<std::size_t>(o.rows * o.cols) + 1);
    o.data = out.data();
    const auto scalar = result == ed::ValueKind::f32   ? ed::ScalarKind::f32
                        : result == ed::ValueKind::f64 ? ed::ScalarKind::f64
                        : result == ed::ValueKind::c32 ? ed::ScalarKind::c32
                                                       : ed::ScalarKind::c64;
    const std::string errors =
        kernel_errors(ek::elementwise_kernel_source(r.program, scalar, ek::choose_kernel_shape(r.program, o, scalar)));
    BOOST_TEST(errors.empty(), "random program " << t << ": " << errors.substr(0, 3000));
    ++compiled;
  }
  BOOST_TEST(compiled >= 10);
}

// A kernel used again is found by its signature before its source is
// generated (runtime_kernels), so one signature must always mean one
// source: random programs, coefficient-wise and as sums, with their
// constants changed (the same kernel) and without.
BOOST_AUTO_TEST_CASE(one_signature_one_source) {
  std::map<std::string, std::string> sources;
  int repeated = 0;
  auto record = [&](const std::string& signature, const std::string& source, const std::string& what) {
    const auto [at, added] = sources.emplace(signature, source);
    if (!added) {
      ++repeated;
      BOOST_TEST((at->second == source), what << ": another source under the same signature");
    }
  };
  for (int t = 0; t < scaled_count(400); ++t) {
    const auto result = static_cast<ed::ValueKind>(uniform_index(0, 3));
    RandomProgram r = random_program(uniform_index(1, 9), uniform_index(1, 9), result,
                                     static_cast<int>(uniform_index(1, 4)));
    if (r.program.leaves.size() > EGPU_EW_MAX_LEAVES || r.program.constants.size() > EGPU_EW_MAX_CONSTANTS) continue;
    const std::string what = "random program " + std::to_string(t) + ":" + program_text(r.program);
    const auto scalar = result == ed::ValueKind::f32   ? ed::ScalarKind::f32
                        : result == ed::ValueKind::f64 ? ed::ScalarKind::f64
                        : result == ed::ValueKind::c32 ? ed::ScalarKind::c32
                                                       : ed::ScalarKind::c64;
    ed::MatrixDesc o;
    o.rows = r.program.rows;
    o.cols = r.program.cols;
    o.col_stride = o.rows;
    std::vector<std::complex<double>> out(static_cast<std::size_t>(o.rows * o.cols));
    o.data = out.data();
    ed::Reduction sum;
    for (int variant = 0; variant < 2; ++variant) {
      if (variant == 1)
        for (auto& c : r.program.constants) c = c * 3.0 + 1.0;
      const ek::EwKernelShape shape = ek::choose_kernel_shape(r.program, o, scalar);
      record(ek::kernel_signature(r.program, shape, static_cast<int>(scalar)),
             ek::elementwise_kernel_source(r.program, scalar, shape), what);
      const ek::EwKernelShape reading = ek::reading_shape(r.program);
      record("sum" + ek::kernel_signature(r.program, reading, static_cast<int>(sum.op)),
             ek::reduction_kernel_source(r.program, sum, reading), what + " (sum)");
    }
  }
  BOOST_TEST(repeated >= scaled_count(400));  // every program's second variant at least
}
