// Coefficient-wise expressions on device memory (egpu::backend::
// device_elementwise): every expression form of support/elementwise_forms.hpp
// for the four scalars, described by the adapter, its leaves copied to the
// device with their strides, run by the generated kernel into a destination
// that is column-major, row-major or a block with padding (poisoned with NaN
// bytes first; what lies outside the destination must keep them), compared
// coefficient by coefficient with the host interpreter of the same program
// (Eigen's scalar functors).
//
// Bounds: |gpu - ref| <= tol * max(|ref|, 1) with tol = 2^-13 for float and
// complex<float> and 2^-40 for double and complex<double>: each form chains
// up to eight functions, each within a few ulp of the exact value on the GPU
// and on the host, plus the cancellation of their sum (terms of size about
// 1 on these data, hence the floor of 1). A real NaN or infinity must be
// matched exactly (NaN for NaN, the same signed infinity); a complex result
// with a non-finite part must be non-finite on both sides. One exemption,
// counted and printed: where a complex operand of the coefficient has an
// infinite or NaN part, the host's C library (Annex G: the infinities that
// complex multiplication and exp recover) may give a finite value where the
// GPU's plain formulas give NaN. Every coefficient of the destination must
// have been written (its bits differ from the poison's).
// Also: the kernel cache compiles an expression once, and two host threads
// run expressions at once. Skipped without a usable GPU.
#define BOOST_TEST_MODULE elementwise_device
#include <boost/mpl/list.hpp>
#include <boost/test/unit_test.hpp>

#include <cuda_runtime.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "backend/device_elementwise.hpp"
#include "egpu/adapter/elementwise_parts.hpp"
#include "egpu/egpu.hpp"
#include "runtime/context.hpp"
#include "runtime/runtime_kernels.hpp"
#include "support/elementwise_forms.hpp"
#include "support/elementwise_reference.hpp"
#include "support/test_support.hpp"

using namespace egpu_test;
namespace ed = egpu::detail;

namespace {

void check_cuda(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

struct DeviceMemory {
  void* ptr = nullptr;
  explicit DeviceMemory(std::size_t bytes) { check_cuda(cudaMalloc(&ptr, bytes == 0 ? 1 : bytes), "cudaMalloc"); }
  ~DeviceMemory() { (void)cudaFree(ptr); }
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
};

// Elements a leaf's strides reach over its rows x cols.
std::int64_t extent(const ed::MatrixDesc& m) {
  if (m.rows == 0 || m.cols == 0) return 0;
  return 1 + (m.rows - 1) * m.row_stride + (m.cols - 1) * m.col_stride;
}

enum class OutKind { col_major, row_major, padded_block };
const char* name(OutKind k) {
  return k == OutKind::col_major ? "column-major" : k == OutKind::row_major ? "row-major" : "padded block";
}

template <class T> bool close(T got, T ref, double tol) {
  if constexpr (Eigen::NumTraits<T>::IsComplex) {
    const bool ref_finite = std::isfinite(ref.real()) && std::isfinite(ref.imag());
    const bool got_finite = std::isfinite(got.real()) && std::isfinite(got.imag());
    if (!ref_finite || !got_finite) return ref_finite == got_finite;
    return std::abs(std::complex<double>(got) - std::complex<double>(ref)) <= tol * std::max(1.0, double(std::abs(ref)));
  } else {
    if (std::isnan(ref)) return std::isnan(got);
    if (std::isinf(ref)) return got == ref;
    return std::abs(double(got) - double(ref)) <= tol * std::max(1.0, std::abs(double(ref)));
  }
}

template <class T> double tolerance() {
  return std::is_same_v<typename Eigen::NumTraits<T>::Real, float> ? std::ldexp(1.0, -13) : std::ldexp(1.0, -40);
}

// Whether a leaf of the program holds a complex value with a non-finite
// part at (i, j).
bool complex_operand_not_finite(const ed::ElementwiseProgram& p, std::int64_t i, std::int64_t j) {
  for (const auto& leaf : p.leaves) {
    const std::int64_t at = i * leaf.m.row_stride + j * leaf.m.col_stride;
    auto bad = [&](auto* zero) {
      const auto z = static_cast<decltype(zero)>(leaf.m.data)[at];
      return !std::isfinite(z.real()) || !std::isfinite(z.imag());
    };
    if (leaf.scalar == ed::ScalarKind::c32 && bad(static_cast<const std::complex<float>*>(nullptr))) return true;
    if (leaf.scalar == ed::ScalarKind::c64 && bad(static_cast<const std::complex<double>*>(nullptr))) return true;
  }
  return false;
}

// What one run found: coefficients that differ from the interpreter plus
// elements outside the destination written, and the first few of them.
struct Outcome {
  long bad = 0, exempt = 0;
  std::ostringstream report;
  void note(const std::string& line) {
    if (bad++ < 3) report << "  " << line << "\n";
  }
};

// Runs xpr on the device into a destination of the given kind. No Boost.Test
// macro inside: host threads call it.
template <class X> void run_on_device(const X& xpr, OutKind kind, const std::string& what, Outcome& o) {
  using T = typename X::Scalar;
  std::vector<std::shared_ptr<void>> keep;
  const ed::ElementwiseProgram host = ed::describe_elementwise(xpr, keep);
  ed::ElementwiseProgram dev = host;
  std::vector<std::unique_ptr<DeviceMemory>> buffers;
  for (auto& leaf : dev.leaves) {
    const std::size_t elem = static_cast<std::size_t>(ed::scalar_size(leaf.scalar));
    const std::size_t leaf_bytes = static_cast<std::size_t>(extent(leaf.m)) * elem;
    buffers.push_back(std::make_unique<DeviceMemory>(leaf_bytes));
    if (leaf_bytes > 0)
      check_cuda(cudaMemcpy(buffers.back()->ptr, leaf.m.data, leaf_bytes, cudaMemcpyHostToDevice), "upload");
    leaf.m.data = buffers.back()->ptr;
  }
  const std::int64_t rows = xpr.rows(), cols = xpr.cols();
  ed::MatrixDesc out;
  out.rows = rows;
  out.cols = cols;
  std::int64_t offset = 0, total = rows * cols;
  switch (kind) {
    case OutKind::col_major: out.row_stride = 1, out.col_stride = rows; break;
    case OutKind::row_major: out.row_stride = cols, out.col_stride = 1; break;
    case OutKind::padded_block:
      offset = 1, out.row_stride = 1, out.col_stride = rows + 2, total = 1 + (rows + 2) * cols + 3;
      break;
  }
  total += 2;  // guard elements after the end
  std::vector<T> back(static_cast<std::size_t>(total));
  std::memset(static_cast<void*>(back.data()), 0xff, back.size() * sizeof(T));
  DeviceMemory dst(back.size() * sizeof(T));
  check_cuda(cudaMemset(dst.ptr, 0xff, back.size() * sizeof(T)), "poison");
  out.data = static_cast<T*>(dst.ptr) + offset;

  egpu::runtime::Context& ctx = egpu::runtime::thread_context();
  cudaStream_t stream = ctx.stream(0);
  egpu::backend::device_elementwise(dev, out, ed::scalar_kind_of<T>::value, ctx, stream);
  check_cuda(cudaStreamSynchronize(stream), "kernel");
  check_cuda(cudaMemcpy(back.data(), dst.ptr, back.size() * sizeof(T), cudaMemcpyDeviceToHost), "download");

  unsigned char poison[sizeof(T)];
  std::memset(poison, 0xff, sizeof poison);
  std::vector<char> written(back.size(), 0);
  const std::string where = what + " " + std::to_string(rows) + "x" + std::to_string(cols) + " into " + name(kind);
  for (std::int64_t j = 0; j < cols; ++j)
    for (std::int64_t i = 0; i < rows; ++i) {
      const std::int64_t at = offset + i * out.row_stride + j * out.col_stride;
      written[static_cast<std::size_t>(at)] = 1;
      const T ref = evaluate_at(host, i, j).template get<T>();
      const T got = back[static_cast<std::size_t>(at)];
      if (std::memcmp(&got, poison, sizeof(T)) == 0) {
        o.note(where + ": coefficient (" + std::to_string(i) + ", " + std::to_string(j) + ") not written");
        continue;
      }
      if (!close(got, ref, tolerance<T>()) && complex_operand_not_finite(host, i, j)) {
        ++o.exempt;
        continue;
      }
      if (!close(got, ref, tolerance<T>())) {
        std::ostringstream line;
        line.precision(17);
        line << where << " at (" << i << ", " << j << "): gpu " << got << ", reference " << ref;
        o.note(line.str());
      }
    }
  for (std::size_t k = 0; k < back.size(); ++k)
    if (!written[k] && std::memcmp(&back[k], poison, sizeof(T)) != 0)
      o.note(where + ": element " + std::to_string(k) + " outside the destination was written");
}

template <class X> void check_on_device(const X& xpr, OutKind kind, const std::string& what) {
  Outcome o;
  run_on_device(xpr, kind, what, o);
  BOOST_TEST(o.bad == 0, what << ": " << o.bad << " wrong coefficients or stray writes\n" << o.report.str());
  if (o.exempt > 0) BOOST_TEST_MESSAGE(what << ": " << o.exempt << " coefficients exempt (non-finite complex operand)");
}

template <class S> void run_forms_on_device(Index rows, Index cols, int& turn, Outcome* shared = nullptr) {
  for_each_form<S>(rows, cols, [&](const auto& xpr, const char* what) {
    const OutKind kind = static_cast<OutKind>(turn++ % 3);
    if (shared != nullptr) run_on_device(xpr, kind, what, *shared);
    else check_on_device(xpr, kind, what);
  });
}

}  // namespace

using Scalars = boost::mpl::list<float, double, std::complex<float>, std::complex<double>>;

BOOST_AUTO_TEST_SUITE(on_device, *boost::unit_test::precondition(gpu_available))

BOOST_AUTO_TEST_CASE_TEMPLATE(forms_match_the_interpreter, S, Scalars) {
  const Index shapes[][2] = {{0, 5}, {4, 0}, {1, 1}, {1, 17}, {13, 1}, {7, 9}, {33, 20}, {257, 130}};
  int turn = 0;
  for (const auto& shape : shapes) run_forms_on_device<S>(shape[0], shape[1], turn);
  for (int t = 0; t < scaled_count(4); ++t) run_forms_on_device<S>(uniform_index(1, 300), uniform_index(1, 300), turn);
}

// More coefficients than the grid has threads: the grid-stride loop goes round.
BOOST_AUTO_TEST_CASE(large_arrays_loop_over_the_grid) {
  const Index n = 1100;  // 1.2 million coefficients; the grid has 8 x 256 threads per SM
  Eigen::ArrayXXf a = sprinkled<Eigen::ArrayXXf>(n, n + 3), b = sprinkled<Eigen::ArrayXXf>(n, n + 3);
  check_on_device(a * b + a.exp(), OutKind::col_major, "a*b+exp(a) float");
  Eigen::ArrayXXd c = sprinkled<Eigen::ArrayXXd>(n + 1, n);
  check_on_device((c > 0.0).select(c, 0.1 * c).cast<float>(), OutKind::row_major, "select, cast");
}

BOOST_AUTO_TEST_CASE(an_expression_compiles_once) {
  Eigen::ArrayXXd a = sprinkled<Eigen::ArrayXXd>(40, 30), b = sprinkled<Eigen::ArrayXXd>(40, 30);
  // A form no other test runs, so the first call compiles it.
  check_on_device(a.atan() * 3.25 - b.cosh(), OutKind::col_major, "first call");
  const auto before = egpu::runtime::runtime_kernel_stats();
  Eigen::ArrayXXd c = sprinkled<Eigen::ArrayXXd>(40, 30), d = sprinkled<Eigen::ArrayXXd>(40, 30);
  check_on_device(c.atan() * -7.0 - d.cosh(), OutKind::col_major, "same expression, other data and constant");
  const auto after = egpu::runtime::runtime_kernel_stats();
  BOOST_TEST(after.compiled == before.compiled);
  BOOST_TEST(after.from_memory == before.from_memory + 1);
  BOOST_TEST_MESSAGE("kernels compiled so far: " << after.compiled << " in " << after.compile_seconds << " s");
}

BOOST_AUTO_TEST_CASE(two_host_threads) {
  Outcome outcomes[2];
  std::string errors[2];
  auto work = [&](int t) {
    try {
      int turn = t;
      for (int round = 0; round < 3; ++round) {
        if (t == 0) run_forms_on_device<float>(37 + round, 41, turn, &outcomes[t]);
        else run_forms_on_device<std::complex<double>>(29, 23 + round, turn, &outcomes[t]);
      }
    } catch (const std::exception& e) {
      errors[t] = e.what();
    }
  };
  std::thread first(work, 0), second(work, 1);
  first.join();
  second.join();
  for (int t = 0; t < 2; ++t) {
    BOOST_TEST(errors[t].empty(), "thread " << t << ": " << errors[t]);
    BOOST_TEST(outcomes[t].bad == 0, "thread " << t << ":\n" << outcomes[t].report.str());
  }
}

BOOST_AUTO_TEST_SUITE_END()
