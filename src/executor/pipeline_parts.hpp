// The parts of the host-resident pipeline that every kind of work uses
// (products in gemm_executor, coefficient-wise expressions in
// elementwise_executor; the device-resident calls of resident_executor): the call's events and streams, the writer thread
// that brings finished tiles back into the destination, the injected
// failures of the tests.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "egpu/detail/gemm_descriptor.hpp"
#include "egpu/error.hpp"
#include "egpu/options.hpp"
#include "executor/host_matrix.hpp"
#include "executor/thread_pool.hpp"
#include "executor/trace.hpp"
#include "executor/transfer.hpp"
#include "planner/pipeline_plan.hpp"
#include "runtime/context.hpp"
#include "runtime/cuda_check.hpp"

namespace egpu::executor {

using planner::Op;
using planner::OpKind;

// Counts a call whose writer queues its downloads inline
// (egpu::detail::calls_queueing_downloads_inline).
void count_inline_downloads();

// Counts down the injected failure (egpu::detail::inject_failure_after):
// throws egpu::error when it reaches zero.
void maybe_fail();
// Disarms the injected failure when the call that it applies to ends.
struct FailureScope {
  FailureScope() = default;
  FailureScope(const FailureScope&) = delete;
  FailureScope& operator=(const FailureScope&) = delete;
  ~FailureScope();
};

template <class T>
HostMatrix<T> host_matrix(const detail::MatrixDesc& d) {
  return {static_cast<T*>(d.data), d.rows, d.cols, d.row_stride, d.col_stride, d.conj};
}

// Calls f(T()) with the element type the transfers and kernels use for
// `scalar`.
template <class F>
void with_element_type(detail::ScalarKind scalar, F&& f) {
  switch (scalar) {
    case detail::ScalarKind::f32: return f(float());
    case detail::ScalarKind::f64: return f(double());
    case detail::ScalarKind::c32: return f(kernels::cfloat());
    case detail::ScalarKind::c64: return f(kernels::cdouble());
  }
  throw egpu::error("unknown scalar type");
}

// The arithmetic of a product of T under `precision` (float only; the
// other scalars run exact).
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

// Host threads that copy between pageable memory and pinned slots.
inline int staging_threads(const Options& options) {
  return options.staging_threads > 0 ? options.staging_threads : hardware_threads();
}

template <class T>
T scalar_from(const std::complex<double>& z) {
  if constexpr (kernels::is_complex<T>::value)
    return T{static_cast<kernels::real_of_t<T>>(z.real()), static_cast<kernels::real_of_t<T>>(z.imag())};
  else
    return static_cast<T>(z.real());
}


// Events owned by one call. They come from, and go back to, a pool of the
// calling thread's (creating and destroying them cost each call tens of
// microseconds). A reused event's last record is from an earlier call that
// has finished: waiting on it before this call records it waits for
// nothing, as on a new event.
class Events {
 public:
  Events() = default;
  Events(const Events&) = delete;
  Events& operator=(const Events&) = delete;
  cudaEvent_t make();
  std::vector<cudaEvent_t> make(std::size_t count) {
    std::vector<cudaEvent_t> v;
    for (std::size_t i = 0; i < count; ++i) v.push_back(make());
    return v;
  }
  ~Events();

 private:
  std::vector<cudaEvent_t> m_events;
};

void wait(cudaStream_t stream, cudaEvent_t event);
void record(cudaEvent_t event, cudaStream_t stream);

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
  // Waits for everything queued: the end of a call, whose errors surface
  // here (`what`: the call).
  void synchronize(const char* what) {
    for (cudaStream_t s : all) runtime::cuda_check(cudaStreamSynchronize(s), what);
    drained = true;
  }
  // Waits for everything queued, e.g. before buffers are freed. Errors are
  // reported by the caller's own checks; on unwinding there is nothing more
  // to do with them.
  void synchronize_quietly() const {
    for (cudaStream_t s : all) (void)cudaStreamSynchronize(s);
  }
  // Set by synchronize(): nothing is queued any more.
  bool drained = false;
};

// Declared after the call's buffers and before its writer: on any exit the
// writer stops first, then every stream drains before the buffers are freed
// (on the normal path the call's end has drained them already).
struct DrainOnExit {
  const Streams& streams;
  ~DrainOnExit() {
    if (!streams.drained) streams.synchronize_quietly();
  }
};

// Every stream of the call starts after the work queued on `up` so far (the
// call's allocations, which are ordered on it).
inline void start_after_up(const Streams& streams, Events& events) {
  const cudaEvent_t allocated = events.make();
  record(allocated, streams.up);
  for (cudaStream_t s : streams.all) wait(s, allocated);
}

// How many tiles a plan (a product's or a coefficient-wise one's) brings down.
template <class Plan>
std::size_t downloads_in(const Plan& plan) {
  return static_cast<std::size_t>(
      std::count_if(plan.ops.begin(), plan.ops.end(), [](const Op& op) { return op.kind == OpKind::download_c; }));
}

// Streams for one call: options.streams, else from the device's copy engines.
int stream_count(const Options& options);

inline std::string region(const char* what, std::int64_t r0, std::int64_t r, std::int64_t c0, std::int64_t c) {
  return std::string(what) + " [" + std::to_string(r0) + "+" + std::to_string(r) + ", " + std::to_string(c0) +
         "+" + std::to_string(c) + "]";
}

// The writer (on the calling thread's task thread): queues each finished
// tile's download and copies it into the destination, while the calling
// thread keeps issuing uploads and kernels; into pageable memory, the next
// tiles' DMA runs while it unpacks (ChunkedDownloads). It records when a
// result slot is free again. A writer that defers holds every job until
// finish(), which first waits for the kernels: an accumulating call writes
// nothing unless all of them succeeded.
//
// Where every download goes by DMA straight into place (downloads_direct),
// queueing one never blocks, and the calling thread queues it itself, in
// plan order; so too where the call has one download, which nothing else
// follows: no hand-over to the task thread and back, which cost a small
// call 40-50 microseconds (waking the thread, waiting for it in finish()
// and when it stops).
template <class T>
class Writer {
 public:
  struct Job {
    Op op;              // download_c: the tile's region and result slot
    cudaEvent_t ready;  // after the tile's last kernel
    DenseShape shape;   // how the tile lies in its slot
  };

  // downloads: how many jobs the call will push.
  Writer(runtime::Context& ctx, cudaStream_t stream, const T* c_slots, std::size_t c_slot_elems,
         const HostMatrix<T>& out, bool out_pinned, std::vector<cudaEvent_t> slot_free, bool defer, int threads,
         Trace& trace, std::size_t downloads)
      : m_ctx(ctx),
        m_stream(stream),
        m_c(c_slots),
        m_c_elems(c_slot_elems),
        m_out(out),
        m_out_pinned(out_pinned),
        m_slot_free(std::move(slot_free)),
        m_downloads_issued(m_slot_free.size(), 0),
        m_claimed(m_slot_free.size(), 0),
        m_defer(defer),
        m_threads(threads),
        m_trace(trace),
        m_ring{&ctx.down_ring()},
        m_downloads(m_ring, stream, threads),
        m_inline(downloads <= 1 || downloads_direct(out, out_pinned)),
        m_runner(m_inline ? nullptr : TaskThread::acquire()) {
    if (m_inline) {
      count_inline_downloads();
      return;
    }
    if (m_runner)
      m_runner->start([this] { loop(); });
    else
      m_thread = std::thread([this] { loop(); });
  }

  // Stops after the job in hand: jobs still queued are dropped (on the
  // normal path finish() has already run them all).
  ~Writer() {
    if (m_inline) return;
    {
      std::lock_guard<std::mutex> lock(m_mutex);
      m_closed = true;
      m_jobs.clear();
    }
    m_changed.notify_all();
    if (m_runner)
      m_runner->join();
    else
      m_thread.join();
  }

  void push(const Job& job) {
    if (m_defer) {
      m_deferred.push_back(job);
      return;
    }
    if (m_inline) return run(job);
    {
      std::lock_guard<std::mutex> lock(m_mutex);
      m_jobs.push_back(job);
    }
    m_changed.notify_all();
  }

  // Before a kernel writes a new tile into `slot` on `stream`: the slot's
  // previous tile must have left. Blocks until that download is queued,
  // then makes `stream` wait for it. Rethrows the writer's error, if any.
  void claim(int slot, cudaStream_t stream) {
    const auto s = static_cast<std::size_t>(slot);
    if (m_claimed[s] > 0) {
      std::unique_lock<std::mutex> lock(m_mutex);
      // Plans queue a tile's download before the slot's next tile: queued
      // inline, it is issued already, and no thread would issue it later.
      if (m_inline && m_downloads_issued[s] < m_claimed[s])
        throw egpu::error("pipeline: a result slot reused before its tile's download was queued");
      m_changed.wait(lock, [&] { return m_error || m_downloads_issued[s] >= m_claimed[s]; });
      if (m_error) std::rethrow_exception(m_error);
      wait(stream, m_slot_free[s]);
    }
    ++m_claimed[s];
  }

  // Blocks until every pushed job is done (a deferring writer first waits
  // for the `kernels` streams, then queues its jobs); rethrows the writer's
  // error.
  void finish(const std::vector<cudaStream_t>& kernels) {
    if (m_defer) {
      for (cudaStream_t s : kernels) runtime::cuda_check(cudaStreamSynchronize(s), "the pipeline's kernels");
      maybe_fail();
      m_defer = false;
      for (const Job& job : m_deferred) push(job);
    }
    if (m_inline) {
      while (m_downloads.unpack_one()) {
      }
      return;
    }
    std::unique_lock<std::mutex> lock(m_mutex);
    m_changed.wait(lock, [&] { return m_error || (m_jobs.empty() && !m_busy); });
    if (m_error) std::rethrow_exception(m_error);
  }

  void check() {
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_error) std::rethrow_exception(m_error);
  }

 private:
  // Takes each job as it comes and queues its copies; between jobs, and
  // while the ring is full, unpacks the oldest chunk that has arrived, so
  // the next tiles' DMA runs while the host unpacks.
  void loop() {
    // The device was made current on the calling thread; this thread needs it too.
    if (cudaSetDevice(m_ctx.device()) != cudaSuccess) (void)cudaGetLastError();
    for (;;) {
      Job job;
      bool took = false;
      {
        std::unique_lock<std::mutex> lock(m_mutex);
        if (!m_downloads.pending())
          m_changed.wait(lock, [&] { return m_closed || m_error || !m_jobs.empty(); });
        if (m_closed || m_error) return;
        if (!m_jobs.empty()) {
          job = m_jobs.front();
          m_jobs.pop_front();
          took = true;
        }
        m_busy = true;
      }
      try {
        if (took)
          run(job);
        else
          m_downloads.unpack_one();
      } catch (...) {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_error = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_busy = m_downloads.pending();
      }
      m_changed.notify_all();
    }
  }

  // Queues the tile's copies (its DMA, after the tile's last kernel); the
  // result slot is free again once they have left it.
  void run(const Job& job) {
    const Op& op = job.op;
    wait(m_stream, job.ready);
    const int span = m_trace.begin([&] { return region("download C", op.i0, op.mi, op.j0, op.nj); }, "D2H", m_stream);
    m_downloads.queue(m_c + static_cast<std::size_t>(op.slot) * m_c_elems, job.shape,
                      m_out.block(op.i0, op.j0, op.mi, op.nj), m_out_pinned);
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
  std::vector<int> m_claimed;  // tiles given to each slot (calling thread only)
  bool m_defer;
  std::vector<Job> m_deferred;
  int m_threads;
  Trace& m_trace;
  StagingRing m_ring;
  ChunkedDownloads<T> m_downloads;  // the writer's alone (its thread's, or the calling thread's inline)
  std::mutex m_mutex;
  std::condition_variable m_changed;
  std::deque<Job> m_jobs;
  bool m_busy = false, m_closed = false;
  std::exception_ptr m_error;
  bool m_inline;         // the calling thread queues the downloads (no thread)
  TaskThread* m_runner;  // the calling thread's task thread, or nullptr: m_thread
  std::thread m_thread;
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

// Where results go: the destination itself, or, for an accumulating call
// whose results cannot all wait on the device, a host buffer copied into
// the destination once everything has succeeded.
template <class T>
class ResultTarget {
 public:
  ResultTarget(const HostMatrix<T>& dst, bool hold)
      : m_dst(dst),
        m_held(hold ? static_cast<std::size_t>(dst.rows * dst.cols) : 0),
        m_out(hold ? HostMatrix<T>{m_held.data(), dst.rows, dst.cols, 1, dst.rows, false} : dst) {}
  const HostMatrix<T>& out() const { return m_out; }
  bool held() const { return !m_held.empty(); }
  void commit(int threads) const {
    if (held()) copy_host(m_out, m_dst, threads);
  }

 private:
  HostMatrix<T> m_dst;
  std::vector<T> m_held;
  HostMatrix<T> m_out;
};

// The end of a call: every download done, every stream drained (a late
// error surfaces here), held results copied into the destination, the trace
// written.
template <class T>
void finish_call(Writer<T>& writer, Streams& streams, const ResultTarget<T>& target, int threads, Trace& trace,
                 const char* what) {
  writer.finish(streams.compute);
  streams.synchronize(what);
  target.commit(threads);
  trace.flush();
}

}  // namespace egpu::executor
