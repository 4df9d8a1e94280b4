// The runtime on a GPU: concurrent products from two host threads, the
// device's name, and failures: a call that cannot run throws egpu::error,
// an accumulating call that fails leaves C unchanged, and the library
// keeps working afterwards; the cache of kernels compiled at run time asked
// for from many threads at once; downloads queued across tiles through a
// ring of staging slots that fills up (executor::ChunkedDownloads). Skipped
// without a usable GPU.
#define BOOST_TEST_MODULE runtime
#include <boost/test/unit_test.hpp>

#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <complex>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "egpu/egpu.hpp"
#include "executor/transfer.hpp"
#include "runtime/context.hpp"
#include "runtime/cuda_check.hpp"
#include "runtime/runtime_kernels.hpp"
#include "support/gemm_cases.hpp"
#include "support/test_support.hpp"

using namespace egpu_test;

BOOST_AUTO_TEST_SUITE(runtime, *boost::unit_test::precondition(gpu_available))

BOOST_AUTO_TEST_CASE(device_name_is_a_gpu) {
  const std::string name = egpu::device_name();
  BOOST_TEST_MESSAGE("device: " << name);
  BOOST_TEST(!name.empty());
  BOOST_TEST(name != "cpu");
}

BOOST_AUTO_TEST_CASE(two_threads_concurrently) {
  std::atomic<int> failures{0}, done{0};
  auto worker = [&](int id) {
    for (int t = 0; t < scaled_count(30); ++t) {
      // Alternate scalars and backends; each thread its own data.
      const Index m = 200 + 37 * ((t + id) % 7), n = 150 + 41 * (t % 5), k = 300 + 13 * id;
      egpu::Options opt;
      opt.backend = (t + id) % 2 == 0 ? egpu::Backend::own : egpu::Backend::cublas;
      if (id == 0) {
        Eigen::MatrixXd a = Eigen::MatrixXd::Random(m, k), b = Eigen::MatrixXd::Random(k, n), c(m, n);
        c.noalias() = egpu::gpu(a * b, opt);
        if (!((c - a * b).norm() <= 1e-12 * a.norm() * b.norm())) ++failures;
      } else {
        Eigen::MatrixXcf a = Eigen::MatrixXcf::Random(k, m), b = Eigen::MatrixXcf::Random(k, n);
        Eigen::MatrixXcf c = Eigen::MatrixXcf::Random(m, n);
        const Eigen::MatrixXcf c0 = c;
        c.noalias() += egpu::gpu(a.adjoint() * b, opt);
        const Eigen::MatrixXcd ref = c0.cast<std::complex<double>>() +
                                     a.cast<std::complex<double>>().adjoint() * b.cast<std::complex<double>>();
        if (!((c.cast<std::complex<double>>() - ref).norm() <= 1e-5 * double(a.norm()) * double(b.norm()))) ++failures;
      }
      ++done;
    }
  };
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(2);
  for (int id = 0; id < 2; ++id)
    threads.emplace_back([&, id] {
      try {
        worker(id);
      } catch (...) {
        errors[static_cast<std::size_t>(id)] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    try {
      if (e) std::rethrow_exception(e);
    } catch (const std::exception& x) {
      BOOST_TEST(false, "thread threw: " << x.what());
    }
  }
  BOOST_TEST(failures.load() == 0);
  BOOST_TEST(done.load() == 2 * scaled_count(30));
}

BOOST_AUTO_TEST_CASE(a_failing_call_throws_and_leaves_c_unchanged) {
  for (egpu::Backend backend : {egpu::Backend::own, egpu::Backend::cublas}) {
    egpu::Options opt;
    opt.backend = backend;
    opt.device_memory_limit = 16;  // bytes: no tile fits
    Eigen::MatrixXd a = random_matrix<Eigen::MatrixXd>(300, 200), b = random_matrix<Eigen::MatrixXd>(200, 100);
    Eigen::MatrixXd c = random_matrix<Eigen::MatrixXd>(300, 100);
    const Eigen::MatrixXd c0 = c;
    BOOST_CHECK_THROW(c += egpu::gpu(a * b, opt), egpu::error);
    BOOST_TEST((c.array() == c0.array()).all(), "a failed += changed C");
    BOOST_CHECK_THROW(c.noalias() -= egpu::gpu(2.0 * a * b, opt), egpu::error);
    BOOST_TEST((c.array() == c0.array()).all(), "a failed -= changed C");
    BOOST_CHECK_THROW(c.noalias() = egpu::gpu(a * b, opt), egpu::error);
    // The library still works afterwards.
    egpu::Options fine;
    fine.backend = backend;
    c = c0;
    c.noalias() += egpu::gpu(a * b, fine);
    BOOST_TEST((c - (c0 + a * b)).norm() <= 1e-12 * (a.norm() * b.norm() + c0.norm()));
  }
}

BOOST_AUTO_TEST_CASE(many_small_calls) {
  // Launch and copy overhead paths: many tiny products in a row.
  for (int t = 0; t < scaled_count(200); ++t) {
    const Index m = 1 + t % 9, n = 1 + t % 7, k = 1 + t % 5;
    Eigen::MatrixXf a = random_matrix<Eigen::MatrixXf>(m, k), b = random_matrix<Eigen::MatrixXf>(k, n), c(m, n);
    poison(c);
    c.noalias() = egpu::gpu(a * b);
    BOOST_TEST(((c - a * b).norm() <= 1e-5f * (1 + a.norm() * b.norm())), "m=" << m << " n=" << n << " k=" << k);
  }
}

namespace {

const char kTestPrelude[] = "// runtime_test's kernels\n";

std::string put_kernel(int value) {
  return "extern \"C\" __global__ void put(int* out) { *out = " + std::to_string(value) + "; }\n";
}

// Runs kernel `put` of `text` (runtime_kernel, on this thread) and returns
// what it wrote; "" or what went wrong in `failure`.
int run_put(const std::string& text, std::string& failure) {
  int device = 0, got = -1;
  int* out = nullptr;
  const auto check = [&](cudaError_t status, const char* what) {
    if (status != cudaSuccess && failure.empty()) failure = std::string(what) + ": " + cudaGetErrorString(status);
  };
  check(cudaGetDevice(&device), "cudaGetDevice");
  const cudaKernel_t kernel = egpu::runtime::runtime_kernel(kTestPrelude, text, "put", device);
  check(cudaMalloc(&out, sizeof(int)), "cudaMalloc");
  void* args[] = {&out};
  check(cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3(1), dim3(1), args, 0, nullptr), "launch");
  check(cudaMemcpy(&got, out, sizeof(int), cudaMemcpyDeviceToHost), "cudaMemcpy");
  check(cudaFree(out), "cudaFree");
  return got;
}

}  // namespace

// Threads asking at once for sources nobody compiled yet: each source is
// compiled once (one thread compiles, the others asking for it wait), the
// kernels are right, and a source that does not compile fails every thread
// that asked for it and again later (a failure is not kept), while the
// cache goes on working. Different sources compile at the same time: the
// message gives the wall time against the compiler's summed time.
BOOST_AUTO_TEST_CASE(the_kernel_cache_from_many_threads) {
  const int threads = 8;
  // Values of this run only, so that no earlier process's disk cache
  // (EGPU_CACHE_DIR) and no other case has these sources.
  const int base = static_cast<int>(uniform_index(1, 1 << 22)) * 16;
  const auto before = egpu::runtime::runtime_kernel_stats();
  const auto start = std::chrono::steady_clock::now();
  const auto faults = run_on_threads(threads, [&](int id, auto fault) {
    std::string failure;
    const int own = run_put(put_kernel(base + id), failure);
    const int shared = run_put(put_kernel(base + threads), failure);
    if (!failure.empty()) fault("thread " + std::to_string(id) + ": " + failure);
    if (own != base + id || shared != base + threads)
      fault("thread " + std::to_string(id) + ": kernels wrote " + std::to_string(own) + " and " +
            std::to_string(shared));
  });
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const auto& f : faults) BOOST_ERROR(f);
  const auto after = egpu::runtime::runtime_kernel_stats();
  BOOST_TEST(after.compiled + after.from_disk - before.compiled - before.from_disk == threads + 1);
  BOOST_TEST(after.from_memory - before.from_memory == threads - 1);
  BOOST_TEST_MESSAGE(threads + 1 << " sources on " << threads << " threads: " << wall << " s, the compiler's time summed "
                                 << after.compile_seconds - before.compile_seconds << " s");

  const std::string broken = "extern \"C\" __global__ void put(int* out) { *out = undeclared_" +
                             std::to_string(base) + "; }\n";
  const auto broken_faults = run_on_threads(4, [&](int, auto fault) {
    try {
      std::string failure;
      (void)run_put(broken, failure);
      fault("a source that does not compile gave a kernel");
    } catch (const egpu::error& e) {
      if (std::string(e.what()).find("NVRTC") == std::string::npos) fault(std::string("unexpected error: ") + e.what());
    }
  });
  for (const auto& f : broken_faults) BOOST_ERROR(f);
  BOOST_CHECK_THROW((void)egpu::runtime::runtime_kernel(kTestPrelude, broken, "put", 0), egpu::error);
  std::string failure;
  BOOST_TEST(run_put(put_kernel(base - 1), failure) == base - 1);
  BOOST_TEST(failure.empty(), failure);
}

namespace {

using egpu::executor::DenseShape;
using egpu::executor::HostMatrix;
using egpu::executor::Layout;

template <class T>
using DenseOf = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;

// The executor's scalar for an Eigen scalar (its own complex type).
template <class T> struct exec_scalar { using type = T; };
template <class R> struct exec_scalar<std::complex<R>> { using type = egpu::kernels::Complex<R>; };
template <class T> using exec_t = typename exec_scalar<T>::type;

// A block of a host matrix (or Map) as the executor sees it.
template <class M>
HostMatrix<exec_t<typename M::Scalar>> host_block(M& m, Index i0, Index j0, Index rows, Index cols) {
  const std::int64_t outer = m.outerStride();
  HostMatrix<exec_t<typename M::Scalar>> h{reinterpret_cast<exec_t<typename M::Scalar>*>(m.data()), m.rows(),
                                           m.cols(), M::IsRowMajor ? outer : 1, M::IsRowMajor ? 1 : outer, false};
  return h.block(i0, j0, rows, cols);
}

// A device tile (lines padded as the GEMM tiles lie) holding fresh random
// values, which `values` keeps on the host.
template <class T>
struct DeviceTile {
  DenseShape shape;
  DenseOf<T> values;
  T* device = nullptr;
  DeviceTile(Index rows, Index cols, Layout layout)
      : shape(egpu::executor::dense_shape<exec_t<T>>(rows, cols, layout)), values(random_matrix<DenseOf<T>>(rows, cols)) {
    std::vector<T> dense(static_cast<std::size_t>(shape.lines * shape.ld));
    for (std::int64_t line = 0; line < shape.lines; ++line)
      for (std::int64_t pos = 0; pos < shape.line_length; ++pos)
        dense[static_cast<std::size_t>(line * shape.ld + pos)] =
            layout == Layout::col_major ? values(pos, line) : values(line, pos);
    egpu::runtime::cuda_check(cudaMalloc(&device, dense.size() * sizeof(T)), "cudaMalloc");
    const cudaError_t copied = cudaMemcpy(device, dense.data(), dense.size() * sizeof(T), cudaMemcpyHostToDevice);
    if (copied != cudaSuccess) cudaFree(device);  // the destructor does not run for a throwing constructor
    egpu::runtime::cuda_check(copied, "cudaMemcpy");
  }
  ~DeviceTile() { cudaFree(device); }
  DeviceTile(const DeviceTile&) = delete;
  DeviceTile& operator=(const DeviceTile&) = delete;
};

// Where a tile goes: its destination (0, 1 or 2) and block there.
struct Place {
  int dst;
  Index i0, j0, rows, cols;
};

// Elements of m that differ bit for bit from `expected`.
template <class M, class E>
Index differing(const M& m, const E& expected) {
  Index wrong = 0;
  for (Index j = 0; j < m.cols(); ++j)
    for (Index i = 0; i < m.rows(); ++i) {
      const auto a = m(i, j), b = expected(i, j);
      if (std::memcmp(&a, &b, sizeof a) != 0) ++wrong;
    }
  return wrong;
}

// Tiles queued one after another on one ChunkedDownloads, an unpack
// between some of them as the pipeline's writer does, into poisoned
// pageable destinations (M: col- or row-major):
// - four large tiles of several chunks each, 12 to 20 chunks in all, so
//   that the ring (8 slots) fills across tiles and the oldest chunk is
//   unpacked to free a slot;
// - tiles of one element and of two short lines;
// - a tile whose lines are longer than a chunk (cut inside lines);
// - in the middle, a tile into page-locked memory (DMA into place).
// Every tile lands in its block, bit for bit, and nothing else is written.
template <class M>
void downloads_across_tiles(const std::string& what) {
  using T = typename M::Scalar;
  using X = exec_t<T>;
  const Layout layout = M::IsRowMajor ? Layout::row_major : Layout::col_major;
  const Index big = 2001, wide = 2203;
  // Lines of more than 8 MiB, the largest chunk.
  const Index long_line = Index((std::size_t(9) << 20) / sizeof(T)) + 37, few = 3;
  M tiled(big + 3, wide), lines(M::IsRowMajor ? few + 2 : long_line + 2, M::IsRowMajor ? long_line + 2 : few + 2);
  const Index pr = 301, pc = 203;
  void* pinned_bytes = nullptr;
  egpu::runtime::cuda_check(cudaMallocHost(&pinned_bytes, sizeof(T) * std::size_t(pr * pc)), "cudaMallocHost");
  const std::unique_ptr<void, decltype(&cudaFreeHost)> pinned_owner(pinned_bytes, &cudaFreeHost);
  T* const pinned_data = static_cast<T*>(pinned_bytes);
  Eigen::Map<M> pinned(pinned_data, pr, pc);
  fill_poison(tiled.data(), std::size_t(tiled.size()));
  fill_poison(lines.data(), std::size_t(lines.size()));
  fill_poison(pinned_data, std::size_t(pr * pc));

  const Index hr = big / 2, hc = wide / 2;
  const std::vector<Place> places = {
      {0, 0, 0, hr, hc},           {0, hr, 0, big - hr, hc}, {0, 0, hc, hr, wide - hc}, {0, hr, hc, big - hr, wide - hc},
      {2, 1, 2, pr - 1, pc - 2},   // page-locked
      {0, big, 0, 1, 1},           {0, big + 1, 5, 2, 333},
      M::IsRowMajor ? Place{1, 1, 1, few, long_line} : Place{1, 1, 1, long_line, few},
      {0, big + 2, wide - 1, 1, 1}};
  std::vector<std::unique_ptr<DeviceTile<T>>> tiles;
  for (const Place& p : places) tiles.push_back(std::make_unique<DeviceTile<T>>(p.rows, p.cols, layout));

  egpu::runtime::Context& ctx = egpu::runtime::thread_context();
  const cudaStream_t stream = ctx.stream(0);
  egpu::executor::StagingRing ring{&ctx.down_ring()};
  {
    egpu::executor::ChunkedDownloads<X> downloads(ring, stream, 4);
    for (std::size_t t = 0; t < tiles.size(); ++t) {
      const Place& p = places[t];
      const HostMatrix<X> dst = p.dst == 0   ? host_block(tiled, p.i0, p.j0, p.rows, p.cols)
                                : p.dst == 1 ? host_block(lines, p.i0, p.j0, p.rows, p.cols)
                                             : host_block(pinned, p.i0, p.j0, p.rows, p.cols);
      downloads.queue(reinterpret_cast<const X*>(tiles[t]->device), tiles[t]->shape, dst, p.dst == 2);
      if (t % 3 == 2) downloads.unpack_one();
    }
    while (downloads.unpack_one()) {
    }
    BOOST_TEST(!downloads.pending());
  }
  egpu::runtime::cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");

  M expected_tiled = tiled, expected_lines = lines;
  DenseOf<T> expected_pinned(pr, pc);
  fill_poison(expected_tiled.data(), std::size_t(tiled.size()));
  fill_poison(expected_lines.data(), std::size_t(lines.size()));
  fill_poison(expected_pinned.data(), std::size_t(pr * pc));
  for (std::size_t t = 0; t < tiles.size(); ++t) {
    const Place& p = places[t];
    if (p.dst == 0) expected_tiled.block(p.i0, p.j0, p.rows, p.cols) = tiles[t]->values;
    if (p.dst == 1) expected_lines.block(p.i0, p.j0, p.rows, p.cols) = tiles[t]->values;
    if (p.dst == 2) expected_pinned.block(p.i0, p.j0, p.rows, p.cols) = tiles[t]->values;
  }
  const Index wrong_tiled = differing(tiled, expected_tiled), wrong_lines = differing(lines, expected_lines),
              wrong_pinned = differing(pinned, expected_pinned);
  BOOST_TEST(wrong_tiled == 0, what << ": " << wrong_tiled << " elements of the tiled destination differ");
  BOOST_TEST(wrong_lines == 0, what << ": " << wrong_lines << " elements differ where lines are longer than a chunk");
  BOOST_TEST(wrong_pinned == 0, what << ": " << wrong_pinned << " elements of the page-locked destination differ");
}

}  // namespace

BOOST_AUTO_TEST_CASE(downloads_across_tiles_through_a_full_ring) {
  downloads_across_tiles<Eigen::MatrixXd>("double, col-major");
  downloads_across_tiles<Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>("float, row-major");
  downloads_across_tiles<Eigen::MatrixXcf>("complex<float>, col-major");
}

BOOST_AUTO_TEST_SUITE_END()
