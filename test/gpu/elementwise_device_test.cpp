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
// with a non-finite part must be non-finite on both sides. Three
// exemptions, counted and printed: coefficients where a complex value with an
// infinite or NaN part arises inside the program (complex operations on
// non-finite values are not specified: the host's library gives C's Annex G
// special values, the GPU its plain formulas); where the program takes arg
// of a real NaN (0 or pi by the NaN's sign bit, which the hardware sets: x86
// and the GPU differ); and where it takes arg or a function with a branch
// cut of a complex value with a zero part (the zero's sign picks the side,
// and complex products and quotients sign their zeros by the GPU's
// formulas, not the host library's). Every coefficient of the destination
// must have been written (its bits differ from the poison's).
// Random programs (support/random_programs.hpp) are judged against the
// interpreter's values with the inputs perturbed (judge_random). Also:
// complex exp, sin, cos, sinh and cosh where the real exponential overflows
// and the result does not; the kernel cache compiles an expression once;
// two host threads run expressions at once. Skipped without a usable GPU.
#define BOOST_TEST_MODULE elementwise_device
#include <boost/mpl/list.hpp>
#include <boost/test/unit_test.hpp>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "backend/device_elementwise.hpp"
#include "egpu/adapter/elementwise_parts.hpp"
#include "egpu/egpu.hpp"
#include "kernels/elementwise/ew_params.h"
#include "runtime/context.hpp"
#include "runtime/runtime_kernels.hpp"
#include "support/elementwise_forms.hpp"
#include "support/elementwise_reference.hpp"
#include "support/random_programs.hpp"
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

// What one run found: coefficients that differ from the interpreter plus
// elements outside the destination written, and the first few of them.
struct Outcome {
  long bad = 0, exempt = 0;
  std::ostringstream report;
  void note(const std::string& line) {
    if (bad++ < 3) report << "  " << line << "\n";
  }
};

enum class Verdict { pass, exempt, fail };

// Runs the program (leaves in host memory) on the device into a destination
// of the given kind, each coefficient judged by verdict(i, j, gpu value). No
// Boost.Test macro inside: host threads call it.
template <class T, class Judge>
void run_program_on_device(const ed::ElementwiseProgram& host, OutKind kind, const std::string& what, Outcome& o,
                           Judge&& verdict) {
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
  const std::int64_t rows = host.rows, cols = host.cols;
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
  fill_poison(back.data(), back.size());
  DeviceMemory dst(back.size() * sizeof(T));
  check_cuda(cudaMemcpy(dst.ptr, back.data(), back.size() * sizeof(T), cudaMemcpyHostToDevice), "poison");
  out.data = static_cast<T*>(dst.ptr) + offset;

  // A copy from pageable memory may return before its DMA lands, and the
  // context's streams do not wait for the legacy stream: the leaves and the
  // poison must be in place before the kernel starts.
  check_cuda(cudaDeviceSynchronize(), "uploads");
  egpu::runtime::Context& ctx = egpu::runtime::thread_context();
  cudaStream_t stream = ctx.stream(0);
  egpu::backend::device_elementwise(dev, out, ed::scalar_kind_of<T>::value, ctx, stream);
  check_cuda(cudaStreamSynchronize(stream), "kernel");
  check_cuda(cudaMemcpy(back.data(), dst.ptr, back.size() * sizeof(T), cudaMemcpyDeviceToHost), "download");

  std::vector<char> written(back.size(), 0);
  const std::string where = what + " " + std::to_string(rows) + "x" + std::to_string(cols) + " into " + name(kind);
  for (std::int64_t j = 0; j < cols; ++j)
    for (std::int64_t i = 0; i < rows; ++i) {
      const std::int64_t at = offset + i * out.row_stride + j * out.col_stride;
      written[static_cast<std::size_t>(at)] = 1;
      const T got = back[static_cast<std::size_t>(at)];
      if (is_poison(got)) {
        o.note(where + ": coefficient (" + std::to_string(i) + ", " + std::to_string(j) + ") not written");
        continue;
      }
      const Verdict v = verdict(i, j, got);
      if (v == Verdict::exempt) ++o.exempt;
      if (v == Verdict::fail) {
        std::ostringstream line;
        line.precision(17);
        line << where << " at (" << i << ", " << j << "): gpu " << got << ", reference "
             << evaluate_at(host, i, j).template get<T>() << "; the reference's values there:";
        // Every instruction's value, so that a failure can be followed.
        const std::vector<EwValue> values = evaluate_all(host, i, j);
        for (std::size_t t = 0; t < values.size(); ++t) {
          const EwValue& x = values[t];
          line << " v" << t << "=";
          switch (x.kind) {
            case ed::ValueKind::f32: line << x.f; break;
            case ed::ValueKind::f64: line << x.d; break;
            case ed::ValueKind::c32: line << x.cf; break;
            case ed::ValueKind::c64: line << x.cd; break;
            default: line << (x.b ? "true" : "false"); break;
          }
        }
        o.note(line.str());
      }
    }
  for (std::size_t k = 0; k < back.size(); ++k)
    if (!written[k] && !is_poison(back[k]))
      o.note(where + ": element " + std::to_string(k) + " outside the destination was written");
}

// An Eigen expression on the device, against the interpreter within
// tolerance<T>() (the Annex G exemption for complex operands aside).
template <class X> void run_on_device(const X& xpr, OutKind kind, const std::string& what, Outcome& o) {
  using T = typename X::Scalar;
  std::vector<std::shared_ptr<void>> keep;
  const ed::ElementwiseProgram host = ed::describe_elementwise(xpr, keep);
  run_program_on_device<T>(host, kind, what, o, [&](std::int64_t i, std::int64_t j, T got) {
    if (close(got, evaluate_at(host, i, j).template get<T>(), tolerance<T>())) return Verdict::pass;
    return exempt(host, i, j) ? Verdict::exempt : Verdict::fail;
  });
}

template <class X> void check_on_device(const X& xpr, OutKind kind, const std::string& what) {
  Outcome o;
  run_on_device(xpr, kind, what, o);
  BOOST_TEST(o.bad == 0, what << ": " << o.bad << " wrong coefficients or stray writes\n" << o.report.str());
  if (o.exempt > 0) BOOST_TEST_MESSAGE(what << ": " << o.exempt << " coefficients exempt (complex non-finite, NaN sign, zero sign at a cut or of a part taken)");
}

template <class S> void run_forms_on_device(Index rows, Index cols, int& turn, Outcome* shared = nullptr) {
  for_each_form<S>(rows, cols, [&](const auto& xpr, const char* what) {
    const OutKind kind = static_cast<OutKind>(turn++ % 3);
    if (shared != nullptr) run_on_device(xpr, kind, what, *shared);
    else check_on_device(xpr, kind, what);
  });
}

template <class T> bool finite_value(T v) {
  if constexpr (Eigen::NumTraits<T>::IsComplex) return std::isfinite(v.real()) && std::isfinite(v.imag());
  else return std::isfinite(v);
}
template <class T> bool is_nan_value(T v) {
  if constexpr (Eigen::NumTraits<T>::IsComplex) return std::isnan(v.real()) || std::isnan(v.imag());
  else return std::isnan(v);
}

// A random program's coefficient against the interpreter's value and its
// values with every input and constant, and every operation's result,
// scaled by 1 +- 16 eps (eps of the precision the program computes in for
// the inputs, of each value's type for the results). The spread says how
// much the program amplifies rounding at this coefficient: a GPU function
// differs from the host's by a few ulp at its result, which can matter far
// more than the same change at the inputs (cosh of a small value is 1 +
// 6e-7 on one side and an ulp more on the other; a log of it then differs
// by 20 %). Passes within tol * max(|c|, 1) + 2 * spread of one of the
// finite values c; a non-finite result must be matched by one of the three
// (NaN by NaN; for complex, non-finite by non-finite), or be exempt.
template <class T>
Verdict judge_random(const RandomProgram& host, const RandomProgram& up, const RandomProgram& down, double tol,
                     std::int64_t i, std::int64_t j, T got) {
  const T refs[3] = {evaluate_at(host.program, i, j).template get<T>(),
                     evaluate_at(up.program, i, j, 16).template get<T>(),
                     evaluate_at(down.program, i, j, -16).template get<T>()};
  if (!finite_value(got)) {
    for (const T& r : refs) {
      if (!finite_value(r) && (Eigen::NumTraits<T>::IsComplex || (is_nan_value(r) ? is_nan_value(got) : r == got)))
        return Verdict::pass;
    }
  } else {
    double spread = 0;
    for (const T& a : refs)
      for (const T& b : refs)
        if (finite_value(a) && finite_value(b)) spread = std::max(spread, double(std::abs(a - b)));
    for (const T& r : refs)
      if (finite_value(r) && double(std::abs(got - r)) <= tol * std::max(1.0, double(std::abs(r))) + 2 * spread)
        return Verdict::pass;
  }
  return exempt(host.program, i, j) ? Verdict::exempt : Verdict::fail;
}

// A program computes in float where any of its values is float or
// complex<float>: its inputs are then perturbed, and its result judged, at
// float's precision whatever the result's type.
bool computes_in_float(const ed::ElementwiseProgram& p) {
  for (const auto& in : p.code)
    if (in.type == ed::ValueKind::f32 || in.type == ed::ValueKind::c32) return true;
  return false;
}

template <class T> void run_random_program(const RandomProgram& r, OutKind kind, const std::string& what, Outcome& o) {
  const bool in_float = computes_in_float(r.program);
  const double tol = in_float ? tolerance<float>() : tolerance<double>();
  const double eps = in_float ? double(std::numeric_limits<float>::epsilon()) : 0.0;  // 0: each leaf's own
  const RandomProgram up = perturbed(r, 16, eps), down = perturbed(r, -16, eps);
  run_program_on_device<T>(r.program, kind, what, o, [&](std::int64_t i, std::int64_t j, T got) {
    return judge_random(r, up, down, tol, i, j, got);
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

// Values whose real part is random in [lo, lo + 0.5) with either sign.
template <class R> Eigen::Array<std::complex<R>, Eigen::Dynamic, Eigen::Dynamic> beyond(R lo) {
  Eigen::Array<std::complex<R>, Eigen::Dynamic, Eigen::Dynamic> z(97, 3);
  std::uniform_real_distribution<R> big(lo, lo + R(0.5)), angle(R(-3.2), R(3.2));
  for (Index j = 0; j < z.cols(); ++j)
    for (Index i = 0; i < z.rows(); ++i) z(i, j) = std::complex<R>((coin() ? 1 : -1) * big(rng()), angle(rng()));
  return z;
}
// exp_at: just past where e^x overflows; hyperbolic_at: past where cosh x
// does (ln of twice the largest value).
template <class R> void near_overflow(R exp_at, R hyperbolic_at, const char* scalar) {
  using C = std::complex<R>;
  const std::string s = std::string(" near overflow, ") + scalar;
  check_on_device(beyond(exp_at).exp(), OutKind::col_major, "exp" + s);
  const auto h = beyond(hyperbolic_at);
  check_on_device(h.cosh(), OutKind::row_major, "cosh" + s);
  check_on_device(h.sinh(), OutKind::padded_block, "sinh" + s);
  check_on_device((h * C(0, 1)).cos(), OutKind::col_major, "cos" + s);
  check_on_device((h * C(0, 1)).sin(), OutKind::row_major, "sin" + s);
}

// Complex exp, sin, cos, sinh and cosh where the real exponential
// overflows and the result need not (its parts up to 2x below the largest
// value): finite where the host's are, and as close.
BOOST_AUTO_TEST_CASE(complex_functions_near_overflow) {
  near_overflow<float>(88.73f, 89.42f, "complex<float>");
  near_overflow<double>(709.79, 710.48, "complex<double>");
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

// 2,000 random expression trees (depth 1 to 6, random operations and scalar
// types, random shapes up to 600 on a side and about 4000 coefficients,
// leaves of every layout and broadcast, NaN and Inf sprinkled in); each
// compiles its own kernel, which is most of the time: eight threads compile
// and run them. The programs are drawn one after another from the seeded
// generator, under a lock, so a seed replays the same ones whatever thread
// takes which (EGPU_TEST_SCALE shrinks the count).
BOOST_AUTO_TEST_CASE(random_programs_match_the_interpreter) {
  const int count = scaled_count(2000);
  struct Result {
    Outcome o;
    std::string program;  // of a program with failures
  };
  std::vector<Result> results(static_cast<std::size_t>(count));
  std::mutex drawing;
  int next = 0;
  const auto faults = run_on_threads(8, [&](int, auto) {
    for (;;) {
      int t = 0;
      RandomProgram r;
      ed::ValueKind result{};
      {
        std::lock_guard<std::mutex> lock(drawing);
        if (next == count) return;
        t = next++;
        const Index rows = uniform_index(0, 600);
        const Index cols = uniform_index(0, std::min<Index>(600, 4000 / std::max<Index>(rows, 1)));
        result = static_cast<ed::ValueKind>(uniform_index(0, 3));
        do {
          r = random_program(rows, cols, result, static_cast<int>(uniform_index(1, 6)));
        } while (r.program.leaves.size() > EGPU_EW_MAX_LEAVES || r.program.constants.size() > EGPU_EW_MAX_CONSTANTS);
      }
      ed::validate(r.program);
      Result& out = results[static_cast<std::size_t>(t)];
      const OutKind kind = static_cast<OutKind>(t % 3);
      const std::string what = "random program " + std::to_string(t);
      switch (result) {
        case ed::ValueKind::f32: run_random_program<float>(r, kind, what, out.o); break;
        case ed::ValueKind::f64: run_random_program<double>(r, kind, what, out.o); break;
        case ed::ValueKind::c32: run_random_program<std::complex<float>>(r, kind, what, out.o); break;
        default: run_random_program<std::complex<double>>(r, kind, what, out.o); break;
      }
      if (out.o.bad > 0) out.program = program_text(r.program);
    }
  });
  for (const auto& f : faults) BOOST_ERROR(f);
  long total_exempt = 0, programs_with_failures = 0;
  for (int t = 0; t < count; ++t) {
    const Result& r = results[static_cast<std::size_t>(t)];
    total_exempt += r.o.exempt;
    if (r.o.bad > 0) ++programs_with_failures;
    BOOST_TEST(r.o.bad == 0, "random program " << t << ": " << r.o.bad << " wrong coefficients or stray writes\n"
                                               << r.o.report.str() << " program:" << r.program);
  }
  BOOST_TEST_MESSAGE(count << " random programs, " << programs_with_failures << " with failures, " << total_exempt
                           << " coefficients exempt (complex non-finite, NaN sign, zero sign at a cut or of a part taken)");
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
