#include "executor/gemm_executor.hpp"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "backend/device_gemm.hpp"
#include "egpu/detail/testing.hpp"
#include "egpu/error.hpp"
#include "executor/host_matrix.hpp"
#include "executor/thread_pool.hpp"
#include "executor/trace.hpp"
#include "executor/transfer.hpp"
#include "planner/pipeline_plan.hpp"
#include "runtime/context.hpp"
#include "runtime/cuda_check.hpp"
#include "runtime/device.hpp"
#include "runtime/device_buffer.hpp"

namespace egpu::detail {
namespace {
thread_local int g_fail_after = -1;
}
void inject_failure_after(int operations) { g_fail_after = operations; }
}  // namespace egpu::detail

namespace egpu::executor {
namespace {

using planner::Op;
using planner::OpKind;

// Counts down the injected failure (egpu::detail::inject_failure_after).
void maybe_fail() {
  int& left = detail::g_fail_after;
  if (left < 0) return;
  if (left-- == 0) throw egpu::error("injected failure in the pipeline");
}

template <class T>
HostMatrix<T> host_matrix(const detail::MatrixDesc& d) {
  return {static_cast<T*>(d.data), d.rows, d.cols, d.row_stride, d.col_stride, d.conj};
}

template <class T>
T scalar_from(const std::complex<double>& z) {
  if constexpr (kernels::is_complex<T>::value)
    return T{static_cast<kernels::real_of_t<T>>(z.real()), static_cast<kernels::real_of_t<T>>(z.imag())};
  else
    return static_cast<T>(z.real());
}

// Precision applies to float products; the other scalars always run exact.
template <class T>
kernels::MathMode math_mode(Precision precision) {
  if (!std::is_same<T, float>::value) return kernels::MathMode::exact;
  switch (precision) {
    case Precision::tf32: return kernels::MathMode::tf32;
    case Precision::tf32x3: return kernels::MathMode::tf32x3;
    case Precision::exact: break;
  }
  return kernels::MathMode::exact;
}

// The product with C as the kernels want it, column-major: a row-major C
// is computed as C^T = B^T A^T, which swaps the operands and their strides.
template <class T>
struct Problem {
  HostMatrix<T> a, b, c;
  T alpha, beta;
  bool beta_is_zero;

  explicit Problem(const detail::GemmDesc& d)
      : a(host_matrix<T>(d.a)),
        b(host_matrix<T>(d.b)),
        c(host_matrix<T>(d.c)),
        alpha(scalar_from<T>(d.alpha)),
        beta(scalar_from<T>(d.beta)),
        beta_is_zero(d.beta_is_zero) {
    if (natural_layout(c) == Layout::row_major) {
      HostMatrix<T> at = a.transposed();
      a = b.transposed();
      b = at;
      c = c.transposed();
    }
  }
};

// Device memory for the largest piece in either layout, lines padded.
template <class T>
std::size_t piece_bytes(std::int64_t rows, std::int64_t cols) {
  const std::int64_t col = padded_ld<T>(rows) * cols, row = padded_ld<T>(cols) * rows;
  return sizeof(T) * static_cast<std::size_t>(std::max(col, row));
}

// Events owned by one call.
class Events {
 public:
  cudaEvent_t make() {
    cudaEvent_t e = nullptr;
    runtime::cuda_check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
    m_events.push_back(e);
    return e;
  }
  std::vector<cudaEvent_t> make(std::size_t count) {
    std::vector<cudaEvent_t> v;
    for (std::size_t i = 0; i < count; ++i) v.push_back(make());
    return v;
  }
  ~Events() {
    for (cudaEvent_t e : m_events) (void)cudaEventDestroy(e);
  }

 private:
  std::vector<cudaEvent_t> m_events;
};

void wait(cudaStream_t stream, cudaEvent_t event) {
  runtime::cuda_check(cudaStreamWaitEvent(stream, event, 0), "cudaStreamWaitEvent");
}
void record(cudaEvent_t event, cudaStream_t stream) {
  runtime::cuda_check(cudaEventRecord(event, stream), "cudaEventRecord");
}

// The streams of one call and what each is for.
struct Streams {
  std::vector<cudaStream_t> all;
  cudaStream_t up = nullptr, down = nullptr;
  std::vector<cudaStream_t> compute;

  Streams(runtime::Context& ctx, int count) {
    for (int i = 0; i < count; ++i) all.push_back(ctx.stream(i));
    up = all[0];
    down = count >= 3 ? all[1] : all[0];
    if (count == 1) compute = {all[0]};
    else if (count == 2) compute = {all[1]};
    else compute.assign(all.begin() + 2, all.end());
  }
  // Waits for everything queued, e.g. before buffers are freed. Errors are
  // reported by the caller's own checks; on unwinding there is nothing more
  // to do with them.
  void synchronize_quietly() const {
    for (cudaStream_t s : all) (void)cudaStreamSynchronize(s);
  }
};

int stream_count(const Options& options) {
  if (options.streams > 0) return options.streams;
  // Uploads and downloads overlap only on separate copy engines.
  return runtime::selected_device().copy_engines >= 2 ? 4 : 2;
}

std::string region(const char* what, std::int64_t r0, std::int64_t r, std::int64_t c0, std::int64_t c) {
  return std::string(what) + " [" + std::to_string(r0) + "+" + std::to_string(r) + ", " + std::to_string(c0) +
         "+" + std::to_string(c) + "]";
}

// The writer thread: queues each finished C tile's download and copies it
// into the destination, while the calling thread keeps issuing uploads and
// kernels. It records when a C slot is free again.
template <class T>
class Writer {
 public:
  struct Job {
    Op op;
    cudaEvent_t ready;  // the tile's last multiply
  };

  Writer(runtime::Context& ctx, cudaStream_t stream, const T* c_slots, std::size_t c_slot_elems,
         const HostMatrix<T>& out, bool out_pinned, std::vector<cudaEvent_t> slot_free, int threads, Trace& trace)
      : m_ctx(ctx),
        m_stream(stream),
        m_c(c_slots),
        m_c_elems(c_slot_elems),
        m_out(out),
        m_out_pinned(out_pinned),
        m_slot_free(std::move(slot_free)),
        m_downloads_issued(m_slot_free.size(), 0),
        m_threads(threads),
        m_trace(trace),
        m_ring{&ctx.down_ring()},
        m_thread([this] { loop(); }) {}

  // Stops after the job in hand: jobs still queued are dropped (on the
  // normal path finish() has already run them all).
  ~Writer() {
    {
      std::lock_guard<std::mutex> lock(m_mutex);
      m_closed = true;
      m_jobs.clear();
    }
    m_changed.notify_all();
    m_thread.join();
  }

  void push(const Job& job) {
    {
      std::lock_guard<std::mutex> lock(m_mutex);
      m_jobs.push_back(job);
    }
    m_changed.notify_all();
  }

  // Blocks until `count` downloads from `slot` have been queued, so that
  // m_slot_free[slot] stands for the latest of them. Rethrows the writer's
  // error, if any.
  void wait_downloads_queued(int slot, int count) {
    std::unique_lock<std::mutex> lock(m_mutex);
    m_changed.wait(lock, [&] { return m_error || m_downloads_issued[static_cast<std::size_t>(slot)] >= count; });
    if (m_error) std::rethrow_exception(m_error);
  }

  // Blocks until every pushed job is done; rethrows the writer's error.
  void finish() {
    std::unique_lock<std::mutex> lock(m_mutex);
    m_changed.wait(lock, [&] { return m_error || (m_jobs.empty() && !m_busy); });
    if (m_error) std::rethrow_exception(m_error);
  }

  void check() {
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_error) std::rethrow_exception(m_error);
  }

 private:
  void loop() {
    // The device was made current on the calling thread; this thread needs it too.
    if (cudaSetDevice(m_ctx.device()) != cudaSuccess) (void)cudaGetLastError();
    for (;;) {
      Job job;
      {
        std::unique_lock<std::mutex> lock(m_mutex);
        m_changed.wait(lock, [&] { return m_closed || (!m_jobs.empty() && !m_error); });
        if (m_jobs.empty() || m_error) return;
        job = m_jobs.front();
        m_jobs.pop_front();
        m_busy = true;
      }
      try {
        run(job);
      } catch (...) {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_error = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_busy = false;
      }
      m_changed.notify_all();
    }
  }

  void run(const Job& job) {
    const Op& op = job.op;
    wait(m_stream, job.ready);
    const int span = m_trace.begin(region("download C", op.i0, op.mi, op.j0, op.nj), "D2H", m_stream);
    const DenseShape shape = dense_shape<T>(op.mi, op.nj, Layout::col_major);
    download(m_c + static_cast<std::size_t>(op.slot) * m_c_elems, shape, m_out.block(op.i0, op.j0, op.mi, op.nj),
             m_out_pinned, m_ring, m_stream, m_threads);
    m_trace.end(span, m_stream);
    record(m_slot_free[static_cast<std::size_t>(op.slot)], m_stream);
    std::lock_guard<std::mutex> lock(m_mutex);
    ++m_downloads_issued[static_cast<std::size_t>(op.slot)];
  }

  runtime::Context& m_ctx;
  cudaStream_t m_stream;
  const T* m_c;
  std::size_t m_c_elems;
  HostMatrix<T> m_out;
  bool m_out_pinned;
  std::vector<cudaEvent_t> m_slot_free;
  std::vector<int> m_downloads_issued;
  int m_threads;
  Trace& m_trace;
  StagingRing m_ring;
  std::mutex m_mutex;
  std::condition_variable m_changed;
  std::deque<Job> m_jobs;
  bool m_busy = false, m_closed = false;
  std::exception_ptr m_error;
  std::thread m_thread;
};

// One operand's device slots: the buffer, and how the piece now in each
// slot is laid out.
template <class T>
struct OperandSlots {
  runtime::DeviceBuffer buffer;
  std::size_t slot_elems = 0;
  std::vector<DenseShape> shape;
  std::vector<char> conj;  // the kernel conjugates this slot's piece
  std::vector<cudaEvent_t> ready;              // after the upload into the slot
  std::vector<std::vector<cudaEvent_t>> read;  // per compute stream: after its last multiply reading the slot

  OperandSlots(std::int32_t slots, std::size_t bytes_per_slot, cudaStream_t stream, Events& events,
               std::size_t compute_streams)
      : buffer(bytes_per_slot * static_cast<std::size_t>(slots), stream),
        slot_elems(bytes_per_slot / sizeof(T)),
        shape(static_cast<std::size_t>(slots)),
        conj(static_cast<std::size_t>(slots), 0),
        ready(events.make(static_cast<std::size_t>(slots))) {
    for (std::int32_t s = 0; s < slots; ++s) read.push_back(events.make(compute_streams));
  }
  T* at(std::int32_t slot) { return buffer.as<T>() + static_cast<std::size_t>(slot) * slot_elems; }

  // Queues the upload of `piece` into `slot` once every multiply that read
  // the slot's previous piece is done.
  void upload(std::int32_t slot, const HostMatrix<T>& piece, bool pinned, Backend backend, StagingRing& ring,
              cudaStream_t stream, int threads) {
    const auto s = static_cast<std::size_t>(slot);
    for (cudaEvent_t e : read[s]) wait(stream, e);
    shape[s] = dense_shape<T>(piece.rows, piece.cols, natural_layout(piece));
    // cuBLAS has no conjugate-without-transpose: such a piece is conjugated on the way up.
    const bool kernel_conjugates =
        piece.conj && (shape[s].layout == Layout::row_major || backend::conjugates_col_major(backend));
    conj[s] = kernel_conjugates;
    executor::upload(piece, pinned, shape[s], piece.conj && !kernel_conjugates, at(slot), ring, stream, threads);
    record(ready[s], stream);
  }
};

// Copies between two host views of the same size, over the staging threads.
template <class T>
void copy_host(const HostMatrix<T>& from, const HostMatrix<T>& to, int threads) {
  parallel_for(to.cols, threads, std::max<std::int64_t>(1, (std::int64_t(1) << 16) / std::max<std::int64_t>(1, to.rows)),
               [&](std::int64_t j0, std::int64_t j1) {
                 for (std::int64_t j = j0; j < j1; ++j)
                   for (std::int64_t i = 0; i < to.rows; ++i)
                     to.data[i * to.row_stride + j * to.col_stride] = from.data[i * from.row_stride + j * from.col_stride];
               });
}

// Device bytes the plan's slots take once every line is padded.
template <class T>
std::size_t allocated_bytes(const planner::PipelinePlan& plan) {
  return piece_bytes<T>(plan.mb, plan.kb) * static_cast<std::size_t>(plan.slots_a) +
         piece_bytes<T>(plan.kb, plan.nb) * static_cast<std::size_t>(plan.slots_b) +
         sizeof(T) * static_cast<std::size_t>(padded_ld<T>(plan.mb) * plan.nb) * static_cast<std::size_t>(plan.slots_c);
}

// The planner counts elements; padding lines to 16 bytes adds to that (much
// for thin pieces), so plan again within a smaller budget until the padded
// slots fit the device budget too.
template <class T>
planner::PipelinePlan plan_within_budget(const Problem<T>& p, const Options& options) {
  const std::size_t budget = runtime::device_budget(options.device_memory_limit);
  const planner::GemmProblem problem{p.c.rows, p.c.cols, p.a.cols, static_cast<std::int64_t>(sizeof(T)),
                                     !p.beta_is_zero};
  double target = static_cast<double>(budget);
  for (int attempt = 0;; ++attempt) {
    planner::PipelinePlan plan =
        planner::plan_pipeline(problem, {static_cast<std::int64_t>(target), options.panel, options.k_panel});
    const std::size_t bytes = allocated_bytes<T>(plan);
    if (bytes <= budget) return plan;
    if (attempt == 8)
      throw egpu::error("device memory budget of " + std::to_string(budget) + " bytes is too small for this product");
    target *= 0.98 * static_cast<double>(budget) / static_cast<double>(bytes);
  }
}

template <class T>
void run(const detail::GemmDesc& desc, const Options& options) {
  const Problem<T> p(desc);
  runtime::Context& ctx = runtime::thread_context();
  const Streams streams(ctx, stream_count(options));
  const int threads = options.staging_threads > 0 ? options.staging_threads : hardware_threads();

  const planner::PipelinePlan plan = plan_within_budget<T>(p, options);

  // An accumulating call writes nothing into the user's C until every
  // kernel has succeeded: with all C tiles on the device, downloads wait for
  // the last kernel; otherwise finished tiles are held on the host and
  // copied into C at the end.
  const bool accumulates = !p.beta_is_zero;
  const bool defer_downloads = accumulates && plan.slots_c == plan.tiles_m() * plan.tiles_n();
  const bool hold_results = accumulates && !defer_downloads;
  std::vector<T> held(hold_results ? static_cast<std::size_t>(p.c.rows * p.c.cols) : 0);
  const HostMatrix<T> out = hold_results ? HostMatrix<T>{held.data(), p.c.rows, p.c.cols, 1, p.c.rows, false} : p.c;

  const bool a_pinned = is_pinned(p.a), b_pinned = is_pinned(p.b), c_pinned = is_pinned(p.c);
  Events events;
  const std::size_t computes = streams.compute.size();
  OperandSlots<T> a(plan.slots_a, piece_bytes<T>(plan.mb, plan.kb), streams.up, events, computes);
  OperandSlots<T> b(plan.slots_b, piece_bytes<T>(plan.kb, plan.nb), streams.up, events, computes);
  const std::size_t c_slot_elems = static_cast<std::size_t>(padded_ld<T>(plan.mb) * plan.nb);
  runtime::DeviceBuffer c_buffer(sizeof(T) * c_slot_elems * static_cast<std::size_t>(plan.slots_c), streams.up);
  const std::vector<cudaEvent_t> c_ready = events.make(static_cast<std::size_t>(plan.slots_c));
  const std::vector<cudaEvent_t> c_done = events.make(static_cast<std::size_t>(plan.slots_c));
  const std::vector<cudaEvent_t> c_free = events.make(static_cast<std::size_t>(plan.slots_c));
  // Every stream starts after the allocations, which are ordered on `up`.
  const cudaEvent_t allocated = events.make();
  record(allocated, streams.up);
  for (cudaStream_t s : streams.all) wait(s, allocated);

  Trace trace;
  // Declared last, destroyed first: on any exit, the writer stops, then
  // every stream drains before the buffers above are freed.
  struct Drain {
    const Streams& s;
    ~Drain() { s.synchronize_quietly(); }
  } drain{streams};
  Writer<T> writer(ctx, streams.down, c_buffer.as<T>(), c_slot_elems, out, c_pinned && !hold_results, c_free, threads,
                   trace);

  StagingRing ring{&ctx.up_ring()};
  std::vector<int> tiles_in_slot(static_cast<std::size_t>(plan.slots_c), 0);
  std::vector<typename Writer<T>::Job> deferred;
  const T one = scalar_from<T>(1.0);
  const kernels::MathMode math = math_mode<T>(options.precision);
  // A C slot's previous tile must have left before the slot is written.
  auto claim_c_slot = [&](const Op& op, cudaStream_t stream) {
    const auto s = static_cast<std::size_t>(op.slot);
    if (tiles_in_slot[s] > 0) {
      writer.wait_downloads_queued(op.slot, tiles_in_slot[s]);
      wait(stream, c_free[s]);
    }
    ++tiles_in_slot[s];
  };

  for (const Op& op : plan.ops) {
    maybe_fail();
    writer.check();
    switch (op.kind) {
      case OpKind::upload_a: {
        const int span = trace.begin(region("upload A", op.i0, op.mi, op.p0, op.kp), "H2D", streams.up);
        a.upload(op.slot, p.a.block(op.i0, op.p0, op.mi, op.kp), a_pinned, options.backend, ring, streams.up, threads);
        trace.end(span, streams.up);
        break;
      }
      case OpKind::upload_b: {
        const int span = trace.begin(region("upload B", op.p0, op.kp, op.j0, op.nj), "H2D", streams.up);
        b.upload(op.slot, p.b.block(op.p0, op.j0, op.kp, op.nj), b_pinned, options.backend, ring, streams.up, threads);
        trace.end(span, streams.up);
        break;
      }
      case OpKind::upload_c: {
        claim_c_slot(op, streams.up);
        const int span = trace.begin(region("upload C", op.i0, op.mi, op.j0, op.nj), "H2D", streams.up);
        upload(p.c.block(op.i0, op.j0, op.mi, op.nj), c_pinned, dense_shape<T>(op.mi, op.nj, Layout::col_major), false,
               c_buffer.as<T>() + static_cast<std::size_t>(op.slot) * c_slot_elems, ring, streams.up, threads);
        trace.end(span, streams.up);
        record(c_ready[static_cast<std::size_t>(op.slot)], streams.up);
        break;
      }
      case OpKind::multiply: {
        const std::size_t lane = static_cast<std::size_t>(op.tile) % computes;
        const cudaStream_t stream = streams.compute[lane];
        const auto cs = static_cast<std::size_t>(op.slot), as = static_cast<std::size_t>(op.a_slot),
                   bs = static_cast<std::size_t>(op.b_slot);
        if (op.first_k) {
          if (accumulates)
            wait(stream, c_ready[cs]);
          else
            claim_c_slot(op, stream);
        }
        wait(stream, a.ready[as]);
        wait(stream, b.ready[bs]);
        kernels::GemmArgs<T> args;
        args.m = op.mi;
        args.n = op.nj;
        args.k = op.kp;
        args.a = a.at(op.a_slot);
        args.lda = a.shape[as].ld;
        args.a_layout = a.shape[as].layout;
        args.conj_a = a.conj[as] != 0;
        args.b = b.at(op.b_slot);
        args.ldb = b.shape[bs].ld;
        args.b_layout = b.shape[bs].layout;
        args.conj_b = b.conj[bs] != 0;
        args.c = c_buffer.as<T>() + cs * c_slot_elems;
        args.ldc = padded_ld<T>(op.mi);
        args.alpha = p.alpha;
        args.beta = op.first_k ? p.beta : one;
        args.beta_is_zero = op.first_k && p.beta_is_zero;
        args.math = math;
        const int span = trace.begin("multiply " + region("C", op.i0, op.mi, op.j0, op.nj) + " k " +
                                         std::to_string(op.p0) + "+" + std::to_string(op.kp),
                                     "kernels " + std::to_string(lane), stream);
        backend::device_gemm(options.backend, args, ctx, stream);
        trace.end(span, stream);
        record(a.read[as][lane], stream);
        record(b.read[bs][lane], stream);
        record(c_done[cs], stream);
        break;
      }
      case OpKind::download_c: {
        // c_done is re-recorded by the slot's next tile only after this
        // download is queued (claim_c_slot), so the writer sees this tile's.
        const typename Writer<T>::Job job{op, c_done[static_cast<std::size_t>(op.slot)]};
        if (defer_downloads)
          deferred.push_back(job);
        else
          writer.push(job);
        break;
      }
    }
  }
  if (defer_downloads) {
    for (cudaStream_t s : streams.compute) runtime::cuda_check(cudaStreamSynchronize(s), "gemm kernels");
    maybe_fail();
    for (const auto& job : deferred) writer.push(job);
  }
  writer.finish();
  for (cudaStream_t s : streams.all) runtime::cuda_check(cudaStreamSynchronize(s), "gemm pipeline");
  if (hold_results) copy_host(out, p.c, threads);
  trace.flush();
}

}  // namespace

void run_gemm(const detail::GemmDesc& desc, const Options& options) {
  // An injected failure applies to this product only.
  struct Disarm {
    ~Disarm() { detail::inject_failure_after(-1); }
  } disarm;
  switch (desc.scalar) {
    case detail::ScalarKind::f32: return run<float>(desc, options);
    case detail::ScalarKind::f64: return run<double>(desc, options);
    case detail::ScalarKind::c32: return run<kernels::cfloat>(desc, options);
    case detail::ScalarKind::c64: return run<kernels::cdouble>(desc, options);
  }
  throw egpu::error("gemm: unknown scalar type");
}

}  // namespace egpu::executor
