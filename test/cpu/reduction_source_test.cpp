// The generated reduction kernels, without a GPU: the orientation of a
// program (its dominant leaf read down columns, a row turned into a column,
// the axis swapped with it), the accumulator sizes the buffers are cut by,
// and the source of every reduction of every value type (contiguous and
// strided leaves) compiled by NVRTC for sm_90, to PTX and a few to
// machine code.
#define BOOST_TEST_MODULE reduction_source
#include <boost/test/unit_test.hpp>

#include <Eigen/Dense>

#include <complex>
#include <memory>
#include <string>
#include <vector>

#include "egpu/adapter/elementwise_parts.hpp"
#include "egpu/detail/reduction.hpp"
#include "egpu/error.hpp"
#include "kernels/reduction/reduction_source.hpp"
#include "support/nvrtc_errors.hpp"

namespace ed = egpu::detail;
namespace ek = egpu::kernels;
using egpu_test::nvrtc_errors;

namespace {

template <class X>
ed::ElementwiseProgram program_of(const X& x) {
  std::vector<std::shared_ptr<void>> keep;
  return ed::describe_elementwise(x, keep);  // leaves point into x only
}

// NVRTC's errors for one generated reduction (support/nvrtc_errors.hpp).
std::string kernel_errors(const std::string& source, bool cubin) {
  return nvrtc_errors(std::string(ek::reduction_prelude()) + "\n" + source, cubin);
}

ed::Reduction reduction(ed::ReduceOp op, ed::ReduceAxis axis, ed::ReduceFinish finish = ed::ReduceFinish::none) {
  ed::Reduction r;
  r.op = op;
  r.axis = axis;
  r.finish = finish;
  return r;
}

// Compiles the reduction of program for every op its value type allows (the
// first to machine code when `cubin`, the rest to PTX).
int compile_all(const ed::ElementwiseProgram& p, const char* what, bool cubin = false) {
  const ed::ValueKind v = p.code.back().type;
  const bool real = v == ed::ValueKind::f32 || v == ed::ValueKind::f64;
  std::vector<ed::Reduction> all = {reduction(ed::ReduceOp::count, ed::ReduceAxis::all)};
  if (v != ed::ValueKind::boolean) {
    all.push_back(reduction(ed::ReduceOp::sum, ed::ReduceAxis::each_column, ed::ReduceFinish::divide));
    all.push_back(reduction(ed::ReduceOp::prod, ed::ReduceAxis::all));
  }
  if (real) {
    all.push_back(reduction(ed::ReduceOp::sum, ed::ReduceAxis::each_row, ed::ReduceFinish::sqrt));
    all.push_back(reduction(ed::ReduceOp::min, ed::ReduceAxis::all));
    all.push_back(reduction(ed::ReduceOp::max, ed::ReduceAxis::each_column));
  }
  int compiled = 0;
  for (const ed::Reduction& r : all) {
    try {
      ed::validate(p, r);
    } catch (const egpu::error& e) {
      BOOST_FAIL(what << ", op " << int(r.op) << ": " << e.what());
    }
    const std::string errors =
        kernel_errors(ek::reduction_kernel_source(p, r, ek::reading_shape(p)), cubin && compiled == 0);
    BOOST_TEST(errors.empty(), what << ", op " << int(r.op) << ": " << errors.substr(0, 3000));
    ++compiled;
  }
  return compiled;
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_reduction_of_every_value_type_compiles) {
  Eigen::ArrayXXf f = Eigen::ArrayXXf::Random(5, 4);
  Eigen::ArrayXXd d = Eigen::ArrayXXd::Random(5, 4);
  Eigen::ArrayXXcf cf = Eigen::ArrayXXcf::Random(5, 4);
  Eigen::ArrayXXcd cd = Eigen::ArrayXXcd::Random(5, 4);
  Eigen::Array<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> big = Eigen::ArrayXXd::Random(9, 8);
  int compiled = 0;
  compiled += compile_all(program_of(f * f + f.exp()), "f32", true);
  compiled += compile_all(program_of(d * d), "f64");
  compiled += compile_all(program_of(cf * cf), "c32");
  compiled += compile_all(program_of(cd + cd), "c64", true);
  compiled += compile_all(program_of(d > 0.5), "boolean");
  // Strided and broadcast leaves: the kernels find (i, j) from n.
  compiled += compile_all(program_of(big.block(1, 2, 5, 4) * d.col(0).replicate(1, 4)), "strided");
  BOOST_TEST(compiled == 6 + 6 + 3 + 3 + 1 + 6);
}

BOOST_AUTO_TEST_CASE(the_dominant_leaf_is_read_down_its_columns) {
  Eigen::Array<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> rm = Eigen::ArrayXXd::Random(6, 7);
  Eigen::ArrayXXd cm = Eigen::ArrayXXd::Random(6, 7);
  {
    auto p = program_of(rm * 2.0);
    auto r = reduction(ed::ReduceOp::sum, ed::ReduceAxis::each_column);
    ek::to_leaf_order(p, r);
    BOOST_TEST(p.rows == 7);
    BOOST_TEST(p.cols == 6);
    BOOST_TEST(p.leaves[0].m.row_stride == 1);
    BOOST_TEST(int(r.axis) == int(ed::ReduceAxis::each_row));
  }
  {
    auto p = program_of(cm * 2.0);
    auto r = reduction(ed::ReduceOp::sum, ed::ReduceAxis::each_row);
    ek::to_leaf_order(p, r);
    BOOST_TEST(p.rows == 6);
    BOOST_TEST(int(r.axis) == int(ed::ReduceAxis::each_row));
  }
  {
    // A single row becomes a column; a full reduction keeps its axis.
    Eigen::ArrayXXd row = Eigen::ArrayXXd::Random(1, 9);
    auto p = program_of(row.exp());
    auto r = reduction(ed::ReduceOp::max, ed::ReduceAxis::all);
    ek::to_leaf_order(p, r);
    BOOST_TEST(p.rows == 9);
    BOOST_TEST(p.cols == 1);
    BOOST_TEST(int(r.axis) == int(ed::ReduceAxis::all));
  }
}

BOOST_AUTO_TEST_CASE(accumulators_and_results_have_the_sizes_of_their_types) {
  BOOST_TEST(ek::accumulator_bytes(ed::ReduceOp::sum, ed::ValueKind::f64) == 16);  // value and its error
  BOOST_TEST(ek::accumulator_bytes(ed::ReduceOp::sum, ed::ValueKind::c64) == 32);
  BOOST_TEST(ek::accumulator_bytes(ed::ReduceOp::sum, ed::ValueKind::f32) == 16);  // summed in double
  BOOST_TEST(ek::accumulator_bytes(ed::ReduceOp::sum, ed::ValueKind::c32) == 32);
  BOOST_TEST(ek::accumulator_bytes(ed::ReduceOp::max, ed::ValueKind::f32) == 4);
  BOOST_TEST(ek::accumulator_bytes(ed::ReduceOp::count, ed::ValueKind::boolean) == 8);
  BOOST_TEST(ek::result_bytes(ed::ReduceOp::count, ed::ValueKind::f32) == 8);
  BOOST_TEST(ek::result_bytes(ed::ReduceOp::prod, ed::ValueKind::c32) == 8);
}

BOOST_AUTO_TEST_CASE(reductions_the_values_do_not_allow_are_errors) {
  Eigen::ArrayXXcd cd = Eigen::ArrayXXcd::Random(3, 3);
  Eigen::ArrayXXd d = Eigen::ArrayXXd::Random(3, 3);
  BOOST_CHECK_THROW(ed::validate(program_of(cd * cd), reduction(ed::ReduceOp::min, ed::ReduceAxis::all)), egpu::error);
  BOOST_CHECK_THROW(ed::validate(program_of(d > 0.0), reduction(ed::ReduceOp::sum, ed::ReduceAxis::all)), egpu::error);
  BOOST_CHECK_THROW(ed::validate(program_of(cd * cd),
                                 reduction(ed::ReduceOp::sum, ed::ReduceAxis::all, ed::ReduceFinish::sqrt)),
                    egpu::error);
  BOOST_CHECK_THROW(ed::validate(program_of(d * d),
                                 reduction(ed::ReduceOp::count, ed::ReduceAxis::all, ed::ReduceFinish::divide)),
                    egpu::error);
}

// The first pass reads packs of 16 bytes of the widest leaf where every leaf
// is linear, and only there; the choice depends on the layout, not on where
// the data lies (the kernel checks alignment as it reads).
BOOST_AUTO_TEST_CASE(packs_where_every_leaf_is_linear) {
  Eigen::ArrayXXf f = Eigen::ArrayXXf::Random(6, 5);
  Eigen::ArrayXXd d = Eigen::ArrayXXd::Random(6, 5);
  Eigen::ArrayXXcd z = Eigen::ArrayXXcd::Random(6, 5);
  const ek::EwKernelShape floats = ek::reading_shape(program_of(f * f));
  BOOST_TEST(floats.packed);
  BOOST_TEST(floats.pack == 4);
  const ek::EwKernelShape mixed = ek::reading_shape(program_of(f.cast<double>() + d));
  BOOST_TEST(mixed.packed);
  BOOST_TEST(mixed.pack == 2);
  const ek::EwKernelShape offset = ek::reading_shape(program_of(Eigen::Map<Eigen::ArrayXXf>(f.data() + 1, 5, 5)));
  BOOST_TEST(offset.packed);  // the same kernel as at an aligned address
  BOOST_TEST(!ek::reading_shape(program_of(f.block(1, 1, 4, 3) * f.block(0, 0, 4, 3))).packed);
  BOOST_TEST(!ek::reading_shape(program_of(d.colwise() + d.col(0))).packed);
  BOOST_TEST(!ek::reading_shape(program_of(z * z)).packed);  // 16-byte values are a pack already
  const std::string source = ek::reduction_kernel_source(program_of(f * f), reduction(ed::ReduceOp::sum, ed::ReduceAxis::all),
                                                         floats);
  BOOST_TEST(source.find("rd::inner_packed<") != std::string::npos);
}
