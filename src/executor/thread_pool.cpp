#include "executor/thread_pool.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace egpu::executor {
namespace {

// A short wait inside a spin loop, kind to the core's other hardware thread.
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

// How long an idle worker keeps looking for work before it sleeps. While a
// call runs, the pipeline hands out a chunk to copy every few tens of
// microseconds; a sleeping worker takes about as long to wake as a chunk
// takes to copy, and waking fifteen through one mutex took longer still
// (whole copies of 1-4 MB ran at 3-6 GB/s against 40-46 GB/s with spinning
// workers, lent H200 host, 16 cores).
constexpr auto kSpin = std::chrono::microseconds(500);

// One parallel_for at a time per slot. The ticket packs the slot's
// generation (odd while a job is open) with the job's part count and the
// parts handed out so far: a worker claims a part by one compare-and-swap
// of the ticket, and a stale ticket (an earlier job, or parts all taken)
// can never claim a part of a later job.
class JobSlot {
 public:
  using Body = std::function<void(std::int64_t, std::int64_t)>;

  // The caller owns the slot from acquire() to close().
  bool acquire() {
    bool expected = false;
    return m_owned.compare_exchange_strong(expected, true, std::memory_order_acquire);
  }
  void open(const Body* body, std::int64_t count, int parts) {
    m_body = body;
    m_count = count;
    m_parts = parts;
    m_error = nullptr;
    m_left.store(parts, std::memory_order_relaxed);
    const std::uint64_t generation = (m_ticket.load(std::memory_order_relaxed) >> 32) + 1;
    m_ticket.store(pack(generation, parts, 0), std::memory_order_release);
  }
  // Runs parts until none is left to claim; true if it ran any.
  bool help() {
    bool ran = false;
    std::uint64_t t = m_ticket.load(std::memory_order_acquire);
    while (open_part(t)) {
      if (!m_ticket.compare_exchange_weak(t, t + 1, std::memory_order_acquire, std::memory_order_acquire)) continue;
      // Claimed: the job cannot close before this part is counted, so its
      // fields are this job's.
      run_part(static_cast<int>(t & 0xffff));
      ran = true;
      t = m_ticket.load(std::memory_order_acquire);
    }
    return ran;
  }
  bool done() const { return m_left.load(std::memory_order_acquire) == 0; }
  // After done(): the slot goes back; returns the first part's error.
  std::exception_ptr close() {
    const std::uint64_t generation = (m_ticket.load(std::memory_order_relaxed) >> 32) + 1;
    m_ticket.store(pack(generation, 0, 0), std::memory_order_release);
    std::exception_ptr error = m_error;
    m_error = nullptr;
    m_owned.store(false, std::memory_order_release);
    return error;
  }

 private:
  static std::uint64_t pack(std::uint64_t generation, int parts, int next) {
    return generation << 32 | static_cast<std::uint64_t>(parts) << 16 | static_cast<std::uint64_t>(next);
  }
  static bool open_part(std::uint64_t t) {
    return ((t >> 32) & 1) != 0 && (t & 0xffff) < ((t >> 16) & 0xffff);
  }
  void run_part(int part) {
    const std::int64_t begin = m_count * part / m_parts, end = m_count * (part + 1) / m_parts;
    try {
      (*m_body)(begin, end);
    } catch (...) {
      std::lock_guard<std::mutex> lock(m_error_mutex);
      if (!m_error) m_error = std::current_exception();
    }
    m_left.fetch_sub(1, std::memory_order_acq_rel);
  }

  std::atomic<bool> m_owned{false};
  std::atomic<std::uint64_t> m_ticket{0};
  std::atomic<int> m_left{0};
  const Body* m_body = nullptr;
  std::int64_t m_count = 0;
  int m_parts = 1;
  std::mutex m_error_mutex;
  std::exception_ptr m_error;
};

class Pool {
 public:
  // Parts of one job are at most this many (the ticket's 16-bit fields).
  static constexpr int kMaxParts = 0xffff;

  explicit Pool(int threads) : m_workers(threads) {
    for (int t = 0; t < threads; ++t) std::thread([this] { work(); }).detach();
  }
  int workers() const { return m_workers; }
  // Process-lifetime object: never destroyed, its threads run until exit.

  // A free slot, or nullptr when every slot holds a job (the caller then
  // runs its job alone).
  JobSlot* acquire() {
    for (JobSlot& slot : m_slots)
      if (slot.acquire()) return &slot;
    return nullptr;
  }
  // After slot.open(): wakes sleeping workers.
  void published() {
    m_published.fetch_add(1, std::memory_order_seq_cst);
    if (m_sleepers.load(std::memory_order_seq_cst) > 0) {
      { std::lock_guard<std::mutex> lock(m_mutex); }
      m_wake.notify_all();
    }
  }

 private:
  void work() {
    auto idle_since = std::chrono::steady_clock::now();
    for (;;) {
      const std::uint64_t seen = m_published.load(std::memory_order_seq_cst);
      bool ran = false;
      for (JobSlot& slot : m_slots) ran = slot.help() || ran;
      if (ran) {
        idle_since = std::chrono::steady_clock::now();
        continue;
      }
      if (std::chrono::steady_clock::now() - idle_since < kSpin) {
        // Yielding, not pausing: the calling threads (issuing copies,
        // unpacking results) run first wherever they share a core.
        std::this_thread::yield();
        continue;
      }
      // Sleep until a job is published after `seen`. Counting this thread
      // among the sleepers before reading the count again pairs with
      // published(): either the new count is seen here or the sleeper there.
      std::unique_lock<std::mutex> lock(m_mutex);
      m_sleepers.fetch_add(1, std::memory_order_seq_cst);
      m_wake.wait(lock, [&] { return m_published.load(std::memory_order_seq_cst) != seen; });
      m_sleepers.fetch_sub(1, std::memory_order_seq_cst);
      idle_since = std::chrono::steady_clock::now();
    }
  }

  int m_workers;
  std::array<JobSlot, 16> m_slots;
  std::atomic<std::uint64_t> m_published{0};
  std::atomic<int> m_sleepers{0};
  std::mutex m_mutex;
  std::condition_variable m_wake;
};

// Two hardware threads stay free of workers: a call's own thread (issuing
// uploads and kernels, packing) and its writer (unpacking results) take
// parts of their jobs themselves, and a worker on their core would slow
// them. At least two workers even on the smallest machines, so that the
// pool's protocol runs (and is tested) everywhere.
Pool& pool() {
  static Pool* p = new Pool(std::max(2, hardware_threads() - 2));
  return *p;
}

}  // namespace

int hardware_threads() {
  static const int n = std::max(1u, std::thread::hardware_concurrency());
  return static_cast<int>(n);
}

void parallel_for(std::int64_t count, int threads, std::int64_t grain,
                  const std::function<void(std::int64_t, std::int64_t)>& body) {
  if (count <= 0) return;
  const std::int64_t by_grain = std::max<std::int64_t>(1, count / std::max<std::int64_t>(1, grain));
  const std::int64_t parts = std::clamp<std::int64_t>(
      std::min<std::int64_t>(threads, by_grain), 1,
      std::min<std::int64_t>({count, pool().workers() + 1, Pool::kMaxParts}));
  JobSlot* slot = parts > 1 ? pool().acquire() : nullptr;
  if (slot == nullptr) {
    body(0, count);
    return;
  }
  slot->open(&body, count, static_cast<int>(parts));
  pool().published();
  slot->help();  // the caller takes parts too, so the job finishes even with every worker busy
  // Parts still running on workers are short (one range each): wait by spinning.
  for (int spins = 0; !slot->done(); ++spins) {
    if (spins < 256)
      cpu_relax();
    else
      std::this_thread::yield();
  }
  if (std::exception_ptr error = slot->close()) std::rethrow_exception(error);
}

struct TaskThread::State {
  std::mutex mutex;
  std::condition_variable changed;
  std::function<void()> task;
  bool running = false, stop = false, held = false;
  std::thread thread;

  void work() {
    for (;;) {
      std::function<void()> next;
      {
        std::unique_lock<std::mutex> lock(mutex);
        changed.wait(lock, [&] { return stop || task; });
        if (!task) return;
        next = std::move(task);
        task = nullptr;
      }
      next();  // a writer's loop: it catches its own exceptions
      {
        std::lock_guard<std::mutex> lock(mutex);
        running = false;
      }
      changed.notify_all();
    }
  }
};

TaskThread::TaskThread() : m_state(new State) {
  m_state->thread = std::thread([s = m_state] { s->work(); });
}

TaskThread::~TaskThread() {
  {
    std::lock_guard<std::mutex> lock(m_state->mutex);
    m_state->stop = true;
  }
  m_state->changed.notify_all();
  m_state->thread.join();
  delete m_state;
}

TaskThread* TaskThread::acquire() {
  thread_local std::unique_ptr<TaskThread> mine;
  if (!mine) mine = std::make_unique<TaskThread>();
  if (mine->m_state->held) return nullptr;
  mine->m_state->held = true;
  return mine.get();
}

void TaskThread::start(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(m_state->mutex);
    m_state->task = std::move(task);
    m_state->running = true;
  }
  m_state->changed.notify_all();
}

void TaskThread::join() {
  std::unique_lock<std::mutex> lock(m_state->mutex);
  m_state->changed.wait(lock, [&] { return !m_state->running; });
  m_state->held = false;
}

}  // namespace egpu::executor
